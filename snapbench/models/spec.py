"""Encoder spec strings -> encoders (the same string on every command).

=====================================  ==============================================================
``toy``, or any registered name         :func:`snapbench.models.register_encoder` factories
``NAME`` of an installed plugin          entry point ``NAME`` in the group ``snapbench.encoders``
``sentence-transformers:NAME_OR_PATH``   sentence-transformers (text models; its CLIP models do both)
``open_clip:ARCH[:PRETRAINED_OR_FILE]``  OpenCLIP
``hf:NAME_OR_PATH``                      transformers CLIP / SigLIP / any get_image/text_features model
``package.module:attribute``             your own encoder: a class, a factory or an instance
=====================================  ==============================================================

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

from ..errors import ConfigError, SnapbenchError

__all__ = ["ADAPTER_PREFIXES", "ENTRY_POINT_GROUP", "DescribedEncoder", "describe", "plugin_names", "resolve"]

ENTRY_POINT_GROUP = "snapbench.encoders"
ADAPTER_PREFIXES = ("sentence-transformers:", "open_clip:", "hf:")
_MODULE_ATTR = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
_MODALITIES = ("image", "text")


def plugin_names() -> list[str]:
    """Names of the encoders installed packages declare under ``snapbench.encoders``."""
    return sorted({ep.name for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)})


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


class DescribedEncoder:
    """A user or plugin encoder, given ``name`` / ``fingerprint`` / ``modalities`` when it lacks them
    and checked on every call (an (n, d) finite float array for n inputs)."""

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
        for attr in ("joint", "dim"):
            if hasattr(inner, attr):
                setattr(self, attr, getattr(inner, attr))
        if callable(getattr(inner, "encode_queries", None)):
            self.encode_queries = self._encode_queries

    def _check(self, out: Any, n: int, kind: str) -> np.ndarray:
        a = np.asarray(out, dtype=np.float32)
        if a.ndim != 2 or a.shape[0] != n:
            raise ConfigError(f"encoder {self.name!r}: encode_{kind}s returned shape {a.shape} for {n} inputs (want (n, d))")
        if n and not np.isfinite(a).all():
            raise ConfigError(f"encoder {self.name!r}: encode_{kind}s returned NaN or infinite values")
        return a

    def _encode_queries(self, images: Sequence[np.ndarray], texts: Sequence[str]) -> np.ndarray:
        images, texts = list(images), list(texts)
        if len(images) != len(texts):
            raise ConfigError(f"encoder {self.name!r}: encode_queries needs as many texts as images ({len(texts)} vs {len(images)})")
        return self._check(self.inner.encode_queries(images, texts), len(images), "querie")

    def encode_images(self, images: Sequence[np.ndarray]) -> np.ndarray:
        if "image" not in self.modalities:
            raise ConfigError(f"encoder {self.name!r} does not encode images (modalities: {sorted(self.modalities)})")
        images = list(images)
        return self._check(self.inner.encode_images(images), len(images), "image")

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        if "text" not in self.modalities:
            raise ConfigError(f"encoder {self.name!r} does not encode texts (modalities: {sorted(self.modalities)})")
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
            raise ConfigError(f"encoder {spec!r} could not be built: {type(exc).__name__}: {exc}") from exc
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
            raise ConfigError(f"encoder {spec!r}: no module named {module_name!r} (not installed, not in {cwd})") from None
        raise ConfigError(f"encoder {spec!r}: importing {module_name!r} failed: {exc}") from None
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


def resolve(spec: str, registry: dict[str, Callable[..., Any]], kwargs: dict[str, Any]) -> Any:
    """Build the encoder a spec string names (see the module docstring for the forms)."""
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError(f"encoder spec must be a non-empty string, got {spec!r}")
    spec = spec.strip()
    if spec in registry:
        return DescribedEncoder(_instantiate(registry[spec], spec, kwargs), spec)
    prefix, _, rest = spec.partition(":")
    if spec.startswith(ADAPTER_PREFIXES):
        if not rest:
            raise ConfigError(f"encoder {spec!r}: give a model name or path after {prefix + ':'!r}")
        if prefix == "hf":
            from .hf import HFEncoder

            return HFEncoder(rest, **kwargs)
        if prefix == "sentence-transformers":
            from .st import SentenceTransformersEncoder

            return SentenceTransformersEncoder(rest, **kwargs)
        from .openclip import OpenClipEncoder

        if rest.startswith(("hf-hub:", "local-dir:")):  # OpenCLIP's own schemes: the weights come with the name
            return OpenClipEncoder(rest, None, **kwargs)
        arch, _, pretrained = rest.partition(":")
        return OpenClipEncoder(arch, pretrained or None, **kwargs)
    eps = [ep for ep in metadata.entry_points(group=ENTRY_POINT_GROUP) if ep.name == spec]
    if eps:
        return DescribedEncoder(_instantiate(eps[0].load(), spec, kwargs), spec)
    if _MODULE_ATTR.match(spec):
        return DescribedEncoder(_instantiate(_import_attribute(spec), spec, kwargs), spec)
    known = sorted(set(registry) | set(plugin_names()))
    raise ConfigError(
        f"unknown encoder {spec!r}; use a registered or plugin name ({', '.join(known)}), "
        "'sentence-transformers:NAME', 'open_clip:ARCH[:PRETRAINED]', 'hf:NAME_OR_PATH' or 'package.module:attribute'"
    )


def describe(encoder: Any) -> str:
    """One line naming an encoder and what it encodes."""
    mods = "+".join(sorted(getattr(encoder, "modalities", ()))) or "?"
    return f"{getattr(encoder, 'name', type(encoder).__name__)} ({mods})"
