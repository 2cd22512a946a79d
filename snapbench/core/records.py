"""The declarative records of snapbench: the evaluation report (below), the query record, the
severity-target outcome.

The evaluation report as types: what ``evaluate`` writes and ``report``, ``additivity``, ``compare``
and the traffic view read.

One report = one retrieval target (a mode, MOOR or a fusion baseline) under every condition of a run.
On disk it is ``report.json`` (SPEC §11 keys first); in code it is a :class:`Report`, built with
:meth:`Report.from_json` (which checks the shape and names the file and key of a problem) and written
with :meth:`Report.to_json` (same keys in the same order, so files stay byte-identical).  Readers use
attributes (``report.paired[c][m].ci``), never string keys.

Conventions, fixed here for every reader:

* values are in [0, 1]; an undefined value (no query counts for it) is ``None``;
* ``paired``: delta = condition − clean (negative = worse), ``ci`` its paired bootstrap interval,
  ``p`` Holm-adjusted over conditions per metric, ``p_raw`` unadjusted;
* ``additivity``: drops = clean − condition (positive = worse); δ = Obs − Exp (> 0 super-additive);
* optional sections are ``None`` when the report has none (they are then absent from the file).

Reading is typed: a :class:`Reader` names the file and key path of every problem, so each record's
``read`` / ``to_json`` pair stays short (a record asks the reader for ``value`` / ``ci`` / ``table``
and never checks types itself).  Each record of a report (a condition vs clean, an additivity term, a
severity curve, stability counts, ranks, groups, per-query values, ...) has its ``read`` and
``to_json`` (same keys, same order).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

from .errors import InputError

__all__ = ['CI', 'MISSING', 'Reader', 'Value', 'per_metric', 'Paired', 'GroupPaired', 'Additivity', 'AdditivitySummary', 'SeverityCurve', 'Stability', 'FirstRank', 'Displacement', 'GroupReport', 'CoarseTextDrag', 'DepthLimit', 'PerQuery', 'REPORT_SCHEMA_VERSION', 'ReportMeta', 'Report']

Value = float | None
CI = tuple[Value, Value]
T = TypeVar("T")


class _Missing:
    """Marks a meta field the report does not have (absent from the file, unlike ``null``)."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


class Reader:
    """Typed access to one JSON object; every problem names the file and the key path."""

    def __init__(self, obj: Any, where: str, path: str | os.PathLike | None) -> None:
        self.where, self.path = where, path
        if not isinstance(obj, Mapping):
            self.fail("must be a JSON object")
        self.obj = obj

    def fail(self, problem: str) -> None:
        raise InputError(f"not a snapbench report: {self.where or 'top level'} {problem}", path=self.path)

    def sub(self, key: str) -> Reader:
        return Reader(self.need(key), f"{self.where}.{key}" if self.where else key, self.path)

    def need(self, key: str) -> Any:
        if key not in self.obj:
            self.fail(f"has no {key!r}")
        return self.obj[key]

    def value(self, key: str) -> Value:
        v = self.need(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
            self.fail_at(key, f"must be a number or null, got {v!r}")
        return None if v is None else float(v)

    def fail_at(self, key: str, problem: str) -> None:
        """Fail naming the key path of ``key`` in this object."""
        Reader({}, f"{self.where}.{key}" if self.where else key, self.path).fail(problem)

    def integer(self, key: str, *, minimum: int | None = None) -> int:
        v = self.need(key)
        if isinstance(v, bool) or not isinstance(v, int) or (minimum is not None and v < minimum):
            self.fail_at(key, f"must be an integer{'' if minimum is None else f' >= {minimum}'}, got {v!r}")
        return v

    def ci(self, key: str = "ci") -> CI:
        v = self.need(key)
        if not isinstance(v, list) or len(v) != 2:
            self.fail_at(key, f"must be [low, high], got {v!r}")
        r = Reader({"lo": v[0], "hi": v[1]}, f"{self.where}.{key}", self.path)
        return (r.value("lo"), r.value("hi"))

    def table(self, key: str, build: Callable[[Reader, str], T]) -> dict[str, T]:
        """``{name: build(reader of obj[key][name], name)}``."""
        outer = self.sub(key)
        return {str(k): build(outer.sub(k), str(k)) for k in outer.obj}


def _ci_json(ci: CI) -> list[Value]:
    return [ci[0], ci[1]]



def per_metric(build: Callable[[Reader, str], T]) -> Callable[[Reader, str], dict[str, T]]:
    return lambda r, _name: {str(m): build(r.sub(m), str(m)) for m in r.obj}


def _metric_values(r: Reader, _name: str) -> dict[str, Value]:
    return {str(m): r.value(m) for m in r.obj}


@dataclass
class Paired:
    """A condition vs clean for one metric."""

    delta: Value
    ci: CI
    p: Value
    p_raw: Value

    @classmethod
    def read(cls, r: Reader, _: str = "") -> Paired:
        return cls(r.value("delta"), r.ci(), r.value("p"), r.value("p_raw"))

    def to_json(self) -> dict:
        return {"delta": self.delta, "ci": _ci_json(self.ci), "p": self.p, "p_raw": self.p_raw}


@dataclass
class GroupPaired:
    """A condition vs clean for one metric, within a query group (no test)."""

    delta: Value
    ci: CI

    @classmethod
    def read(cls, r: Reader, _: str = "") -> GroupPaired:
        return cls(r.value("delta"), r.ci())

    def to_json(self) -> dict:
        return {"delta": self.delta, "ci": _ci_json(self.ci)}


@dataclass
class Additivity:
    """Drops of a joint condition's parts and of the joint condition (SPEC §8); ``n`` = joint
    conditions averaged (summaries only)."""

    delta_image: Value
    delta_text: Value
    exp: Value
    obs: Value
    delta: Value
    ci: CI
    n: int | None = None

    @classmethod
    def read(cls, r: Reader, _: str = "") -> Additivity:
        n = r.obj.get("n")
        return cls(r.value("delta_image"), r.value("delta_text"), r.value("exp"), r.value("obs"), r.value("delta"),
                   r.ci(), None if n is None else int(n))

    def to_json(self) -> dict:
        d: dict[str, Any] = {"delta_image": self.delta_image, "delta_text": self.delta_text, "exp": self.exp,
                             "obs": self.obs, "delta": self.delta, "ci": _ci_json(self.ci)}
        if self.n is not None:
            d["n"] = self.n
        return d



@dataclass
class AdditivitySummary:
    """Means of the per-joint additivity: per pair (over severities), per severity (over pairs), overall."""

    by_pair: dict[str, dict[str, Additivity]] = field(default_factory=dict)
    by_severity: dict[str, dict[str, Additivity]] = field(default_factory=dict)
    mean: dict[str, Additivity] | None = None

    @classmethod
    def read(cls, r: Reader) -> AdditivitySummary:
        out = cls()
        if "by_pair" in r.obj:
            out.by_pair = r.table("by_pair", per_metric(Additivity.read))
        if "by_severity" in r.obj:
            out.by_severity = r.table("by_severity", per_metric(Additivity.read))
        if "mean" in r.obj:
            out.mean = per_metric(Additivity.read)(r.sub("mean"), "mean")
        return out

    def to_json(self) -> dict:
        d: dict[str, Any] = {}
        if self.by_pair or self.mean is not None:
            d["by_pair"] = {k: {m: a.to_json() for m, a in v.items()} for k, v in self.by_pair.items()}
            d["by_severity"] = {k: {m: a.to_json() for m, a in v.items()} for k, v in self.by_severity.items()}
        if self.mean is not None:
            d["mean"] = {m: a.to_json() for m, a in self.mean.items()}
        return d


@dataclass
class SeverityCurve:
    """Drops (clean − s) per severity of one image operator, and its cliff/gradual/flat label."""

    drops: dict[str, Value]
    label: str

    @classmethod
    def read(cls, r: Reader, _: str = "") -> SeverityCurve:
        d = r.sub("drops")
        return cls({str(s): d.value(s) for s in d.obj}, str(r.need("label")))

    def to_json(self) -> dict:
        return {"drops": dict(self.drops), "label": self.label}


@dataclass
class Stability:
    """Queries by (clean correct?, condition correct?) for a hit@k metric."""

    metric: str
    stably_correct: int
    drag: int
    persistently_wrong: int
    boost: int
    n: int

    @classmethod
    def read(cls, r: Reader, _: str = "") -> Stability:
        return cls(str(r.need("metric")), *(int(r.need(k)) for k in ("stably_correct", "drag", "persistently_wrong",
                                                                         "boost", "n")))

    def to_json(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass
class FirstRank:
    """Rank of the first positive (queries with positives; not retrieved = beyond the gallery)."""

    mean: Value
    median: Value
    n_not_retrieved: int

    @classmethod
    def read(cls, r: Reader, _: str = "") -> FirstRank:
        return cls(r.value("mean"), r.value("median"), int(r.need("n_not_retrieved")))

    def to_json(self) -> dict:
        return {"mean": self.mean, "median": self.median, "n_not_retrieved": self.n_not_retrieved}


@dataclass
class Displacement:
    """Corrupted − clean rank of the first positive (positive = moved down), with a bootstrap CI."""

    mean: Value
    median: Value
    ci: CI
    n: int

    @classmethod
    def read(cls, r: Reader, _: str = "") -> Displacement:
        return cls(r.value("mean"), r.value("median"), r.ci(), int(r.need("n")))

    def to_json(self) -> dict:
        return {"mean": self.mean, "median": self.median, "ci": _ci_json(self.ci), "n": self.n}


@dataclass
class GroupReport:
    """Values and paired deltas within one query group (``--group-by``)."""

    n_queries: int
    n_excluded_zero_gt: int
    conditions: dict[str, dict[str, Value]]
    paired: dict[str, dict[str, GroupPaired]]

    @classmethod
    def read(cls, r: Reader, _: str = "") -> GroupReport:
        return cls(int(r.need("n_queries")), int(r.need("n_excluded_zero_gt")), r.table("conditions", _metric_values),
                   r.table("paired", per_metric(GroupPaired.read)))

    def to_json(self) -> dict:
        return {"n_queries": self.n_queries, "n_excluded_zero_gt": self.n_excluded_zero_gt,
                "conditions": {c: dict(v) for c, v in self.conditions.items()},
                "paired": {c: {m: p.to_json() for m, p in v.items()} for c, v in self.paired.items()}}


@dataclass
class CoarseTextDrag:
    """hit@1 of a fused mode minus hit@1 of image-only I→I on clean queries, with a paired CI."""

    metric: str
    value: Value
    ci: CI
    joint: str
    joint_value: Value
    image_value: Value

    @classmethod
    def read(cls, r: Reader) -> CoarseTextDrag:
        return cls(str(r.need("metric")), r.value("value"), r.ci(), str(r.need("joint")), r.value("joint_value"),
                   r.value("image_value"))

    def to_json(self) -> dict:
        return {"metric": self.metric, "value": self.value, "ci": _ci_json(self.ci), "joint": self.joint,
                "joint_value": self.joint_value, "image_value": self.image_value}


@dataclass
class DepthLimit:
    """A condition whose runs list only ``depth`` items: ``metrics`` are lower bounds there."""

    depth: int
    metrics: list[str]

    @classmethod
    def read(cls, r: Reader, _: str = "") -> DepthLimit:
        return cls(int(r.need("depth")), [str(m) for m in r.need("metrics")])

    def to_json(self) -> dict:
        return {"depth": self.depth, "metrics": list(self.metrics)}


@dataclass
class PerQuery:
    """Per-query values of every condition and metric (``None`` = the query does not count)."""

    query_ids: list[str]
    values: dict[str, dict[str, list[Value]]]

    @classmethod
    def read(cls, r: Reader) -> PerQuery:
        qids = [str(q) for q in r.need("query_ids")]
        vals = r.sub("values")
        out: dict[str, dict[str, list[Value]]] = {}
        for c in vals.obj:
            per = vals.sub(c)
            out[str(c)] = {}
            for m in per.obj:
                arr = per.need(m)
                if not isinstance(arr, list) or len(arr) != len(qids):
                    per.fail(f"{m!r} must list one value per query ({len(qids)})")
                out[str(c)][str(m)] = [None if v is None else float(v) for v in arr]
        return cls(qids, out)

    def to_json(self) -> dict:
        return {"query_ids": list(self.query_ids), "values": self.values}

    @classmethod
    def from_arrays(cls, query_ids: Sequence[str], values: Mapping[str, Mapping[str, Any]]) -> PerQuery:
        """From ``{condition: {metric: one number per query}}`` (NaN = the query does not count)."""
        import numpy as np

        qids = [str(q) for q in query_ids]
        out: dict[str, dict[str, list[Value]]] = {}
        for c, per in values.items():
            out[str(c)] = {}
            for m, arr in per.items():
                a = np.asarray(arr, dtype=np.float64).reshape(-1)
                if a.size != len(qids):
                    raise InputError(f"per-query values of {c!r}/{m!r} have {a.size} entries for {len(qids)} query ids")
                out[str(c)][str(m)] = [float(v) if np.isfinite(v) else None for v in a.tolist()]
        return cls(qids, out)

    def array(self, condition: str, metric: str) -> Any:
        """One condition's per-query values of ``metric`` as a float array (NaN = does not count);
        ``None`` when the table has no such condition or metric."""
        import numpy as np

        vals = self.values.get(condition, {}).get(metric)
        return None if vals is None else np.array([np.nan if v is None else v for v in vals], dtype=np.float64)


REPORT_SCHEMA_VERSION = 1

# meta fields every report has, in file order
_META_CORE = ("snapbench_version", "schema_version", "seed", "resamples", "permutations", "ci_level", "ci_method",
              "ks", "metrics", "tie_rule", "tests", "correction", "zero_gt", "n_zero_gt", "n_gallery", "graded_labels",
              "set_threshold", "paired_delta", "additivity_drops", "cliff_rule", "cliff_tol", "cliff_ratio",
              "stability_metric")
# where the scores came from: evaluate (scores_dir ... depth_limited_metrics) or run (mode, dataset, ...)
_META_CONTEXT = ("scores_dir", "qrels", "input_format", "mode", "qrels_without_scores", "depth_limited_metrics",
                 "dataset", "n_dropped_queries", "labelled", "stability_measures", "notes")


@dataclass
class ReportMeta:
    """How the report was computed (settings, rules in words) and where its scores came from."""

    snapbench_version: str
    schema_version: int
    seed: int
    resamples: int
    permutations: int
    ci_level: float
    ci_method: str
    ks: list[int]
    metrics: list[str]
    tie_rule: str
    tests: dict[str, str]
    correction: str
    zero_gt: str
    n_zero_gt: int
    n_gallery: int
    graded_labels: bool
    set_threshold: float | None
    paired_delta: str
    additivity_drops: str
    cliff_rule: str
    cliff_tol: float
    cliff_ratio: float
    stability_metric: str
    scores_dir: Any = MISSING
    qrels: Any = MISSING
    input_format: Any = MISSING
    mode: Any = MISSING
    qrels_without_scores: Any = MISSING
    depth_limited_metrics: Any = MISSING
    dataset: Any = MISSING
    n_dropped_queries: Any = MISSING
    labelled: Any = MISSING  # False: evaluated without relevance labels (only stability measures)
    stability_measures: Any = MISSING  # {"rule", "rbo_p", "rbo_depth"} when overlap@k / rbo / flip@k were evaluated
    notes: Any = MISSING  # list of sentences about the whole report (run --limit: the first N of M queries only)

    @classmethod
    def read(cls, r: Reader) -> ReportMeta:
        core = {k: r.need(k) for k in _META_CORE}
        # the settings `snapbench report` recomputes the report's intervals with: no default stands in
        r.integer("seed")
        r.integer("resamples", minimum=1)
        level = r.value("ci_level")
        if level is None or not 0 < level < 1:
            r.fail_at("ci_level", f"must be in (0, 1), e.g. 0.95; got {level!r}")  # validate.ci_level's words
        context = {k: r.obj[k] for k in _META_CONTEXT if k in r.obj}
        return cls(**core, **context)

    def to_json(self) -> dict:
        d = {k: getattr(self, k) for k in _META_CORE}
        d.update({k: getattr(self, k) for k in _META_CONTEXT if getattr(self, k) is not MISSING})
        return d

    def get(self, key: str, default: Any = None) -> Any:
        """A context field, ``default`` when the report does not have it."""
        v = getattr(self, key)
        return default if v is MISSING else v


@dataclass
class Report:
    """One target's paired robustness report (see the module docstring for the conventions)."""

    conditions: dict[str, dict[str, Value]]
    paired: dict[str, dict[str, Paired]]
    additivity: dict[str, dict[str, Additivity]]
    n_queries: int
    n_excluded_zero_gt: int
    meta: ReportMeta
    additivity_summary: AdditivitySummary = field(default_factory=AdditivitySummary)
    additivity_skipped: dict[str, str] | None = None
    severity_curves: dict[str, dict[str, SeverityCurve]] = field(default_factory=dict)
    stability: dict[str, Stability] | None = None
    first_positive_rank: dict[str, FirstRank] = field(default_factory=dict)
    rank_displacement: dict[str, Displacement] | None = None
    groups: dict[str, GroupReport] | None = None
    coarse_text_drag: CoarseTextDrag | None = None
    n_qrels_without_scores: int | None = None
    depth_limited: dict[str, DepthLimit] | None = None
    warnings: list[str] | None = None
    per_query: PerQuery | None = None
    # {condition: {stability metric: {"mean": v, "ci": [lo, hi]}}}: each label-free measure's own
    # bootstrap interval (the paired one of ``paired`` is against clean's 1, or 0 for flip@k)
    label_free: dict[str, dict[str, dict[str, Any]]] | None = None

    # ---------------------------------------------------------------- reading
    @property
    def metrics(self) -> list[str]:
        return list(self.meta.metrics)

    @property
    def condition_ids(self) -> list[str]:
        """Every condition, clean first."""
        return list(self.conditions)

    def value(self, condition: str, metric: str) -> Value:
        return self.conditions.get(condition, {}).get(metric)

    @classmethod
    def from_json(cls, obj: Any, *, path: str | os.PathLike | None = None) -> Report:
        """Check and type a parsed report; :class:`InputError` naming ``path`` and the key otherwise."""
        r = Reader(obj, "", path)
        conds = r.table("conditions", _metric_values)
        if "clean" not in conds:
            r.fail("has no 'clean' condition")
        rep = cls(
            conditions=conds,
            paired=r.table("paired", per_metric(Paired.read)),
            additivity=r.table("additivity", per_metric(Additivity.read)),
            n_queries=int(r.need("n_queries")),
            n_excluded_zero_gt=int(r.need("n_excluded_zero_gt")),
            meta=ReportMeta.read(r.sub("meta")),
        )
        o = r.obj
        if "additivity_summary" in o:
            rep.additivity_summary = AdditivitySummary.read(r.sub("additivity_summary"))
        if "additivity_skipped" in o:
            rep.additivity_skipped = {str(k): str(v) for k, v in r.need("additivity_skipped").items()}
        if "severity_curves" in o:
            rep.severity_curves = r.table("severity_curves", per_metric(SeverityCurve.read))
        if "stability" in o:
            rep.stability = r.table("stability", Stability.read)
        if "first_positive_rank" in o:
            rep.first_positive_rank = r.table("first_positive_rank", FirstRank.read)
        if "rank_displacement" in o:
            rep.rank_displacement = r.table("rank_displacement", Displacement.read)
        if "groups" in o:
            rep.groups = r.table("groups", GroupReport.read)
        if "coarse_text_drag" in o:
            rep.coarse_text_drag = CoarseTextDrag.read(r.sub("coarse_text_drag"))
        if "n_qrels_without_scores" in o:
            rep.n_qrels_without_scores = int(o["n_qrels_without_scores"])
        if "depth_limited" in o:
            rep.depth_limited = r.table("depth_limited", DepthLimit.read)
        if "warnings" in o:
            rep.warnings = [str(w) for w in r.need("warnings")]
        if "per_query" in o:
            rep.per_query = PerQuery.read(r.sub("per_query"))
        if "label_free" in o:
            lf = r.need("label_free")
            if not isinstance(lf, dict) or not all(isinstance(v, dict) for v in lf.values()):
                r.fail_at("label_free", "must be an object {condition: {metric: {mean, ci}}}")
            rep.label_free = {str(c): {str(m): dict(e) for m, e in v.items()} for c, v in lf.items()}
        return rep

    # ---------------------------------------------------------------- writing
    def to_json(self) -> dict:
        """The report as JSON values, keys in the file's order."""
        d: dict[str, Any] = {
            "conditions": {c: dict(v) for c, v in self.conditions.items()},
            "paired": {c: {m: p.to_json() for m, p in v.items()} for c, v in self.paired.items()},
            "additivity": {j: {m: a.to_json() for m, a in v.items()} for j, v in self.additivity.items()},
            "n_queries": self.n_queries,
            "n_excluded_zero_gt": self.n_excluded_zero_gt,
            "additivity_summary": self.additivity_summary.to_json(),
        }
        if self.additivity_skipped is not None:
            d["additivity_skipped"] = dict(self.additivity_skipped)
        d["severity_curves"] = {op: {m: c.to_json() for m, c in v.items()} for op, v in self.severity_curves.items()}
        if self.stability is not None:
            d["stability"] = {c: s.to_json() for c, s in self.stability.items()}
        d["first_positive_rank"] = {c: f.to_json() for c, f in self.first_positive_rank.items()}
        if self.rank_displacement is not None:
            d["rank_displacement"] = {c: x.to_json() for c, x in self.rank_displacement.items()}
        if self.groups is not None:
            d["groups"] = {g: e.to_json() for g, e in self.groups.items()}
        d["meta"] = self.meta.to_json()
        if self.coarse_text_drag is not None:
            d["coarse_text_drag"] = self.coarse_text_drag.to_json()
        if self.n_qrels_without_scores is not None:
            d["n_qrels_without_scores"] = self.n_qrels_without_scores
        if self.depth_limited is not None:
            d["depth_limited"] = {c: x.to_json() for c, x in self.depth_limited.items()}
        if self.warnings is not None:
            d["warnings"] = list(self.warnings)
        if self.label_free is not None:
            d["label_free"] = {c: {m: dict(e) for m, e in v.items()} for c, v in self.label_free.items()}
        if self.per_query is not None:
            d["per_query"] = self.per_query.to_json()
        return d


@dataclass(frozen=True)
class TargetOutcome:
    """How a run's image variants met their severity targets: ``variants`` searched, ``missed`` (not
    within the tolerance: ``"reached": false``) and ``inverted`` -- (query, operator) pairs whose
    achieved measure does not fall from level to level (a harsher level measures milder than the one
    before it: a missed target, most often)."""

    variants: int = 0
    missed: int = 0
    inverted: int = 0

    def to_json(self) -> dict[str, int]:
        """How run.json records it."""
        return {"variants": self.variants, "missed": self.missed, "inverted": self.inverted}

    @classmethod
    def from_json(cls, obj: Any) -> TargetOutcome | None:
        """What :meth:`to_json` recorded (run.json's ``severity_target_outcome``), or None when ``obj``
        is not such a record (a run without a severity target)."""
        if not isinstance(obj, Mapping):
            return None
        return cls(int(obj.get("variants", 0)), int(obj.get("missed", 0)), int(obj.get("inverted", 0)))


@dataclass(frozen=True, eq=True)
class QueryRecord:
    """One query of a query set. ``image`` is resolved against the manifest's directory."""

    id: str
    image: Path | None
    question: str | None
    entity: str | None = None
    tags: dict[str, Any] = field(default_factory=dict)
