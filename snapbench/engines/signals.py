"""SIGTERM and SIGHUP stop snapbench the way Ctrl-C does: the stack unwinds, so pools shut down,
``finally`` blocks run and finished outputs stay; the exit status is the shell's ``128 + signal``
(143, 129).

:func:`stop_on_termination` installs the one handler: it raises :class:`Terminated`, a
:class:`SystemExit` (a library caller that does not catch it exits quietly with that status, as
Python would for the signal).  The CLI installs it around every command and prints the command's
interrupt line for it as for Ctrl-C (:func:`snapbench.cli.guarded`); the local worker pools
install it too (:func:`snapbench.engines.shm.cleanup_shared`), where no handler of the caller's is
set.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

__all__ = ["STOP_SIGNALS", "Terminated", "exit_status", "stop_on_termination"]

#: the signals that stop a command: Ctrl-C (KeyboardInterrupt) and the two handled here
STOP_SIGNALS = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n))
_SIGNALS = tuple(s for s in STOP_SIGNALS if s != signal.SIGINT)


class Terminated(SystemExit):
    """Raised in the main thread when SIGTERM or SIGHUP arrives; ``code`` is ``128 + signum``."""

    def __init__(self, signum: int):
        super().__init__(128 + int(signum))
        self.signum = int(signum)


def _raise_terminated(signum: int, _frame: object) -> None:
    raise Terminated(signum)


def exit_status(exc: BaseException) -> int:
    """The exit status of a run stopped by ``exc``: ``128 + signum`` for :class:`Terminated`, else 130
    (Ctrl-C)."""
    return int(exc.code) if isinstance(exc, Terminated) else 130


@contextlib.contextmanager
def stop_on_termination() -> Iterator[None]:
    """Inside the block, SIGTERM and SIGHUP raise :class:`Terminated`.

    Installed only from the main thread and only for a signal whose handler is the default one (a
    handler of the caller's, or an enclosing block's, is kept); restored on the way out."""
    saved: dict[int, object] = {}
    if threading.current_thread() is threading.main_thread():
        for sig in _SIGNALS:
            if signal.getsignal(sig) is signal.SIG_DFL:
                saved[sig] = signal.signal(sig, _raise_terminated)
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]
