"""The one encoding loop of ``snapbench run`` and ``snapbench encode``: items -> batches -> the encoder.

Every call into an encoder goes through :func:`call_encoder`, so both commands fail the same way: an
exception of the user's model becomes an :class:`~snapbench.core.errors.InputError` saying which batch
failed (the cause chained), and an output that is not one ``(n, d)`` row per input is a
:class:`~snapbench.core.errors.ConfigError`.  :func:`encode_batches` encodes a sequence (loading each
batch's items just before it is encoded: memory grows with the batch, not with the sequence);
:class:`Batcher` collects items arriving one by one (query variants from the variant stream).
Both count, through a :class:`ZeroRows` tally, the all-zero embeddings the encoder returns (such a row
ties with every gallery item, so a broken encoder would otherwise pass as a bad model) and say it
once per kind of item, as a ``warning:`` with the count.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...core.errors import ConfigError, InputError, SnapbenchError

__all__ = ["RESUME_HINT", "Batcher", "ZeroRows", "call_encoder", "encode_batches"]

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
