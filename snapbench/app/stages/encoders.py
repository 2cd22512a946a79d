"""The encoders of a run or an encode: opened from a spec (in this process or as Ray actors), wrapped in
the embedding cache when that pays, closed at the end; and the folder names of a several-encoder run.

The embedding cache (:class:`snapbench.models.CachedEncoder`) holds every encoder with a ``fingerprint``
by default, except a ``cheap`` one (``toy``: computing its features costs less than reading them back),
which is cached only when asked (``use_cache=True``, or a ``cache_dir`` given).  Its folder is
``cache_dir``, else ``$SNAPBENCH_CACHE``, else ``~/.cache/snapbench``; commands print it once.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...core.errors import ConfigError, arg

__all__ = ["close_encoder", "encoder_label", "open_encoder", "run_names"]

_SAFE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def open_encoder(encoder: str | Any, *, device: str | None = None, batch_size: int | None = None, engine: str = "local",
                 actors: int = 0, address: str | None = None, workers: int = 1, use_cache: bool | None = None,
                 cache_dir: str | os.PathLike | None = None, progress: bool = True) -> tuple[Any, str | None]:
    """``(encoder, note)``: the encoder a spec names (an encoder object is used as it is, never cached),
    on ``actors`` Ray actors when ``engine="ray"`` and ``actors > 0``, wrapped in the embedding cache
    per the module docstring; ``note`` says why an encoder asked to be cached is not (else ``None``):
    the callers warn with it.  ``progress=False`` hides the model libraries' loading bars too."""
    if not isinstance(encoder, str):
        return encoder, None
    from ...models import load_encoder
    from ...models.loading import quiet_loading
    from ...store.cache import CachedEncoder

    if engine == "ray" and actors > 0:
        from ...engines.ray_encode import RayEncoderPool

        enc = RayEncoderPool(encoder, actors=actors, device=device, batch_size=batch_size, address=address, workers=workers)
    else:
        with quiet_loading(not progress):
            enc = load_encoder(encoder, device=device, batch_size=batch_size)
    wanted = use_cache if use_cache is not None else (cache_dir is not None or not getattr(enc, "cheap", False))
    if not wanted:
        return enc, None
    if not getattr(enc, "fingerprint", None):
        return enc, f"encoder {encoder!r} has no fingerprint: its embeddings are not cached"
    return CachedEncoder(enc, cache_dir), None


def close_encoder(enc: Any) -> None:
    """Release what an encoder holds beyond memory (a Ray encoder pool: its actors and private Ray)."""
    close = getattr(enc, "close", None) or getattr(getattr(enc, "encoder", None), "close", None)
    if callable(close):
        close()


def encoder_label(encoder: str | Any, loaded: Any = None) -> str:
    """The encoder as run.json records it: its spec string, or the name of an encoder object."""
    if isinstance(encoder, str):
        return encoder
    return str(getattr(loaded if loaded is not None else encoder, "name", type(encoder).__name__))


def _derived_name(encoder: str | Any) -> str:
    """A folder name from a spec: ``hf:openai/clip-vit-base-patch32`` -> ``hf-openai-clip-vit-base-patch32``;
    a path keeps its last two parts; every character outside ``[A-Za-z0-9._-]`` becomes ``-``."""
    text = encoder if isinstance(encoder, str) else str(getattr(encoder, "name", None) or type(encoder).__name__)
    prefix, colon, rest = text.partition(":")
    if colon and ("/" in rest or os.sep in rest):
        rest = "-".join(Path(rest).parts[-2:])
        text = f"{prefix}-{rest}"
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")[:100].strip("-.")
    return name or "encoder"


def run_names(encoders: Sequence[str | Any], names: Sequence[str] | None = None) -> list[str]:
    """The folder of each encoder of a several-encoder run: ``names`` (one per encoder, in order) or
    derived from the specs (made unique with ``-2``, ``-3``... when two specs give one name).  Without
    ``names`` one spec string given twice is a :class:`ConfigError` (the two runs would be the same)."""
    if names is not None:
        names = [str(n) for n in names]
        if len(names) != len(encoders):
            raise ConfigError(f"needs one name per encoder: {len(names)} for {len(encoders)} encoders", param="name")
        for n in names:
            if not _SAFE.match(n) or n in (".", ".."):
                raise ConfigError(f"{n!r} is not a folder name (letters, digits, '.', '_', '-'; at most 100)",
                                  param="name")
        dup = next((n for n in names if names.count(n) > 1), None)
        if dup is not None:
            raise ConfigError(f"{dup!r} names two encoders; each {arg('name')} must be unique", param="name")
        return names
    specs = [e for e in encoders if isinstance(e, str)]
    twice = next((e for e in specs if specs.count(e) > 1), None)
    if twice is not None:  # the same model twice is the same run twice (a slip, or a determinism check)
        raise ConfigError(f"{twice!r} is given twice: the runs would be the same; give each encoder a "
                          f"{arg('name')} to run it twice anyway", param="encoder")
    out: list[str] = []
    for enc in encoders:
        base = _derived_name(enc)
        name, k = base, 2
        while name in out:
            name, k = f"{base}-{k}", k + 1
        out.append(name)
    return out
