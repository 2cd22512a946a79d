"""Progress bars on stderr (rich), shared by every long command; a no-op when disabled (--no-progress)."""

from __future__ import annotations

from typing import Any

__all__ = ["ProgressDisplay"]


class ProgressDisplay:
    """A rich progress display on stderr, or nothing."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.p = None

    def __enter__(self) -> "ProgressDisplay":
        if self.enabled:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            from .console import stderr_console

            self.p = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                              TimeElapsedColumn(), TimeRemainingColumn(), console=stderr_console())
            self.p.__enter__()
        return self

    def add(self, description: str, total: int) -> Any:
        return self.p.add_task(description, total=total) if self.p else None

    def advance(self, task: Any, n: int = 1) -> None:
        if self.p is not None and task is not None:
            self.p.advance(task, n)

    def __exit__(self, *exc: Any) -> None:
        if self.p is not None:
            self.p.__exit__(*exc)
