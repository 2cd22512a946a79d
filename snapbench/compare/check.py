"""Whether runs can be compared: the same queries, gallery, qrels, conditions, seed and metric settings.

Everything a model's numbers depend on besides the model itself must be the same in every run, or a
difference between two models could be a difference of set-ups.  Compared, each model against the
first:

* **seed** -- run.json ``seed`` and every report's ``meta.seed`` (it drew the variants and the
  bootstrap);
* **queries** -- the reports' number of queries and, per target, the query ids of the per-query
  tables (which name examples of the queries one run lacks);
* **gallery** -- ``fingerprint.dataset_gallery_sha256`` and the reports' ``meta.n_gallery``;
* **qrels** -- the queries without a relevant item (where a ranking metric is undefined), the
  reports' ``meta.n_zero_gt`` and ``meta.graded_labels``;
* **conditions** -- each target's planned conditions (:mod:`.planned`: a run that reads one side of
  the query only, such as a text-only encoder's, is compared with the others on the conditions every
  run has, with a warning naming the rest) and, between two runs that generated their variants, the
  severity grid (``fingerprint.grid``) and the severity target (``fingerprint.severity_target``,
  absent when the levels are the grid's knob values): with another target ``img/blur/s2`` is another
  corruption;
* **metric settings** -- the reports' zero-GT rule, set threshold and tie rule.

Not compared: the **variant source** (``--variants released`` vs ``generated`` of the same model is
the release's confound check), the encoder, and settings that change no number of the comparison
(block and batch sizes, resamples of the runs' own reports).  Every difference found is named in one
:class:`~snapbench.core.errors.ConfigError`, with the two models and their paths (no parameter: the
message is about the runs, which it names).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..core.errors import ConfigError
from ..core.jsonable import dumps
from ..evaluate.metrics import metric_family
from .inputs import set_diff
from .planned import TargetConditions, compared_conditions
from .sources import ModelSource, PerQueryArrays

__all__ = ["check_setups", "check_queries"]

_ADVICE = ("compare runs of the same queries, gallery, qrels, conditions, seed and metric settings "
           "(only the variant source may differ)")


def _short(v: Any) -> str:
    """A value for a message: a long string (a hash) cut inside its quotes, other JSON cut with '…'."""
    if isinstance(v, str):
        return repr(v if len(v) <= 24 else v[:16] + "…")
    text = dumps(v, indent=None)
    return text if len(text) <= 60 else text[:57] + "…"


def _value_diff(what: str, a: ModelSource, va: Any, b: ModelSource, vb: Any) -> str | None:
    if va == vb:
        return None
    return f"{what}: {a.label} has {_short(va)}, {b.label} has {_short(vb)}"


def _fail(diffs: list[str]) -> None:
    if diffs:
        raise ConfigError("the runs cannot be compared, they differ in their " + "; ".join(diffs) + f" -- {_ADVICE}")


def _seed(s: ModelSource, targets: Sequence[str]) -> Any:
    return s.run["seed"] if "seed" in s.run else s.report(targets[0]).meta.seed


def _run_diffs(a: ModelSource, b: ModelSource, targets: Sequence[str]) -> list[str]:
    out = [_value_diff("seed", a, _seed(a, targets), b, _seed(b, targets))]
    fa, fb = a.run.get("fingerprint"), b.run.get("fingerprint")
    if isinstance(fa, dict) and isinstance(fb, dict):
        # the queries are compared by their ids in the per-query tables (check_queries), which names examples
        out.append(_value_diff("gallery (hash of the data set's gallery ids)", a, fa.get("dataset_gallery_sha256"),
                               b, fb.get("dataset_gallery_sha256")))
        if a.variants in (None, "generated") and b.variants in (None, "generated"):
            if fa.get("grid") != fb.get("grid"):
                out.append(f"conditions: {a.label} and {b.label} generated their variants with different severity grids")
            if fa.get("severity_target") != fb.get("severity_target"):
                out.append(f"conditions: {a.label} generated its variants {_strengths(fa)}, {b.label} "
                           f"{_strengths(fb)} (one condition id, such as img/compression/s2, names a different corruption in each)")
    return [d for d in out if d]


def _strengths(fingerprint: dict[str, Any]) -> str:
    """How a run set its severities: a measured severity target (run.json ``fingerprint.severity_target``,
    absent for the grid's own knob values)."""
    target = fingerprint.get("severity_target")
    if target is None:
        return "with the grid's knob values (no severity target)"
    return f"with the severity target {target}"


_REPORT_FIELDS: tuple[tuple[str, str, Callable[[Any], Any]], ...] = (
    ("queries", "number of queries evaluated", lambda r: r.n_queries),
    ("seed", "seed", lambda r: r.meta.seed),
    ("gallery", "gallery size", lambda r: r.meta.n_gallery),
    ("qrels", "number of queries without a relevant item", lambda r: r.meta.n_zero_gt),
    ("qrels", "graded labels", lambda r: r.meta.graded_labels),
    ("metric settings", "zero-GT rule", lambda r: r.meta.zero_gt),
    ("metric settings", "set threshold", lambda r: r.meta.set_threshold),
    ("metric settings", "tie rule", lambda r: r.meta.tie_rule),
)


def _report_diffs(a: ModelSource, b: ModelSource, targets: Sequence[str], known: set[str]) -> list[str]:
    """Differences of the reports of ``targets``: each field once (with the targets it differs in),
    none already named in ``known`` (a seed that differs in run.json differs in every report)."""
    out = []
    for what, field, get in _REPORT_FIELDS:
        if what in known:
            continue
        differ = [(t, get(a.report(t)), get(b.report(t))) for t in targets]
        differ = [x for x in differ if x[1] != x[2]]
        if differ:
            t, va, vb = differ[0]
            where = ", ".join(x[0] for x in differ)
            out.append(f"{what} ({field} in {where}): {a.label} has {_short(va)}, {b.label} has {_short(vb)}")
    return out


def check_setups(sources: Sequence[ModelSource], targets: Sequence[str]) -> dict[str, TargetConditions]:
    """Refuse (one :class:`ConfigError` naming every difference) runs whose set-ups differ: run.json
    and the reports of ``targets``; see the module docstring.  Return the conditions each target is
    compared on (:func:`~snapbench.compare.planned.compared_conditions`)."""
    first = sources[0]
    diffs: list[str] = []
    compared: dict[str, TargetConditions] = {}
    for t in targets:
        compared[t], d = compared_conditions(sources, t)
        diffs += d
    for other in sources[1:]:
        run = _run_diffs(first, other, targets)
        diffs += run + _report_diffs(first, other, targets, {d.split(":")[0] for d in run})
    _fail(diffs)
    return compared


def _uncounted(arrays: PerQueryArrays, metrics: Sequence[str]) -> set[str] | None:
    """The queries a ranking metric leaves out (no relevant item), from the clean condition's values."""
    qids, values = arrays
    for m in metrics:
        try:
            rule = metric_family(m).counts
        except ConfigError:
            continue
        v = values.get("clean", {}).get(m)
        if rule in ("ranking", "positives") and v is not None:
            return {q for q, x in zip(qids, np.isnan(v)) if x}
    return None


def check_queries(sources: Sequence[ModelSource], target: str, tables: Sequence[PerQueryArrays],
                  metrics: Sequence[str]) -> None:
    """Refuse per-query tables of ``target`` over different queries, or with different queries
    without a relevant item (different qrels)."""
    first, t0 = sources[0], tables[0]
    diffs = []
    z0 = _uncounted(t0, metrics)
    for s, t in zip(sources[1:], tables[1:]):
        if (d := set_diff("queries", first.label, t0[0], s.label, t[0])) is not None:
            diffs.append(f"queries of {target}: {d}")
            continue
        z = _uncounted(t, metrics)
        if z0 is not None and z is not None and (d := set_diff("queries without a relevant item", first.label,
                                                                 sorted(z0), s.label, sorted(z))) is not None:
            diffs.append(f"qrels of {target}: {d}")
    _fail(diffs)
