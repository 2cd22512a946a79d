"""What a new user hit around the numbers (issue 28, point 7): report --traffic --out leaves the run
alone, --metrics names the known metrics, messages name flags, and diagnose on a corrupt output
(duplicates across queries only, shares per condition, notes as notes, n/a where nothing is checked)."""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from snapbench.app.stages import RunOptions, run_encoders
from snapbench.cli import app
from snapbench.core.defaults import DEFAULT_DATA
from snapbench.diagnose import IMAGE_DETECTORS, TEXT_DETECTORS

runner = CliRunner()


def _hand_diag(folder: Path) -> Path:
    """A diagnose folder written by hand: four queries, one flagged blurry, one with an oov word."""
    folder.mkdir(parents=True)
    flags = {"q0": ({"blur"}, set()), "q1": (set(), {"oov"}), "q2": (set(), set()), "q3": (set(), set())}
    with open(folder / "diagnose.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["query_id", "side", "detector", "score", "flag"])
        for qid, (img, txt) in flags.items():
            w.writerows((qid, "image", d, "1", int(d in img)) for d in IMAGE_DETECTORS)
            w.writerows((qid, "text", d, "1", int(d in txt)) for d in TEXT_DETECTORS)
    (folder / "summary.json").write_text(json.dumps({"skips": []}), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("small")
    run_encoders(DEFAULT_DATA, ["toy", "toy"], root / "multi",
                 RunOptions(conditions=["clean", "img/compression/s3", "txt/char_swap"], resamples=100, report=False,
                            progress=False, use_cache=False), names=["a", "b"])
    return root


def _stamps(folder: Path) -> dict[Path, int]:
    return {p: p.stat().st_mtime_ns for p in folder.rglob("*")}


def test_report_traffic_with_out_writes_nothing_into_the_run(runs, tmp_path):
    run = runs / "multi" / "a"
    before = _stamps(run)
    out = tmp_path / "rep"
    r = runner.invoke(app, ["report", str(run), "--traffic", str(_hand_diag(tmp_path / "diag")), "--out", str(out),
                            "--formats", "html"])
    assert r.exit_code == 0, r.output
    assert _stamps(run) == before  # not a file added, none rewritten
    assert json.loads((out / "traffic.json").read_text())["kind"] == "traffic"
    assert 'id="table-traffic-mix"' in (out / "report.html").read_text()


def test_report_traffic_without_out_still_writes_into_the_run(runs, tmp_path):
    import shutil

    run = tmp_path / "a"
    shutil.copytree(runs / "multi" / "a", run)
    r = runner.invoke(app, ["report", str(run), "--traffic", str(_hand_diag(tmp_path / "diag")), "--formats", "html"])
    assert r.exit_code == 0, r.output
    assert (run / "traffic.json").is_file() and 'id="table-traffic-mix"' in (run / "report.html").read_text()


def test_a_metric_no_report_has_lists_the_known_ones(runs, tmp_path):
    r = runner.invoke(app, ["compare", str(runs / "multi"), "--out", str(tmp_path / "c"), "--metrics", "hit@3",
                            "--no-progress"])
    assert r.exit_code == 2, r.output
    rep = json.loads((runs / "multi" / "a" / "IT2IT" / "report.json").read_text())
    known = list(rep["conditions"]["clean"])
    assert "metric 'hit@3' is in none of the runs' reports" in r.output
    assert r.output.rstrip().endswith("known: " + ", ".join(known)), r.output


def test_messages_do_not_start_with_an_argument_placeholder(runs, tmp_path):
    r = runner.invoke(app, ["compare", str(runs / "multi" / "a"), "--out", str(tmp_path / "c"), "--no-progress"])
    assert r.exit_code == 2 and r.output.startswith("error: a comparison needs at least two models"), r.output
    assert "RUN_DIR" not in r.output


def test_report_of_a_diagnose_folder_points_to_traffic(tmp_path):
    diag = tmp_path / "d"
    q = tmp_path / "q.txt"
    q.write_text("where is the red cat\nwhat time is it\n", encoding="utf-8")
    assert runner.invoke(app, ["diagnose", str(q), "--out", str(diag), "--no-progress"]).exit_code == 0
    r = runner.invoke(app, ["report", str(diag)])
    assert r.exit_code == 2 and "holds the output of 'snapbench diagnose'" in r.output
    assert f"snapbench report RUN --traffic {diag}" in r.output


@pytest.fixture(scope="module")
def corrupt_diag(tmp_path_factory):
    root = tmp_path_factory.mktemp("cdiag")
    r = runner.invoke(app, ["corrupt", str(DEFAULT_DATA / "queries.jsonl"), "--out", str(root / "c"), "--conditions",
                            "img/compression/s3,txt/char_swap,txt/word_swap", "--no-progress"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["diagnose", str(root / "c"), "--out", str(root / "d"), "--no-progress"])
    assert r.exit_code == 0, r.output
    return root / "c", root / "d", r


def test_variants_of_one_query_are_not_duplicates(corrupt_diag):
    corrupt, diag, _ = corrupt_diag
    # independent: every manifest record's image bytes, grouped; a duplicate spans two source queries
    by_hash: dict[str, set[str]] = {}
    clean = {json.loads(line)["id"]: json.loads(line)["image"]
             for line in (DEFAULT_DATA / "queries.jsonl").read_text().splitlines()}
    for qid, img in clean.items():
        by_hash.setdefault(hashlib.sha256((DEFAULT_DATA / img).read_bytes()).hexdigest(), set()).add(qid)
    for line in (corrupt / "manifest.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if rec.get("path"):
            by_hash.setdefault(hashlib.sha256((corrupt / rec["path"]).read_bytes()).hexdigest(), set()).add(rec["id"])
    expected = sum(1 for ids in by_hash.values() if len(ids) > 1)
    checks = json.loads((diag / "summary.json").read_text())["checks"]
    assert checks["duplicate_images"]["count"] == expected
    for group in checks["duplicate_images"]["groups"]:
        sources = [g.split("@")[0] for g in group]
        assert len(set(sources)) == len(sources) > 1  # one entry per query, never a query's own variants


def test_diagnose_page_shows_the_shares_per_condition(corrupt_diag):
    _, diag, _ = corrupt_diag
    by = json.loads((diag / "summary.json").read_text())["by_condition"]
    page = (diag / "diagnose.html").read_text()
    assert 'id="by-condition"' in page
    for cond, row in by.items():
        assert f"<th>{cond}</th><td>{row['n']}</td>" in page
        blur = row["blur"]
        assert (f"{100 * blur:.1f}%" if blur is not None else "n/a") in page


def test_loader_notes_are_notes_not_warnings(tmp_path):
    m = tmp_path / "queries.jsonl"
    m.write_text("\n".join(json.dumps({"id": f"q{i}", "question": f"where is the cat number {i}", "lighting": "dim"})
                           for i in range(3)) + "\n", encoding="utf-8")
    r = runner.invoke(app, ["diagnose", str(m), "--out", str(tmp_path / "d"), "--no-progress"])
    assert r.exit_code == 0, r.output
    assert "note: " in r.stderr and "lighting" in r.stderr and "warning:" not in r.stderr


def test_detectors_with_nothing_to_check_are_na(tmp_path):
    q = tmp_path / "q.txt"
    q.write_text("where is the red cat\n", encoding="utf-8")
    r = runner.invoke(app, ["diagnose", str(q), "--out", str(tmp_path / "d"), "--no-progress"])
    assert r.exit_code == 0, r.output
    for d in IMAGE_DETECTORS:
        assert f"{d} n/a (no readable images)" in r.stdout
    page = (tmp_path / "d" / "diagnose.html").read_text()
    assert page.count("n/a (no readable images)") == len(IMAGE_DETECTORS)
