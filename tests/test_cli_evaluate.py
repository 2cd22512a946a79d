"""`snapbench evaluate` / `snapbench additivity` end to end on a small synthetic SCORES_DIR."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from snapbench.cli import app

Q, N = 30, 50
QIDS = [f"q{i}" for i in range(Q)]
GIDS = [f"g{j}" for j in range(N)]
CONDS = ["clean", "img__motion_blur__s1", "img__motion_blur__s2", "img__motion_blur__s3", "txt__char_add",
         "joint__motion_blur+char_add__s1", "joint__motion_blur+char_add__s3"]

runner = CliRunner()


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> tuple[Path, Path, dict]:
    root = tmp_path_factory.mktemp("cli")
    d = root / "scores"
    d.mkdir()
    (d / "query_ids.txt").write_text("\n".join(QIDS) + "\n")
    (d / "gallery_ids.txt").write_text("\n".join(GIDS) + "\n")
    rng = np.random.default_rng(3)
    rel = np.zeros((Q, N))
    gold = {}
    for i, q in enumerate(QIDS):
        if i % 6 == 5:
            gold[q] = []
            continue
        cols = rng.choice(N, 2, replace=False)
        rel[i, cols] = 1
        gold[q] = [GIDS[j] for j in cols]
    base = rng.standard_normal((Q, N)) + 2.5 * rel
    mats = {}
    for k, c in enumerate(CONDS):
        mats[c] = (base + 0.6 * k * rng.standard_normal((Q, N))).astype(np.float32)
        np.save(d / f"{c}.npy", mats[c])
    qp = root / "qrels.json"
    qp.write_text(json.dumps(gold))
    tags = root / "tags.json"
    tags.write_text(json.dumps({q: {"domain": "a" if i % 2 else "b"} for i, q in enumerate(QIDS)}))
    return d, qp, {"rel": rel, "mats": mats, "root": root, "tags": tags}


def test_evaluate_end_to_end_schema(data):
    d, qp, extra = data
    out = extra["root"] / "report.json"
    md = extra["root"] / "table.md"
    csv = extra["root"] / "table.csv"
    r = runner.invoke(app, ["evaluate", str(d), "--qrels", str(qp), "--out", str(out), "--seed", "3",
                            "--resamples", "400", "--table-out", str(md), "--tags", str(extra["tags"]),
                            "--group-by", "domain"])
    assert r.exit_code == 0, r.output
    rep = json.loads(out.read_text())
    for key in ("conditions", "paired", "additivity", "n_queries", "n_excluded_zero_gt"):
        assert key in rep
    assert rep["n_queries"] == Q and rep["n_excluded_zero_gt"] == 5
    ids = ["clean", "img/motion_blur/s1", "img/motion_blur/s2", "img/motion_blur/s3", "txt/char_add",
           "joint/motion_blur+char_add/s1", "joint/motion_blur+char_add/s3"]
    assert list(rep["conditions"]) == ids
    assert list(rep["paired"]) == ids[1:]
    for c in ids:
        for m in ("hit@1", "hit@5", "hit@10", "hit@20", "recall@10", "ndcg@10", "mrr"):
            assert 0.0 <= rep["conditions"][c][m] <= 1.0
    e = rep["paired"]["img/motion_blur/s3"]["hit@1"]
    assert set(e) >= {"delta", "ci", "p", "p_raw"} and e["ci"][0] <= e["delta"] <= e["ci"][1]
    assert e["p"] >= e["p_raw"]
    a = rep["additivity"]["joint/motion_blur+char_add/s3"]["hit@1"]
    assert set(a) >= {"exp", "obs", "delta", "ci"}
    assert a["delta"] == pytest.approx(a["obs"] - a["exp"])
    assert rep["severity_curves"]["motion_blur"]["hit@1"]["label"] in ("cliff", "gradual", "flat")
    assert set(rep["groups"]) == {"a", "b"} and rep["groups"]["a"]["n_queries"] == 15
    rows_a = np.array([i for i in range(Q) if i % 2 and extra["rel"][i].sum() > 0])
    for c, f in (("clean", "clean"), ("img/motion_blur/s3", "img__motion_blur__s3")):
        top1 = np.argsort(-extra["mats"][f], axis=1, kind="stable")[:, 0]
        want = extra["rel"][rows_a, top1[rows_a]].mean()
        assert rep["groups"]["a"]["conditions"][c]["hit@1"] == pytest.approx(want)
    g = rep["groups"]["a"]["paired"]["img/motion_blur/s3"]["hit@1"]
    assert g["delta"] == pytest.approx(rep["groups"]["a"]["conditions"]["img/motion_blur/s3"]["hit@1"]
                                       - rep["groups"]["a"]["conditions"]["clean"]["hit@1"])
    assert rep["meta"]["seed"] == 3 and rep["meta"]["resamples"] == 400
    assert "stability" in rep and "rank_displacement" in rep
    assert "joint/motion_blur+char_add/s1" in md.read_text()
    # the printed table
    assert "img/motion_blur/s3" in r.output and "additivity" in r.output
    # independent check of a value: numpy full sort of the clean matrix
    rel, clean = extra["rel"], extra["mats"]["clean"]
    order = np.argsort(-clean, axis=1, kind="stable")
    has = rel.sum(1) > 0
    hit1 = rel[np.arange(Q), order[:, 0]][has].mean()
    assert rep["conditions"]["clean"]["hit@1"] == pytest.approx(hit1)
    # csv table
    r = runner.invoke(app, ["evaluate", str(d), "--qrels", str(qp), "--resamples", "50", "--quiet",
                            "--table-out", str(csv), "--metrics", "hit@1,mrr"])
    assert r.exit_code == 0, r.output
    lines = csv.read_text().splitlines()
    assert lines[0] == "condition,metric,value,delta,ci_lo,ci_hi,p,p_raw,group,depth_limited"
    cells = [ln.split(",") for ln in lines[1:]]
    assert len([c for c in cells if c[1] in ("hit@1", "mrr") and c[8] == ""]) == 2 * len(ids)
    # stability (4 classes) and rank displacement rows for every corrupted condition
    assert len([c for c in cells if c[1].startswith("stability:")]) == 4 * (len(ids) - 1)
    assert len([c for c in cells if c[1] == "rank_displacement"]) == len(ids) - 1
    # --conditions restricts (clean always kept); --include-zero-gt counts zero-GT queries as 0
    sub = extra["root"] / "sub.json"
    r = runner.invoke(app, ["evaluate", str(d), "--qrels", str(qp), "--resamples", "50", "--quiet", "--out", str(sub),
                            "--conditions", "img/motion_blur/s3", "--include-zero-gt", "--metrics", "hit@1"])
    assert r.exit_code == 0, r.output
    rs = json.loads(sub.read_text())
    assert list(rs["conditions"]) == ["clean", "img/motion_blur/s3"] and rs["n_excluded_zero_gt"] == 0
    assert rs["conditions"]["clean"]["hit@1"] == pytest.approx(hit1 * 25 / 30)


def test_same_seed_same_report_and_additivity_command(data, tmp_path):
    d, qp, _ = data
    outs = []
    for i in range(2):
        out = tmp_path / f"r{i}.json"
        r = runner.invoke(app, ["evaluate", str(d), "--qrels", str(qp), "--out", str(out), "--resamples", "300",
                                "--quiet", "--seed", "9"])
        assert r.exit_code == 0, r.output
        outs.append(out.read_text())
    assert outs[0] == outs[1]
    r = runner.invoke(app, ["additivity", str(tmp_path / "r0.json")])
    assert r.exit_code == 0, r.output
    assert "joint/motion_blur+char_add/s3" in r.output and "mean (all joint conditions)" in r.output
    r2 = runner.invoke(app, ["additivity", str(d), "--qrels", str(qp), "--resamples", "300", "--seed", "9"])
    assert r2.exit_code == 0, r2.output
    assert r2.output == r.output  # same numbers from the directory as from the report (same seed)


def test_exported_runs_evaluate_like_the_matrices(data, tmp_path):
    """Second code path: export the full ranking as TREC runs, evaluate the run directory."""
    d, qp, _ = data
    runs = tmp_path / "runs"
    out1, out2 = tmp_path / "a.json", tmp_path / "b.json"
    r = runner.invoke(app, ["evaluate", str(d), "--qrels", str(qp), "--out", str(out1), "--resamples", "100",
                            "--quiet", "--export-run", str(runs), "--export-depth", str(N)])
    assert r.exit_code == 0, r.output
    assert (runs / "joint__motion_blur+char_add__s3.run").is_file()
    for f in ("query_ids.txt", "gallery_ids.txt"):
        (runs / f).write_text((d / f).read_text())
    r = runner.invoke(app, ["evaluate", str(runs), "--qrels", str(qp), "--out", str(out2), "--resamples", "100", "--quiet"])
    assert r.exit_code == 0, r.output
    a, b = json.loads(out1.read_text()), json.loads(out2.read_text())
    for c in a["conditions"]:
        for m, v in a["conditions"][c].items():
            assert b["conditions"][c][m] == pytest.approx(v, abs=1e-12), (c, m)


def test_bad_input_exits_2_with_clear_message(data, tmp_path):
    d, qp, _ = data
    bad = tmp_path / "bad"
    bad.mkdir()
    for f in ("query_ids.txt", "gallery_ids.txt"):
        (bad / f).write_text((d / f).read_text())
    np.save(bad / "img__motion_blur__s1.npy", np.zeros((Q, N), np.float32))
    r = runner.invoke(app, ["evaluate", str(bad), "--qrels", str(qp)])
    assert r.exit_code == 2
    assert "error:" in r.output and "no clean condition" in r.output and str(bad) in r.output
    assert "Traceback" not in r.output
    m = np.zeros((Q, N), np.float32)
    m[2, 3] = np.nan
    np.save(bad / "clean.npy", m)
    r = runner.invoke(app, ["evaluate", str(bad), "--qrels", str(qp)])
    assert r.exit_code == 2 and "clean.npy: non-finite score" in r.output
    r = runner.invoke(app, ["evaluate", str(d), "--qrels", str(qp), "--metrics", "precision@3"])
    assert r.exit_code == 2 and "unknown metric" in r.output
    r = runner.invoke(app, ["evaluate", str(d), "--qrels", str(qp), "--metrics", "reject"])
    assert r.exit_code == 2 and "--set-threshold" in r.output


def test_group_by_unknown_field_names_the_tags_file(data):
    d, qp, extra = data
    r = runner.invoke(app, ["evaluate", str(d), "--qrels", str(qp), "--tags", str(extra["tags"]),
                            "--group-by", "scene"])
    assert r.exit_code == 2
    assert str(extra["tags"]) in r.output and "scene=" in r.output and "domain" in r.output


def test_set_threshold_modes_and_drag(tmp_path):
    d = tmp_path / "s"
    d.mkdir()
    (d / "query_ids.txt").write_text("a\nb\nc\n")
    (d / "gallery_ids.txt").write_text("x\ny\nz\n")
    # II: image path ranks the positive first for a, b; TT ranks it last; IT2IT = mean
    ii = np.array([[0.9, 0.1, 0.2], [0.1, 0.8, 0.0], [0.5, 0.4, 0.3]], np.float32)
    tt = np.array([[0.0, 1.0, 0.9], [0.9, 0.0, 0.95], [0.2, 0.7, 0.1]], np.float32)
    np.save(d / "clean.II.npy", ii)
    np.save(d / "clean.TT.npy", tt)
    np.save(d / "txt__char_add.II.npy", ii)
    np.save(d / "txt__char_add.TT.npy", tt * 0.5)
    qp = tmp_path / "q.json"
    qp.write_text(json.dumps({"a": ["x"], "b": ["y"], "c": []}))
    out = tmp_path / "r.json"
    r = runner.invoke(app, ["evaluate", str(d), "--qrels", str(qp), "--mode", "IT2IT", "--out", str(out),
                            "--resamples", "200", "--set-threshold", "0.6", "--quiet"])
    assert r.exit_code == 0, r.output
    rep = json.loads(out.read_text())
    # IT2IT clean: a -> [0.45, 0.55, 0.55] top = y (miss); b -> [0.5, 0.4, 0.475] top = x (miss)
    assert rep["conditions"]["clean"]["hit@1"] == 0.0
    # I2I clean hits both -> drag = 0 - 1
    assert rep["coarse_text_drag"]["value"] == -1.0 and rep["coarse_text_drag"]["image_value"] == 1.0
    # sets at >= 0.6 on IT2IT clean: a {}, b {}, c {} (max 0.55) -> all rejected: A = 1 (c), B = 2 (a, b), C = 0
    c = rep["conditions"]["clean"]
    assert c["reject_precision"] == pytest.approx(1 / 3) and c["reject_recall"] == 1.0
    assert c["set_precision"] == 0.0
    assert rep["meta"]["mode"] == "IT2IT"  # the mode id, as run writes it
    r = runner.invoke(app, ["evaluate", str(d), "--qrels", str(qp), "--quiet"])
    assert r.exit_code == 2 and "--mode" in r.output


def test_outputs_go_to_new_folders_atomically_and_unwritable_is_a_clean_error(data, tmp_path):
    d, qp, _ = data
    out = tmp_path / "new" / "dir" / "report.json"
    table = tmp_path / "tables" / "t.md"
    r = runner.invoke(app, ["evaluate", str(d), "--qrels", str(qp), "--resamples", "50", "-q",
                            "--out", str(out), "--table-out", str(table)])
    assert r.exit_code == 0, r.output
    assert json.loads(out.read_text())["n_queries"] == Q and table.read_text().startswith("| condition")
    assert sorted(p.name for p in out.parent.iterdir()) == ["report.json"]  # no temp file left
    blocker = tmp_path / "file"
    blocker.write_text("x")
    r = runner.invoke(app, ["evaluate", str(d), "--qrels", str(qp), "--resamples", "50", "-q",
                            "--out", str(blocker / "report.json")])
    assert r.exit_code == 2 and "error:" in r.output and "report.json" in r.output
    assert "Traceback" not in r.output
    for flag, target in (("--table-out", blocker / "t.csv"), ("--export-run", blocker)):
        r = runner.invoke(app, ["evaluate", str(d), "--qrels", str(qp), "--resamples", "50", "-q", flag, str(target)])
        assert r.exit_code == 2 and f"error: {target}" in r.output and "Traceback" not in r.output, r.output


def test_short_id_list_is_reported_as_a_shape_mismatch_not_as_unknown_qrels_ids(data, tmp_path):
    d, qp, _ = data
    bad = tmp_path / "short"
    bad.mkdir()
    np.save(bad / "clean.npy", np.load(d / "clean.npy"))
    (bad / "query_ids.txt").write_text("\n".join(QIDS[:3]) + "\n")
    (bad / "gallery_ids.txt").write_text((d / "gallery_ids.txt").read_text())
    r = runner.invoke(app, ["evaluate", str(bad), "--qrels", str(qp), "--resamples", "50", "-q"])
    assert r.exit_code == 2
    assert f"{bad / 'clean.npy'}: {Q} rows but query_ids.txt lists 3 queries" in r.output, r.output


def test_explicit_primary_and_stability_metric_must_be_evaluated(data):
    d, qp, _ = data
    base = ["evaluate", str(d), "--qrels", str(qp), "--resamples", "50", "-q"]
    r = runner.invoke(app, base + ["--primary", "hit@3"])
    assert r.exit_code == 2 and "--primary" in r.output and "hit@3" in r.output
    r = runner.invoke(app, base + ["--stability-metric", "hit@3"])
    assert r.exit_code == 2 and "--stability-metric" in r.output
    r = runner.invoke(app, base + ["--stability-metric", "ndcg@10"])
    assert r.exit_code == 2 and "hit@k" in r.output
    r = runner.invoke(app, base + ["--metrics", "ndcg@10,mrr"])  # defaults adapt silently
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, base + ["--stability-metric", "hit@5", "--primary", "mrr", "--out", str(d.parent / "s.json")])
    assert r.exit_code == 0 and json.loads((d.parent / "s.json").read_text())["stability"]["txt/char_add"]["metric"] == "hit@5"


def test_two_files_for_one_condition_are_refused(data, tmp_path):
    import shutil

    d, qp, _ = data
    dup = tmp_path / "dup"
    shutil.copytree(d, dup)
    shutil.copy(dup / "img__motion_blur__s1.npy", dup / "img__motion_blur__s01.npy")
    r = runner.invoke(app, ["evaluate", str(dup), "--qrels", str(qp)])
    assert r.exit_code == 2 and "both hold condition 'img/motion_blur/s1'" in r.output


# ------------------------------------------------------------------------------ new-user cases (issue #15)
_LATIN1 = "café\n".encode("latin-1")  # 0xe9 is not UTF-8


def _copy_scores(d: Path, dest: Path) -> Path:
    import shutil

    shutil.copytree(d, dest)
    return dest


@pytest.mark.parametrize("where, line", [("query_ids", Q), ("qrels_json", 1), ("qrels_trec", 2), ("tags", 2)])
def test_non_utf8_input_files_name_the_file(data, tmp_path, where, line):
    d, qp, extra = data
    args = []
    if where == "query_ids":
        d = _copy_scores(d, tmp_path / "s")
        (d / "query_ids.txt").write_bytes(b"\n".join(q.encode() for q in QIDS[:-1]) + b"\nq\xe9\n")
        bad = d / "query_ids.txt"
    elif where == "qrels_json":
        bad = tmp_path / "qrels.json"
        bad.write_bytes(b'{"q0": ["g1"], "q\xe9": []}')
        qp = bad
    elif where == "qrels_trec":
        bad = tmp_path / "qrels.txt"
        bad.write_bytes(b"q0 0 g1 1\nq\xe9 0 g2 1\n")
        qp = bad
    else:
        bad = tmp_path / "tags.tsv"
        bad.write_bytes(b"q0\tdomain=a\nq1\tdomain=caf\xe9\n")
        args = ["--tags", str(bad)]
    r = runner.invoke(app, ["evaluate", str(d), "--qrels", str(qp), "--resamples", "20", "-q", *args])
    assert r.exit_code == 2, r.output
    assert f"error: {bad}: not UTF-8 text: byte 0xe9 at line {line}," in r.output, r.output
    assert "Traceback" not in r.output


def test_non_utf8_report_given_to_additivity_names_the_file(tmp_path):
    bad = tmp_path / "report.json"
    bad.write_bytes(b'{"conditions": {"caf\xe9": {}}}')
    r = runner.invoke(app, ["additivity", str(bad)])
    assert r.exit_code == 2 and f"error: {bad}: not UTF-8 text: byte 0xe9 at line 1" in r.output, r.output


def test_no_query_with_a_relevant_item_warns_that_nothing_was_measured(data, tmp_path):
    d, _, extra = data
    qp = tmp_path / "empty.json"
    qp.write_text(json.dumps({q: [] for q in QIDS}))
    out = tmp_path / "r.json"
    r = runner.invoke(app, ["evaluate", str(d), "--qrels", str(qp), "--resamples", "20", "-q", "--out", str(out)])
    assert r.exit_code == 1, r.output  # finished, but measured nothing (2 would be an error)
    assert f"warning: none of the {Q} queries has a relevant item in {qp}" in r.output
    assert "nothing was measured" in r.output
    rep = json.loads(out.read_text())  # the report is still written, every labelled value null
    assert all(v is None for vals in rep["conditions"].values() for m, v in vals.items()
               if m.split("@")[0] not in ("overlap", "rbo", "flip"))
    assert rep["conditions"]["clean"]["overlap@10"] == 1.0  # the label-free measures need no positive


def test_additivity_with_a_missing_text_part_names_the_true_reason(data, tmp_path):
    d, qp, _ = data
    d = _copy_scores(d, tmp_path / "s")
    (d / "txt__char_add.npy").unlink()
    r = runner.invoke(app, ["additivity", str(d), "--qrels", str(qp), "--resamples", "50"])
    assert r.exit_code == 0, r.output
    assert "txt/char_add has no score file (txt__char_add.npy not in" in r.output
    assert "not among the selected conditions" not in r.output


def test_piped_tables_fit_120_columns(data):
    d, qp, extra = data
    r = runner.invoke(app, ["evaluate", str(d), "--qrels", str(qp), "--resamples", "50", "--tags", str(extra["tags"]),
                            "--group-by", "domain"], env={"COLUMNS": None})
    assert r.exit_code == 0, r.output
    assert "Δhit@1" in r.output and "mean (all joint conditions)" in r.output
    assert max(len(line) for line in r.output.splitlines()) <= 120


def test_library_parameters_are_shown_as_flags(data, tmp_path):
    d, qp, extra = data
    qx = tmp_path / "q.json"
    qx.write_text(json.dumps({"q0": ["g1", "nope"]}))
    cases = [
        (["--qrels", str(qx)], "(set --allow-unknown-items to drop them with a warning)"),
        (["--qrels", str(qp), "--group-by", "domain"], "error: --group-by needs --tags (a tags file)"),
        (["--qrels", str(qp), "--metrics", "set"], "error: --metrics: set/reject metrics need --set-threshold"),
        (["--qrels", str(qp), "--workers", "0"], "error: --workers: must be an integer >= 1, got 0"),
        (["--qrels", str(qp), "--k", "1,0"], "error: --k: each value must be an integer >= 1, got 0 (in 1,0)"),
        (["--qrels", str(qp), "--ci", "1.5"], "error: --ci: must be in (0, 1)"),
        (["--qrels", str(qp), "--cliff-tol", "nan"], "error: --cliff-tol: must be finite"),
        (["--qrels", str(qp), "--metrics", "ndgc@10"], "error: --metrics: unknown metric 'ndgc@10' (did you mean 'ndcg'?)"),
    ]
    for args, message in cases:
        r = runner.invoke(app, ["evaluate", str(d), "--resamples", "20", "-q", *args])
        assert r.exit_code == 2 and message in r.output, (args, r.output)
        assert "unknown_items" not in r.output and "group_by" not in r.output and "set_threshold" not in r.output


def test_per_query_values_in_the_report_average_to_its_values(data, tmp_path):
    d, qp, _ = data
    out = tmp_path / "r.json"
    r = runner.invoke(app, ["evaluate", str(d), "--qrels", str(qp), "--resamples", "20", "-q", "--out", str(out),
                            "--per-query", "--metrics", "hit@1,ndcg@10"])
    assert r.exit_code == 0, r.output
    rep = json.loads(out.read_text())
    pq = rep["per_query"]
    assert pq["query_ids"] == QIDS
    for c, per in rep["conditions"].items():
        for m, v in per.items():
            vals = [x for x in pq["values"][c][m] if x is not None]
            assert len(vals) == 25 and v == pytest.approx(sum(vals) / len(vals), abs=1e-12)
    # zero-GT queries (every 6th) do not count: null
    assert all(pq["values"]["clean"]["hit@1"][i] is None for i in range(5, Q, 6))
    r = runner.invoke(app, ["evaluate", str(d), "--qrels", str(qp), "--resamples", "20", "-q", "--out", str(out)])
    assert "per_query" not in json.loads(out.read_text())  # only on request


def test_additivity_of_a_run_folder_names_its_reports(tmp_path):
    """Was "a SCORES_DIR needs --qrels": a run folder holds finished reports, one per mode."""
    from snapbench.app.stages import RunOptions, run_benchmark
    from snapbench.core.defaults import DEFAULT_DATA

    run = tmp_path / "run"
    run_benchmark(DEFAULT_DATA, "toy", run, RunOptions(conditions=["clean", "txt/char_swap"], joint=False, resamples=100,
                                                       report=False, progress=False, use_cache=False))
    r = runner.invoke(app, ["additivity", str(run)])
    assert r.exit_code == 2, r.output
    assert (f"error: {run}: is a 'snapbench run' folder, not a SCORES_DIR: give one of its reports, "
            f"e.g. {run / 'IT2IT' / 'report.json'} (it has I2I/report.json") in r.output
    assert "--qrels" not in r.output
    # the reports are the run's targets (layout.RunDir), in the run's order; a stray folder is none
    (run / "notes").mkdir()
    (run / "notes" / "report.json").write_text("{}")
    r = runner.invoke(app, ["additivity", str(run)])
    listed = ["I2I", "T2T", "IT2IT", "I2IT", "T2IT", "MOOR", "fusion/comb_sum", "fusion/rrf"]
    assert "(it has " + ", ".join(f"{t}/report.json" for t in listed) + ")" in " ".join(r.output.split()), r.output
    report = run / "IT2IT" / "report.json"
    assert runner.invoke(app, ["additivity", str(report)]).exit_code == 0
    r = runner.invoke(app, ["additivity", str(report), "--out", str(tmp_path / "a.json")])
    assert r.exit_code == 2 and "error: --out applies only when recomputing from a SCORES_DIR" in r.output, r.output
    r = runner.invoke(app, ["additivity", str(report), "--out", str(tmp_path / "a.json"), "--seed", "1"])
    assert r.exit_code == 2 and "error: --seed, --out apply only when recomputing" in r.output, r.output
    # evaluate of the run folder: its targets are evaluated already
    r = runner.invoke(app, ["evaluate", str(run), "--qrels", str(DEFAULT_DATA / "qrels.json")])
    assert r.exit_code == 2, r.output
    assert " ".join(r.output.split()).endswith(
        "it holds the output of 'snapbench run', which evaluated its targets already (<MODE>/report.json): see them "
        f"with 'snapbench report {run}'"), r.output


def test_evaluate_of_an_encode_or_corrupt_folder_says_what_to_give(tmp_path):
    """Trial 4: both said only "no score files"; the encode folder's scores are in its paths/, and a corrupt
    folder holds images to encode first.  The folder's kind is its run.json's."""
    from snapbench.core.defaults import DEFAULT_DATA

    corr, enc, qrels = tmp_path / "cj", tmp_path / "ej", str(DEFAULT_DATA / "qrels.json")
    r = runner.invoke(app, ["corrupt", str(DEFAULT_DATA / "queries.jsonl"), "--out", str(corr), "--conditions",
                            "img/low_light/s1", "--no-progress"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["encode", str(corr), "--gallery", str(DEFAULT_DATA / "gallery.jsonl"), "-e", "toy",
                            "--out", str(enc)])
    assert r.exit_code == 0, r.output
    no_scores = "no score files (expected <condition>.npy such as clean.npy, or <condition>.run)"
    for folder, instead in (
        (enc, f"it holds the output of 'snapbench encode': give its per-path scores, {enc / 'paths'}"),
        (corr, "it holds the output of 'snapbench corrupt' (corrupted queries, not scores): encode it first "
               f"(snapbench encode {corr} --gallery GALLERY -e ENCODER --out ENC), then give ENC/paths"),
    ):
        r = runner.invoke(app, ["evaluate", str(folder), "--qrels", qrels, "--mode", "IT2IT"])
        assert r.exit_code == 2, r.output
        assert " ".join(r.output.split()) == f"error: {folder}: {no_scores}; {instead}"
    # the hint is right: the encode folder's paths/ evaluates
    r = runner.invoke(app, ["evaluate", str(enc / "paths"), "--qrels", qrels, "--mode", "IT2IT", "-q",
                            "--resamples", "100"])
    assert r.exit_code == 0, r.output
    # a folder without a run.json keeps the plain message
    (tmp_path / "empty").mkdir()
    r = runner.invoke(app, ["evaluate", str(tmp_path / "empty"), "--qrels", qrels])
    assert " ".join(r.output.split()) == f"error: {tmp_path / 'empty'}: {no_scores}"


def test_score_files_in_undocumented_sub_folders_are_named_not_silently_ignored(tmp_path):
    """scores/img/low_light/s1.npy (the condition id as a path) is no SCORES_DIR layout: a warning names
    each ignored file and the documented name (img__low_light__s1.npy); clean is still evaluated."""
    d = tmp_path / "scores"
    (d / "img" / "low_light").mkdir(parents=True)
    (d / "query_ids.txt").write_text("\n".join(QIDS) + "\n")
    (d / "gallery_ids.txt").write_text("\n".join(GIDS) + "\n")
    rng = np.random.default_rng(0)
    np.save(d / "clean.npy", rng.standard_normal((Q, N)).astype(np.float32))
    for s in ("s1", "s2"):
        np.save(d / "img" / "low_light" / f"{s}.npy", rng.standard_normal((Q, N)).astype(np.float32))
    qp = tmp_path / "qrels.json"
    qp.write_text(json.dumps({q: [GIDS[i % N]] for i, q in enumerate(QIDS)}))
    r = runner.invoke(app, ["evaluate", str(d), "--qrels", str(qp), "--resamples", "20", "-q",
                            "--out", str(tmp_path / "r.json")])
    assert r.exit_code == 0, r.output
    out = " ".join(r.output.split())
    assert "warning:" in out and "ignored" in out
    for s in ("s1", "s2"):
        assert f"img/low_light/{s}.npy" in out and f"img__low_light__{s}.npy" in out
    from snapbench.store.scores import ScoresDir

    sd = ScoresDir(d)
    assert sd.conditions == ["clean"] and any("img__low_light__s1.npy" in w for w in sd.warnings)
    # the documented sub-folder layout of path files is not warned about
    (d / "II").mkdir()
    np.save(d / "II" / "clean.npy", np.zeros((Q, N), dtype=np.float32))
    assert not any("II/clean.npy" in w for w in ScoresDir(d).warnings)


@pytest.mark.parametrize("rbo_depth", [7, 30])
def test_the_default_export_depth_is_the_depth_the_metrics_rank_to(data, tmp_path, rbo_depth):
    """Default metrics (k up to 20, and rbo): the exported runs hold max(20, --rbo-depth) items per query,
    cut to the gallery -- the --rbo-depth given, not the default 100."""
    d, qp, _ = data
    runs = tmp_path / "runs"
    r = runner.invoke(app, ["evaluate", str(d), "--qrels", str(qp), "--resamples", "50", "--quiet",
                            "--rbo-depth", str(rbo_depth), "--export-run", str(runs)])
    assert r.exit_code == 0, r.output
    n_gallery = len((d / "gallery_ids.txt").read_text().split())
    lines = (runs / "clean.run").read_text().splitlines()
    per_query = {}
    for ln in lines:
        per_query[ln.split()[0]] = per_query.get(ln.split()[0], 0) + 1
    assert set(per_query.values()) == {min(max(20, rbo_depth), n_gallery)}
