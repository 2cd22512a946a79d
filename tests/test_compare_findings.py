"""The comparison report's verdicts: a difference is called real only when its adjusted p-value (here
recomputed with statsmodels from the raw ones) is below 1 − ci and its CI excludes 0 -- in the
findings, the pairs table and the condition-by-condition tallies -- on three models of which one is
far more fragile (so both verdicts occur)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from compare_helpers import CONDITIONS, RESAMPLES, evaluated, per_query

from snapbench.app.compare import CompareOptions, compare_runs
from snapbench.core.records import Report
from snapbench.store import RunDir
from snapbench.store.compare import read_compare_json
from snapbench.store.perquery import write_per_query
from snapbench.store.rundir import write_report

multipletests = pytest.importorskip("statsmodels.stats.multitest").multipletests
METRICS = ["hit@1", "ndcg@5"]


@pytest.fixture(scope="module")
def cmp(tmp_path_factory):
    root = tmp_path_factory.mktemp("findings")
    qids, runs = evaluated(3, metrics=METRICS)
    dirs = []
    for name, evals, report in runs:
        rd = RunDir(root / name)
        rep = Report.from_json(report)
        rep.meta.mode = "IT2IT"
        write_report(rep, rd.report("IT2IT"))
        write_per_query(rd.per_query("IT2IT"), qids, per_query(evals, METRICS))
        dirs.append(rd.root)
    out = root / "out"
    compare_runs(dirs, out, CompareOptions(metrics=METRICS, metric="ndcg@5", formats=["md"]))
    findings = {f["id"]: f for f in json.loads((out / "findings.json").read_text())}
    return out, read_compare_json(out / "compare.json"), findings


def _real(p_adj: float, lo: float, hi: float) -> bool:
    return bool(p_adj < 0.05 and (lo > 0 or hi < 0))


def test_overall_verdicts_follow_adjusted_p_and_ci(cmp):
    out, cj, findings = cmp
    assert cj["settings"]["resamples"] == RESAMPLES
    rows = [r for r in cj["pairs"] if r["metric"] == "ndcg@5" and r["condition"] == "group:all"]
    assert len(rows) == 3
    p_all = multipletests([r["p_raw"] for r in rows], method="holm")[1]
    verdicts = []
    table = (out / "tables" / "IT2IT_ndcg5_pairs.md").read_text()
    for r, p in zip(rows, p_all):
        real = _real(p, r["ci_low"], r["ci_high"])
        verdicts.append(real)
        f = findings[f"pair:IT2IT:{r['model_a']}:{r['model_b']}"]
        assert f["values"]["told_apart"] is real
        assert f["values"]["p_adj_over_pairs"] == pytest.approx(p, rel=1e-12)
        assert ("is more robust than" in f["text"]) is real
        assert ("not told apart" in f["text"]) is (not real)
        line = next(x for x in table.splitlines() if x.startswith(f"| {r['model_a']} vs {r['model_b']} |"))
        assert ("not told apart" in line) is (not real)
    assert True in verdicts and False in verdicts  # the fixture separates model2 from the others


def test_tiers_follow_the_same_rule(cmp):
    _, cj, findings = cmp
    rows = {(r["model_a"], r["model_b"]): r for r in cj["pairs"]
            if r["metric"] == "ndcg@5" and r["condition"] == "group:all"}
    p_all = dict(zip(rows, multipletests([r["p_raw"] for r in rows.values()], method="holm")[1]))
    rank = {r["model"]: r for r in cj["ranking"] if r["metric"] == "ndcg@5" and r["mode"] == "IT2IT"}
    order = sorted(rank, key=lambda m: rank[m]["rank"])
    leader, tier = order[0], 1
    for m in order:  # the tier rule, walked independently
        key = (leader, m) if (leader, m) in rows else (m, leader)
        if m != leader and _real(p_all[key], rows[key]["ci_low"], rows[key]["ci_high"]):
            leader, tier = m, tier + 1
        assert rank[m]["group"] == tier
    got = findings["ranking:IT2IT"]["values"]["tiers"]
    assert {int(t): ms for t, ms in got.items()} == {t: [m for m in order if rank[m]["group"] == t]
                                                      for t in sorted({r["group"] for r in rank.values()})}


def test_condition_tallies_use_each_pairs_adjusted_p_and_ci(cmp):
    _, cj, findings = cmp
    for key, f in findings.items():
        if not key.startswith("pair:"):
            continue
        a, b = f["values"]["model_a"], f["values"]["model_b"]
        rows = [r for r in cj["pairs"] if (r["model_a"], r["model_b"], r["metric"]) == (a, b, "ndcg@5")
                and not r["condition"].startswith("group:")]
        assert len(rows) == len(CONDITIONS) - 1
        adj = multipletests([r["p_raw"] for r in rows], method="holm")[1]
        np.testing.assert_allclose([r["p_adj"] for r in rows], adj, rtol=1e-12)
        real = [(_real(p, r["ci_low"], r["ci_high"]), r["diff"]) for r, p in zip(rows, adj)]
        assert f["values"]["a_better"] == sum(1 for ok, d in real if ok and d > 0)
        assert f["values"]["b_better"] == sum(1 for ok, d in real if ok and d < 0)


@pytest.mark.parametrize("p, ci, want", [
    (0.01, (0.01, 0.2), True), (0.01, (-0.2, -0.01), True),
    (0.01, (-0.1, 0.2), False),   # the test says real, the CI does not
    (0.2, (0.1, 0.3), False),     # the CI says real, the adjusted test does not
    (0.05, (0.1, 0.3), False),    # at the level: not below it
    (float("nan"), (0.1, 0.3), False), (0.01, (float("nan"), 0.3), False),
    (float("nan"), (float("nan"), float("nan")), None),
])
def test_the_verdict_rule(p, ci, want):
    from snapbench.compare.ranking import told_apart

    assert told_apart(p, ci, 0.95) is want
