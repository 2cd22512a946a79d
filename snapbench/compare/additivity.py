"""Super-additivity δ of each model and the paired difference δA − δB between models.

δ of a joint condition J = (image i at s, text t) is Obs − Exp = R(i) + R(t) − R(J) − R(clean)
(:mod:`snapbench.evaluate.additivity`; > 0: the joint drop exceeds the sum of the single drops).
Per model it is computed by :func:`snapbench.evaluate.additivity.additivity_analysis` on that model's
values and resampled values, so it equals the run's own report.  δ is linear in the four values, so
δA − δB under each shared resample (queries resampled jointly for both models and all four states)
is the difference of the two models' resampled δ; its percentile interval is the CI.  Rows: each
joint condition, each operator pair (``pair:<img>+<txt>``, mean over severities), each severity
(``severity:s<N>``, mean over pairs) and ``mean`` (all joint conditions) -- the summaries of a run.
"""

from __future__ import annotations

import numpy as np

from ..core.conditions import parse_condition
from ..evaluate.additivity import additivity_analysis, additivity_terms, joint_parts
from .groups import exact_group_means, group_means
from .records import AdditivityPairRecord, AdditivityRecord
from .stats import MetricBlock, pair_intervals

__all__ = ["additivity_records"]

def _summary_groups(joints: list[str]) -> dict[str, list[int]]:
    """``{row id: positions in joints}`` for the summary rows, in the order a run reports them."""
    by_pair: dict[str, list[int]] = {}
    by_sev: dict[str, list[int]] = {}
    for i, j in enumerate(joints):
        c = parse_condition(j)
        by_pair.setdefault(f"pair:{c.image_operator}+{c.text_operator}", []).append(i)
        by_sev.setdefault(f"severity:s{c.severity}", []).append(i)
    return by_pair | dict(sorted(by_sev.items())) | {"mean": list(range(len(joints)))}


def _model_rows(block: MetricBlock, m: int, joints: dict, ci: float) -> list[tuple[str, dict]]:
    conds = block.conditions
    per, summary = additivity_analysis({c: float(block.values[m, i]) for i, c in enumerate(conds)}, joints,
                                       {c: block.boot[m, i] for i, c in enumerate(conds)}, ci=ci)
    rows = list(per.items())
    rows += [(f"pair:{k}", e) for k, e in summary.get("by_pair", {}).items()]
    rows += [(f"severity:{k}", e) for k, e in summary.get("by_severity", {}).items()]
    return rows + [("mean", summary["mean"])]


def additivity_records(
    block: MetricBlock, pairs: list[tuple[int, int]], ci: float, workers: int = 1
) -> tuple[list[AdditivityRecord], list[AdditivityPairRecord]]:
    """Per-model δ records and per-pair δA − δB records of one (mode, metric)."""
    joints, _ = joint_parts(block.conditions)
    if not joints:
        return [], []
    recs = [AdditivityRecord(block.mode, block.metric, name, key, e["exp"], e["obs"], e["delta"], *e["ci"])
            for m, name in enumerate(block.models) for key, e in _model_rows(block, m, joints, ci)]
    pos = {c: i for i, c in enumerate(block.conditions)}
    idx = {k: [pos[j] if k == "joint" else pos[p[0] if k == "img" else p[1]] for j, p in joints.items()]
           for k in ("img", "txt", "joint")}
    summaries = _summary_groups(list(joints))
    # δ = R(i) + R(t) − R(J) − R(clean) is linear in the values: one (C, J + S) weight matrix gives
    # every joint's and summary's δ of all models and resamples in one product
    lin = np.zeros((len(block.conditions), len(joints)))
    cols = np.arange(len(joints))
    np.add.at(lin, (idx["img"], cols), 1.0)
    np.add.at(lin, (idx["txt"], cols), 1.0)
    np.add.at(lin, (idx["joint"], cols), -1.0)
    lin[0] -= 1.0
    weights = np.concatenate([lin, group_means(lin, summaries)], axis=1)

    def deltas(x: np.ndarray) -> np.ndarray:  # (M, C[, B]) -> (M, J + S[, B]) δ of joints and summaries
        if x.ndim == 3 and np.isfinite(x).all():
            return np.matmul(np.ascontiguousarray(weights.T), x)
        # undefined values (0/0 resamples of a ratio metric) must stay in their own δ only; the point
        # estimates elementwise, so that models with equal values get bit-equal δ (a tie, diff 0)
        d = additivity_terms(x[:, :1], x[:, idx["img"]], x[:, idx["txt"]], x[:, idx["joint"]])["delta"]
        return np.concatenate([d, group_means(d, summaries, axis=1) if x.ndim == 3 else exact_group_means(d, summaries)],
                              axis=1)

    point, boot = deltas(block.values), deltas(block.boot)
    keys = list(joints) + list(summaries)
    diff = np.stack([point[a] - point[b] for a, b in pairs])
    lo, hi = pair_intervals(boot, pairs, ci, workers)
    pair_recs = [AdditivityPairRecord(block.mode, block.metric, key, block.models[pa], block.models[pb],
                                      float(diff[i, j]), float(lo[i, j]), float(hi[i, j]))
                 for i, (pa, pb) in enumerate(pairs) for j, key in enumerate(keys)]
    return recs, pair_recs
