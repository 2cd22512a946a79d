"""Worker processes of a corruption run: what they are sent at start-up and how they end.

Workers are started with the ``spawn`` context (no fork of a parent that holds threads, such as
rich's progress refresher; same behaviour on Linux, macOS and Windows).  Two consequences are
handled here:

* A spawned worker imports snapbench afresh and knows only the built-in operators.  Operators the
  user registered at run time (image or text, e.g. through the albumentations / nlpaug interop)
  are sent to it as a pickled snapshot (:func:`registrations_payload`) and re-registered by the
  worker initializer.  Their functions must therefore be picklable: module-level functions or
  picklable callable objects; anything else is refused up front with a hint to use ``workers=1``.
* Workers run on an engine (:mod:`snapbench.engines`): a local process pool, whose workers die
  with their parent and leave Ctrl-C to it, or Ray.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable

from ..core.conditions import Condition
from ..core.errors import ConfigError, arg
from .image import restore_image_operators, user_image_operators
from .text import restore_text_operators, user_text_operators

__all__ = ["registrations_payload", "restore_registrations", "setup_error"]

_setup_error: str | None = None


def registrations_payload(conditions: Iterable[Condition]) -> bytes:
    """Pickle the user registrations among the operators of ``conditions`` for the workers.

    Raises :class:`ConfigError` naming the operators when they cannot be pickled (a lambda, a
    closure, a function defined inside another one).
    """
    conditions = list(conditions)
    image_ops = {c.image_operator for c in conditions if c.image_operator}
    text_ops = {c.text_operator for c in conditions if c.text_operator}
    images = [op for op in user_image_operators() if op.name in image_ops]
    texts = [op for op in user_text_operators() if op.name in text_ops]
    try:
        return pickle.dumps((images, texts))
    except Exception as exc:  # noqa: BLE001 - pickling raises PicklingError, AttributeError, TypeError...
        names = [op.name for op in images] + [op.name for op in texts]
        raise ConfigError(
            f"operator(s) {', '.join(names)} registered at run time cannot be sent to worker processes "
            f"({type(exc).__name__}: {exc}); register a module-level function or a picklable callable "
            f"object, or set {arg('workers')} to 1", param="workers"
        ) from None


def setup_error() -> str | None:
    """Why this worker could not restore the parent's registrations (None when it could)."""
    return _setup_error


def restore_registrations(payload: bytes) -> None:
    """Worker initializer (any engine): re-register the parent's run-time operators from
    :func:`registrations_payload`; a failure is reported by the worker's first task, with a hint."""
    global _setup_error
    try:
        images, texts = pickle.loads(payload)  # our own bytes, from the parent process
        restore_image_operators(images)
        restore_text_operators(texts)
    except Exception as exc:  # noqa: BLE001 - reported by the first task, with a hint
        _setup_error = (
            f"a worker process could not restore the operators registered at run time "
            f"({type(exc).__name__}: {exc}); define them in an importable module, or set {arg('workers')} to 1"
        )
