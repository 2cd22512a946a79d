"""The retrieval modes and their similarity paths: the one table every layer reads.

Query = (image, question); gallery item = (image, caption).  A dual encoder gives four paths:
``II`` = sim(query image, gallery image), ``TT`` = sim(question, caption), ``IT`` = sim(query image,
caption), ``TI`` = sim(question, gallery image).  The modes are fixed combinations of them (the
SnapBench names in ``MODE_LABELS``): I→I = II; T→T = TT; IT→IT = (II + TT)/2; I→IT = (II + IT)/2;
T→IT = (TI + TT)/2.

A model with a native joint embedding supplies its own IT→IT matrix instead.

Below the tables: the one rule for what can run (:func:`plan_targets`: the sides a data set and an
encoder have, and once known the embedding sizes -> the modes, paths and whether MOOR and the
fixed-fusion baselines run, with a reason for each target and path left out), used by ``snapbench
run`` and ``snapbench encode`` and by :class:`snapbench.data.Dataset`; and the one composition of a
mode from its paths (:func:`compose`, with the weights of :data:`MODES`), used by ``snapbench run``
and by ``snapbench evaluate --mode`` over a folder of path files.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

__all__ = ["PATHS", "PATH_SIDES", "MODES", "MODE_LABELS", "SIDES", "DEFAULT_RUN_BASELINES", "FUSION_PREFIX", "TARGET_ORDER",
           "baseline_target", "primary_target", "TargetPlan", "compose",
           "needs_paths", "normalize_mode", "plan_targets", "query_sides", "target_reads", "target_sides"]

#: The four similarity paths, in the order files, tables and weight columns use.
PATHS: tuple[str, str, str, str] = ("II", "TT", "IT", "TI")

#: Which side of the query and of the gallery item each path compares.
PATH_SIDES: dict[str, tuple[str, str]] = {
    "II": ("image", "image"),
    "TT": ("text", "text"),
    "IT": ("image", "text"),
    "TI": ("text", "image"),
}

#: Mode -> {path: weight}; the scores of a mode are the weighted sum of its paths.
MODES: dict[str, dict[str, float]] = {
    "I2I": {"II": 1.0},
    "T2T": {"TT": 1.0},
    "IT2IT": {"II": 0.5, "TT": 0.5},
    "I2IT": {"II": 0.5, "IT": 0.5},
    "T2IT": {"TI": 0.5, "TT": 0.5},
}

#: The SnapBench names of the modes, for display only (tables, figures, sentences): files record a mode
#: by its id, the key of :data:`MODES` (``meta.mode``, run.json, folder names).
MODE_LABELS: dict[str, str] = {"I2I": "I→I", "T2T": "T→T", "IT2IT": "IT→IT", "I2IT": "I→IT", "T2IT": "T→IT"}


# ------------------------------------------------------------------------------------------------
# what can run: the one rule of data, encode and run (evaluate --mode composes given paths: compose below)
# ------------------------------------------------------------------------------------------------
SIDES: tuple[str, str] = ("image", "text")

#: The fixed-fusion baselines ``snapbench run`` evaluates beside MOOR (targets ``fusion/<name>``,
#: defined in :data:`snapbench.fusion.baselines.ROW_BASELINES`): named here so that the plan lists
#: them without reaching up to the fusion package.
DEFAULT_RUN_BASELINES: tuple[str, ...] = ("comb_sum", "rrf")
#: A fixed-fusion baseline's target id is its name after this prefix (``fusion/rrf``): :func:`baseline_target`.
FUSION_PREFIX = "fusion/"

#: Targets in the order reports, tables and figures list them (fusion baselines follow, by name).
TARGET_ORDER: tuple[str, ...] = (*MODES, "MOOR")
#: The targets in the order of preference for the one the findings speak of first (the paper's joint
#: mode IT→IT, then MOOR, ...): of a run's report and of a comparison.
_PRIMARY_ORDER: tuple[str, ...] = ("IT2IT", "MOOR", "I2I", "I2IT", "T2IT", "T2T")


def baseline_target(name: str) -> str:
    """The target id of the fixed-fusion baseline ``name`` (``rrf`` -> ``fusion/rrf``)."""
    return FUSION_PREFIX + name


def primary_target(targets: Iterable[str]) -> str:
    """The target of ``targets`` the findings speak of first: the first in :data:`_PRIMARY_ORDER`, else
    the first given (a fusion baseline)."""
    given = list(targets)
    return next((t for t in _PRIMARY_ORDER if t in given), given[0])


def normalize_mode(mode: str, *, param: str = "mode") -> str:
    """The canonical name of a retrieval mode, case-insensitively (``it2it`` -> ``IT2IT``); the
    SnapBench labels (``IT→IT``) and ``->`` spellings are accepted too.  ConfigError otherwise,
    about ``param`` (the parameter the name came from)."""
    from .errors import ConfigError
    from .validate import hint_and_known

    key = str(mode).strip().upper().replace("→", "2").replace("->", "2")
    if key not in MODES:
        # the close names of the spelling compared (upper case): 'it2itt' -> 'IT2IT'
        raise ConfigError(f"unknown retrieval mode {mode!r}{hint_and_known(key, MODES)} (any case)", param=param)
    return key


@dataclass(frozen=True)
class TargetPlan:
    """What a run, an encode or an evaluation can compute from the sides it has (:func:`plan_targets`).

    ``modes``: the retrieval modes to evaluate; ``paths``: the similarity paths they (and MOOR)
    need; ``moor``: whether MOOR and the fixed-fusion baselines can run (they need all four paths);
    ``available``: every path whose two sides exist (and share a space) -- what ``snapbench encode``
    writes, which can be more than ``paths`` (IT alone gives no mode); ``skipped``: mode (or
    ``"MOOR"``, for it and the baselines) -> why it cannot run, in one sentence; the same in parts,
    for notes that name a reason once for several modes: ``lacking`` (the paths it lacks) and
    ``reasons`` (why they are missing, when known); ``path_skipped``: path -> why it is not
    available (encode's skipped paths); ``space_note``: when the image and text embeddings differ in
    size, the sentence that says which targets need a shared space and are skipped.
    """

    modes: tuple[str, ...]
    paths: tuple[str, ...]
    moor: bool
    available: tuple[str, ...] = ()
    skipped: dict[str, str] = field(default_factory=dict)
    lacking: dict[str, tuple[str, ...]] = field(default_factory=dict)
    reasons: dict[str, tuple[str, ...]] = field(default_factory=dict)
    path_skipped: dict[str, str] = field(default_factory=dict)
    space_note: str | None = None

    @property
    def targets(self) -> tuple[str, ...]:
        """The modes, then ``MOOR`` when it runs (what run.json records as the run's modes)."""
        return self.modes + (("MOOR",) if self.moor else ())

    @property
    def run_targets(self) -> tuple[str, ...]:
        """Every target a run evaluates: :attr:`targets`, then the fixed-fusion baselines
        (``fusion/<name>``, :data:`DEFAULT_RUN_BASELINES`) when MOOR runs: they need the same four paths."""
        return self.targets + (tuple(map(baseline_target, DEFAULT_RUN_BASELINES)) if self.moor else ())


def plan_targets(query_sides: Collection[str], gallery_sides: Collection[str], requested: Sequence[str] | None = None,
                 *, why: Mapping[str, str] | None = None, dims: Mapping[str, int] | None = None) -> TargetPlan:
    """The :class:`TargetPlan` for the available sides (``"image"`` / ``"text"`` of the query and of
    the gallery item).  ``requested``: modes asked for (any case; default all); ``why``: side
    (``"query image"``, ``"gallery text"``...) -> reason it is missing, quoted in the skipped
    reasons; ``dims``: side -> embedding size, once known: image and text embeddings of different
    sizes have no shared space, which rules out the cross-modal paths IT and TI, their modes and MOOR.
    """
    reasons, size = dict(why or {}), dict(dims or {})
    shared = len(set(size.values())) <= 1
    differ = "image and text embeddings differ in size"  # the words of the shared-space rule
    by_sides = [p for p, (qs, gs) in PATH_SIDES.items() if qs in query_sides and gs in gallery_sides]
    have = {p for p in by_sides if shared or PATH_SIDES[p][0] == PATH_SIDES[p][1]}
    wanted = list(MODES) if requested is None else list(dict.fromkeys(normalize_mode(m) for m in requested))

    def why_missing(lacking: tuple[str, ...]) -> tuple[str, ...]:
        sides = [s for p in lacking for s in (f"query {PATH_SIDES[p][0]}", f"gallery {PATH_SIDES[p][1]}")]
        known = list(dict.fromkeys(reasons[s] for s in sides if s in reasons))
        if not shared and any(PATH_SIDES[p][0] != PATH_SIDES[p][1] for p in lacking):
            known.append(f"the {differ} (no shared space)")
        return tuple(known)

    modes = tuple(m for m in wanted if set(MODES[m]) <= have)
    moor = have == set(PATHS)
    out = [m for m in wanted if m not in modes] + ([] if moor else ["MOOR"])
    lacking = {t: tuple(p for p in PATHS if p in (PATHS if t == "MOOR" else MODES[t]) and p not in have) for t in out}
    why_out = {t: why_missing(lacking[t]) for t in out}
    skipped = {t: needs_paths(lacking[t]) + (f": {'; '.join(why_out[t])}" if why_out[t] else "") for t in out}
    needed = {p for m in modes for p in MODES[m]} | (set(PATHS) if moor else set())
    path_skipped = {}
    for p, (qs, gs) in PATH_SIDES.items():
        if p not in by_sides:  # the first missing side that has a reason says why
            missing = [k for k, ok in ((f"query {qs}", qs in query_sides), (f"gallery {gs}", gs in gallery_sides))
                       if not ok]
            path_skipped[p] = next((reasons[k] for k in missing if k in reasons), f"no {missing[0]}s")
        elif p not in have:
            path_skipped[p] = f"the {differ} ({size.get('image')} vs {size.get('text')}): no shared space"
    plan = TargetPlan(modes, tuple(p for p in PATHS if p in needed), moor, tuple(p for p in PATHS if p in have),
                      skipped, lacking, why_out, path_skipped)
    if shared:
        return plan
    gone = [t for t in plan_targets(query_sides, gallery_sides, requested, why=why).run_targets
            if t not in plan.run_targets]
    return replace(plan, space_note=f"the encoder's {differ} ({size.get('image')} vs {size.get('text')}): "
                                    f"{', '.join(gone)} need a shared space and are skipped")


def needs_paths(paths: Sequence[str]) -> str:
    """``needs path II`` / ``needs paths II, IT``: what a target lacks, in words."""
    return f"needs path{'s' if len(paths) != 1 else ''} {', '.join(paths)}"


def compose(mode: str, paths: Mapping[str, Any]) -> Any:
    """The scores of ``mode``: the weighted sum of its paths (weights from :data:`MODES`).

    ``paths`` maps path names to arrays (or row blocks) of one shape; a single-path mode returns its
    path as it is.  KeyError-free: a missing path, or paths of different shapes, is a ConfigError
    naming them.
    """
    from .errors import ConfigError

    key = normalize_mode(mode)
    weights = MODES[key]
    shapes = {np.shape(paths[p]) for p in weights if p in paths}
    if len(shapes) > 1:
        raise ConfigError(f"mode {key}: path shapes differ {' vs '.join(map(str, sorted(shapes)))}")
    missing = [p for p in weights if p not in paths]
    if missing:
        raise ConfigError(f"mode {mode} {needs_paths(missing)}", param="mode")
    if len(weights) == 1:
        return paths[next(iter(weights))]
    return sum(w * paths[p] for p, w in weights.items())


def query_sides(paths: Collection[str]) -> frozenset[str]:
    """The sides of the query (``image``, ``text``) the paths read."""
    return frozenset(PATH_SIDES[p][0] for p in paths)


def target_sides(target: str) -> frozenset[str]:
    """The sides of the query a target reads: a mode's (:func:`query_sides` of its paths); MOOR and the
    fixed-fusion baselines (``fusion/<name>``) read all four paths, so both sides."""
    return query_sides(MODES[target]) if target in MODES else frozenset(SIDES)


def target_reads(target: str, condition: str) -> bool:
    """Whether ``condition`` corrupts a side of the query that ``target`` reads: the sides of its kind
    (:data:`~snapbench.core.conditions.KIND_SIDES`) meet :func:`target_sides`.  A joint condition
    counts when either of its parts is read (T→T reads the text part of ``joint/…``); an image
    condition cannot move T→T, nor a text condition I→I, so they do not count in that target's
    means over corrupted conditions.  ``clean`` corrupts nothing: never."""
    from .conditions import KIND_SIDES, parse_condition

    return bool(KIND_SIDES[parse_condition(condition).kind] & target_sides(target))
