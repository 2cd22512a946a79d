"""Encoder spec strings -> encoders (the same string on every command).

=====================================  ==============================================================
``toy``, or any registered name         :func:`snapbench.models.register_encoder` factories
``NAME`` of an installed plugin          entry point ``NAME`` in the group ``snapbench.encoders``
``sentence-transformers:NAME_OR_PATH``   sentence-transformers (text models; its CLIP models do both)
``open_clip:ARCH[:PRETRAINED_OR_FILE]``  OpenCLIP
``hf:NAME_OR_PATH``                      transformers CLIP / SigLIP / any get_image/text_features model
``package.module:attribute``             your own encoder: a class, a factory or an instance
=====================================  ==============================================================

Both kinds of name are tables (:class:`snapbench.core.registry.Table`) that fail loudly:
:data:`ENCODERS` (registered names, then plugins, loaded only when asked for) and
:data:`ADAPTERS` (the ``PREFIX:`` forms; add your own with ``ADAPTERS.register(prefix, build)``,
``build(rest, device=..., batch_size=...)``).  A spec that is neither, and not ``module:attribute``
either, is an error with the close names (``opencilp:ViT-B-32`` -> did you mean ``open_clip``?).

Registered names win over plugins, and adapter prefixes over ``module:attribute``.  For
``module:attribute`` the current directory is importable (``my_encoder.py`` next to you works).
Factories and classes receive ``device`` / ``batch_size`` when their signature accepts them.
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
import sys
from collections.abc import Callable, Sequence
from importlib import metadata
from typing import Any

import numpy as np

from ..core.errors import ConfigError, SnapbenchError
from ..core.registry import Table
from ..core.validate import did_you_mean, listing
from .loading import one_line

__all__ = ["ADAPTERS", "ENCODERS", "ENTRY_POINT_GROUP", "describe",
           "known_names", "resolve"]

ENTRY_POINT_GROUP = "snapbench.encoders"
_MODULE_ATTR = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
_MODALITIES = ("image", "text")


def _plugin_names() -> list[str]:
    """Names of the encoders installed packages declare under ``snapbench.encoders``."""
    return sorted({ep.name for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)})


def known_names() -> list[str]:
    """Encoder names usable as a spec as they are: registered names and installed plugins."""
    return sorted(set(ENCODERS.names()) | set(_plugin_names()))


def _call_with_accepted(factory: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    """``factory(**kwargs)`` keeping only the keyword arguments its signature accepts."""
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return factory()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return factory(**kwargs)
    return factory(**{k: v for k, v in kwargs.items() if k in params})


def _is_encoder_instance(obj: Any) -> bool:
    return not isinstance(obj, type) and any(callable(getattr(obj, f"encode_{m}s", None)) for m in _MODALITIES)


class _DescribedEncoder:
    """A user or plugin encoder, given ``name`` / ``fingerprint`` / ``modalities`` when it lacks them
    and checked on every call (an (n, d) float array for n inputs; NaN and inf are refused where the
    commands call every encoder, :func:`snapbench.app.stages.encoders.call_encoder`)."""

    def __init__(self, inner: Any, spec: str) -> None:
        self.inner = inner
        self.name = str(getattr(inner, "name", None) or spec)
        fp = getattr(inner, "fingerprint", None)
        self.fingerprint: str | None = fp if isinstance(fp, str) and fp else None
        mods = getattr(inner, "modalities", None)
        if mods is None:
            mods = {m for m in _MODALITIES if callable(getattr(inner, f"encode_{m}s", None))}
        self.modalities = frozenset(mods)
        if not self.modalities or not self.modalities <= set(_MODALITIES):
            raise ConfigError(f"encoder {spec!r}: modalities must be a non-empty subset of {{'image', 'text'}}, got {set(mods)!r}")
        for attr in ("joint", "dim", "cheap"):
            if hasattr(inner, attr):
                setattr(self, attr, getattr(inner, attr))
        if callable(getattr(inner, "encode_queries", None)):
            self.encode_queries = self._encode_queries

    def _check(self, out: Any, n: int, kind: str) -> np.ndarray:
        a = np.asarray(out, dtype=np.float32)
        if a.ndim != 2 or a.shape[0] != n:
            raise ConfigError(f"encoder {self.name!r}: encode_{kind}s returned shape {a.shape} for {n} inputs (want (n, d))")
        return a

    def _encode_queries(self, images: Sequence[np.ndarray], texts: Sequence[str]) -> np.ndarray:
        images, texts = list(images), list(texts)
        if len(images) != len(texts):
            raise ConfigError(f"encoder {self.name!r}: encode_queries needs as many texts as images ({len(texts)} vs {len(images)})")
        return self._check(self.inner.encode_queries(images, texts), len(images), "querie")

    def encode_images(self, images: Sequence[np.ndarray]) -> np.ndarray:
        if "image" not in self.modalities:
            raise ConfigError(f"encoder {self.name!r} does not encode images (modalities: {listing(sorted(self.modalities))})")
        images = list(images)
        return self._check(self.inner.encode_images(images), len(images), "image")

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        if "text" not in self.modalities:
            raise ConfigError(f"encoder {self.name!r} does not encode texts (modalities: {listing(sorted(self.modalities))})")
        texts = list(texts)
        return self._check(self.inner.encode_texts(texts), len(texts), "text")


def _instantiate(obj: Any, spec: str, kwargs: dict[str, Any]) -> Any:
    if _is_encoder_instance(obj):
        return obj
    if callable(obj):
        try:
            built = _call_with_accepted(obj, kwargs)
        except SnapbenchError:
            raise
        except Exception as exc:  # noqa: BLE001 - the user's constructor failed: name it, keep the cause
            raise ConfigError(f"encoder {spec!r}: building it failed: {one_line(exc)}") from exc
        if _is_encoder_instance(built):
            return built
        raise ConfigError(f"encoder {spec!r}: calling it returned {type(built).__name__}, which has no encode_images/encode_texts")
    raise ConfigError(f"encoder {spec!r}: {type(obj).__name__} is neither an encoder nor a class/factory building one")


def _import_attribute(spec: str) -> Any:
    module_name, attr = spec.split(":", 1)
    cwd = os.getcwd()
    added = cwd not in sys.path and "" not in sys.path
    if added:  # a user's my_encoder.py in the current directory, as `python -m` would see it
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and (module_name == exc.name or module_name.startswith(exc.name + ".")):
            raise ConfigError(f"encoder {spec!r}: no module named {module_name!r} (not installed, not in {cwd})"
                              f"{_did_you_mean(spec)}") from None
        raise ConfigError(f"encoder {spec!r}: importing {module_name!r} failed: {one_line(exc)}") from None
    except Exception as exc:  # noqa: BLE001 - the module itself is broken (SyntaxError, an error at import)
        raise ConfigError(f"encoder {spec!r}: importing {module_name!r} failed: {one_line(exc)}") from None
    finally:
        if added:
            sys.path.remove(cwd)
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ConfigError(f"encoder {spec!r}: module {module_name!r} has no attribute {attr!r}") from None
    return obj


def _build_hf(rest: str, **kwargs: Any) -> Any:
    from .adapters import HFEncoder

    return HFEncoder(rest, **kwargs)


def _build_st(rest: str, **kwargs: Any) -> Any:
    from .adapters import SentenceTransformersEncoder

    return SentenceTransformersEncoder(rest, **kwargs)


def _build_open_clip(rest: str, **kwargs: Any) -> Any:
    from .adapters import OpenClipEncoder

    if rest.startswith(("hf-hub:", "local-dir:")):  # OpenCLIP's own schemes: the weights come with the name
        return OpenClipEncoder(rest, None, **kwargs)
    arch, _, pretrained = rest.partition(":")
    return OpenClipEncoder(arch, pretrained or None, **kwargs)


#: Adapter prefixes (``PREFIX:NAME_OR_PATH``) -> ``build(rest, device=..., batch_size=...)``.
ADAPTERS: Table[Callable[..., Any]] = Table("encoder adapter")
ADAPTERS.register("sentence-transformers", _build_st)
ADAPTERS.register("open_clip", _build_open_clip)
ADAPTERS.register("hf", _build_hf)

#: The adapter prefixes as they are written in a spec (``"hf:"`` ...).
_ADAPTER_PREFIXES: tuple[str, ...] = tuple(f"{name}:" for name in ADAPTERS.names())


def _register_builtins() -> None:
    from .toy import ToyEncoder

    ENCODERS.register("toy", ToyEncoder)


#: Encoder names -> factories ``(**kwargs) -> encoder``: ``toy`` and :func:`snapbench.models.register_encoder`
#: names.  Installed plugins (entry point group :data:`ENTRY_POINT_GROUP`) are looked up after them,
#: at each call (a plugin installed while the process runs is found), and loaded only when asked for.
ENCODERS: Table[Callable[..., Any]] = Table("encoder")
ENCODERS.on_first_use(_register_builtins)


def _did_you_mean(spec: str) -> str:
    """:func:`~snapbench.core.validate.did_you_mean` over the registered names and adapter prefixes
    (``open_clip:``; with a colon in ``spec``, its prefix against the adapter prefixes only)."""
    prefix, colon, _ = spec.partition(":")
    adapters = [a + ":" for a in ADAPTERS.names()]
    return did_you_mean(prefix + ":", adapters) if colon else did_you_mean(spec, known_names() + adapters)


def resolve(spec: str, kwargs: dict[str, Any]) -> Any:
    """Build the encoder a spec string names (see the module docstring for the forms)."""
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError(f"encoder spec must be a non-empty string, got {spec!r}")
    spec = spec.strip()
    if spec in ENCODERS:
        return _DescribedEncoder(_instantiate(ENCODERS.get(spec), spec, kwargs), spec)
    prefix, colon, rest = spec.partition(":")
    if colon and prefix in ADAPTERS:
        if not rest:
            raise ConfigError(f"encoder {spec!r}: give a model name or path after {prefix + ':'!r}")
        try:
            return ADAPTERS.get(prefix)(rest, **kwargs)
        except SnapbenchError:
            raise
        except Exception as exc:  # noqa: BLE001 - any other failure of a model library: one line, no traceback
            raise ConfigError(f"encoder {spec!r}: {one_line(exc)}") from exc
    eps = [ep for ep in metadata.entry_points(group=ENTRY_POINT_GROUP) if ep.name == spec]
    if eps:
        return _DescribedEncoder(_instantiate(eps[0].load(), spec, kwargs), spec)
    if _MODULE_ATTR.match(spec):
        return _DescribedEncoder(_instantiate(_import_attribute(spec), spec, kwargs), spec)
    raise ConfigError(
        f"unknown encoder {spec!r}{_did_you_mean(spec)}; known: {', '.join(known_names())} (registered and plugin "
        "names), or 'sentence-transformers:NAME', 'open_clip:ARCH[:PRETRAINED]', 'hf:NAME_OR_PATH' or "
        "'package.module:attribute'", param="encoder")


def describe(encoder: Any) -> str:
    """One line naming an encoder and what it encodes."""
    mods = "+".join(sorted(getattr(encoder, "modalities", ()))) or "?"
    return f"{getattr(encoder, 'name', type(encoder).__name__)} ({mods})"
