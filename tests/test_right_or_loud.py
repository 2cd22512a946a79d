"""Inputs that used to give silently wrong numbers or unhelpful failures: each is now right or loud.

Every test here goes through the command line (what users run) and fails on the code before the
foundations issue (checked by running this file against that code).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from snapbench.cli import app

runner = CliRunner()
Q, N = 11, 40


def _scores_dir(root: Path, conds=("clean", "img__low_light__s3"), *, seed: int = 0) -> tuple[Path, Path, np.ndarray]:
    """A SCORES_DIR with continuous scores (no ties) and JSON qrels, one positive per query."""
    d = root / "scores"
    d.mkdir(parents=True)
    qids = [f"q{i}" for i in range(Q)]
    gids = [f"g{j}" for j in range(N)]
    (d / "query_ids.txt").write_text("\n".join(qids) + "\n")
    (d / "gallery_ids.txt").write_text("\n".join(gids) + "\n")
    rng = np.random.default_rng(seed)
    mats = {}
    for c in conds:
        mats[c] = rng.standard_normal((Q, N))
        np.save(d / f"{c}.npy", mats[c])
    pos = rng.integers(0, N, size=Q)
    qp = root / "qrels.json"
    qp.write_text(json.dumps({q: [gids[pos[i]]] for i, q in enumerate(qids)}))
    return d, qp, pos


def _hit_at(scores: np.ndarray, pos: np.ndarray, k: int) -> float:
    """Independent reference: rank of the positive by a plain Python sort (score desc, column asc)."""
    hits = []
    for i, row in enumerate(scores):
        order = sorted(range(len(row)), key=lambda j: (-row[j], j))
        hits.append(order.index(int(pos[i])) < k)
    return float(np.mean(hits))


# ------------------------------------------------------------------------------------------ shallow runs
def test_metric_deeper_than_a_trec_run_is_flagged_as_depth_limited(tmp_path):
    d, qp, pos = _scores_dir(tmp_path, conds=("clean",))
    runs = tmp_path / "runs"
    r = runner.invoke(app, ["evaluate", str(d), "--qrels", str(qp), "--resamples", "20", "--quiet",
                            "--export-run", str(runs), "--export-depth", "10"])
    assert r.exit_code == 0, r.output
    (runs / "query_ids.txt").write_text((d / "query_ids.txt").read_text())
    (runs / "gallery_ids.txt").write_text((d / "gallery_ids.txt").read_text())
    out, md = tmp_path / "rep.json", tmp_path / "t.md"
    r = runner.invoke(app, ["evaluate", str(runs), "--qrels", str(qp), "--resamples", "20", "--out", str(out),
                            "--table-out", str(md)])
    assert r.exit_code == 0, r.output
    rep = json.loads(out.read_text())
    full = np.load(d / "clean.npy")
    # what the run can say is right; what it cannot is marked, not silently reported as a plain number
    assert rep["conditions"]["clean"]["hit@10"] == pytest.approx(_hit_at(full, pos, 10))
    # overlap@20 of two 10-deep runs cannot be known either (rbo is extrapolated from the depth: RBO_ext)
    assert rep["depth_limited"]["clean"] == {"depth": 10, "metrics": ["hit@20", "recall@20", "ndcg@20", "mrr",
                                                                        "overlap@20"]}
    assert rep["meta"]["depth_limited_metrics"] == ["hit@20", "mrr", "ndcg@20", "overlap@20", "recall@20"]
    assert any("depth-limited" in w for w in rep["warnings"])
    assert "depth-limited" in r.output and "hit@20 †" in md.read_text()


# ------------------------------------------------------------------------------------------ dropped queries
def test_qrels_and_tags_of_queries_without_scores_are_left_out_with_a_count(tmp_path):
    d, qp, pos = _scores_dir(tmp_path)
    q = json.loads(qp.read_text())
    q["dropped1"], q["dropped2"] = ["g0"], ["g1"]  # e.g. skipped under one condition, dropped by encode
    qp.write_text(json.dumps(q))
    tags = tmp_path / "tags.json"
    tags.write_text(json.dumps({"q0": "a", "q1": "b", "dropped1": "a"}))
    out = tmp_path / "rep.json"
    r = runner.invoke(app, ["evaluate", str(d), "--qrels", str(qp), "--resamples", "20", "--quiet", "--out", str(out),
                            "--tags", str(tags)])
    assert r.exit_code == 0, r.output
    rep = json.loads(out.read_text())
    assert rep["n_qrels_without_scores"] == 2
    assert sorted(rep["meta"]["qrels_without_scores"]) == ["dropped1", "dropped2"]
    assert rep["n_queries"] == Q
    assert rep["conditions"]["clean"]["hit@5"] == pytest.approx(_hit_at(np.load(d / "clean.npy"), pos, 5))
    assert "2 judged query id(s) have no scores" in r.output and "tagged query id(s) have no scores" in r.output


# ------------------------------------------------------------------------------------------ operator names
@pytest.mark.parametrize("stem, suggestion", [("img__lowlight__s3", "low_light"), ("img__Mosaic__s1", "mosaic"),
                                              ("txt__char-swap", "char_swap")])
def test_mis_cased_operator_file_is_an_error_with_did_you_mean(tmp_path, stem, suggestion):
    d, qp, _ = _scores_dir(tmp_path, conds=("clean", stem))
    r = runner.invoke(app, ["evaluate", str(d), "--qrels", str(qp), "--resamples", "20", "--quiet"])
    assert r.exit_code == 2 and r.output.startswith("error:")
    assert f"did you mean {suggestion!r}" in r.output and f"{stem}.npy" in r.output


def test_unknown_operator_far_from_known_ones_is_a_user_operator_with_a_warning(tmp_path):
    d, qp, _ = _scores_dir(tmp_path, conds=("clean", "img__my_haze__s2"))
    out = tmp_path / "rep.json"
    r = runner.invoke(app, ["evaluate", str(d), "--qrels", str(qp), "--resamples", "20", "--quiet", "--out", str(out)])
    assert r.exit_code == 0, r.output
    rep = json.loads(out.read_text())
    assert "img/my_haze/s2" in rep["conditions"]
    assert any("'my_haze'" in w and "user-defined" in w for w in rep["warnings"])


# ------------------------------------------------------------------------------------------ additivity
def test_joint_without_its_parts_says_which_files_are_missing(tmp_path):
    d, qp, _ = _scores_dir(tmp_path, conds=("clean", "txt__char_swap", "joint__scribble+char_swap__s2"))
    out = tmp_path / "rep.json"
    r = runner.invoke(app, ["evaluate", str(d), "--qrels", str(qp), "--resamples", "20", "--quiet", "--out", str(out)])
    assert r.exit_code == 0, r.output
    rep = json.loads(out.read_text())
    why = rep["additivity_skipped"]["joint/scribble+char_swap/s2"]
    assert "img__scribble__s2.npy" in why and "txt__char_swap" not in why  # only the part really missing
    assert "no additivity" in r.output and "img__scribble__s2.npy" in r.output
    # all parts present but not selected: the reason says so instead of calling the files missing
    np.save(d / "img__scribble__s2.npy", np.random.default_rng(1).standard_normal((Q, N)))
    r = runner.invoke(app, ["additivity", str(d), "--qrels", str(qp), "--resamples", "20"])
    assert r.exit_code == 0 and "joint/scribble+char_swap/s2" in r.output and "no joint condition" not in r.output
    r = runner.invoke(app, ["evaluate", str(d), "--qrels", str(qp), "--resamples", "20", "--quiet", "--out", str(out),
                            "--conditions", "joint/scribble+char_swap/s2"])
    assert r.exit_code == 0, r.output
    why = json.loads(out.read_text())["additivity_skipped"]["joint/scribble+char_swap/s2"]
    assert "not among the selected conditions" in why and "no score file" not in why


# ------------------------------------------------------------------------------------------ options
def test_meaningless_options_are_errors(tmp_path):
    d, qp, _ = _scores_dir(tmp_path)
    base = ["evaluate", str(d), "--qrels", str(qp), "--resamples", "20", "--quiet"]
    r = runner.invoke(app, base + ["--set-threshold", "nan"])
    assert r.exit_code == 2 and "--set-threshold" in r.output and "nan" in r.output
    r = runner.invoke(app, base + ["--workers", "0"])
    assert r.exit_code == 2 and "--workers" in r.output
    rep = tmp_path / "rep.json"
    assert runner.invoke(app, base + ["--out", str(rep)]).exit_code == 0
    r = runner.invoke(app, ["additivity", str(rep), "--resamples", "50"])
    assert r.exit_code == 2 and "--resamples" in r.output and "SCORES_DIR" in r.output
    r = runner.invoke(app, ["additivity", str(tmp_path / "nope.json")])
    assert r.exit_code == 2 and "nope.json" in r.output and "no such file" in r.output


def test_modes_are_case_insensitive_and_accept_both_path_layouts(tmp_path):
    rng = np.random.default_rng(3)
    flat, sub = tmp_path / "flat", tmp_path / "sub"
    for root in (flat, sub):
        root.mkdir()
        (root / "query_ids.txt").write_text("".join(f"q{i}\n" for i in range(Q)))
        (root / "gallery_ids.txt").write_text("".join(f"g{j}\n" for j in range(N)))
    for p in ("II", "TT", "IT", "TI"):
        (sub / p).mkdir()
        for c in ("clean", "img__low_light__s3"):
            m = rng.standard_normal((Q, N))
            np.save(flat / f"{c}.{p}.npy", m)
            np.save(sub / p / f"{c}.npy", m)
    qp = tmp_path / "q.json"
    qp.write_text(json.dumps({f"q{i}": [f"g{i}"] for i in range(Q)}))
    reps = []
    for root, mode in ((flat, "IT2IT"), (flat, "it2it"), (sub, "It2It")):
        out = tmp_path / f"{root.name}-{mode}.json"
        r = runner.invoke(app, ["evaluate", str(root), "--qrels", str(qp), "--mode", mode, "--resamples", "20",
                                "--quiet", "--out", str(out)])
        assert r.exit_code == 0, r.output
        reps.append(json.loads(out.read_text()))
    assert reps[0]["conditions"] == reps[1]["conditions"] == reps[2]["conditions"]
    assert reps[2]["meta"]["mode"] == "IT2IT"  # the id, however --mode was spelt


def test_moor_without_ids_writes_positional_ids_that_evaluate_accepts(tmp_path):
    rng = np.random.default_rng(4)
    for name, shape in (("qI", (Q, 8)), ("qT", (Q, 8)), ("gI", (N, 8)), ("gT", (N, 8))):
        np.save(tmp_path / f"{name}.npy", rng.standard_normal(shape))
    out = tmp_path / "fused"
    r = runner.invoke(app, ["moor", "--q-image", str(tmp_path / "qI.npy"), "--q-text", str(tmp_path / "qT.npy"),
                            "--g-image", str(tmp_path / "gI.npy"), "--g-text", str(tmp_path / "gT.npy"),
                            "--out", str(out), "--topk", "5"])
    assert r.exit_code == 0, r.output
    assert "positional ids" in r.output  # said out loud: real qrels will not match these ids
    assert (out / "query_ids.txt").read_text().split() == [f"q{i}" for i in range(Q)]
    qp = tmp_path / "q.json"
    qp.write_text(json.dumps({f"q{i}": [f"g{i}"] for i in range(Q)}))
    rep = tmp_path / "rep.json"
    r = runner.invoke(app, ["evaluate", str(out), "--qrels", str(qp), "--resamples", "20", "--quiet",
                            "--out", str(rep), "--metrics", "hit@5"])
    assert r.exit_code == 0, r.output
    assert json.loads(rep.read_text())["n_queries"] == Q


# ------------------------------------------------------------------------------------------ tables
def test_groups_stability_and_displacement_reach_the_tables(tmp_path):
    d, qp, _ = _scores_dir(tmp_path)
    tags = tmp_path / "tags.json"
    tags.write_text(json.dumps({f"q{i}": {"domain": "food" if i % 2 else "place"} for i in range(Q)}))
    md, csvp = tmp_path / "t.md", tmp_path / "t.csv"
    for table in (md, csvp):
        r = runner.invoke(app, ["evaluate", str(d), "--qrels", str(qp), "--resamples", "20", "--tags", str(tags),
                                "--group-by", "domain", "--table-out", str(table)])
        assert r.exit_code == 0, r.output
    for text in (r.output, md.read_text()):
        assert "food (n=5)" in text and "place (n=6)" in text
        # the terminal table wraps its headers to fit 120 columns
        assert "stable/drag/" in text and "wrong/boost" in text and "displacement" in text
    rows = [ln.split(",") for ln in csvp.read_text().splitlines()]
    header = rows[0]
    g = header.index("group")
    assert {r[g] for r in rows[1:]} >= {"", "food", "place"}
    assert any(r[1] == "stability:drag" for r in rows) and any(r[1] == "rank_displacement" for r in rows)
    # group rows carry deltas and CIs like the overall ones
    food = [r for r in rows[1:] if r[g] == "food" and r[0] == "img/low_light/s3" and r[1] == "hit@1"]
    assert len(food) == 1 and food[0][header.index("ci_lo")] != ""


# ------------------------------------------------------------------------------------------ tracebacks
@pytest.mark.parametrize("command", ["demo", "encode"])
def test_out_naming_a_file_is_a_clean_error(tmp_path, command):
    f = tmp_path / "afile"
    f.write_text("x")
    if command == "demo":
        args = ["demo", "--out", str(f)]
    else:
        (tmp_path / "c").mkdir()
        (tmp_path / "c" / "manifest.jsonl").write_text("")
        args = ["encode", str(tmp_path / "c"), "--gallery", str(tmp_path / "g.jsonl"), "--out", str(f)]
    r = runner.invoke(app, args)
    assert r.exit_code == 2 and r.output.startswith("error:") and str(f) in r.output
    assert r.exception is None or isinstance(r.exception, SystemExit)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_demo_into_a_read_only_folder_is_a_clean_error(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        r = runner.invoke(app, ["demo", "--out", str(ro / "sub")])
        assert r.exit_code == 2 and r.output.startswith("error:")
    finally:
        ro.chmod(0o700)


def test_a_run_that_drops_every_query_writes_the_reasons_it_points_at(tmp_path):
    """Every query fails a condition (its entity is not in its question): the refusal names
    dropped_queries.json, which must then exist and hold each query's reason."""
    qs = [{"id": "q1", "question": "what bird is this", "entity": "zebra"},
          {"id": "q2", "question": "which car is that", "entity": "yak"}]
    (tmp_path / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in qs))
    (tmp_path / "gallery.jsonl").write_text("".join(json.dumps({"id": f"g{i}", "caption": c}) + "\n"
                                                    for i, c in enumerate(["a bird", "a car", "a cat"])))
    (tmp_path / "qrels.json").write_text(json.dumps({"q1": ["g0"], "q2": ["g1"]}))
    out = tmp_path / "r"
    r = runner.invoke(app, ["run", str(tmp_path / "queries.jsonl"), "-e", "toy", "--out", str(out), "--conditions",
                            "txt/char_swap", "--no-progress", "--resamples", "50"])
    assert r.exit_code == 2 and "no query could be produced under every condition" in r.output, r.output
    reasons = json.loads((out / "dropped_queries.json").read_text())
    assert set(reasons) == {"q1", "q2"} and "entity 'zebra' not found" in reasons["q1"]
    assert "entity 'zebra' not found" in r.output  # the first reason is on the terminal too


def test_a_target_that_reads_no_condition_is_counted_as_zero_not_none(tmp_path):
    """Text conditions only: I→I reads none of them, so its mean is over 0 conditions (not 'None')."""
    from snapbench.core.defaults import DEFAULT_DATA

    r = runner.invoke(app, ["run", str(DEFAULT_DATA), "-e", "toy", "--out", str(tmp_path / "r"), "--conditions",
                            "clean,txt/char_add,txt/word_swap", "--no-progress", "--resamples", "50", "--no-report"])
    assert r.exit_code == 0, r.output
    flat = " ".join(r.output.split())
    assert "None" not in flat and "I2I 0, T2T 2" in flat, r.output
