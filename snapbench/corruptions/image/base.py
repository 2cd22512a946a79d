"""Image operator protocol and registry.

An operator is two functions, as in ImageNet-C-bar: ``sample(rng, level, shape) -> params`` draws
every random choice (offsets, placements, noise seeds) from a ``numpy.random.Generator`` and returns
the complete parameter dict that will be applied; ``apply(image, params) -> image`` is then a pure
function of the image and those parameters.  ``params`` is JSON-serialisable so it can be written
to the manifest ("the parameters actually applied").
"""

from __future__ import annotations

import copy
import difflib
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

import numpy as np

from ...conditions import IMAGE_OPERATORS, IMAGE_PRIMITIVES
from ...errors import ConfigError
from ...seeding import image_rng
from ..io import as_rgb_uint8
from .grid import DEFAULT_GRID, Grid

__all__ = [
    "ImageOperator",
    "CorruptedImage",
    "register_image_operator",
    "get_image_operator",
    "image_operators",
    "corrupt_image",
    "corrupt_image_with_params",
    "default_grid",
    "RegisteredImageOperator",
    "user_image_operators",
    "restore_image_operators",
    "unregister_image_operator",
    "image_operator_revisions",
]

#: built-in operator name -> its primitive, from the one table in :mod:`snapbench.conditions`.
BUILTIN_PRIMITIVE: dict[str, str] = {op: prim for prim, ops in IMAGE_PRIMITIVES.items() for op in ops}
_NAME_RE = re.compile(r"^[A-Za-z0-9_.\-]+$")
_LEVEL_RE = re.compile(r"^s?(\d+)$")

SampleFn = Callable[[np.random.Generator, Mapping[str, Any], tuple[int, int]], dict[str, Any]]
ApplyFn = Callable[[np.ndarray, Mapping[str, Any]], np.ndarray]


def _no_randomness(rng: np.random.Generator, level: Mapping[str, Any], shape: tuple[int, int]) -> dict[str, Any]:
    return dict(level)


@dataclass(frozen=True)
class ImageOperator:
    """A registered image corruption.

    ``primitive`` is one of degrade / transform / remove / add for the built-ins (fixed by
    :data:`snapbench.conditions.IMAGE_PRIMITIVES`), ``"custom"`` or the user's choice otherwise;
    ``changes_size`` is True only for operators whose meaning is a size change.  ``revision``
    (an integer >= 1) numbers the operator's algorithm: it goes up whenever the same parameters
    start producing other pixels, and runs record it so that a resume never mixes two revisions.
    """

    name: str
    apply: ApplyFn
    sample: SampleFn = _no_randomness
    primitive: str = "custom"
    changes_size: bool = False
    doc: str = field(default="", compare=False)
    revision: int = 1


@dataclass(frozen=True)
class CorruptedImage:
    image: np.ndarray
    operator: str
    severity: int
    params: dict[str, Any]


_REGISTRY: dict[str, ImageOperator] = {}
_CUSTOM_GRID: Grid = {}
# Names registered by the user (anything but the built-in modules' own registrations): shipped to
# worker processes by :func:`user_image_operators` / :func:`restore_image_operators`.
_USER: set[str] = set()
_BUILTIN_MODULES = frozenset(f"{__package__}.{m}" for m in ("degrade", "transform", "remove", "add"))


def register_image_operator(
    name: str,
    *,
    apply: ApplyFn | None = None,
    sample: SampleFn | None = None,
    primitive: str | None = None,
    changes_size: bool = False,
    grid: Mapping[int | str, Mapping[str, Any]] | None = None,
    replace: bool = False,
    revision: int = 1,
):
    """Register an operator; usable as a decorator on the ``apply`` function.

    ``primitive``: a built-in name's primitive is fixed by :data:`snapbench.conditions.IMAGE_PRIMITIVES`
    (the one source of built-in names and primitives); passing a different one is an error, and
    leaving it out takes it from there.  A new operator defaults to ``"custom"``.

    ``grid`` gives the default parameters per severity (``{1: {...}, 2: {...}}``, keys 1 / "1" /
    "s1").  A new operator must have one: an operator without levels could never be part of a run,
    and leaving it out silently is worse than refusing it here.  Built-in names take theirs from
    :data:`DEFAULT_GRID` unless ``grid`` replaces them.  Re-registering a name needs ``replace=True``.

    ``revision`` (default 1) numbers the algorithm: raise it when a change makes the same
    parameters produce other pixels.  ``snapbench corrupt`` and ``snapbench run`` record the
    revisions of their operators and refuse to resume a run made under other revisions.

    Operators registered at run time are shipped to ``run_corruption``'s worker processes by
    pickling ``apply`` and ``sample``: use module-level functions or picklable callable objects
    (no lambdas or closures) if you run with ``workers > 1``.
    """
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise ConfigError(f"image operator name {name!r} must match [A-Za-z0-9_.-]+ (it appears in condition ids)")
    fixed = BUILTIN_PRIMITIVE.get(name)
    if fixed is not None and primitive is not None and primitive != fixed:
        raise ConfigError(
            f"image operator {name!r} is a built-in {fixed!r} operator (snapbench.conditions.IMAGE_PRIMITIVES); "
            f"it cannot be registered as primitive {primitive!r}"
        )
    if isinstance(revision, bool) or not isinstance(revision, int) or revision < 1:
        raise ConfigError(f"image operator {name!r}: revision must be an integer >= 1, got {revision!r}")
    levels: dict[int, dict[str, Any]] | None = None
    if grid is not None:
        levels = _levels_of(name, grid)
    elif fixed is None:
        raise ConfigError(
            f"image operator {name!r} has no default levels: pass grid={{1: {{...}}, 2: {{...}}, ...}} "
            "(the parameters of each severity) when registering it"
        )

    def _register(apply_fn: ApplyFn) -> ApplyFn:
        if name in _REGISTRY and not replace:
            raise ConfigError(f"image operator {name!r} is already registered (pass replace=True)")
        _REGISTRY[name] = ImageOperator(
            name=name,
            apply=apply_fn,
            sample=sample or _no_randomness,
            primitive=primitive or fixed or "custom",
            changes_size=changes_size,
            doc=(getattr(apply_fn, "__doc__", None) or "").strip(),
            revision=revision,
        )
        if levels is not None:
            _CUSTOM_GRID[name] = levels
        else:
            _CUSTOM_GRID.pop(name, None)
        if getattr(apply_fn, "__module__", None) in _BUILTIN_MODULES and levels is None:
            _USER.discard(name)
        else:
            _USER.add(name)
        return apply_fn

    if apply is not None:
        return _register(apply)
    return _register


def _levels_of(name: str, grid: Mapping[Any, Mapping[str, Any]]) -> dict[int, dict[str, Any]]:
    if not isinstance(grid, Mapping) or not grid:
        raise ConfigError(f"image operator {name!r}: grid must map severities to parameter tables, got {grid!r}")
    out: dict[int, dict[str, Any]] = {}
    for level, params in grid.items():
        m = _LEVEL_RE.match(str(level))
        if not m or int(m[1]) < 1 or not isinstance(params, Mapping):
            raise ConfigError(
                f"image operator {name!r}: grid entry {level!r} must be a severity (1, '1' or 's1') "
                "mapped to a parameter table"
            )
        out[int(m[1])] = dict(params)
    return out


def unregister_image_operator(name: str) -> None:
    """Remove a user-registered operator (and its default levels); built-ins cannot be removed."""
    if name not in _USER:
        raise ConfigError(f"image operator {name!r} is not a user-registered operator")
    if name in BUILTIN_PRIMITIVE:
        raise ConfigError(f"image operator {name!r} is built in; register it again with replace=True instead")
    _REGISTRY.pop(name, None)
    _CUSTOM_GRID.pop(name, None)
    _USER.discard(name)


def get_image_operator(name: str) -> ImageOperator:
    """The registered operator ``name``; :class:`ConfigError` with the closest names otherwise."""
    try:
        return _REGISTRY[name]
    except KeyError:
        close = difflib.get_close_matches(str(name), list(_REGISTRY), n=3, cutoff=0.6)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise ConfigError(f"unknown image operator {name!r}{hint}; known: {', '.join(sorted(_REGISTRY))}") from None


def image_operators() -> dict[str, ImageOperator]:
    """All registered operators (built-ins first, in the paper's taxonomy order)."""
    builtin = [n for n in IMAGE_OPERATORS if n in _REGISTRY]
    return {n: _REGISTRY[n] for n in builtin + sorted(set(_REGISTRY) - set(builtin))}


def image_operator_revisions(names: Iterable[str]) -> dict[str, int]:
    """``{operator: revision}`` for the registered operators among ``names`` (sorted by name), what
    a run records so that a resume under another revision of an operator can be refused."""
    return {n: _REGISTRY[n].revision for n in sorted(set(names)) if n in _REGISTRY}


def default_grid() -> Grid:
    """The built-in grid plus the default levels of user-registered operators."""
    return {**DEFAULT_GRID, **_CUSTOM_GRID}


@dataclass(frozen=True)
class RegisteredImageOperator:
    """A user registration, as :func:`user_image_operators` snapshots it (picklable when its
    functions are)."""

    operator: ImageOperator
    grid: dict[int, dict[str, Any]] | None


def user_image_operators() -> list[RegisteredImageOperator]:
    """The operators registered by the user (not by snapbench's own modules), in registration order.

    ``run_corruption`` ships this snapshot to its worker processes, which start fresh (spawn) and
    would otherwise know only the built-ins; :func:`restore_image_operators` re-registers it there.
    """
    return [
        RegisteredImageOperator(_REGISTRY[n], copy.deepcopy(_CUSTOM_GRID.get(n)))
        for n in _REGISTRY
        if n in _USER
    ]


def restore_image_operators(snapshot: list[RegisteredImageOperator]) -> None:
    """Register a :func:`user_image_operators` snapshot (replacing same-named registrations)."""
    for item in snapshot:
        op = item.operator
        _REGISTRY[op.name] = op
        if item.grid is not None:
            _CUSTOM_GRID[op.name] = copy.deepcopy(item.grid)
        else:
            _CUSTOM_GRID.pop(op.name, None)
        _USER.add(op.name)


def _level_params(operator: str, severity: int, grid: Mapping[str, Mapping[int, Mapping[str, Any]]] | None) -> Mapping[str, Any]:
    table = default_grid() if grid is None else grid
    if operator not in table:
        raise ConfigError(f"image operator {operator!r} has no severity table in the grid")
    levels = table[operator]
    if int(severity) not in levels:
        raise ConfigError(
            f"image operator {operator!r} has no severity {severity} (levels: {sorted(levels)})"
        )
    return levels[int(severity)]


def corrupt_image_with_params(
    image: np.ndarray,
    operator: str,
    severity: int,
    *,
    seed: int = 0,
    key: str = "",
    grid: Mapping[str, Mapping[int, Mapping[str, Any]]] | None = None,
) -> CorruptedImage:
    """Corrupt ``image`` (HxWx3 uint8 RGB) and return it with the parameters actually applied.

    Randomness comes only from ``seed``, ``key`` (the query id), ``operator`` and ``severity``.
    """
    op = get_image_operator(operator)
    image = as_rgb_uint8(image)
    level = _level_params(operator, severity, grid)
    rng = image_rng(seed, key, operator, severity)
    params = op.sample(rng, level, (int(image.shape[0]), int(image.shape[1])))
    out = op.apply(image, params)
    out = np.ascontiguousarray(out, dtype=np.uint8)
    return CorruptedImage(out, operator, int(severity), params)


def corrupt_image(
    image: np.ndarray,
    operator: str,
    severity: int,
    *,
    seed: int = 0,
    key: str = "",
    grid: Mapping[str, Mapping[int, Mapping[str, Any]]] | None = None,
) -> np.ndarray:
    """Corrupt ``image`` (HxWx3 uint8 RGB) with ``operator`` at ``severity``; returns uint8 RGB."""
    return corrupt_image_with_params(image, operator, severity, seed=seed, key=key, grid=grid).image
