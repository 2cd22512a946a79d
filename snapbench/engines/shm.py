"""Shared-memory blocks that carry query variants from local workers to the parent, and their cleanup.

A local worker of ``snapbench run`` returns each variant image in a POSIX shared-memory block named
``snapbench<parent pid>_<12 hex>`` instead of pickling it through the pool's pipe (see
:func:`snapbench.pipeline.sources.generate_sources_shared`); the parent copies and frees it.  Blocks
the parent never took (a Ctrl-C while workers finish their tasks, a ``kill -9``) would stay in
``/dev/shm`` until reboot, so:

* :func:`cleanup_shared` wraps every pool: it frees stale blocks first, installs SIGTERM / SIGHUP
  handlers (they unwind the stack like Ctrl-C does) and an ``atexit`` hook, and on the way out
  frees every block named after this process, whatever ended the pool;
* :func:`remove_stale_shared` frees the blocks of processes that no longer exist (a parent killed
  with ``kill -9`` can clean nothing); every ``snapbench`` command calls it when it starts.

Linux only (``/dev/shm``); elsewhere these are no-ops.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

__all__ = ["SHM_PREFIX", "block_name", "cleanup_shared", "remove_own_shared", "remove_stale_shared"]

SHM_PREFIX = "snapbench"
_SHM_RE = re.compile(rf"^{SHM_PREFIX}(\d+)_[0-9a-f]{{12}}$")
_SHM_DIR = Path("/dev/shm")
_atexit_registered = False


def block_name(parent_pid: int, token: str) -> str:
    """The name of a block written for the process ``parent_pid`` (``token``: 12 hex digits)."""
    return f"{SHM_PREFIX}{int(parent_pid)}_{token}"


def _blocks() -> Iterator[tuple[Path, int]]:
    if not _SHM_DIR.is_dir():
        return
    try:
        entries = list(_SHM_DIR.iterdir())
    except OSError:
        return
    for entry in entries:
        m = _SHM_RE.match(entry.name)
        if m:
            yield entry, int(m[1])


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
    """Free the blocks of processes that no longer exist; returns how many were freed."""
    return sum(_unlink(entry) for entry, pid in _blocks() if pid != os.getpid() and not _alive(pid))


def remove_own_shared() -> int:
    """Free every block named after this process (its workers have stopped); returns how many."""
    me = os.getpid()
    return sum(_unlink(entry) for entry, pid in _blocks() if pid == me)


def _raise_exit(signum: int, _frame: object) -> None:
    # unwind like Ctrl-C does, so pools shut down and `finally` blocks free the blocks
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def cleanup_shared() -> Iterator[None]:
    """Free stale blocks now and this process's blocks on the way out (see the module docstring).

    SIGTERM and SIGHUP handlers are installed only where none is (the default action), from the
    main thread, and restored afterwards.
    """
    global _atexit_registered
    remove_stale_shared()
    if not _atexit_registered:
        atexit.register(remove_own_shared)  # a safety net: e.g. an exit while the pool still ran
        _atexit_registered = True
    saved: dict[int, object] = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)):
            if sig is not None and signal.getsignal(sig) is signal.SIG_DFL:
                saved[sig] = signal.signal(sig, _raise_exit)
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
        remove_own_shared()
