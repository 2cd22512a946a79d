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

import warnings
from collections.abc import Callable
from typing import Any

__all__ = ["IMAGE_GROUP", "TEXT_GROUP", "load_operator_plugins", "plugin_failure", "plugin_failures"]

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
