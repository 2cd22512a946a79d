"""Memory operators keep from one call to the next: per-thread scratch arrays (:func:`scratch`) and
caches of computed tables bounded by bytes (:class:`BytesLRU`).

An operator's temporaries (a 4-channel copy for a warp, a BGR copy for the JPEG encoder) are as
large as the image.  Allocated afresh on every call they cost more than the work done on them: glibc
hands large freed blocks back to the kernel, and the next call page-faults its new block in again
(measured on a 1024x768 image: a 4-channel warp 1.4 ms with its buffers kept, 4.5 ms when they are
allocated per call).  Keeping one scratch array per (thread, purpose) for the last image size seen
removes those faults; the contents are undefined between calls and never leave the operator (every
operator still returns a freshly allocated image).  Arrays above :data:`_SCRATCH_MAX_BYTES` are not
kept, so a very large photo does not pin its temporaries in memory.

Tables an operator derives from (image size, parameters) -- remap maps, overlay layers -- are cached
by bytes, not by entries: an entry's size grows with the image (a 1024x768 lens map pair is ~4.7 MB,
a 12-megapixel photo's ~72 MB), and a severity-target search tries many parameters, so a count bound
let a worker hold gigabytes.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from typing import Any

import numpy as np

__all__ = ["BytesLRU", "array_bytes", "scratch"]

#: Largest scratch array kept between calls (a 12-megapixel RGBA frame is 48 MiB).
_SCRATCH_MAX_BYTES = 64 * 2**20

_local = threading.local()


def scratch(purpose: str, shape: tuple[int, ...], dtype: type = np.uint8) -> np.ndarray:
    """A C-contiguous array of ``shape`` and ``dtype`` for ``purpose``, reused by this thread while
    the shape stays the same.  Its contents are whatever the previous user left."""
    arrays = getattr(_local, "arrays", None)
    if arrays is None:
        arrays = _local.arrays = {}
    arr = arrays.get(purpose)
    if arr is not None and arr.shape == tuple(shape) and arr.dtype == dtype:
        return arr
    arr = np.empty(shape, dtype)
    if arr.nbytes <= _SCRATCH_MAX_BYTES:
        arrays[purpose] = arr
    else:
        arrays.pop(purpose, None)
    return arr


def array_bytes(value: Any) -> int:
    """Bytes of the numpy arrays in ``value`` (an array, or nested tuples / lists of them and scalars)."""
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if isinstance(value, (tuple, list)):
        return sum(array_bytes(v) for v in value)
    return 0


class BytesLRU:
    """A thread-safe least-recently-used cache whose entries together hold at most ``max_bytes``
    (measured by ``size_of``, default :func:`array_bytes`); a single entry larger than that is
    computed and returned, not kept.  Values are shared between callers: make arrays read-only."""

    def __init__(self, max_bytes: int, size_of: Callable[[Any], int] = array_bytes) -> None:
        self.max_bytes, self.size_of = int(max_bytes), size_of
        self._entries: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._lock = threading.Lock()  # operators are public API and may run in threads
        self.nbytes = 0

    def get(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """The value cached under ``key``, or ``compute()`` (kept if it fits)."""
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None:
                self._entries.move_to_end(key)
                return hit[0]
        value = compute()  # outside the lock: two threads may both compute a missing entry
        size = int(self.size_of(value))
        with self._lock:
            if size <= self.max_bytes and key not in self._entries:
                self._entries[key] = (value, size)
                self.nbytes += size
                while self.nbytes > self.max_bytes:
                    _, (_, dropped) = self._entries.popitem(last=False)
                    self.nbytes -= dropped
        return value

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.nbytes = 0

    def __contains__(self, key: Hashable) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def keys(self) -> Iterator[Hashable]:
        """The keys, least recently used first (a snapshot)."""
        with self._lock:
            return iter(list(self._entries))
