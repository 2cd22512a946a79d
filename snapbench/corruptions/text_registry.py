"""The text-operator table: one :class:`TextOperator` record per operator (a :class:`~snapbench.core.registry.Table`).

Built-ins register themselves when :mod:`.text` is imported; users call
:func:`register_text_operator`; installed packages add operators through the entry point group
``snapbench.text_operators`` (:mod:`.plugins`), loaded on the first lookup.  A built-in named in
:data:`snapbench.core.conditions.TEXT_OPERATORS` without a registered implementation is an error at
every lookup, never a silent gap in a run.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..core import conditions as _conditions
from ..core.errors import ConfigError
from ..core.registry import Table
from .plugins import TEXT_GROUP, load_operator_plugins, plugin_failure

__all__ = [
    "TextOperator",
    "TextOperatorFn",
    "add_text_operator",
    "get_text_operator",
    "register_text_operator",
    "restore_text_operators",
    "text_aliases",
    "text_operator",
    "text_operators",
    "unregister_text_operator",
    "user_text_operators",
]

Span = tuple[int, int]
TextOperatorFn = Callable[[str, Span, "np.random.Generator | None"], tuple[str, dict[str, Any]]]
"""A text operator: ``fn(text, (start, end) of the entity, rng) -> (new_text, params)``; ``rng`` is
``None`` only for operators registered with ``random=False``."""

_NAME_RE = re.compile(r"^[A-Za-z0-9_.\-]+$")
_BUILTIN_MODULE = f"{__package__}.text"


@dataclass(frozen=True)
class TextOperator:
    """A registered text corruption: the record of the text-operator table.

    ``fn(text, span, rng) -> (new_text, params)``; ``random=False`` for an operator that draws
    nothing (it gets ``rng=None`` and a single attempt); ``aliases`` are other names condition ids
    may use; ``origin`` is ``"builtin"``, ``"user"`` or ``"plugin"``.  A plugin's entry point may name
    such a record directly.
    """

    name: str
    fn: TextOperatorFn
    random: bool = True
    doc: str = field(default="", compare=False)
    aliases: tuple[str, ...] = ()
    origin: str = "user"


_TABLE: Table[TextOperator] = Table("text operator")


def add_text_operator(op: TextOperator, *, replace: bool = False) -> TextOperator:
    """Add a record to the table (validated; see :func:`register_text_operator`)."""
    for n in (op.name, *op.aliases):
        if not isinstance(n, str) or not _NAME_RE.match(n):
            raise ConfigError(f"text operator name {n!r} must match [A-Za-z0-9_.-]+ (it appears in condition ids)",
                              param="name")
    if not callable(op.fn):
        raise ConfigError(f"text operator {op.name!r}: fn must be a callable", param="fn")
    _TABLE.register(op.name, op, aliases=op.aliases, replace=replace)
    return op


def register_text_operator(
    name: str, *, replace: bool = False, random: bool = True, aliases: tuple[str, ...] = ()
) -> Callable[[TextOperatorFn], TextOperatorFn]:
    """Decorator registering ``fn(text, span, rng) -> (new_text, params)`` as text operator ``name``.

    ``span`` is the entity's ``(start, end)``; ``rng`` a seeded ``numpy.random.Generator`` (one per
    attempt); ``params`` must be JSON-serialisable.  Returning ``text`` unchanged makes the caller
    retry with the next attempt's generator; raise :class:`~.text.TextCorruptionError` when no edit
    is possible at all.  An operator that draws nothing is registered with ``random=False``: it gets
    ``rng=None`` (deriving a generator costs more than most edits) and a single attempt, since a
    retry would give the same output.  Re-registering a name needs ``replace``.

    Operators registered at run time are shipped to ``run_corruption``'s worker processes by
    pickling ``fn``: use a module-level function or a picklable callable object (no lambdas or
    closures) if you run with ``workers > 1``.
    """
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise ConfigError(f"text operator name {name!r} must match [A-Za-z0-9_.-]+ (it appears in condition ids)",
                          param="name")

    def _register(fn: TextOperatorFn) -> TextOperatorFn:
        origin = "builtin" if getattr(fn, "__module__", None) == _BUILTIN_MODULE else "user"
        add_text_operator(TextOperator(name, fn, random=bool(random), doc=(getattr(fn, "__doc__", None) or "").strip(),
                                       aliases=tuple(aliases), origin=origin), replace=replace)
        return fn

    return _register


def _load_plugins() -> None:
    load_operator_plugins(TEXT_GROUP, record_type=TextOperator,
                          add=lambda op: add_text_operator(dataclasses.replace(op, origin="plugin"), replace=True),
                          get=lambda n: _TABLE.get(n) if n in _TABLE else None)


_TABLE.on_first_use(_load_plugins)


def text_operator(name: str) -> TextOperator:
    """The record of text operator ``name`` (or an alias of it); :class:`ConfigError` listing the
    known names otherwise (or, for a plugin's operator, why the plugin did not load)."""
    if name not in _TABLE and (why := plugin_failure(TEXT_GROUP, name)) is not None:
        raise ConfigError(f"text operator {name!r} is not available: {why}")
    return _TABLE.get(name)


def get_text_operator(name: str) -> TextOperatorFn:
    """The registered function for ``name`` (see :func:`text_operator` for the errors)."""
    return text_operator(name).fn


def text_operators() -> tuple[str, ...]:
    """Registered operator names: the eight built-ins in SPEC order, then the others by name."""
    names = _TABLE.names()
    missing = [n for n in _conditions.TEXT_OPERATORS if n not in names]
    if missing:
        raise ConfigError(f"built-in text operator(s) {', '.join(missing)} (snapbench.core.conditions.TEXT_OPERATORS) "
                          "have no registered implementation; the installation is incomplete")
    return tuple(_conditions.TEXT_OPERATORS) + tuple(sorted(n for n in names if n not in _conditions.TEXT_OPERATORS))


def text_aliases() -> dict[str, str]:
    """alias -> operator name, for every registered alias."""
    return {a: op.name for _, op in _TABLE.items() for a in op.aliases}


def user_text_operators() -> list[TextOperator]:
    """The operators not registered by snapbench's own module (run time and plugins).

    ``run_corruption`` ships this snapshot to its worker processes (which start fresh and know only
    the built-ins); :func:`restore_text_operators` re-registers it there.
    """
    return [op for _, op in _TABLE.items() if op.origin != "builtin"]


def unregister_text_operator(name: str) -> None:
    """Remove a user-registered operator; the eight built-ins cannot be removed."""
    op = _TABLE.get(name) if name in _TABLE else None
    if op is None or op.origin == "builtin" or name in _conditions.TEXT_OPERATORS:
        raise ConfigError(f"text operator {name!r} is not a user-registered operator", param="name")
    _TABLE.unregister(name)


def restore_text_operators(snapshot: list[TextOperator]) -> None:
    """Register a :func:`user_text_operators` snapshot (replacing same-named registrations)."""
    for op in snapshot:
        add_text_operator(op, replace=True)
