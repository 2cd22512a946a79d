"""Extension points as tables: name -> entry, where an unknown name is an error listing the known ones.

Operators, dataset loaders, encoder adapters, metric families, fusion baselines and engines are each
one :class:`Table`.  Built-ins are registered by the module that implements them; users add their
own with :meth:`Table.register` (or through an entry point group, loaded on first use).  A lookup
never falls back to a default: ``get("opencilp")`` is an error with the close names, not OpenCLIP.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from .errors import ConfigError
from .validate import unknown_name

__all__ = ["Table"]

T = TypeVar("T")


class Table(Generic[T]):
    """A named table of entries of one kind (``what``: "image operator", "dataset format", ...).

    ``param`` is the parameter that selects an entry (for the error messages); ``entry_points``
    an optional entry point group whose plugins are added, on first lookup, under their names.
    """

    def __init__(self, what: str, *, param: str | None = None, entry_points: str | None = None) -> None:
        self.what = what
        self.param = param
        self.entry_points = entry_points
        self._entries: dict[str, T] = {}
        self._aliases: dict[str, str] = {}
        self._plugins_loaded = entry_points is None
        self._loaders: list[Callable[[], None]] = []

    def register(self, name: str, entry: T, *, aliases: tuple[str, ...] = (), replace: bool = False) -> T:
        """Add ``entry`` under ``name`` (and ``aliases``); an existing name needs ``replace=True``."""
        for key in (name, *aliases):
            if (key in self._entries or key in self._aliases) and not replace:
                # a registration (library code, a plugin) clashes: the fix is replace=, not the selecting option
                raise ConfigError(f"{self.what} {key!r} is already registered (pass replace=True to replace it)",
                                  param="replace")
        self._entries[name] = entry
        for a in aliases:
            self._aliases[a] = name
        return entry

    def unregister(self, name: str) -> None:
        """Remove ``name`` and its aliases (an unknown name is an error)."""
        key = self.canonical(name)
        del self._entries[key]
        self._aliases = {a: n for a, n in self._aliases.items() if n != key}

    def on_first_use(self, loader: Callable[[], None]) -> None:
        """Call ``loader`` (which registers the built-ins) before the first lookup."""
        self._loaders.append(loader)

    def _load(self) -> None:
        while self._loaders:
            self._loaders.pop(0)()
        if not self._plugins_loaded:
            self._plugins_loaded = True
            from importlib import metadata

            for ep in metadata.entry_points(group=self.entry_points):
                if ep.name not in self._entries:
                    self._entries[ep.name] = ep.load()

    def canonical(self, name: str) -> str:
        """The registered name ``name`` stands for (itself or the name it is an alias of)."""
        self._load()
        if name in self._entries:
            return name
        if name in self._aliases:
            return self._aliases[name]
        known = sorted(self._entries)
        raise ConfigError(unknown_name(self.what, name, known, among=known + sorted(self._aliases)), param=self.param)

    def get(self, name: str) -> T:
        """The entry registered as ``name`` (or an alias of it)."""
        return self._entries[self.canonical(name)]

    def __getitem__(self, name: str) -> T:
        return self.get(name)

    def names(self) -> list[str]:
        """Registered names, in registration order."""
        self._load()
        return list(self._entries)

    def items(self) -> list[tuple[str, T]]:
        self._load()
        return list(self._entries.items())

    def __contains__(self, name: object) -> bool:
        self._load()
        return name in self._entries or name in self._aliases

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def __repr__(self) -> str:
        return f"Table({self.what!r}, {len(self._entries)} entries)"
