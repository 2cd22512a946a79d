"""Operators from installed packages: the entry point groups ``snapbench.image_operators`` and
``snapbench.text_operators``.

A package adds an operator that every snapbench command can run (``snapbench corrupt --conditions
img/haze/s2``, ``--grid`` levels for it, ``snapbench conditions``) by declaring an entry point::

    # pyproject.toml of the plugin package
    [project.entry-points."snapbench.image_operators"]
    haze = "my_package.ops:HAZE"          # an ImageOperator record named "haze"
    [project.entry-points."snapbench.text_operators"]
    shout = "my_package.ops:SHOUT"        # a TextOperator record named "shout"

The entry point names either the operator's record (:class:`~.image.base.ImageOperator` /
:class:`~.text.TextOperator`, whose ``name`` must equal the entry point's) or anything in a
module that registers the operator under the entry point's name when imported.  Plugins are
loaded on the first lookup of an operator.  Decisions: a plugin that fails to load does not stop
runs that do not use it (a warning names it); asking for its operator is an error that says why
it is missing.  A plugin named like an operator already registered (a built-in, or one
registered at run time) is ignored with a warning: a package cannot silently replace
``motion_blur``.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable, Container, Sequence
from typing import Any

from ..core import conditions as _conditions
from ..core.errors import ConfigError
from ..core.registry import Table

__all__ = ["IMAGE_GROUP", "TEXT_GROUP", "OperatorTable", "load_operator_plugins", "plugin_failure",
           "plugin_failures"]

IMAGE_GROUP = "snapbench.image_operators"
TEXT_GROUP = "snapbench.text_operators"

# group -> {entry point name: why it is not available}
_FAILURES: dict[str, dict[str, str]] = {}


def plugin_failure(group: str, name: str) -> str | None:
    """Why the plugin operator ``name`` of ``group`` did not load (``None``: no such failure)."""
    return _FAILURES.get(group, {}).get(name)


def plugin_failures(group: str) -> dict[str, str]:
    """Every plugin operator of ``group`` that did not load, and why."""
    return dict(_FAILURES.get(group, {}))


def _entry_points(group: str) -> list[Any]:
    from importlib import metadata

    return list(metadata.entry_points(group=group))


def _load_one(ep: Any, record_type: type, add: Callable[[Any], Any], get: Callable[[str], Any]) -> None:
    try:
        obj = ep.load()
        if isinstance(obj, record_type):
            if obj.name != ep.name:
                raise ValueError(f"it names the {record_type.__name__} {obj.name!r}, not {ep.name!r}")
            add(obj)
        elif get(ep.name) is not None:
            add(get(ep.name))  # its module registered it on import: recorded as the plugin's
        else:
            raise ValueError(f"it names a {type(obj).__name__}, not a {record_type.__name__}, and importing it "
                             f"registers no operator {ep.name!r}")
    except Exception as exc:  # noqa: BLE001 - any error of a third-party package: reported, never fatal here
        why = f"the plugin entry point {ep.name} = {ep.value} ({ep.group}) failed to load: {type(exc).__name__}: {exc}"
        _FAILURES.setdefault(ep.group, {})[ep.name] = why
        warnings.warn(why, RuntimeWarning, stacklevel=2)


def load_operator_plugins(group: str, *, record_type: type, add: Callable[[Any], Any],
                          get: Callable[[str], Any]) -> None:
    """Load every entry point of ``group``.

    ``get(name)`` is the registered record ``name`` (``None``: none); ``add(record)`` registers a
    plugin's record (replacing a registration its own module made on import) with origin "plugin".
    """
    for ep in _entry_points(group):
        known = get(ep.name)
        if known is not None and known.origin == "plugin":
            continue  # already here (a worker that received the parent's plugins)
        if known is not None:
            warnings.warn(f"the plugin entry point {ep.name} = {ep.value} ({group}) is ignored: an operator named "
                          f"{ep.name!r} is already registered ({known.origin})", RuntimeWarning, stacklevel=2)
            continue
        _load_one(ep, record_type, add, get)


class OperatorTable(Table[Any]):
    """The table of one kind of operator (``what``: "text operator" / "image operator"), whose records
    (``record_type``) carry ``name``, ``aliases`` and ``origin``: the plugins of entry point ``group``
    are loaded on first use, and a lookup of a plugin's operator that failed to load says why.

    ``check(record)`` validates a record before it is added (and returns it as it is stored);
    ``builtins`` is the constant of :mod:`snapbench.core.conditions` that names the built-ins in the
    taxonomy's order (read at each use), all of which must be registered (``listed_in``: the constant
    the error names); ``fixed`` the names :meth:`remove` refuses (default: the built-ins), with
    ``fixed_note`` added to its message.
    """

    def __init__(self, what: str, record_type: type, *, group: str, check: Callable[[Any], Any], builtins: str,
                 listed_in: str | None = None, fixed: Container[str] | None = None, fixed_note: str = "") -> None:
        super().__init__(what)
        self.record_type, self.group, self.check = record_type, group, check
        self.builtins_name, self.listed_in = builtins, f"snapbench.core.conditions.{listed_in or builtins}"
        self.fixed, self.fixed_note = fixed, fixed_note
        self.on_first_use(self._load_plugins)

    @property
    def builtins(self) -> Sequence[str]:
        return getattr(_conditions, self.builtins_name)

    def _load_plugins(self) -> None:
        load_operator_plugins(self.group, record_type=self.record_type,
                              add=lambda op: self.add(dataclasses.replace(op, origin="plugin"), replace=True),
                              get=self.find)

    def add(self, op: Any, *, replace: bool = False) -> Any:
        """Add a record (validated by ``check``); returns the record as stored."""
        op = self.check(op)
        self.register(op.name, op, aliases=op.aliases, replace=replace)
        return op

    def find(self, name: str) -> Any:
        """The record ``name`` (or an alias of it); ``None`` when there is none."""
        return super().get(name) if name in self else None

    def get(self, name: str) -> Any:
        """The record ``name`` (or an alias of it); :class:`ConfigError` listing the known names
        otherwise (or, for a plugin's operator, why the plugin did not load)."""
        if name not in self and (why := plugin_failure(self.group, name)) is not None:
            raise ConfigError(f"{self.what} {name!r} is not available: {why}")
        return super().get(name)

    def check_builtins(self, names: Container[str]) -> None:
        """A :class:`ConfigError` when a built-in is not among ``names`` (the installation is incomplete)."""
        missing = [n for n in self.builtins if n not in names]
        if missing:
            raise ConfigError(f"built-in {self.what}(s) {', '.join(missing)} ({self.listed_in}) "
                              "have no registered implementation; the installation is incomplete")

    def ordered(self) -> list[str]:
        """Registered names: the built-ins in the taxonomy's order, then the others by name."""
        names = self.names()
        self.check_builtins(names)
        return list(self.builtins) + sorted(n for n in names if n not in self.builtins)

    def aliases(self) -> dict[str, str]:
        """alias -> operator name, for every registered alias."""
        return {a: op.name for _, op in self.items() for a in op.aliases}

    def user_operators(self) -> list[Any]:
        """The operators not registered by snapbench's own modules (run time and plugins), in
        registration order.

        ``run_corruption`` ships this snapshot to its worker processes, which start fresh (spawn) and
        would otherwise know only the built-ins; :meth:`restore` re-registers it there.
        """
        return [op for _, op in self.items() if op.origin != "builtin"]

    def restore(self, snapshot: list[Any]) -> None:
        """Register a :meth:`user_operators` snapshot (replacing same-named registrations)."""
        for op in snapshot:
            self.add(op, replace=True)

    def remove(self, name: str) -> None:
        """Remove a user-registered operator; built-ins cannot be removed."""
        op = self.find(name)
        if op is None or op.origin == "builtin" or name in (self.builtins if self.fixed is None else self.fixed):
            raise ConfigError(f"{self.what} {name!r} is not a user-registered operator{self.fixed_note}", param="name")
        self.unregister(name)
