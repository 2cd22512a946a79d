"""One error family for everything snapbench refuses.

Every error caused by the user's input or environment (a malformed file, an unknown condition, an
option that makes no sense, an output folder that cannot be written) is a :class:`SnapbenchError`.
It is a ``ValueError`` so that ``except ValueError`` in user code keeps working.

An error carries what a reader needs to act on it:

* ``path`` -- the file or folder the problem is about (the message then reads ``"<path>: <problem>"``);
* ``param`` -- the parameter it is about (``"workers"``, ``"set_threshold"``);
* parameter *references* inside the message, written with :func:`arg`: the library shows them as
  Python names (``set_threshold``), the command line as its flags (``--set-threshold``), from one
  table in :mod:`snapbench.cli`.  No message is ever rewritten by searching its text.

::

    raise ConfigError(f"{arg('group_by')} needs {arg('tags')} (a tags file)", param="group_by")
    # library:  group_by needs tags (a tags file)
    # CLI:      error: --group-by needs --tags (a tags file)
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

__all__ = ["SnapbenchError", "InputError", "EvaluationInputError", "ConfigError", "OutputError", "arg", "in_words"]

# Private-use code points: they never occur in file names, ids or messages a user writes.
_OPEN, _CLOSE = "\ue000", "\ue001"
_REF = re.compile(f"{_OPEN}([A-Za-z_][A-Za-z0-9_]*){_CLOSE}")


def arg(name: str) -> str:
    """A reference to the parameter ``name`` inside an error message (rendered per audience)."""
    return f"{_OPEN}{name}{_CLOSE}"


def in_words(name: str) -> str:
    """A parameter as a file written for any reader names it (messages kept in files -- skips.jsonl,
    summary.json -- are read from the CLI and from Python alike): ``max_pixels`` -> "the max pixels setting".

    Pass it to :meth:`SnapbenchError.render` for a message that is stored rather than shown: neither a
    Python name nor a flag would be right for every reader."""
    return "the " + name.replace("_", " ") + " setting"


def _python_name(name: str) -> str:
    return name


class SnapbenchError(ValueError):
    """Base of every error snapbench raises for bad input, options or outputs.

    ``path`` is the file or folder the problem is about, ``param`` the parameter (both ``None`` when
    there is none), ``problem`` the message as written (with :func:`arg` references).
    ``str(err)`` is :meth:`render` with Python parameter names.
    """

    def __init__(self, problem: str, *, path: str | os.PathLike | None = None, param: str | None = None) -> None:
        self.path = None if path is None else os.fspath(path)
        self.param = param
        self.problem = str(problem)
        super().__init__(self.render())

    @property
    def params(self) -> list[str]:
        """Every parameter the error is about: ``param`` and those referenced in the message."""
        refs = _REF.findall(self.problem)
        return ([self.param] if self.param and self.param not in refs else []) + refs

    def render(self, name_of: Callable[[str], str] | None = None) -> str:
        """The message, with parameters named by ``name_of`` (default: their Python names)."""
        name = name_of or _python_name
        text = _REF.sub(lambda m: name(m[1]), self.problem)
        if self.param and _OPEN + self.param + _CLOSE not in self.problem:
            text = f"{name(self.param)}: {text}"
        if self.path is not None and not text.startswith(self.path):
            text = f"{self.path}: {text}"
        return text


class InputError(SnapbenchError):
    """An input file (query manifest, gallery, scores, qrels, embeddings...) is missing or malformed."""


class ConfigError(SnapbenchError):
    """An option or a combination of options is invalid (unknown condition, bad grid, seed mismatch...)."""


class EvaluationInputError(InputError):
    """Bad evaluation input (file, id, shape or value); the message names the file and the problem."""


class OutputError(SnapbenchError):
    """An output location cannot be used (a file where a folder is needed, no write permission...)."""


class ImageLoadError(InputError):
    """An image file could not be loaded; the message names the file and the problem."""


class ImageMissingError(ImageLoadError):
    """The image file does not exist."""


class ImageTooLargeError(ImageLoadError):
    """The image has more pixels than the limit (``max_pixels``)."""


class ImageUnreadableError(ImageLoadError):
    """The image file exists but its bytes cannot be read (a directory, no permission, an I/O error)."""


class CodecError(InputError):
    """Bytes or a file could not be decoded as (or an array encoded to) one of :data:`FORMATS`."""


class TextCorruptionError(InputError):
    """The operator could not produce a text that differs from the input."""


class EntityNotFoundError(InputError):
    """The entity is not in the question (or, with no entity given, no candidate word is; or the
    question is empty).  ``reason`` says which, as a clause a summary line can end with ("the entity
    is not in the question", "the question is empty and no entity was given", ...)."""

    def __init__(self, problem: str, *, reason: str = "the entity is not in the question", **kw) -> None:
        super().__init__(problem, **kw)
        self.reason = reason


class ManifestError(InputError):
    """A query manifest (input) or a run's manifest.jsonl (output) is malformed."""


class WorkerSetupError(RuntimeError):
    """A worker cannot run the task's operators (they are not registered in its process)."""


class RunConfigError(ConfigError):
    """An output folder holds a run this one may not resume (another fingerprint, or another command's)."""
