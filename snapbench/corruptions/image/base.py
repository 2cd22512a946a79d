"""Image operator protocol and registry (one :class:`~snapbench.core.registry.Table` of operator records).

An operator is two functions, as in ImageNet-C-bar: ``sample(rng, level, shape) -> params`` draws
every random choice (offsets, placements, noise seeds) from a ``numpy.random.Generator`` and returns
the complete parameter dict that will be applied; ``apply(image, params) -> image`` is then a pure
function of the image and those parameters.  ``params`` is JSON-serialisable so it can be written
to the manifest ("the parameters actually applied").

The registry holds one :class:`ImageOperator` record per operator: its name, functions, primitive,
default levels (``grid``) and aliases.  Built-ins register themselves when their primitive module
is imported; users call :func:`register_image_operator`; installed packages add operators through
the entry point group ``snapbench.image_operators`` (see :mod:`snapbench.corruptions.plugins`),
loaded on the first lookup.  A built-in named in :data:`snapbench.core.conditions.IMAGE_OPERATORS`
without a registered implementation is an error at every lookup, never a silent gap in a run.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

import numpy as np

from ...core import conditions as _conditions
from ...core.errors import ConfigError
from ...core.registry import Table
from ...core.seeding import image_rng
from ...core.validate import listing
from ..pixels import as_rgb_uint8
from ..plugins import IMAGE_GROUP, load_operator_plugins, plugin_failure
from .grid import DEFAULT_GRID, Grid, merge_levels, read_grid_file
from .knobs import Knob, builtin_knob, check_knob

__all__ = [
    "ImageOperator",
    "CorruptedImage",
    "add_image_operator",
    "register_image_operator",
    "get_image_operator",
    "image_operators",
    "image_aliases",
    "corrupt_image",
    "corrupt_image_with_params",
    "default_grid",
    "level_params",
    "load_grid",
    "merge_grid",
    "user_image_operators",
    "restore_image_operators",
    "unregister_image_operator",
    "sample_image_params",
    "image_operator_revisions",
]

_NAME_RE = re.compile(r"^[A-Za-z0-9_.\-]+$")
_LEVEL_RE = re.compile(r"^s?(\d+)$")

SampleFn = Callable[[np.random.Generator, Mapping[str, Any], tuple[int, int]], dict[str, Any]]
ApplyFn = Callable[[np.ndarray, Mapping[str, Any]], np.ndarray]


def _no_randomness(rng: np.random.Generator, level: Mapping[str, Any], shape: tuple[int, int]) -> dict[str, Any]:
    return dict(level)


@dataclass(frozen=True)
class ImageOperator:
    """A registered image corruption: the record of the operator table.

    ``primitive`` is one of degrade / transform / remove / add for the built-ins (fixed by
    :data:`snapbench.core.conditions.IMAGE_PRIMITIVES`), ``"custom"`` or the user's choice otherwise;
    ``changes_size`` is True only for operators whose meaning is a size change.  ``grid`` holds the
    default parameters per severity (``{1: {...}, 2: {...}}``; built-ins: their
    :data:`~.grid.DEFAULT_GRID` levels); ``aliases`` are other names condition ids may use.
    ``origin`` is ``"builtin"``, ``"user"`` (registered at run time) or ``"plugin"`` (an entry
    point).  A plugin's entry point may name such a record directly.  ``knob`` is the continuous
    parameter a severity target searches (:class:`~.knobs.Knob`; built-ins: :data:`~.knobs.BUILTIN_KNOBS`),
    None when the operator has none.  ``revision`` (an integer >= 1) numbers the operator's algorithm:
    it goes up whenever the same parameters start producing other pixels, and runs record it so that a
    resume never mixes two revisions.
    """

    name: str
    apply: ApplyFn
    sample: SampleFn = _no_randomness
    primitive: str = "custom"
    changes_size: bool = False
    doc: str = field(default="", compare=False)
    grid: Mapping[Any, Mapping[str, Any]] | None = field(default=None, compare=False)
    aliases: tuple[str, ...] = ()
    origin: str = "user"
    knob: Knob | None = field(default=None, compare=False)
    revision: int = 1


@dataclass(frozen=True)
class CorruptedImage:
    image: np.ndarray
    operator: str
    severity: int
    params: dict[str, Any]


_TABLE: Table[ImageOperator] = Table("image operator")
_BUILTIN_MODULES = frozenset(f"{__package__}.{m}" for m in ("degrade", "transform", "remove", "add"))


def _levels_of(name: str, grid: Mapping[Any, Mapping[str, Any]]) -> dict[int, dict[str, Any]]:
    if not isinstance(grid, Mapping) or not grid:
        raise ConfigError(f"image operator {name!r}: grid must map severities to parameter tables, got {grid!r}",
                          param="grid")
    out: dict[int, dict[str, Any]] = {}
    for level, params in grid.items():
        m = _LEVEL_RE.match(str(level))
        if not m or int(m[1]) < 1 or not isinstance(params, Mapping):
            raise ConfigError(f"image operator {name!r}: grid entry {level!r} must be a severity (1, '1' or 's1') "
                              "mapped to a parameter table", param="grid")
        out[int(m[1])] = dict(params)
    return out


def _checked(op: ImageOperator) -> ImageOperator:
    """``op`` validated, with its levels normalised (built-ins without levels get DEFAULT_GRID's)."""
    name = op.name
    for n in (name, *op.aliases):
        if not isinstance(n, str) or not _NAME_RE.match(n):
            raise ConfigError(f"image operator name {n!r} must match [A-Za-z0-9_.-]+ (it appears in condition ids)",
                              param="name")
    if isinstance(op.revision, bool) or not isinstance(op.revision, int) or op.revision < 1:
        raise ConfigError(f"image operator {name!r}: revision must be an integer >= 1, got {op.revision!r}",
                          param="revision")
    if not callable(op.apply) or not callable(op.sample):
        raise ConfigError(f"image operator {name!r}: apply and sample must be callables", param="apply")
    fixed = _conditions.PRIMITIVE_OF.get(name)
    primitive = op.primitive if op.primitive != "custom" or fixed is None else fixed
    if fixed is not None and primitive != fixed:
        raise ConfigError(
            f"image operator {name!r} is a built-in {fixed!r} operator (snapbench.core.conditions.IMAGE_PRIMITIVES); "
            f"it cannot be registered as primitive {primitive!r}", param="primitive")
    if op.grid is not None:
        levels = _levels_of(name, op.grid)
    elif fixed is not None:
        levels = copy.deepcopy(DEFAULT_GRID[name])
    else:
        raise ConfigError(f"image operator {name!r} has no default levels: give grid (the parameters of each "
                          "severity, e.g. {1: {...}, 2: {...}}) when registering it", param="grid")
    return dataclasses.replace(op, primitive=primitive, grid=levels)


def add_image_operator(op: ImageOperator, *, replace: bool = False) -> ImageOperator:
    """Add a record to the table (validated; see :func:`register_image_operator`)."""
    op = _checked(op)
    knob = check_knob(op.name, op.knob)
    if knob is None and op.origin == "builtin":
        knob = builtin_knob(op.name)
    op = dataclasses.replace(op, knob=knob)
    _TABLE.register(op.name, op, aliases=op.aliases, replace=replace)
    return op


def register_image_operator(
    name: str,
    *,
    apply: ApplyFn | None = None,
    sample: SampleFn | None = None,
    primitive: str | None = None,
    changes_size: bool = False,
    grid: Mapping[int | str, Mapping[str, Any]] | None = None,
    replace: bool = False,
    aliases: tuple[str, ...] = (),
    knob: Knob | None = None,
    revision: int = 1,
):
    """Register an operator; usable as a decorator on the ``apply`` function.

    ``primitive``: a built-in name's primitive is fixed by :data:`snapbench.core.conditions.IMAGE_PRIMITIVES`
    (the one source of built-in names and primitives); passing a different one is an error, and
    leaving it out takes it from there.  A new operator defaults to ``"custom"``.

    ``grid`` gives the default parameters per severity (``{1: {...}, 2: {...}}``, keys 1 / "1" /
    "s1").  A new operator must have one: an operator without levels could never be part of a run,
    and leaving it out silently is worse than refusing it here.  Built-in names take theirs from
    :data:`DEFAULT_GRID` unless ``grid`` replaces them.  Re-registering a name needs ``replace``.
    ``aliases`` are other names condition ids may use for the operator.  ``knob`` declares the
    continuous parameter a severity target searches (:class:`~.knobs.Knob`); without one, a target
    keeps the operator's level and flags it not reached.

    ``revision`` (default 1) numbers the algorithm: raise it when a change makes the same
    parameters produce other pixels.  ``snapbench corrupt`` and ``snapbench run`` record the
    revisions of their operators and refuse to resume a run made under other revisions.

    Operators registered at run time are shipped to ``run_corruption``'s worker processes by
    pickling ``apply`` and ``sample``: use module-level functions or picklable callable objects
    (no lambdas or closures) if you run with ``workers > 1``.
    """

    def _register(apply_fn: ApplyFn) -> ApplyFn:
        builtin = getattr(apply_fn, "__module__", None) in _BUILTIN_MODULES and grid is None
        add_image_operator(ImageOperator(
            name=name, apply=apply_fn, sample=sample or _no_randomness, primitive=primitive or "custom",
            changes_size=changes_size, doc=(getattr(apply_fn, "__doc__", None) or "").strip(), grid=grid,
            aliases=tuple(aliases), origin="builtin" if builtin else "user", knob=knob, revision=revision),
            replace=replace)
        return apply_fn

    _checked(ImageOperator(name, apply=_identity, primitive=primitive or "custom", grid=grid, aliases=tuple(aliases)))
    check_knob(name, knob)
    if apply is not None:
        return _register(apply)
    return _register


def _identity(image: np.ndarray, params: Mapping[str, Any]) -> np.ndarray:
    return image


def unregister_image_operator(name: str) -> None:
    """Remove a user-registered operator (and its default levels); built-ins cannot be removed."""
    op = _TABLE.get(name) if name in _TABLE else None
    if op is None or op.origin == "builtin" or name in _conditions.PRIMITIVE_OF:
        raise ConfigError(f"image operator {name!r} is not a user-registered operator (built-ins are replaced, "
                          "not removed)", param="name")
    _TABLE.unregister(name)


def _load_plugins() -> None:
    load_operator_plugins(IMAGE_GROUP, record_type=ImageOperator,
                          add=lambda op: add_image_operator(dataclasses.replace(op, origin="plugin"), replace=True),
                          get=lambda n: _TABLE.get(n) if n in _TABLE else None)


_TABLE.on_first_use(_load_plugins)


def _check_builtins(names: list[str]) -> None:
    missing = [n for n in _conditions.IMAGE_OPERATORS if n not in names]
    if missing:
        raise ConfigError(f"built-in image operator(s) {', '.join(missing)} (snapbench.core.conditions.IMAGE_PRIMITIVES) "
                          "have no registered implementation; the installation is incomplete")


def get_image_operator(name: str) -> ImageOperator:
    """The registered operator ``name`` (or an alias of it); :class:`ConfigError` with the closest names
    otherwise (or, for a plugin's operator, why the plugin did not load)."""
    if name not in _TABLE and (why := plugin_failure(IMAGE_GROUP, name)) is not None:
        raise ConfigError(f"image operator {name!r} is not available: {why}")
    return _TABLE.get(name)


def image_operators() -> dict[str, ImageOperator]:
    """All registered operators (built-ins first, in the paper's taxonomy order, then the others by name)."""
    entries = dict(_TABLE.items())
    _check_builtins(list(entries))
    builtin = list(_conditions.IMAGE_OPERATORS)
    return {n: entries[n] for n in builtin + sorted(set(entries) - set(builtin))}


def image_aliases() -> dict[str, str]:
    """alias -> operator name, for every registered alias."""
    return {a: op.name for op in image_operators().values() for a in op.aliases}


def image_operator_revisions(names: Iterable[str]) -> dict[str, int]:
    """``{operator: revision}`` for the registered operators among ``names`` (sorted by name): what a
    run records so that a resume under another revision of an operator can be refused."""
    table = image_operators()
    return {n: table[n].revision for n in sorted(set(names)) if n in table}


def default_grid() -> Grid:
    """Every registered operator's default levels (built-ins: :data:`DEFAULT_GRID`), a fresh copy."""
    return {name: copy.deepcopy(dict(op.grid or {})) for name, op in image_operators().items()}


def merge_grid(base: Mapping[str, Mapping[int, Mapping[str, Any]]], override: Mapping[str, Any], *,
               operators: Any = None) -> Grid:
    """Return a new grid: ``base`` updated by ``override`` (levels given as 1 / "1" / "s1").

    ``operators`` are the names ``override`` may add besides those of ``base``; by default the
    registered image operators.  Any other name raises :class:`ConfigError` with the closest
    known names: a misspelt operator must not leave the intended one at its defaults unnoticed.
    """
    known = list(dict.fromkeys([*base, *(image_operators() if operators is None else operators)]))
    return merge_levels(base, override, known)


def load_grid(path: Any, base: Mapping[str, Mapping[int, Mapping[str, Any]]] | None = None) -> Grid:
    """Load a JSON (``.json``) or TOML (``.toml``) override file and merge it over ``base``
    (:func:`default_grid` by default); errors name the file (see :func:`merge_grid` for the checks)."""
    data = read_grid_file(path)
    try:
        return merge_grid(default_grid() if base is None else base, data)
    except ConfigError as exc:
        raise ConfigError(exc.problem, path=path, param=None if exc.path else exc.param) from None


def user_image_operators() -> list[ImageOperator]:
    """The operators not registered by snapbench's own modules (run time and plugins), in registration order.

    ``run_corruption`` ships this snapshot to its worker processes, which start fresh (spawn) and
    would otherwise know only the built-ins; :func:`restore_image_operators` re-registers it there.
    """
    return [op for _, op in _TABLE.items() if op.origin != "builtin"]


def restore_image_operators(snapshot: list[ImageOperator]) -> None:
    """Register a :func:`user_image_operators` snapshot (replacing same-named registrations)."""
    for op in snapshot:
        add_image_operator(op, replace=True)


def level_params(operator: str, severity: int, grid: Mapping[str, Mapping[int, Mapping[str, Any]]] | None) -> Mapping[str, Any]:
    """The parameter table of ``operator`` at ``severity`` in ``grid`` (default: :func:`default_grid`);
    :class:`ConfigError` naming the levels there are when it has none (every caller's one check)."""
    table = default_grid() if grid is None else grid
    if operator not in table:
        raise ConfigError(f"image operator {operator!r} has no severity table in the grid", param="grid")
    levels = table[operator]
    if int(severity) not in levels:
        raise ConfigError(f"image operator {operator!r} has no severity {severity} (levels: {listing(sorted(levels))})",
                          param="severity")
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

    Randomness comes only from ``seed``, ``key`` (the query id), ``operator`` and ``severity``
    (an alias is seeded as the operator it names).
    """
    op = get_image_operator(operator)
    image = as_rgb_uint8(image)
    level = level_params(op.name, severity, grid)
    rng = image_rng(seed, key, op.name, severity)
    params = op.sample(rng, level, (int(image.shape[0]), int(image.shape[1])))
    out = op.apply(image, params)
    out = np.ascontiguousarray(out, dtype=np.uint8)
    return CorruptedImage(out, op.name, int(severity), params)


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


def sample_image_params(
    image: np.ndarray,
    operator: str,
    severity: int,
    *,
    seed: int = 0,
    key: str = "",
    grid: Mapping[str, Mapping[int, Mapping[str, Any]]] | None = None,
) -> tuple[ImageOperator, np.ndarray, dict[str, Any]]:
    """The operator's record, ``image`` as HxWx3 uint8 RGB and the parameters ``sample`` draws for it
    at ``severity`` -- what :func:`corrupt_image_with_params` applies, without applying them (a
    severity target searches the knob from there, the draws held fixed)."""
    op = get_image_operator(operator)
    image = as_rgb_uint8(image)
    level = level_params(op.name, severity, grid)
    rng = image_rng(seed, key, op.name, severity)
    return op, image, op.sample(rng, level, (int(image.shape[0]), int(image.shape[1])))
