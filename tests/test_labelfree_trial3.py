"""Robustness without labels, as a new user met it (third trial): what a label-free run, evaluate and
additivity say, checked against the run's own files and computations written here (Python sets over
``np.argsort(-scores, kind="stable")`` rankings, RBO_ext from Webber, Moffat & Zobel 2010, eq. 32).

- no coarse-text drag without labels (every mode's clean overlap is 100 by construction);
- ``--limit N`` that keeps every query is the dataset's result: no "quick look" anywhere;
- a label-free report's meta holds no labelled-only defaults;
- identical rankings give rbo exactly 1;
- ``evaluate`` notes an overlap@k whose top-k holds the whole gallery, as ``run`` does;
- ``additivity SCORES_DIR`` without ``--qrels`` is label-free, as ``evaluate`` is;
- ``report`` without matplotlib says on the terminal that the figures were skipped;
- absolute levels (the label-free table) carry no plus signs;
- ``--k 0`` is refused in the words of every integer flag.
"""

from __future__ import annotations

import json
import shutil
import sys

import numpy as np
import pytest
from data_fixtures import demo_without_qrels, write_scores_dir
from typer.testing import CliRunner

from snapbench.cli import app
from snapbench.evaluate.stability import rbo_ext

runner = CliRunner()
CONDS = "clean,img/compression/s1,img/compression/s3,img/rotation/s2,txt/char_swap,txt/char_add,joint/compression+char_add/s3"


def _words(text: str) -> str:
    return " ".join(text.split())


def ref_rbo(a: list, b: list, p: float, d: int) -> float:
    """RBO_ext = (X_d / d) p^d + ((1 - p) / p) Σ_{i=1..d} (X_i / i) p^i, X_i = |a_{1:i} ∩ b_{1:i}|."""
    x = [len(set(a[:i]) & set(b[:i])) for i in range(1, d + 1)]
    return x[d - 1] / d * p ** d + (1 - p) / p * sum(x[i - 1] / i * p ** i for i in range(1, d + 1))


@pytest.fixture(scope="module")
def nolab(tmp_path_factory):
    """The demo without its qrels, run with --limit 12: the limit keeps all 12 queries."""
    queries = demo_without_qrels(tmp_path_factory.mktemp("nolab3") / "data")
    n = sum(1 for line in queries.read_text().splitlines() if line.strip())
    out = queries.parent.parent / "run"
    r = runner.invoke(app, ["run", str(queries), "-e", "toy", "--out", str(out), "--conditions", CONDS,
                            "--limit", str(n), "--resamples", "200", "--no-progress", "--no-cache"])
    assert r.exit_code == 0, r.output
    return out, n, r.stdout, r.stderr


# ------------------------------------------------------------------ 1. no drag without labels
def test_a_label_free_run_reports_no_coarse_text_drag(nolab):
    out = nolab[0]
    finds = json.loads((out / "findings.json").read_text())
    assert not [f for f in finds if f["id"] == "drag" or "drag" in f["text"].lower()], finds
    page = (out / "report.html").read_text()
    assert page.count("No coarse-text drag without relevance labels") == 1  # said once, why included
    assert "100 (flip: 0) in every mode by construction" in page
    assert "is not distinguishable from image-only" not in page
    assert not list(out.glob("figures/drag.*"))


def test_the_demo_table_shows_no_drag_of_another_metric(nolab):
    from rich.console import Console

    from snapbench.core.records import CoarseTextDrag
    from snapbench.render.terminal import demo_table
    from snapbench.store.rundir import read_report

    out = nolab[0]
    reports = {t: read_report(out / t / "report.json") for t in ("I2I", "IT2IT")}
    # a hit@1 drag (as a labelled run has) must not sit in a table of overlap@10
    reports["IT2IT"].coarse_text_drag = CoarseTextDrag(metric="hit@1", value=-0.25, ci=(-0.4, -0.1), joint="IT2IT",
                                                       joint_value=0.5, image_value=0.75)
    con = Console(width=300, record=True)
    con.print(demo_table(reports, metric="overlap@10"))
    text = con.export_text()
    assert "-25.0" not in text
    con = Console(width=300, record=True)
    con.print(demo_table(reports, metric="hit@1"))
    assert "-25.0" in con.export_text()  # its own metric's table shows it


# ------------------------------------------------------------------ 2. a limit that keeps every query
def test_a_limit_that_keeps_every_query_is_the_datasets_result(nolab):
    out, n, stdout, stderr = nolab
    run = json.loads((out / "run.json").read_text())
    assert run["n_queries_evaluated"] == n and "limit" not in run
    assert f"--limit {n} keeps all {n} queries of the dataset: nothing was cut" in run["notes"]
    assert json.loads((out / "headline.json").read_text())["limit"] is None
    assert "limit" not in [f["id"] for f in json.loads((out / "findings.json").read_text())]
    for text in (stdout, stderr, (out / "report.html").read_text(),
                 *(p.read_text() for p in out.glob("tables/*.md"))):
        assert "quick look" not in text and "only the first" not in text
    for p in out.glob("*/report.json"):
        assert not json.loads(p.read_text())["meta"].get("notes"), p


# ------------------------------------------------------------------ 3. truthful meta without labels
def test_a_label_free_reports_meta_has_no_labelled_defaults(nolab):
    out = nolab[0]
    for p in out.glob("*/report.json"):
        body = json.loads(p.read_text())
        meta = body["meta"]
        assert meta["labelled"] is False
        assert body["n_excluded_zero_gt"] == 0
        assert meta["n_zero_gt"] is None and meta["graded_labels"] is None and meta["stability_metric"] is None
        assert meta["zero_gt"].startswith("not applicable: no relevance labels")
        assert "hit@1" not in meta["metrics"]


def test_a_label_free_evaluation_with_groups_excludes_no_query(tmp_path):
    d, _ = _scores_dir(tmp_path)
    tags = tmp_path / "tags.json"
    tags.write_text(json.dumps({f"q{i}": {"domain": "a" if i % 2 else "b"} for i in range(12)}))
    out = tmp_path / "r.json"
    r = runner.invoke(app, ["evaluate", str(d), "--tags", str(tags), "--group-by", "domain", "--resamples", "50",
                            "--out", str(out), "-q"])
    assert r.exit_code == 0, r.output
    body = json.loads(out.read_text())
    assert {g: v["n_excluded_zero_gt"] for g, v in body["groups"].items()} == {"a": 0, "b": 0}


# ------------------------------------------------------------------ 4. rbo of identical rankings
@pytest.mark.parametrize("p,depth,n", [(0.9, 100, 33), (0.9, 100, 200), (0.5, 7, 40), (0.98, 30, 30), (0.8, 20, 50)])
def test_identical_rankings_have_rbo_exactly_one(p, depth, n):
    rng = np.random.default_rng(n)
    a = np.stack([rng.permutation(n) for _ in range(6)])
    assert rbo_ext(a, a.copy(), p, depth).tolist() == [1.0] * 6
    assert rbo_ext(a, a + n, p, depth).tolist() == [0.0] * 6  # disjoint: exactly 0, as before
    b = a.copy()
    b[:, [0, 1]] = b[:, [1, 0]]  # not identical: eq. 32 as written, and below 1
    d = min(depth, n)
    got = rbo_ext(a, b, p, depth)
    np.testing.assert_allclose(got, [ref_rbo(list(a[q]), list(b[q]), p, d) for q in range(6)], atol=1e-12)
    assert (got < 1.0).all()


def test_the_clean_rbo_of_a_run_is_exactly_one(nolab):
    out = nolab[0]
    for p in out.glob("*/report.json"):
        body = json.loads(p.read_text())
        assert body["conditions"]["clean"]["rbo"] == 1.0, p
        assert body["label_free"]["clean"]["rbo"] == {"mean": 1.0, "ci": [1.0, 1.0]}, p


# ------------------------------------------------------------------ 5. evaluate: overlap@k over the whole gallery
def _scores_dir(tmp_path, n_q=12, n=30, seed=0):
    rng = np.random.default_rng(seed)
    base = rng.normal(size=(n_q, n))
    conds = {"clean": base}
    for c, s in (("img/compression/s1", 0.5), ("txt/char_add", 0.4), ("joint/compression+char_add/s1", 0.8)):
        conds[c] = base + s * rng.normal(size=(n_q, n))
    return write_scores_dir(tmp_path / "scores", conds), conds


def test_evaluate_notes_an_overlap_whose_top_k_holds_the_whole_gallery(tmp_path):
    d, _ = _scores_dir(tmp_path)
    out = tmp_path / "r.json"
    r = runner.invoke(app, ["evaluate", str(d), "--k", "10,50", "--resamples", "50", "--out", str(out), "-q"])
    assert r.exit_code == 0, r.output
    body = json.loads(out.read_text())
    assert body["conditions"]["img/compression/s1"]["overlap@50"] == 1.0  # flat, by construction
    note = "the gallery has 30 items: overlap@50 is 1 by construction (the top-k holds the whole gallery)"
    assert any(w.startswith(note) for w in body["warnings"]), body["warnings"]
    assert note in _words(r.stderr)
    assert not any("overlap@10 is" in w for w in body["warnings"])
    r = runner.invoke(app, ["evaluate", str(d), "--k", "10,20", "--resamples", "50", "-q"])
    assert r.exit_code == 0 and "by construction" not in r.stderr, r.output


# ------------------------------------------------------------------ 6. additivity of a SCORES_DIR without qrels
def test_additivity_of_a_scores_dir_without_qrels_is_label_free(tmp_path):
    d, conds = _scores_dir(tmp_path)
    out = tmp_path / "add.json"
    r = runner.invoke(app, ["additivity", str(d), "--resamples", "100", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "overlap@10" in _words(r.stdout)
    rank = {c: np.argsort(-s, axis=1, kind="stable") for c, s in conds.items()}

    def drop(c):  # clean - condition of the mean overlap@10 (clean's own is 1)
        return 1.0 - np.mean([len(set(rank["clean"][q, :10]) & set(rank[c][q, :10])) / 10 for q in range(12)])

    body = json.loads(out.read_text())
    e = body["additivity"]["joint/compression+char_add/s1"]["overlap@10"]
    assert e["exp"] == pytest.approx(drop("img/compression/s1") + drop("txt/char_add"), abs=1e-12)
    assert e["obs"] == pytest.approx(drop("joint/compression+char_add/s1"), abs=1e-12)
    assert body["meta"]["labelled"] is False
    r = runner.invoke(app, ["additivity", str(d), "--metric", "hit@1"])
    assert r.exit_code == 2 and "error: --metric: hit@1 needs relevance labels (give --qrels)" in _words(r.stderr)


# ------------------------------------------------------------------ 7. report without matplotlib
def test_report_without_matplotlib_says_the_figures_were_skipped(nolab, tmp_path, monkeypatch):
    out = tmp_path / "rep"
    shutil.copytree(nolab[0], out)
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ModuleNotFoundError
    r = runner.invoke(app, ["report", str(out), "--formats", "html,md"])
    assert r.exit_code == 0, r.output
    assert "note (figures): no figures: figures need matplotlib: pip install" in _words(r.stderr), r.stderr
    assert "[report]" in r.stderr


# ------------------------------------------------------------------ 8. levels carry no sign
def test_the_label_free_table_prints_levels_without_plus_signs(nolab):
    out = nolab[0]
    rep = json.loads((out / "IT2IT" / "report.json").read_text())
    table = (out / "tables" / "IT2IT_label_free.md").read_text()
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.strip().strip("|").split("|")[1:]]
            for line in table.splitlines() if line.startswith("| ") and not line.startswith("| condition")}
    metrics = list(rep["label_free"]["clean"])
    assert "+" not in "".join("".join(v) for v in rows.values()), table
    for c, cells in rows.items():
        for m, cell in zip(metrics, cells):
            e = rep["label_free"][c][m]
            lo, hi = e["ci"]
            assert cell == f"{100 * e['mean'] + 0.0:.1f} [{100 * lo + 0.0:.1f}, {100 * hi + 0.0:.1f}]", (c, m)
    assert rows["clean"][metrics.index("rbo")] == "100.0 [100.0, 100.0]"


# ------------------------------------------------------------------ 9. --k 0
@pytest.mark.parametrize("k,words", [("0", "--k: must be an integer >= 1, got 0"),
                                     ("5,0,-1", "--k: each value must be an integer >= 1, got 0, -1 (in 5,0,-1)")])
def test_a_k_below_one_is_refused_as_every_integer_flag_is(tmp_path, k, words):
    d, _ = _scores_dir(tmp_path)
    r = runner.invoke(app, ["evaluate", str(d), "--k", k])
    assert r.exit_code == 2 and f"error: {words}" in _words(r.stderr), r.output
