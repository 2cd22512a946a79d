"""The Holm family of a target is the corrupted conditions it reads (trial: T→T's report adjusted its
text conditions over all 71 conditions, the 45 image ones included, whose Δ is 0 and p_raw 1 by
construction: txt/sent_replace p_raw 0.0078 became p 0.555, where Holm over the 26 conditions T→T
reads gives 0.203).  The same for compare's per-condition p_adj, its tallies ("neither told apart in
n") and its ranking sentence ("over N corrupted conditions", the headline's n_conditions), and its Δ
table shows "–" in a column the target cannot read.

Expected values are computed here: Holm transcribed (sort, multiply by m − i, running max, clip at 1)
over the conditions each target reads, written out by prefix (T→T and T→IT, whose query is its text:
text and joint; I→I and I→IT: image and joint; IT→IT: all)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from typer.testing import CliRunner

from snapbench.app.stages import RunOptions, run_encoders
from snapbench.cli import app
from snapbench.compare import CompareConfig, ModelValues, compare_models
from snapbench.core.defaults import DEFAULT_DATA
from snapbench.render.compare import MetricView, compare_findings, delta_table, pairs_table

runner = CliRunner()
CONDS = ["clean", "img/compression/s1", "img/rotation/s2", "img/low_light/s2", "txt/char_add", "txt/word_swap",
         "txt/sent_replace", "joint/low_light+word_swap/s2"]
READS = {"T2T": ("txt/", "joint/"), "T2IT": ("txt/", "joint/"), "I2I": ("img/", "joint/"), "I2IT": ("img/", "joint/")}


def reads(target: str, cond: str) -> bool:
    return cond.startswith(READS.get(target, ("img/", "txt/", "joint/")))


def holm(p: dict[str, float]) -> dict[str, float]:
    """Holm step-down, transcribed: sort ascending, multiply the i-th (from 0) by m - i, running max, clip at 1."""
    order = sorted(p, key=p.get)
    m, running, out = len(order), 0.0, {}
    for i, c in enumerate(order):
        running = max(running, min(1.0, (m - i) * p[c]))
        out[c] = running
    return out


def _cli(*args):
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="module")
def multi(tmp_path_factory):
    """Two runs of toy (every target) on CONDS: image, text and joint conditions."""
    root = tmp_path_factory.mktemp("holm_multi")
    opts = RunOptions(conditions=CONDS, joint=False, resamples=100, report=False, progress=False, use_cache=False)
    run_encoders(DEFAULT_DATA, ["toy", "toy"], root / "multi", opts, names=["toy", "toy2"])
    return root / "multi"


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """Evaluate reports of toy's path scores with --mode T2T / I2I, and of scores of unknown origin
    (moor's, without its run.json)."""
    root = tmp_path_factory.mktemp("holm")
    data, conds = DEFAULT_DATA, ",".join(CONDS)
    for step in (["corrupt", data / "queries.jsonl", "--out", root / "cor", "--conditions", conds],
                 ["encode", root / "cor", "-e", "toy", "--out", root / "enc", "--gallery", data / "gallery.jsonl"]):
        _cli(*step, "--no-progress")
    _cli("moor", "--embeddings-dir", root / "enc" / "embeddings", "--out", root / "fused")
    shutil.copytree(root / "fused", root / "plain", ignore=shutil.ignore_patterns("run.json"))
    for scores, out, extra in (("enc/paths", "t2t.json", ("--mode", "T2T")), ("enc/paths", "i2i.json", ("--mode", "I2I")),
                               ("plain", "none.json", ())):
        _cli("evaluate", root / scores, "--qrels", data / "qrels.json", "--out", root / out, "-q", "--resamples", "100",
             *extra)
    return root


def _check_family(report: dict, target: str | None) -> bool:
    """Every metric's p is Holm over the conditions ``target`` reads (all of them when None) and p_raw
    elsewhere; returns whether some p differs from Holm over every condition (the test can tell)."""
    paired = report["paired"]
    differs = False
    for metric in paired[next(iter(paired))]:
        raw = {c: v[metric]["p_raw"] for c, v in paired.items() if v[metric]["p_raw"] is not None}
        fam = holm({c: p for c, p in raw.items() if target is None or reads(target, c)})
        everything = holm(raw)
        for c, p in raw.items():
            got = paired[c][metric]["p"]
            if c in fam:
                assert got == pytest.approx(fam[c], rel=1e-12, abs=1e-15), (target, metric, c)
                differs |= abs(fam[c] - everything[c]) > 1e-9
            else:
                assert got == p, (target, metric, c)  # outside the family: unadjusted
    return differs


@pytest.mark.parametrize("target", ["T2T", "I2I", "IT2IT", "I2IT", "T2IT"])
def test_a_run_adjusts_over_the_conditions_its_target_reads(multi, target):
    report = json.loads((multi / "toy" / target / "report.json").read_text())
    differs = _check_family(report, target)
    if target in ("T2T", "I2I"):  # these toy data move a condition of each: the old family gave other p
        assert differs


def test_evaluate_with_mode_adjusts_over_its_conditions_without_it_over_all(made):
    assert _check_family(json.loads((made / "t2t.json").read_text()), "T2T")
    assert _check_family(json.loads((made / "i2i.json").read_text()), "I2I")
    none = json.loads((made / "none.json").read_text())
    assert none["meta"]["mode"] is None
    _check_family(none, None)


# ------------------------------------------------------------------------------------------ compare
CMP_CONDS = ["clean"] + [f"img/low_light/s{s}" for s in (1, 2, 3)] + [f"img/rotation/s{s}" for s in (1, 2, 3)] + [
    "txt/char_add", "txt/word_swap"]


@pytest.fixture(scope="module")
def compared():
    """The trial's reproduction: T→T of two models, text conditions hurting A more than B."""
    rng = np.random.default_rng(0)
    q = 200
    qids = [f"q{i}" for i in range(q)]

    def vals(drop):
        out = {}
        for c in CMP_CONDS:
            x = np.ones(q)
            if c.startswith("txt/"):
                x[rng.random(q) < drop] = 0
            out[c] = {"hit@1": x}
        return {"T2T": out}

    a, b = ModelValues.from_values("A", qids, vals(0.10)), ModelValues.from_values("B", qids, vals(0.02))
    return compare_models([a, b], CompareConfig(resamples=500, seed=0))


def test_compare_p_adj_is_over_the_conditions_the_mode_reads(compared):
    pairs = [r for r in compared.records()["pairs"]]
    conds = {r["condition"]: r for r in pairs if not r["condition"].startswith("group:")}
    groups = {r["condition"]: r for r in pairs if r["condition"].startswith("group:")}
    fam = holm({c: r["p_raw"] for c, r in conds.items() if reads("T2T", c)})
    assert len(fam) == 2
    for c, r in conds.items():
        assert r["p_adj"] == pytest.approx(fam[c], rel=1e-12) if c in fam else r["p_adj"] == r["p_raw"]
    # trial: txt/word_swap p_raw 0.00408 -> p_adj 0.02854 (x7); over the two text conditions it stays
    assert conds["txt/word_swap"]["p_adj"] == pytest.approx(conds["txt/word_swap"]["p_raw"])
    gfam = holm({g: r["p_raw"] for g, r in groups.items() if not g.startswith("group:img/")})
    assert set(gfam) == {"group:all", "group:txt"}
    for g, r in groups.items():
        assert r["p_adj"] == pytest.approx(gfam[g], rel=1e-12) if g in gfam else r["p_adj"] == r["p_raw"]


def test_compare_tally_counts_the_conditions_the_mode_reads(compared):
    (view,) = MetricView.all_of(compared, 0.95).values()
    (finding,) = [f for f in compare_findings([view], [], "A", "holm") if f.id == "pair:T2T:A:B"]
    n_read = sum(reads("T2T", c) for c in CMP_CONDS)
    v = finding.values
    neither = int(finding.text.rsplit("neither told apart in ", 1)[1].rstrip("."))
    assert v["a_better"] + v["b_better"] + neither == n_read == 2, finding.text
    table = pairs_table(view, "T2T_hit1", "holm")
    assert int(table.groups[0][1][0][1][-1].text) == neither


def test_compare_delta_table_leaves_unread_columns_empty(compared):
    (view,) = MetricView.all_of(compared, 0.95).values()
    t = delta_table(view, "T2T_hit1")
    cols = t.columns[1:]
    for _, cells in t.groups[0][1]:
        for col, cell in zip(cols, cells):
            if col.startswith(("Degrade", "Transform", "Remove", "Add")):
                assert cell.text == "–", (col, cell)
            else:
                assert cell.text is None and cell.value is not None, (col, cell)
    assert any(c.startswith(("Degrade", "Transform")) for c in cols)


def test_one_pair_title_and_column_say_unadjusted(compared):
    (view,) = MetricView.all_of(compared, 0.95).values()
    t = pairs_table(view, "T2T_hit1", "holm")
    assert "adjusted" not in t.title and "adj." not in " ".join(t.columns), (t.title, t.columns)
    assert "unadjusted (one pair of models" in " ".join(t.notes)


def test_compare_ranking_sentence_counts_the_headline_conditions(multi, tmp_path):
    out = tmp_path / "o"
    r = runner.invoke(app, ["compare", str(multi / "toy"), str(multi / "toy2"), "--name", "toy", "--name", "toy2",
                            "--out", str(out), "--formats", "md", "--no-progress"])
    assert r.exit_code == 0, r.output
    found = {f["id"]: f["text"] for f in json.loads((out / "findings.json").read_text())}
    headline = json.loads((multi / "toy" / "headline.json").read_text())
    n = {t["target"]: t["mean_delta"]["n_conditions"] for t in headline["targets"]}
    assert n["T2T"] < len(CONDS) - 1 and n["I2I"] < len(CONDS) - 1
    for target, label in (("T2T", "T→T"), ("I2I", "I→I"), ("IT2IT", "IT→IT")):
        assert f"In {label}, by mean ΔR@1 over {n[target]} corrupted conditions" in found[f"ranking:{target}"]
    # the Δ table of T→T: "–" under every image primitive, as the run report's summary
    lines = (out / "tables" / "T2T_hit1_delta.md").read_text().splitlines()
    header = [h.strip() for h in lines[2].strip("|").split("|")]
    image = [i for i, h in enumerate(header) if h.startswith(("Degrade", "Transform", "Remove", "Add"))]
    assert image
    for row in lines[4:6]:
        cells = [x.strip() for x in row.strip("|").split("|")]
        assert [cells[i] for i in image] == ["–"] * len(image), row
