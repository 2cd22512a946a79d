"""The evaluation report as types: what ``evaluate`` writes and ``report``, ``additivity``, ``compare``
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
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._schema_reader import CI, MISSING, Reader, Value, metric_values, per_metric
from ._schema_records import (
    Additivity,
    AdditivitySummary,
    CoarseTextDrag,
    DepthLimit,
    Displacement,
    FirstRank,
    GroupPaired,
    GroupReport,
    Paired,
    PerQuery,
    SeverityCurve,
    Stability,
)

__all__ = [
    "REPORT_SCHEMA_VERSION",
    "CI",
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
    "ReportMeta",
    "Report",
    "read_report",
    "write_report",
]

REPORT_SCHEMA_VERSION = 1

# meta fields every report has, in file order
_META_CORE = ("snapbench_version", "schema_version", "seed", "resamples", "permutations", "ci_level", "ci_method",
              "ks", "metrics", "tie_rule", "tests", "correction", "zero_gt", "n_zero_gt", "n_gallery", "graded_labels",
              "set_threshold", "paired_delta", "additivity_drops", "cliff_rule", "cliff_tol", "cliff_ratio",
              "stability_metric")
# where the scores came from: evaluate (scores_dir ... depth_limited_metrics) or run (mode, dataset, ...)
_META_CONTEXT = ("scores_dir", "qrels", "input_format", "mode", "qrels_without_scores", "depth_limited_metrics",
                 "dataset", "n_dropped_queries", "labelled", "stability_measures")


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
        conds = r.table("conditions", metric_values)
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


def read_report(path: str | os.PathLike) -> Report:
    """Read and check a ``report.json`` (decoded through :mod:`snapbench.textio`)."""
    from .textio import read_json

    return Report.from_json(read_json(path, what="report"), path=path)


def write_report(report: Report, path: str | os.PathLike) -> None:
    """Write ``report`` as strict JSON (undefined values as null), atomically (parent folders are
    created); :class:`~snapbench.errors.OutputError` naming ``path`` when it cannot be written."""
    from .errors import OutputError
    from .jsonable import write_json

    try:
        write_json(Path(path), report.to_json())
    except OSError as e:
        raise OutputError(f"cannot write the report ({e.strerror or e})", path=path) from None
