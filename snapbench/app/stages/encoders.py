"""The encoders of a run or an encode: opened from a spec (in this process or as Ray actors), wrapped in
the embedding cache when that pays, closed at the end; and the folder names of a several-encoder run.

The embedding cache (:class:`snapbench.store.cache.CachedEncoder`) holds every encoder with a ``fingerprint``
by default, except a ``cheap`` one (``toy``: computing its features costs less than reading them back),
which is cached only when asked (``use_cache=True``, or a ``cache_dir`` given).  Its folder is
``cache_dir``, else ``$SNAPBENCH_CACHE``, else ``~/.cache/snapbench``; commands print it once.

The one encoding loop of ``snapbench run`` and ``snapbench encode``: items -> batches -> the encoder.

Every call into an encoder goes through :func:`call_encoder` (``snapbench stress``'s record texts too),
so every command fails the same way: an exception of the user's model becomes an
:class:`~snapbench.core.errors.InputError` saying which batch failed (the cause chained), and an output that is not one ``(n, d)`` row per input is a
:class:`~snapbench.core.errors.ConfigError`, as are NaN or infinite values (from any encoder, built-in
ones included), each named with the batch.  :func:`encode_batches` encodes a sequence (loading each
batch's items just before it is encoded: memory grows with the batch, not with the sequence);
:class:`Batcher` collects items arriving one by one (query variants from the variant stream).
Both count, through a :class:`ZeroRows` tally, the all-zero embeddings the encoder returns (such a row
ties with every gallery item, so a broken encoder would otherwise pass as a bad model) and say it
once per kind of item, as a ``warning:`` with the count.
"""

from __future__ import annotations

import os
import re
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ...core.errors import ConfigError, InputError, SnapbenchError, arg

__all__ = ['close_encoder', 'encoder_label', 'open_encoder', 'run_names', 'RESUME_HINT', 'Batcher', 'ZeroRows', 'call_encoder', 'encode_batches']

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
        from ...engines.ray import RayEncoderPool

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


#: The ``hint`` of a model failure inside a run folder (gallery and query encoding alike).
RESUME_HINT = "finished work is kept; rerun to resume"


class ZeroRows:
    """All-zero embedding rows an encoder returned, counted per kind of item (``what``: "gallery
    images", "query variants (text)" ...); :meth:`warn` says each count once and starts over."""

    def __init__(self) -> None:
        self.counts: dict[str, list[int]] = {}  # what -> [all-zero rows, rows]

    def add(self, what: str, out: np.ndarray) -> None:
        seen = self.counts.setdefault(what, [0, 0])
        seen[0] += int(np.count_nonzero(~np.any(out != 0, axis=1)))  # NaN rows are not zero rows
        seen[1] += int(out.shape[0])

    def warn(self) -> None:
        for what, (zero, total) in self.counts.items():
            if zero:
                warnings.warn(f"the encoder returned all-zero embeddings for {zero} of {total} {what} (a zero "
                              "vector scores 0 against every item: ties, arbitrary ranks); check the encoder", stacklevel=2)
        self.counts.clear()


def _encoder_words(fn: Callable[[list], Any]) -> str:
    """``"encoder 'x': encode_texts"`` for a bound method of a named encoder, else ``"the encoder"``."""
    name, method = getattr(getattr(fn, "__self__", None), "name", None), getattr(fn, "__name__", "")
    return f"encoder {name!r}: {method}" if name and method.startswith("encode_") else "the encoder"


def call_encoder(fn: Callable[[list], Any], items: list, what: str, *, hint: str = "",
                 zeros: ZeroRows | None = None) -> np.ndarray:
    """``fn(items)`` as a float32 ``(len(items), d)`` array (errors in the module docstring).

    ``hint`` ends the message of a failing model (e.g. that finished work is kept)."""
    try:
        out = np.asarray(fn(items), dtype=np.float32)
    except SnapbenchError:
        raise
    except Exception as exc:  # noqa: BLE001 - any failure of the user's model
        raise InputError(f"the encoder failed on a batch of {len(items)} {what}: {type(exc).__name__}: {exc}"
                         + (f" ({hint})" if hint else "")) from exc
    if out.ndim != 2 or out.shape[0] != len(items):
        raise ConfigError(f"the encoder returned an array of shape {out.shape} for a batch of {len(items)} {what} "
                          "(want one row per item)")
    if not np.isfinite(out).all():  # every encoder, built-in ones too: a NaN row would score 0 silently
        raise ConfigError(f"{_encoder_words(fn)} returned NaN or infinite values for a batch of {len(items)} {what}")
    if zeros is not None:
        zeros.add(what, out)
    return out


def encode_batches(fn: Callable[[list], Any], items: Sequence[Any], what: str, *, batch_size: int,
                   load: Callable[[Any], Any] | None = None, on_batch: Callable[[int], None] | None = None,
                   hint: str = "", zeros: ZeroRows | None = None) -> np.ndarray:
    """Encode ``items`` ``batch_size`` at a time (``load(item)`` first, per batch); ``on_batch(n)`` after
    each batch of ``n`` items.  Returns the ``(len(items), d)`` float32 embeddings.  All-zero rows are
    counted into ``zeros`` (the caller warns), or, without it, warned about at the end."""
    own = zeros is None
    zeros = ZeroRows() if zeros is None else zeros
    chunks = []
    for i in range(0, len(items), batch_size):
        part = list(items[i : i + batch_size])
        batch = [load(x) for x in part] if load is not None else part
        chunks.append(call_encoder(fn, batch, what, hint=hint, zeros=zeros))
        del batch
        if on_batch is not None:
            on_batch(len(part))
    if not chunks:
        raise InputError(f"no {what} to encode")
    if own:
        zeros.warn()
    return np.concatenate(chunks)


class Batcher:
    """Collect ``(row, source, item)`` triples and encode them ``batch_size`` at a time; each embedding
    goes to ``store(source, row, embedding)``.  :meth:`flush` encodes what is pending (a resume
    checkpoint flushes, so batches never cross one)."""

    def __init__(self, encode: Callable[[list], np.ndarray], batch_size: int,
                 store: Callable[[str, int, np.ndarray], None], what: str = "query variants", hint: str = "",
                 zeros: ZeroRows | None = None) -> None:
        self.encode, self.batch_size, self.store = encode, batch_size, store
        self.what, self.hint, self.zeros = what, hint, zeros
        self.pending: list[tuple[int, str, Any]] = []
        self.busy_s = 0.0  # time spent inside the encoder

    def add(self, row: int, source: str, item: Any) -> None:
        self.pending.append((row, source, item))
        if len(self.pending) >= self.batch_size:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        t0 = time.perf_counter()
        embs = call_encoder(self.encode, [p[2] for p in self.pending], self.what, hint=self.hint, zeros=self.zeros)
        self.busy_s += time.perf_counter() - t0
        for (row, source, _), e in zip(self.pending, embs):
            self.store(source, row, e)
        self.pending = []
