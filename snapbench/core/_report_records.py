"""The records a report is made of, one per result it lists (a condition vs clean, an additivity
term, a severity curve, stability counts, ranks, groups, per-query values, ...), each with its
``read`` (from a :class:`~snapbench.core._report_reader.Reader`) and ``to_json`` (same keys, same order).

Public through :mod:`snapbench.core.records`, which assembles them into the :class:`~snapbench.core.records.Report`
and states the conventions (signs, ``None`` for undefined values).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from ._report_reader import CI, Reader, Value, ci_json, metric_values, per_metric
from .errors import InputError

__all__ = [
    "Paired",
    "GroupPaired",
    "Additivity",
    "AdditivitySummary",
    "SeverityCurve",
    "Stability",
    "FirstRank",
    "Displacement",
    "GroupReport",
    "CoarseTextDrag",
    "DepthLimit",
    "PerQuery",
]


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
        return {"delta": self.delta, "ci": ci_json(self.ci), "p": self.p, "p_raw": self.p_raw}


@dataclass
class GroupPaired:
    """A condition vs clean for one metric, within a query group (no test)."""

    delta: Value
    ci: CI

    @classmethod
    def read(cls, r: Reader, _: str = "") -> GroupPaired:
        return cls(r.value("delta"), r.ci())

    def to_json(self) -> dict:
        return {"delta": self.delta, "ci": ci_json(self.ci)}


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
                             "obs": self.obs, "delta": self.delta, "ci": ci_json(self.ci)}
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
        return {"mean": self.mean, "median": self.median, "ci": ci_json(self.ci), "n": self.n}


@dataclass
class GroupReport:
    """Values and paired deltas within one query group (``--group-by``)."""

    n_queries: int
    n_excluded_zero_gt: int
    conditions: dict[str, dict[str, Value]]
    paired: dict[str, dict[str, GroupPaired]]

    @classmethod
    def read(cls, r: Reader, _: str = "") -> GroupReport:
        return cls(int(r.need("n_queries")), int(r.need("n_excluded_zero_gt")), r.table("conditions", metric_values),
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
        return {"metric": self.metric, "value": self.value, "ci": ci_json(self.ci), "joint": self.joint,
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
