"""Image operators: the protocol, the one registration per operator, and the tables derived from it.

An operator is two functions, as in ImageNet-C-bar: ``sample(rng, level, shape) -> params`` draws
every random choice (offsets, placements, noise seeds) from a ``numpy.random.Generator`` and returns
the complete parameter dict that will be applied; ``apply(image, params) -> image`` is then a pure
function of the image and those parameters.  ``params`` is JSON-serialisable so it can be written
to the manifest ("the parameters actually applied").

The registry holds one :class:`ImageOperator` record per operator (a
:class:`~snapbench.core.registry.Table`): its name, functions, primitive, default levels
(``grid``), knob, revision, aliases and -- for a built-in -- the diagnose flag that answers to it.
Each built-in is registered once, in its primitive module (:mod:`.degrade`, :mod:`.transform`,
:mod:`.remove`, :mod:`.add`), with :func:`builtin_operator` on its ``apply`` function and its
severity table right above it; the tables of the built-ins -- the severity grid (``DEFAULT_GRID``),
the knobs (``BUILTIN_KNOBS``) and diagnose's image flags -- are read from those records
(:func:`builtin_image_operators`).  Which operators the benchmark has, their primitives and order
are the benchmark's vocabulary, :data:`snapbench.core.conditions.IMAGE_PRIMITIVES` (read by layers
that never load an operator: results, reports, comparisons); a built-in's registration takes its
primitive from there, and a listed operator without one is an error at every lookup.  Users call
:func:`register_image_operator`; installed packages
add operators through the entry point group ``snapbench.image_operators`` (see
:mod:`snapbench.corruptions.plugins`), loaded on the first lookup.

The severity grid is every operator's parameters at every severity.  Defaults are the grid of the
authors' release of SnapBench (SPEC §3), so results are comparable with the paper.  Override
values or add severities from one place: pass a grid to the functions that take ``grid=``, or load
one with :func:`load_grid` from a JSON or TOML file shaped like::

    [motion_blur.s2]        # TOML             {"motion_blur": {"s2": {"kernel": 15}},   # JSON
    kernel = 15                                 "defocus_blur": {"s4": {"sigma": 16.0}}}
    [defocus_blur.s4]
    sigma = 16.0

A file entry updates the named keys of an existing level and creates new levels; operators not
named keep their defaults.  An operator name that is neither in the base grid nor registered is an
error with the closest names (``[motionblur.s2]`` would otherwise be ignored silently).

The parameter validators (:func:`number`, :func:`integer`, :func:`known_keys`, ...) are shared by
every operator's ``sample`` and ``apply``: one set of checks, so a grid typo or an out-of-range
value gets the same kind of message whichever operator reads it.  Each names the operator and the
parameter; all raise :class:`snapbench.core.errors.ConfigError` (a ``ValueError``): a level's
parameters come from the severity grid, which is configuration.  ``apply`` functions call them
too, so a hand-written params dict is checked as well.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import numpy as np

from ...core import conditions as _conditions
from ...core.errors import ConfigError
from ...core.seeding import image_rng
from ...core.userfiles import read_text
from ...core.validate import listing, unknown_name
from ..pixels import as_rgb_uint8
from ..plugins import IMAGE_GROUP, OperatorTable

__all__ = [
    "DiagnoseFlag",
    "Grid",
    "ImageOperator",
    "CorruptedImage",
    "Knob",
    "builtin_image_operators",
    "builtin_operator",
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

Grid = dict[str, dict[int, dict[str, Any]]]


# ------------------------------------------------------------------------------------------------
# parameter validators (every operator's sample and apply)


def number(op: str, params: Mapping[str, Any], name: str, *, lo: float | None = None,
           hi: float | None = None, lo_open: bool = False, default: float | None = None) -> float:
    """``params[name]`` as a finite float in [lo, hi] (``(lo, hi]`` with ``lo_open``).

    A missing key is an error unless ``default`` is given; booleans are not numbers.
    """
    if name not in params:
        if default is None:
            raise ConfigError(f"{op}: missing parameter {name!r} (got {listing(sorted(params), quote=True) or 'none'})")
        return float(default)
    value = params[name]
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ConfigError(f"{op}: parameter {name!r} must be a number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ConfigError(f"{op}: parameter {name!r} must be finite, got {value!r}")
    if lo is not None and (value < lo or (lo_open and value == lo)):
        raise ConfigError(f"{op}: parameter {name!r} must be {'>' if lo_open else '>='} {lo}, got {value}")
    if hi is not None and value > hi:
        raise ConfigError(f"{op}: parameter {name!r} must be <= {hi}, got {value}")
    return value


def known_keys(op: str, level: Mapping[str, Any], *names: str) -> None:
    """Reject grid keys the operator does not read (a typo would otherwise be ignored silently)."""
    unknown = sorted(set(level) - set(names))
    if unknown:  # the first one, with its close names (the rest show up once it is fixed)
        raise ConfigError(f"{op}: {unknown_name('parameter', unknown[0], names)}")


def integer(op: str, params: Mapping[str, Any], name: str, *, lo: int, hi: int | None = None) -> int:
    """``params[name]`` as an int in [lo, hi]; integral floats (``15.0``) are accepted."""
    raw = params.get(name)
    if isinstance(raw, (int, np.integer)) and not isinstance(raw, bool):
        value = int(raw)  # not via float: large seeds must stay exact
        if value < lo or (hi is not None and value > hi):
            raise ConfigError(f"{op}: parameter {name!r} must be in [{lo}, {hi if hi is not None else 'inf'}], got {value}")
        return value
    value = number(op, params, name, lo=lo, hi=hi)
    if value != int(value):
        raise ConfigError(f"{op}: parameter {name!r} must be an integer, got {params[name]!r}")
    return int(value)


def level_param(op: str, name: str, read: Callable[..., Any] = number, **bounds: Any) -> SampleFn:
    """The ``sample`` of an operator whose one parameter ``name`` is the level's own (it draws nothing),
    read and checked by ``read(op, level, name, **bounds)``.  A :func:`functools.partial` of a
    module-level function, not a closure: a user record that reuses it still pickles to workers."""
    return functools.partial(_level_param, op, name, read, bounds)


def _level_param(op: str, name: str, read: Callable[..., Any], bounds: dict[str, Any], rng: np.random.Generator,
                 level: Mapping[str, Any], shape: tuple[int, int]) -> dict[str, Any]:
    known_keys(op, level, name)
    return {name: read(op, level, name, **bounds)}


def fraction(operator: str, level: Mapping[str, Any], name: str) -> float:
    """``level[name]`` as a number in (0, 1] (a share of each side)."""
    try:
        value = float(level[name])
    except KeyError:
        raise ConfigError(f"image operator {operator!r}: severity parameters lack {name!r} (got {dict(level)})") from None
    except (TypeError, ValueError):
        raise ConfigError(f"image operator {operator!r}: {name!r} must be a number, got {level[name]!r}") from None
    if not (0.0 < value <= 1.0):
        raise ConfigError(f"image operator {operator!r}: {name!r} must be in (0, 1], got {value}")
    return value


def scaled_side(side: int, fraction: float) -> int:
    """``max(1, round_half_up(fraction * side))``: the length of a side scaled by ``fraction``.

    Round half up rather than Python's banker's rounding, so the rule is the one people compute by
    hand; at least one pixel so no operator ever returns an empty image.
    """
    return max(1, int(math.floor(float(fraction) * int(side) + 0.5)))


def level_value(operator: str, level: Mapping[str, Any], name: str) -> Any:
    """``level[name]``, or an error naming the operator and the keys the level has."""
    try:
        return level[name]
    except KeyError:
        raise ConfigError(f"image operator {operator!r}: severity parameters lack {name!r} (got {dict(level)})") from None


def rgb(operator: str, value: Any, name: str) -> list[int]:
    """``value`` as three integers 0-255 (an RGB colour)."""
    try:
        out = [int(c) for c in value]
    except (TypeError, ValueError):
        out = []
    if len(out) != 3 or not all(0 <= c <= 255 for c in out):
        raise ConfigError(f"image operator {operator!r}: {name!r} must be three integers 0-255 (RGB), got {value!r}")
    return out


def integer_value(op: str, value: Any, name: str, lo: int, hi: int | None = None) -> int:
    """``value`` as an integer in [lo, hi] (an integral float such as 3.0 from TOML/JSON is accepted)."""
    ok = isinstance(value, (int, np.integer)) and not isinstance(value, bool)
    if not ok and isinstance(value, float) and value.is_integer():
        ok = True  # TOML/JSON writers may turn 3 into 3.0
    if not ok or int(value) < lo or (hi is not None and int(value) > hi):
        rng = f"{lo}..{hi}" if hi is not None else f">= {lo}"
        raise ConfigError(f"image operator {op!r}: parameter {name!r} must be an integer {rng}, got {value!r}")
    return int(value)


def fraction_value(op: str, value: Any, name: str, *, zero_ok: bool = False) -> float:
    """``value`` as a fraction of an image side: (0, 1], or [0, 1] with ``zero_ok``."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ConfigError(f"image operator {op!r}: parameter {name!r} must be a fraction of the image side, got {value!r}")
    v = float(value)
    if not ((0 <= v if zero_ok else 0 < v) and v <= 1):
        interval = "[0, 1]" if zero_ok else "(0, 1]"
        raise ConfigError(f"image operator {op!r}: parameter {name!r} must be in {interval}, got {value!r}")
    return v


# ------------------------------------------------------------------------------------------------
# knobs: the one continuous parameter a severity target searches (issue #17)
#
# A Knob names the parameter that sets an operator's strength, its range, whether it is an integer
# or searched on a log scale, and how the operator's *drawn* parameters become the parameters at
# another knob value (Knob.update).  Every random draw of ``sample`` (noise seed, crop offset,
# mosaic boxes, scribble paths) stays fixed: only the knob and the parameters derived from it
# change.  At the level's own knob value every update returns the drawn parameters unchanged, so a
# target search passes through the default variant.  A built-in declares its knob in its
# registration (the update next to its operator); a user operator declares its own with
# ``register_image_operator(..., knob=Knob(...))`` -- or has none, and a target then keeps its
# default level, flagged not reached.  The updates use only the operators' parameters and their
# public ``sample`` functions (handed to Knob.params_at by the caller), never their internals.


UpdateFn = Callable[[Mapping[str, Any], float, tuple[int, int]], dict[str, Any]]


@dataclass(frozen=True)
class Knob:
    """An operator's continuous strength parameter.

    ``name`` is what the manifest's ``target.knob`` records (for the built-ins, the parameter
    itself, except ``ui_elements``' ``bar_height``); ``lo`` / ``hi`` its range; ``integer`` knobs
    take whole values, ``log`` ones are bisected geometrically (``lo > 0``).  ``update(params,
    value, shape)`` returns the complete parameters at ``value`` from the drawn ``params`` of an
    image of ``shape`` (height, width); None sets ``params[name] = value``.  With ``resample``,
    ``update`` returns the operator's *level* parameters instead and the operator's own ``sample``
    makes the parameters from them (for an operator whose ``sample`` draws nothing and derives
    the rest, such as ``ui_elements``' drawing list).  Use module-level functions: records are sent
    to worker processes by pickling.
    """

    name: str
    lo: float
    hi: float
    integer: bool = False
    log: bool = False
    update: UpdateFn | None = None
    resample: bool = False

    def params_at(self, params: Mapping[str, Any], value: float, shape: tuple[int, int],
                  sample: Callable[..., dict[str, Any]] | None = None) -> dict[str, Any]:
        """The operator's parameters at knob ``value`` (see :attr:`update`); ``sample`` is the
        operator's ``sample`` function, which a ``resample`` knob needs."""
        value = int(value) if self.integer else float(value)
        if self.update is None:
            return {**params, self.name: value}
        out = self.update(params, value, shape)
        if not self.resample or out is params:
            return dict(out)
        if sample is None:
            raise ConfigError(f"knob {self.name!r} resamples: pass the operator's sample function", param="knob")
        # the sample of a resampling knob's operator draws nothing: the generator is never read
        return sample(np.random.default_rng(0), out, (int(shape[0]), int(shape[1])))


def _check_knob(operator: str, knob: Any) -> Knob | None:
    """``knob`` validated for ``operator`` (None: the operator has no knob); :class:`ConfigError` otherwise."""
    if knob is None:
        return None
    if not isinstance(knob, Knob):
        raise ConfigError(f"image operator {operator!r}: knob must be a snapbench.corruptions.image.Knob or None, "
                          f"got {type(knob).__name__}", param="knob")
    lo, hi = knob.lo, knob.hi
    if not (isinstance(knob.name, str) and knob.name):
        raise ConfigError(f"image operator {operator!r}: the knob needs a name", param="knob")
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ConfigError(f"image operator {operator!r}: knob {knob.name!r} needs a finite range with lo < hi, "
                          f"got [{lo}, {hi}]", param="knob")
    if knob.integer and (lo != int(lo) or hi != int(hi)):
        raise ConfigError(f"image operator {operator!r}: integer knob {knob.name!r} needs integer ends, got "
                          f"[{lo}, {hi}]", param="knob")
    if knob.log and lo <= 0:
        raise ConfigError(f"image operator {operator!r}: log-scale knob {knob.name!r} needs lo > 0, got {lo}",
                          param="knob")
    if knob.update is not None and not callable(knob.update):
        raise ConfigError(f"image operator {operator!r}: knob {knob.name!r} update must be callable", param="knob")
    if knob.resample and knob.update is None:
        raise ConfigError(f"image operator {operator!r}: knob {knob.name!r} resamples, so it needs an update that "
                          "returns the level parameters", param="knob")
    return knob


@dataclass(frozen=True)
class DiagnoseFlag:
    """The ``snapbench diagnose`` flag that answers to a built-in operator, and the operator's severities
    it stands for: those at which the detector flags at least half of the operator's variants on the
    validation photos (docs/diagnose.md "Validation", bench/RESULTS_diagnose_validation.md); ``why``
    gives the recalls.  :data:`snapbench.diagnose.mix.FLAG_CONDITIONS` is built from these."""

    flag: str
    severities: tuple[int, ...]
    why: str = ""


_NAME_RE = re.compile(r"^[A-Za-z0-9_.\-]+$")
_LEVEL_RE = re.compile(r"^s?(\d+)$")

SampleFn = Callable[[np.random.Generator, Mapping[str, Any], tuple[int, int]], dict[str, Any]]
ApplyFn = Callable[[np.ndarray, Mapping[str, Any]], np.ndarray]


def _no_randomness(rng: np.random.Generator, level: Mapping[str, Any], shape: tuple[int, int]) -> dict[str, Any]:
    return dict(level)


@dataclass(frozen=True)
class ImageOperator:
    """A registered image corruption: the record of the operator table.

    ``primitive`` is one of degrade / transform / remove / add for the built-ins (fixed by their
    registration: a built-in name re-registered keeps it), ``"custom"`` or the user's choice otherwise;
    ``changes_size`` is True only for operators whose meaning is a size change.  ``grid`` holds the
    default parameters per severity (``{1: {...}, 2: {...}}``; built-ins: the severity table above
    their registration); ``aliases`` are other names condition ids may use.  ``origin`` is
    ``"builtin"``, ``"user"`` (registered at run time) or ``"plugin"`` (an entry point).  A plugin's
    entry point may name such a record directly.  ``knob`` is the continuous parameter a severity
    target searches (:class:`Knob`), None when the operator has none.  ``revision`` (an integer >= 1)
    numbers the operator's algorithm: it goes up whenever the same parameters start producing other
    pixels, and runs record it so that a resume never mixes two revisions.  ``diagnose`` is the
    diagnose flag that answers to a built-in operator (:class:`DiagnoseFlag`; None for the others).
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
    diagnose: DiagnoseFlag | None = field(default=None, compare=False)


@dataclass(frozen=True)
class CorruptedImage:
    image: np.ndarray
    operator: str
    severity: int
    params: dict[str, Any]


# The built-ins' own registrations, kept when a user replaces one: the source of every derived table.
_BUILTINS: dict[str, ImageOperator] = {}


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
    """``op`` validated, with its levels normalised (a built-in name without levels gets the built-in's)."""
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
    builtin = _BUILTINS.get(name)
    fixed = builtin.primitive if builtin is not None else None
    primitive = op.primitive if op.primitive != "custom" or fixed is None else fixed
    if fixed is not None and primitive != fixed:
        raise ConfigError(
            f"image operator {name!r} is a built-in {fixed!r} operator (snapbench.core.conditions.IMAGE_PRIMITIVES); "
            f"it cannot be registered as primitive {primitive!r}", param="primitive")
    if op.grid is not None:
        levels = _levels_of(name, op.grid)
    elif builtin is not None:
        levels = copy.deepcopy(dict(builtin.grid or {}))
    else:
        raise ConfigError(f"image operator {name!r} has no default levels: give grid (the parameters of each "
                          "severity, e.g. {1: {...}, 2: {...}}) when registering it", param="grid")
    _check_knob(name, op.knob)
    return dataclasses.replace(op, primitive=primitive, grid=levels)


_TABLE = OperatorTable("image operator", ImageOperator, group=IMAGE_GROUP, check=_checked, builtins="IMAGE_OPERATORS",
                       listed_in="IMAGE_PRIMITIVES", fixed=_BUILTINS, fixed_note=" (built-ins are replaced, not removed)")


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

    ``primitive``: a built-in name's primitive is fixed by its registration (as listed in
    :data:`snapbench.core.conditions.IMAGE_PRIMITIVES`); passing a different one is an error, and
    leaving it out takes it from there.  A new operator defaults to ``"custom"``.

    ``grid`` gives the default parameters per severity (``{1: {...}, 2: {...}}``, keys 1 / "1" /
    "s1").  A new operator must have one: an operator without levels could never be part of a run,
    and leaving it out silently is worse than refusing it here.  Built-in names take theirs from
    the built-in's registration (``DEFAULT_GRID``) unless ``grid`` replaces them.  Re-registering a
    name needs ``replace``.  ``aliases`` are other names condition ids may use for the operator.
    ``knob`` declares the continuous parameter a severity target searches (:class:`Knob`); without
    one, a target keeps the operator's level and flags it not reached.

    ``revision`` (default 1) numbers the algorithm: raise it when a change makes the same
    parameters produce other pixels.  ``snapbench corrupt`` and ``snapbench run`` record the
    revisions of their operators and refuse to resume a run made under other revisions.

    Operators registered at run time are shipped to ``run_corruption``'s worker processes by
    pickling ``apply`` and ``sample``: use module-level functions or picklable callable objects
    (no lambdas or closures) if you run with ``workers > 1``.
    """

    def _register(apply_fn: ApplyFn) -> ApplyFn:
        _TABLE.add(ImageOperator(
            name=name, apply=apply_fn, sample=sample or _no_randomness, primitive=primitive or "custom",
            changes_size=changes_size, doc=(getattr(apply_fn, "__doc__", None) or "").strip(), grid=grid,
            aliases=tuple(aliases), origin="user", knob=knob, revision=revision),
            replace=replace)
        return apply_fn

    _checked(ImageOperator(name, apply=_identity, primitive=primitive or "custom", grid=grid, aliases=tuple(aliases),
                           knob=knob))
    if apply is not None:
        return _register(apply)
    return _register


def _identity(image: np.ndarray, params: Mapping[str, Any]) -> np.ndarray:
    return image


def builtin_operator(
    name: str,
    *,
    levels: Mapping[int, Mapping[str, Any]],
    sample: SampleFn,
    knob: Knob | None,
    revision: int = 1,
    changes_size: bool = False,
    diagnose: DiagnoseFlag | None = None,
) -> Callable[[ApplyFn], ApplyFn]:
    """The one registration of a built-in operator, a decorator on its ``apply`` function (used by
    the primitive modules only): its default ``levels`` (the severity table right above it),
    ``sample``, ``knob``, ``revision`` (see :func:`register_image_operator`) and the
    :class:`DiagnoseFlag` that answers to it, if any.  Every table of the built-ins is read from these
    records (:func:`builtin_image_operators`).  Its primitive (degrade / transform / remove / add) is
    not repeated here: it is read from the benchmark's taxonomy in :mod:`snapbench.core.conditions`
    (which operators the benchmark has, their primitives and order, read by layers that never load an
    operator); a built-in the taxonomy does not list is refused here, and one it lists but nobody
    registered is an error at every lookup."""
    primitive = _conditions.PRIMITIVE_OF.get(name)
    if primitive is None:
        raise ConfigError(f"built-in image operator {name!r} is not listed in snapbench.core.conditions.IMAGE_PRIMITIVES",
                          param="name")

    def _register(apply_fn: ApplyFn) -> ApplyFn:
        _BUILTINS[name] = _TABLE.add(ImageOperator(
            name=name, apply=apply_fn, sample=sample, primitive=primitive, changes_size=changes_size,
            doc=(apply_fn.__doc__ or "").strip(), grid=levels, origin="builtin", knob=knob, revision=revision,
            diagnose=diagnose))
        return apply_fn

    return _register


def builtin_image_operators() -> dict[str, ImageOperator]:
    """The built-in operators' own registrations (whatever replaced them in the table since), in the
    paper's order (:data:`snapbench.core.conditions.IMAGE_OPERATORS`)."""
    _TABLE.check_builtins(_BUILTINS)
    return {name: _BUILTINS[name] for name in _conditions.IMAGE_OPERATORS}


# the table's operations under the names the package exports (their docstrings: OperatorTable's);
# unregistering an operator removes its default levels with it
get_image_operator = _TABLE.get
image_aliases = _TABLE.aliases
user_image_operators = _TABLE.user_operators
restore_image_operators = _TABLE.restore
unregister_image_operator = _TABLE.remove


def image_operators() -> dict[str, ImageOperator]:
    """All registered operators (built-ins first, in the paper's taxonomy order, then the others by name)."""
    entries = dict(_TABLE.items())
    return {n: entries[n] for n in _TABLE.ordered()}


def image_operator_revisions(names: Iterable[str]) -> dict[str, int]:
    """``{operator: revision}`` for the registered operators among ``names`` (sorted by name): what a
    run records so that a resume under another revision of an operator can be refused."""
    table = image_operators()
    return {n: table[n].revision for n in sorted(set(names)) if n in table}


def default_grid() -> Grid:
    """Every registered operator's default levels (built-ins: ``DEFAULT_GRID``), a fresh copy."""
    return {name: copy.deepcopy(dict(op.grid or {})) for name, op in image_operators().items()}


def merge_grid(base: Mapping[str, Mapping[int, Mapping[str, Any]]], override: Mapping[str, Any], *,
               operators: Any = None) -> Grid:
    """Return a new grid: ``base`` updated by ``override`` (levels given as 1 / "1" / "s1").

    ``operators`` are the names ``override`` may add besides those of ``base``; by default the
    registered image operators.  Any other name raises :class:`ConfigError` with the closest
    known names: a misspelt operator must not leave the intended one at its defaults unnoticed.
    """
    known = list(dict.fromkeys([*base, *(image_operators() if operators is None else operators)]))
    out: Grid = copy.deepcopy({op: dict(levels) for op, levels in base.items()})
    for op, levels in override.items():
        if op not in known:
            raise ConfigError(unknown_name("image operator", op, known, where=" in the grid")
                              + " (register an operator of your own before giving its levels)", param="grid")
        if not isinstance(levels, Mapping):
            raise ConfigError(f"grid entry for {op!r} must map severities to parameter tables", param="grid")
        target = out.setdefault(op, {})
        for level, params in levels.items():
            m = _LEVEL_RE.match(str(level))
            if not m or int(m[1]) < 1:
                raise ConfigError(f"grid entry {op}.{level}: severity must look like 's1', '2', ...", param="grid")
            if not isinstance(params, Mapping):
                raise ConfigError(f"grid entry {op}.{level}: parameters must be a table", param="grid")
            target.setdefault(int(m[1]), {}).update(copy.deepcopy(dict(params)))
    return out


def load_grid(path: Any, base: Mapping[str, Mapping[int, Mapping[str, Any]]] | None = None) -> Grid:
    """Load a JSON (``.json``) or TOML (``.toml``) override file and merge it over ``base``
    (:func:`default_grid` by default); errors name the file (see :func:`merge_grid` for the checks).
    The text is decoded through :mod:`snapbench.core.userfiles`, so bad bytes are an error with line
    and column."""
    path = Path(path)
    text = read_text(path, what="grid file")
    try:
        if path.suffix.lower() == ".toml":
            import tomllib

            data = tomllib.loads(text)
        else:
            data = json.loads(text)
    except Exception as exc:  # noqa: BLE001 - report any parse error with the file name
        raise ConfigError(f"not a valid grid file: {exc}", path=path) from None
    if not isinstance(data, dict):
        raise ConfigError("grid file must hold a table of operators", path=path)
    try:
        return merge_grid(default_grid() if base is None else base, data)
    except ConfigError as exc:
        raise ConfigError(exc.problem, path=path, param=None if exc.path else exc.param) from None


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
    op, image, params = sample_image_params(image, operator, severity, seed=seed, key=key, grid=grid)
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
