"""The rich consoles every command prints through (tables on stdout; notes, spinners and progress bars on
stderr): a closed pipe is a ``BrokenPipeError``, as for ``print``.

rich turns a write to a closed pipe (``snapbench evaluate ... | head -2``) into ``SystemExit(1)``
(``Console.on_broken_pipe``), which would bypass :func:`snapbench.cli.guarded` -- the one place a
reader that went away becomes a quiet exit 0 -- and make a command whose outputs were all written
look failed (exit 1 means "nothing was measured" for ``evaluate``).  Library callers get what
``print`` gives them: the exception.
"""

from __future__ import annotations

import errno
import functools
from typing import Any

__all__ = ["stderr_console", "stdout_console"]


@functools.lru_cache(maxsize=1)
def _console_class() -> type:
    from rich.console import Console

    class PipeConsole(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True  # nothing more is written by this console
            raise BrokenPipeError(errno.EPIPE, "Broken pipe")

    return PipeConsole


def stdout_console(**kwargs: Any) -> Any:
    """A ``rich.console.Console`` (``kwargs`` as for it) whose closed pipe raises ``BrokenPipeError``."""
    return _console_class()(**kwargs)


def stderr_console(**kwargs: Any) -> Any:
    """The same console on stderr (notes, rules, status spinners, progress bars): ``2>&1 | head -1``
    closes stderr's pipe too, and rich would turn that into ``SystemExit(1)`` as well."""
    return stdout_console(stderr=True, **kwargs)
