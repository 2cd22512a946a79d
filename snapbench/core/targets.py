"""The retrieval modes and their similarity paths: the one table every layer reads.

Query = (image, question); gallery item = (image, caption).  A dual encoder gives four paths:
``II`` = sim(query image, gallery image), ``TT`` = sim(question, caption), ``IT`` = sim(query image,
caption), ``TI`` = sim(question, gallery image).  The modes are fixed combinations of them (the
SnapBench names in ``MODE_LABELS``): I→I = II; T→T = TT; IT→IT = (II + TT)/2; I→IT = (II + IT)/2;
T→IT = (TI + TT)/2.

Below the tables: the one rule for what can run (:func:`plan_modes`: the sides a data set and an
encoder have -> the modes, paths and whether MOOR runs, with a reason for each one left out) and the
one composition of a mode from its paths (:func:`compose`, with the weights of :data:`MODES`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["PATHS", "PATH_SIDES", "MODES", "MODE_LABELS", "SIDES", "ModePlan", "compose", "modes_for_paths",
           "needs_paths", "normalize_mode", "paths_for_sides", "plan_modes", "query_sides", "target_reads",
           "target_sides"]

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
# what can run: the one rule every layer uses (data, encode, run, evaluate, the commands)
# ------------------------------------------------------------------------------------------------
SIDES: tuple[str, str] = ("image", "text")


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


def paths_for_sides(query_sides: Collection[str], gallery_sides: Collection[str]) -> tuple[str, ...]:
    """The paths (in :data:`PATHS` order) whose query side and gallery side are both available."""
    return tuple(p for p, (qs, gs) in PATH_SIDES.items() if qs in query_sides and gs in gallery_sides)


def modes_for_paths(paths: Collection[str]) -> tuple[str, ...]:
    """The modes (in :data:`MODES` order) all of whose paths are in ``paths``."""
    return tuple(m for m, weights in MODES.items() if set(weights) <= set(paths))


@dataclass(frozen=True)
class ModePlan:
    """What a run or an encode can compute from the sides it has.

    ``modes``: the retrieval modes to evaluate; ``paths``: the similarity paths they (and MOOR)
    need; ``moor``: whether MOOR and the fusion baselines can run (they need all four paths);
    ``skipped``: mode (or ``"MOOR"``) -> why it cannot run, in one sentence; the same in parts, for
    notes that name a reason once for several modes: ``lacking`` (the paths it lacks) and ``reasons``
    (why they are missing, when known).
    """

    modes: tuple[str, ...]
    paths: tuple[str, ...]
    moor: bool
    skipped: dict[str, str] = field(default_factory=dict)
    lacking: dict[str, tuple[str, ...]] = field(default_factory=dict)
    reasons: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def targets(self) -> tuple[str, ...]:
        """The modes, then ``MOOR`` when it runs."""
        return self.modes + (("MOOR",) if self.moor else ())


def plan_modes(query_sides: Collection[str], gallery_sides: Collection[str], requested: Sequence[str] | None = None,
               *, why: Mapping[str, str] | None = None, shared_space: bool = True) -> ModePlan:
    """The :class:`ModePlan` for the available sides (``"image"`` / ``"text"`` of the query and of the
    gallery item).  ``requested``: modes asked for (any case; default all); ``why``: side -> reason it
    is missing, quoted in ``skipped``; ``shared_space=False`` (image and text embeddings of different
    sizes) rules out the cross-modal paths IT and TI."""
    reasons = dict(why or {})
    have = set(paths_for_sides(query_sides, gallery_sides))
    if not shared_space:
        have -= {p for p, (qs, gs) in PATH_SIDES.items() if qs != gs}
    wanted = list(MODES) if requested is None else list(dict.fromkeys(normalize_mode(m) for m in requested))

    def why_missing(lacking: tuple[str, ...]) -> tuple[str, ...]:
        sides = [s for p in lacking for s in (f"query {PATH_SIDES[p][0]}", f"gallery {PATH_SIDES[p][1]}")]
        known = list(dict.fromkeys(reasons[s] for s in sides if s in reasons))
        if not shared_space and any(PATH_SIDES[p][0] != PATH_SIDES[p][1] for p in lacking):
            known.append("the image and text embeddings differ in size (no shared space)")
        return tuple(known)

    modes = tuple(m for m in wanted if set(MODES[m]) <= have)
    moor = have == set(PATHS)
    out = [m for m in wanted if m not in modes] + ([] if moor else ["MOOR"])
    lacking = {t: tuple(p for p in PATHS if p in (PATHS if t == "MOOR" else MODES[t]) and p not in have) for t in out}
    why = {t: why_missing(lacking[t]) for t in out}
    skipped = {t: needs_paths(lacking[t]) + (f": {'; '.join(why[t])}" if why[t] else "") for t in out}
    needed = {p for m in modes for p in MODES[m]} | (set(PATHS) if moor else set())
    return ModePlan(modes, tuple(p for p in PATHS if p in needed), moor, skipped, lacking, why)


def needs_paths(paths: Sequence[str]) -> str:
    """``needs path II`` / ``needs paths II, IT``: what a target lacks, in words."""
    return f"needs path{'s' if len(paths) != 1 else ''} {', '.join(paths)}"


def compose(mode: str, paths: Mapping[str, Any]) -> Any:
    """The scores of ``mode``: the weighted sum of its paths (weights from :data:`MODES`).

    ``paths`` maps path names to arrays (or row blocks) of one shape; a single-path mode returns its
    path as it is.  KeyError-free: a missing path is a ConfigError naming it.
    """
    from .errors import ConfigError

    weights = MODES[normalize_mode(mode)]
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
