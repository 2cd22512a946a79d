"""One error family for everything snapbench refuses.

Every error caused by the user's input or environment (a malformed file, an unknown condition, an
option that makes no sense, an output folder that cannot be written) is a :class:`SnapbenchError`.
It is a ``ValueError`` so that ``except ValueError`` in user code keeps working.  The message names
the file (or the query, or the option) and says what is wrong; library messages speak of
parameters, not CLI flags.  The command line turns any of them into ``error: <message>`` on stderr
and exit status 2, in one place (:func:`snapbench.cli.guarded`).
"""

from __future__ import annotations

import os

__all__ = ["SnapbenchError", "InputError", "ConfigError", "OutputError"]


class SnapbenchError(ValueError):
    """Base of every error snapbench raises for bad input, options or outputs.

    ``path`` is the file or folder the problem is about (``None`` when there is none); when given
    and the message does not already start with it, ``str(err)`` reads ``"<path>: <problem>"``.
    """

    def __init__(self, problem: str, *, path: str | os.PathLike | None = None) -> None:
        self.path = None if path is None else os.fspath(path)
        self.problem = str(problem)
        if self.path is not None and not self.problem.startswith(self.path):
            message = f"{self.path}: {self.problem}"
        else:
            message = self.problem
        super().__init__(message)


class InputError(SnapbenchError):
    """An input file (query manifest, gallery, scores, qrels, embeddings...) is missing or malformed."""


class ConfigError(SnapbenchError):
    """An option or a combination of options is invalid (unknown condition, bad grid, seed mismatch...)."""


class OutputError(SnapbenchError):
    """An output location cannot be used (a file where a folder is needed, no write permission...)."""
