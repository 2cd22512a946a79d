"""The report's damage view (issue #17 point 2): binned hit rates, sensitivity slopes and the finding.

Slopes are recomputed by least squares through the origin (numpy.linalg.lstsq on the stacked
(damage, paired change) pairs read from per_query.csv), bin means with numpy.digitize, the CI from
the resamples themselves (the same query draws, each expanded to its list of query indices, one
lstsq per resample); the finding's verdict on synthetic data made to have, or not have, a difference.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from snapbench.app.stages import RunOptions, run_benchmark
from snapbench.core.defaults import DEFAULT_DATA
from snapbench.core.records import PerQuery
from snapbench.data import load_dataset
from snapbench.evaluate import bootstrap_counts
from snapbench.render import build_report, compute_findings
from snapbench.render.damage import DRIFT_BINS, SSIM_BINS, damage_analysis
from snapbench.store.rundir import RunData, load_run_dir

CONDS = ["clean", *(f"img/{op}/s{s}" for op in ("low_light", "defocus_blur", "rotation") for s in (1, 2, 3)),
         "txt/char_swap", "txt/sent_add"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dmg")
    run_benchmark(load_dataset(DEFAULT_DATA), "toy", out, RunOptions(
        conditions=CONDS, joint=False, resamples=300, report=False, progress=False, use_cache=False))
    return out


def _table(path: Path) -> dict[tuple[str, str, str], float]:
    return {(r["query_id"], r["condition"], r["metric"]): float(r["value"]) if r["value"] else np.nan
            for r in csv.DictReader(path.open())}


def _pairs(t, qids, op: str, metric: str, damage: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(query index, damage, paired change) of every finite pair of one operator."""
    out = []
    conds = sorted({c for _, c, _ in t if c.split("/")[1:2] == [op]})
    for i, q in enumerate(qids):
        for c in conds:
            key = "ssim" if damage == "ssim" else f"drift_{'image' if c.startswith('img') else 'text'}"
            raw, y, y0 = t.get((q, c, key), np.nan), t[(q, c, metric)], t[(q, "clean", metric)]
            x = 1 - raw if damage == "ssim" else raw
            if np.isfinite(x) and np.isfinite(y - y0):
                out.append((i, x, y - y0, y))
    a = np.array(out)
    return a[:, 0].astype(int), a[:, 1], a[:, 2], a[:, 3]


def test_slopes_bins_and_cis_match_an_independent_computation(run_dir: Path) -> None:
    data = load_run_dir(run_dir)
    res = damage_analysis(data, "hit@1")
    assert res is not None and res.mode == "IT2IT"
    t = _table(run_dir / "IT2IT" / "per_query.csv")
    qids = data.per_query["IT2IT"].query_ids
    rep = data.reports["IT2IT"]
    counts = bootstrap_counts(len(qids), 300, int(rep.meta.seed), key="report.damage")
    checked = 0
    for damage, ops in (("ssim", ("low_light", "defocus_blur", "rotation")),
                        ("drift", ("low_light", "defocus_blur", "rotation", "char_swap", "sent_add"))):
        for op in ops:
            qi, x, d, y = _pairs(t, qids, op, "hit@1", damage)
            if not np.any(x != 0):
                assert op not in res.slopes[damage]
                continue
            s = res.slopes[damage][op]
            slope = np.linalg.lstsq(x[:, None], d, rcond=None)[0][0]
            assert s.slope == pytest.approx(slope, abs=1e-12) and s.n == x.size
            # the CI: each resample's queries, repeated as drawn, fitted again
            boot = []
            for row in counts:
                idx = np.concatenate([np.flatnonzero(qi == q) for q in np.repeat(np.arange(len(qids)), row.astype(int))])
                boot.append(np.linalg.lstsq(x[idx, None], d[idx], rcond=None)[0][0] if np.any(x[idx] != 0) else np.nan)
            lo, hi = np.nanquantile(boot, [0.025, 0.975])
            assert s.ci == pytest.approx((lo, hi), abs=1e-12)
            # the bins: the mean hit of the pairs whose damage falls in each bin
            raw = 1 - x if damage == "ssim" else x
            if damage == "ssim":
                which = np.digitize(raw, SSIM_BINS[::-1][1:-1], right=False)  # 0 = lowest bin
                which = len(SSIM_BINS) - 2 - which
            else:
                which = np.digitize(raw, DRIFT_BINS[1:-1], right=False)
            for b, (mean, n) in enumerate(res.bins[damage][op]):
                sel = y[which == b]
                assert n == sel.size and (mean is None if n == 0 else mean == pytest.approx(sel.mean()))
            checked += 1
    assert checked >= 5


def _synthetic(run_dir: Path, steep: float, flat: float, n: int = 40) -> RunData:
    """The demo run's IT2IT report (its seed and bootstrap settings) over made-up per-query values where
    operator defocus_blur loses ``steep`` and mosaic ``flat`` of hit@1 per unit SSIM loss."""
    rng = np.random.default_rng(5)
    values: dict[str, dict[str, list]] = {"clean": {"hit@1": [1.0] * n}}
    for op, rate in (("defocus_blur", steep), ("mosaic", flat)):
        for s, loss in ((1, 0.1), (2, 0.3), (3, 0.5)):
            ssim = 1 - loss + rng.uniform(-0.05, 0.05, n)
            hit = (rng.uniform(0, 1, n) >= rate * (1 - ssim)).astype(float)
            values[f"img/{op}/s{s}"] = {"hit@1": hit.tolist(), "ssim": ssim.tolist()}
    base = load_run_dir(run_dir)
    return RunData(path=base.path, reports={"IT2IT": base.reports["IT2IT"]},
                   per_query={"IT2IT": PerQuery([f"q{i}" for i in range(n)], values)})


def test_the_finding_calls_a_difference_only_when_its_ci_excludes_zero(run_dir: Path) -> None:
    clear = [f for f in compute_findings(_synthetic(run_dir, 1.8, 0.0)) if f.id == "damage"][0]
    assert "the model is more sensitive to defocus_blur than to mosaic" in clear.text
    ext = clear.values["ssim"]
    assert ext["most"] == "defocus_blur" and ext["least"] == "mosaic" and ext["ci"][0] > 0  # least − most
    assert ext["slopes"]["mosaic"]["slope"] == 0.0
    same = [f for f in compute_findings(_synthetic(run_dir, 0.6, 0.6)) if f.id == "damage"][0]
    lo, hi = same.values["ssim"]["ci"]
    assert lo < 0 < hi and "the two are not distinguishable" in same.text and "more sensitive" not in same.text


@pytest.mark.slow
def test_the_report_has_the_damage_section_or_says_why_not(run_dir: Path, tmp_path: Path) -> None:
    res = build_report(run_dir, tmp_path / "rep", formats=("html", "md", "png"))
    assert (tmp_path / "rep" / "tables" / "damage_ssim.md").is_file()
    assert (tmp_path / "rep" / "tables" / "damage_drift.md").is_file()
    assert "damage" in res.figures
    html = (tmp_path / "rep" / "report.html").read_text()
    assert 'id="damage"' in html and "Drops against measured damage" in html
    finding = [f for f in json.loads((tmp_path / "rep" / "findings.json").read_text()) if f["id"] == "damage"][0]
    assert finding["text"].startswith("At equal measured damage in IT→IT")
    plain = tmp_path / "plain"
    run_benchmark(load_dataset(DEFAULT_DATA), "toy", plain, RunOptions(
        conditions=CONDS[:3], joint=False, resamples=50, report=False, progress=False, use_cache=False, measure=False))
    build_report(plain, formats=("html",))
    html = (plain / "report.html").read_text()
    assert "holds no measured damage" in html
    assert "the run was made without measuring" in [f for f in json.loads((plain / "findings.json").read_text())
                                                    if f["id"] == "damage"][0]["text"]


def test_the_ssim_table_says_its_columns_are_ssim_and_targets_sit_inside_one_bin(run_dir: Path, tmp_path: Path) -> None:
    from snapbench.render.damage import _binned

    build_report(run_dir, tmp_path / "rep", formats=("md",))
    md = (tmp_path / "rep" / "tables" / "damage_ssim.md").read_text()
    assert "whose measured SSIM falls in the bin (a value on an edge counts in the bin above it)" in md
    assert "SSIM loss (1 − SSIM) falls in the bin" not in md
    # every default target ±0.01 (the tolerance) lands in a single bin, and an edge value goes up
    for target in (0.9, 0.75, 0.6):
        x = np.array([target - 0.01, target, target + 0.01])
        filled = [n for _, n in _binned(x, np.ones(3), SSIM_BINS, True)]
        assert sorted(filled) == [0] * (len(SSIM_BINS) - 2) + [3], (target, filled)
    edge = SSIM_BINS[2]
    counts = [n for _, n in _binned(np.array([edge]), np.ones(1), SSIM_BINS, True)]
    assert counts[1] == 1  # lo <= SSIM < hi: the edge belongs to the bin whose lower end it is


def test_an_operator_whose_damage_stays_under_the_unit_is_not_ranked_per_unit(run_dir: Path) -> None:
    # compression changes nothing but never reaches 0.1 SSIM loss: its slope would be the flattest,
    # yet quoting it per 0.1 would extrapolate past its data, so mosaic stays the least steep
    data = _synthetic(run_dir, 1.8, 0.3)
    pq = data.per_query["IT2IT"]
    n = len(pq.query_ids)
    rng = np.random.default_rng(9)
    for s in (1, 2, 3):
        pq.values[f"img/compression/s{s}"] = {"hit@1": [1.0] * n, "ssim": (1 - rng.uniform(0.01, 0.05, n)).tolist()}
    res = damage_analysis(data, "hit@1")
    comp = res.slopes["ssim"]["compression"]
    assert comp.slope == 0.0 and comp.max_damage < 0.1 and not comp.in_range
    assert res.extremes["ssim"]["least"] == "mosaic" and res.extremes["ssim"]["most"] == "defocus_blur"
    finding = [f for f in compute_findings(data) if f.id == "damage"][0]
    assert "compression" not in finding.text
