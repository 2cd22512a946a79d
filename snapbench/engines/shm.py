"""Shared-memory blocks that carry query variants from local workers to the parent: the hand-off and its cleanup.

**The hand-off.**  A local worker of ``snapbench run`` returns a query's variant images in ONE POSIX
shared-memory block instead of pickling them through the pool's pipe (a 1024x768 query's 46 images
are ~108 MB; pickling them cost more than corrupting them).  See
:func:`snapbench.app.stages.sources.generate_sources_shared` for the task side.

* The parent's :class:`SharedBlocks` offers each task a free block (an :class:`Offer`).  The worker's
  :class:`BlockWriter` copies each image into the block as soon as it is made (the worker holds the
  block and one variant, never every variant), into the offered block when it is large enough and
  otherwise into a new one; it reports a :class:`Handoff` and, per image, its ``(offset, shape)``
  in the block.  An image that does not fit (an operator of the user's that enlarges the image)
  travels through the pipe instead.
* :meth:`SharedBlocks.take` maps each block once (``/dev/shm``, shared and writable) and returns
  the images as views into it: no copy.  The block is offered again once the last view of that
  result is released (:class:`_Lease`), so nothing the parent still holds is overwritten.
* Blocks are recycled, and workers keep their last :data:`_MAPPED_MAX` blocks mapped, because fresh
  shared-memory pages cost a page fault per 4 KiB on both sides (a fresh mapping of a 1024x768
  query's block faulted for ~35 ms, as long as writing its images).

**Cleanup.**  Every block is named ``snapbench<parent pid>_<12 hex>`` (:func:`_block_name`).  Blocks
the parent never took (a Ctrl-C while workers finish their tasks, a ``kill -9``) would stay in
``/dev/shm`` until reboot, so:

* :func:`cleanup_shared` wraps every pool: it frees stale blocks first, makes SIGTERM / SIGHUP
  unwind the stack like Ctrl-C does (:mod:`snapbench.engines.signals`) and installs an ``atexit`` hook, and on the way out
  frees every block named after this process, whatever ended the pool (the blocks the parent
  knows are removed by :meth:`SharedBlocks.close` before that; views handed out stay valid);
* :func:`remove_stale_shared` frees the blocks of processes that no longer exist (a parent killed
  with ``kill -9`` can clean nothing); every ``snapbench`` command calls it when it starts.  It also
  frees the POSIX semaphores of the worker pools of such processes (:func:`named_semaphores`).

Linux only (``/dev/shm``); elsewhere the images are copied out of each block and the cleanup
functions are no-ops.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

__all__ = ["BlockWriter", "Handoff", "Offer", "SharedBlocks", "cleanup_shared",
           "named_semaphores", "remove_stale_shared"]

_SHM_PREFIX = "snapbench"
_SHM_RE = re.compile(rf"^{_SHM_PREFIX}(\d+)_[0-9a-f]{{12}}$")
_SHM_DIR = Path("/dev/shm")
_atexit_registered = False


def _block_name(parent_pid: int, token: str) -> str:
    """The name of a block written for the process ``parent_pid`` (``token``: 12 hex digits)."""
    return f"{_SHM_PREFIX}{int(parent_pid)}_{token}"


# ------------------------------------------------------------------------------------------------
# the hand-off: worker side
# ------------------------------------------------------------------------------------------------


class Offer(NamedTuple):
    """A free block the parent offers a task (``name`` None: none is free; the worker makes one)."""

    name: str | None = None
    size: int = 0


class Handoff(NamedTuple):
    """A worker's report: the block its images are in (None: it wrote none), that block's size, and
    the block it was offered (None: none)."""

    block: str | None
    size: int
    offered: str | None


#: Where an image is in its block: (byte offset, shape); uint8.
Span = tuple[int, tuple[int, ...]]

# Blocks this worker has mapped, newest last: a recycled block is written through the same mapping
# again, without page faults.
_MAPPED: dict[str, Any] = {}
_MAPPED_MAX = 8  # the parent keeps about 2 x workers + 2 blocks in use


def _attach(name: str, create_size: int = 0) -> Any:
    from multiprocessing import resource_tracker, shared_memory

    block = _MAPPED.pop(name, None)
    if block is None:
        block = shared_memory.SharedMemory(name=name, create=create_size > 0, size=create_size)
        # the parent owns every block; this process must not unlink it at exit
        resource_tracker.unregister(block._name, "shared_memory")  # noqa: SLF001 - stdlib attribute
    _MAPPED[name] = block
    while len(_MAPPED) > _MAPPED_MAX:  # a block the parent no longer offers (replaced, or the run ended)
        _MAPPED.pop(next(iter(_MAPPED))).close()
    return block


def _aligned(n: int) -> int:
    return -(-int(n) // 64) * 64  # 64-byte aligned starts


class BlockWriter:
    """A worker's side of the hand-off: images copied one by one into one shared-memory block."""

    def __init__(self, offer: Offer | None = None):
        self.offer = offer or Offer()
        self.block: Any = None
        self.used = 0

    def open(self, image_bytes: int, n_images: int) -> None:
        """Get a block for ``n_images`` images of at most ``image_bytes`` each: the offered one if it is
        large enough, else a new one."""
        need = n_images * _aligned(image_bytes)
        if self.offer.name is not None and need <= self.offer.size:
            self.block = _attach(self.offer.name)
        else:
            # named after the parent, so blocks a killed parent never freed can be found (remove_stale_shared)
            self.block = _attach(_block_name(os.getppid(), secrets.token_hex(6)), max(need, 1))

    def put(self, img: np.ndarray) -> Span | np.ndarray:
        """Copy ``img`` (uint8) into the block: its (offset, shape); the array itself if it does not fit,
        which then travels through the pipe."""
        if self.used + img.nbytes > self.block.size:
            return img
        off = self.used
        np.ndarray(img.shape, dtype=np.uint8, buffer=self.block.buf, offset=off)[...] = img
        self.used += _aligned(img.nbytes)
        return off, tuple(img.shape)

    def close(self) -> Handoff | None:
        """The report for the parent (None: no block used and none offered)."""
        if self.block is None:  # no image made: the offered block goes back unused
            return None if self.offer.name is None else Handoff(None, 0, self.offer.name)
        return Handoff(self.block.name.lstrip("/"), self.block.size, self.offer.name)


# ------------------------------------------------------------------------------------------------
# the hand-off: parent side
# ------------------------------------------------------------------------------------------------


class _Lease:
    """The arrays of one result over a block: numpy views made through this object keep it alive, so
    its finalizer runs when the last of them is released (numpy collapses chains of ndarray bases,
    never past an object like this one)."""

    def __init__(self, whole: np.ndarray):
        self.__array_interface__ = whole.__array_interface__
        self.whole = whole


class SharedBlocks:
    """The parent's shared-memory blocks that local workers return images in, recycled.

    Each task is offered a free block (:meth:`offer`); a result's images become arrays over its block
    (:meth:`take`).  Under /dev/shm each block is mapped once and the images are views into it (see
    the module docstring); a write into a view lands in the block, which only this process reads.
    Elsewhere the images are copied out and the block is free at once.  :meth:`close` (or leaving
    the ``with`` block) removes every block it knows; views handed out stay valid.
    """

    def __init__(self) -> None:
        self.sizes: dict[str, int] = {}
        self.maps: dict[str, np.ndarray] = {}
        self.free: list[str] = []
        self.folder = _SHM_DIR

    def __enter__(self) -> SharedBlocks:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def offer(self) -> Offer:
        """A free block for the next task (an empty offer when none is free)."""
        name = self.free.pop() if self.free else None
        return Offer(name, self.sizes.get(name, 0)) if name else Offer()

    def take(self, handoff: Handoff | None, images: dict[str, Any]) -> dict[str, Any]:
        """Replace the :data:`Span` values of ``images`` (in place) by arrays over the block of
        ``handoff``; arrays that came through the pipe stay as they are.  Returns ``images``."""
        if handoff is None:
            return images
        used, size, offered = handoff
        if used is None:
            self._release(offered)
            return images
        if offered is not None and offered != used:  # too small for this query: a larger one replaced it
            self._remove(offered)
        self.sizes[used] = size
        spans = {k: v for k, v in images.items() if isinstance(v, tuple)}
        if self.folder.is_dir():
            images.update(self._views(used, size, spans))
            return images
        from multiprocessing import shared_memory

        block = shared_memory.SharedMemory(name=used)
        try:
            for key, (off, shape) in spans.items():
                images[key] = np.ndarray(shape, np.uint8, buffer=block.buf, offset=off).copy()
        finally:
            block.close()
        self._release(used)
        return images

    def _views(self, name: str, size: int, spans: dict[str, Span]) -> dict[str, np.ndarray]:
        import weakref

        if name not in self.maps:
            import mmap

            with open(self.folder / name, "r+b") as fh:
                self.maps[name] = np.frombuffer(mmap.mmap(fh.fileno(), size), np.uint8)
        lease = _Lease(self.maps[name])
        whole = np.asarray(lease)
        out = {key: whole[off : off + int(np.prod(shape))].reshape(shape) for key, (off, shape) in spans.items()}
        weakref.finalize(lease, self._release, name)  # the last view gone: the block is free
        return out

    def _release(self, name: str | None) -> None:
        if name is not None and name in self.sizes:  # a block removed meanwhile is never offered again
            self.free.append(name)

    def _remove(self, name: str) -> None:
        self.sizes.pop(name, None)
        self.maps.pop(name, None)  # unmapped once no view is left
        if name in self.free:
            self.free.remove(name)
        if self.folder.is_dir():
            (self.folder / name).unlink(missing_ok=True)
            return
        from multiprocessing import shared_memory

        with contextlib.suppress(FileNotFoundError):
            shared_memory.SharedMemory(name=name).unlink()

    def close(self) -> None:
        """Remove every block this pool knows."""
        for name in list(self.sizes):
            self._remove(name)
        self.free.clear()


# ------------------------------------------------------------------------------------------------
# cleanup
# ------------------------------------------------------------------------------------------------


def _entries(pattern: re.Pattern[str]) -> Iterator[tuple[Path, int]]:
    """The entries of the shared-memory folder whose name ``pattern`` matches, with the process id
    (its first group) they are named after."""
    if not _SHM_DIR.is_dir():
        return
    try:
        entries = list(_SHM_DIR.iterdir())
    except OSError:
        return
    for entry in entries:
        m = pattern.match(entry.name)
        if m:
            yield entry, int(m[1])


def _blocks() -> Iterator[tuple[Path, int]]:
    return _entries(_SHM_RE)


def _unlink(entry: Path) -> int:
    try:
        entry.unlink()
        return 1
    except OSError:
        return 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # alive, another user's
    return True


def remove_stale_shared() -> int:
    """Free the blocks and pool semaphores (:func:`named_semaphores`) of processes that no longer
    exist; returns how many were freed.  Another live process's are never touched."""
    found = [*_blocks(), *_semaphores()]
    return sum(_unlink(entry) for entry, pid in found if pid != os.getpid() and not _alive(pid))


def _remove_own_shared() -> int:
    """Free every block named after this process (its workers have stopped); returns how many."""
    me = os.getpid()
    return sum(_unlink(entry) for entry, pid in _blocks() if pid == me)


@contextlib.contextmanager
def cleanup_shared() -> Iterator[None]:
    """Free stale blocks now and this process's blocks on the way out (see the module docstring).

    SIGTERM and SIGHUP unwind the stack like Ctrl-C (:func:`snapbench.engines.signals.stop_on_termination`,
    where no handler is set), so the blocks are freed then too.
    """
    global _atexit_registered
    from .signals import stop_on_termination

    remove_stale_shared()
    if not _atexit_registered:
        atexit.register(_remove_own_shared)  # a safety net: e.g. an exit while the pool still ran
        _atexit_registered = True
    try:
        with stop_on_termination():
            yield
    finally:
        _remove_own_shared()


# the semaphores of a worker pool, named after the process so a kill -9 leaves none for good
_SEM_RE = re.compile(rf"^sem\.mp-{_SHM_PREFIX}(\d+)-[0-9a-z_]+$")


def _semaphores() -> Iterator[tuple[Path, int]]:
    return _entries(_SEM_RE)


@contextlib.contextmanager
def named_semaphores() -> Iterator[None]:
    """Name the multiprocessing semaphores made inside the block after this process
    (``/dev/shm/sem.mp-snapbench<pid>-<random>`` instead of ``sem.mp-<random>``).

    A process pool's queues hold five POSIX semaphores, which multiprocessing's resource tracker
    unlinks if the process dies; ``kill -9`` of the whole process group kills the tracker too, and
    the semaphores would stay until reboot.  Named like the shared-memory blocks, they are freed by
    :func:`remove_stale_shared` (every ``snapbench`` command, once their process is gone).  Uses the
    ``semprefix`` that multiprocessing names semaphores with (a private setting of the current
    process): where it does not exist, the names stay multiprocessing's own."""
    from multiprocessing import process

    config = getattr(process.current_process(), "_config", None)
    if not isinstance(config, dict) or not isinstance(config.get("semprefix"), str):
        yield
        return
    previous = config["semprefix"]
    config["semprefix"] = f"{previous}-{_SHM_PREFIX}{os.getpid()}"
    try:
        yield
    finally:
        config["semprefix"] = previous
