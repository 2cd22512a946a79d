"""``snapbench stress`` findings of new-user trial 4: a PhotoBench qrels entry from another album, album
folders without query.json or metadata.json, non-finite --set-threshold, unbalanced template brackets,
conditions that change no record, the too-few-albums and no-ground-truth wording, empty --stress entries
and the one meaning of ``n_counted``.  Expected values come from the fixtures' own files."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import album_fixtures as fx
import pytest
from typer.testing import CliRunner

from snapbench.cli import app

pytest.importorskip("reverse_geocode")
runner = CliRunner()
ENC = "album_fixtures:BagOfWords"


@pytest.fixture(scope="module")
def pb(tmp_path_factory) -> Path:
    return fx.write_photobench(tmp_path_factory.mktemp("albums") / "pb")


def _stress(dataset: Path, out: Path, *extra: str):
    return runner.invoke(app, ["stress", str(dataset), "-e", ENC, "--out", str(out), "--resamples", "50",
                               "--no-progress", "--no-report", *extra])


def _without_ground_truth(src: Path, dst: Path) -> dict[str, list[str]]:
    """A copy of ``src`` whose query files carry no ground truth; returns that ground truth as qrels."""
    shutil.copytree(src, dst)
    qrels = {}
    for a in fx.ALBUMS:
        p = dst / a / "query.json"
        qs = json.loads(p.read_text())
        for j, q in enumerate(qs):
            qrels[f"{a}_q{j:04d}"] = [f"{a}/{f}" for f in q.pop("ground_truth")]
            q.pop("ground_truth_count")
        p.write_text(json.dumps(qs))
    return qrels


# ------------------------------------------------------------------------------ 1: qrels from another album
@pytest.mark.parametrize("form", ["json", "trec"])
def test_a_photobench_qrels_entry_from_another_album_is_refused_as_for_jsonl(pb, tmp_path, form):
    qrels = _without_ground_truth(pb, tmp_path / "pb")
    qrels["album3_q0000"] = ["album1/IMG_0003.jpg"]
    if form == "json":
        qfile = tmp_path / "q.json"
        qfile.write_text(json.dumps(qrels))
    else:
        qfile = tmp_path / "q.trec"
        qfile.write_text("".join(f"{q} 0 {d} 1\n" for q, ds in qrels.items() for d in ds))
    r = _stress(tmp_path / "pb", tmp_path / "o", "--qrels", str(qfile), "--stress", "drop=caption")
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    assert ("query 'album3_q0000' (album 'album3'): relevant record(s) from another album: 'album1/IMG_0003.jpg'; "
            "each query searches only its own album") in r.output, r.output


# ------------------------------------------------------------------------------ 2: never a silent drop
def test_an_album_folder_without_query_json_is_named_in_the_notes(pb, tmp_path):
    root = tmp_path / "pb"
    shutil.copytree(pb, root)
    (root / "album2" / "query.json").unlink()
    r = _stress(root, tmp_path / "o", "--stress", "drop=caption")
    assert r.exit_code == 0, r.output
    s = json.loads((tmp_path / "o" / "stress.json").read_text())
    assert s["albums"] == ["album1", "album3"]
    notes = [n for n in s["notes"] if "album2" in n]
    assert len(notes) == 1 and "query.json" in notes[0] and "skipped" in notes[0], s["notes"]
    assert notes[0] in r.output


def test_an_album_without_metadata_json_is_named_in_the_notes(pb, tmp_path):
    root = tmp_path / "pb"
    shutil.copytree(pb, root)
    (root / "album2" / "images" / "metadata" / "metadata.json").unlink()
    for name in {fx.photo_fields(2, i)["file"] for i in range(fx.N_PHOTOS)}:  # the photos stay in the gallery
        (root / "album2" / "images" / name).write_bytes(b"")
    r = _stress(root, tmp_path / "o", "--stress", "drop=caption")
    assert r.exit_code == 0, r.output
    s = json.loads((tmp_path / "o" / "stress.json").read_text())
    assert s["albums"] == list(fx.ALBUMS)
    notes = [n for n in s["notes"] if "album2" in n and "metadata.json" in n]
    assert len(notes) == 1 and "time" in notes[0] and "place" in notes[0], s["notes"]


# ----------------------------------------------------------- --batch-size checked before any model loads
@pytest.mark.parametrize("value", ["0", "-3"])
def test_stress_refuses_a_batch_size_below_one_naming_the_flag(pb, tmp_path, value):
    r = _stress(pb, tmp_path / "o", "--stress", "drop=caption", "--batch-size", value)
    assert r.exit_code == 2 and f"error: --batch-size: must be an integer >= 1, got {value}" in r.output, r.output
    assert not (tmp_path / "o" / "stress.json").exists()


# ------------------------------------------------------------------------------ 3: finite --set-threshold
@pytest.mark.parametrize("value", ["inf", "nan", "-inf"])
def test_stress_refuses_a_non_finite_set_threshold(pb, tmp_path, value):
    r = _stress(pb, tmp_path / "o", "--stress", "drop=caption", "--set-threshold", value)
    shown = repr(float(value))
    assert r.exit_code == 2 and f"error: --set-threshold: must be a finite number, got {shown}" in r.output, r.output
    assert not (tmp_path / "o" / "stress.json").exists()


def test_evaluate_refuses_inf_and_nan_and_keeps_minus_inf_for_trec_runs():
    from snapbench.core.errors import ConfigError
    from snapbench.evaluate.config import EvaluationConfig

    for v in (math.inf, math.nan):
        with pytest.raises(ConfigError, match="must be a finite number"):
            EvaluationConfig(set_threshold=v)
    assert EvaluationConfig(set_threshold=-math.inf).set_threshold == -math.inf
    assert EvaluationConfig(set_threshold=0.5).set_threshold == 0.5


# ------------------------------------------------------------------------------ 4: template brackets
@pytest.mark.parametrize("template", ["[{caption}. [{place}", "{caption}.]", "[[{caption}.] {place}]"])
def test_unbalanced_template_brackets_are_refused(pb, tmp_path, template):
    r = _stress(pb, tmp_path / "o", "--stress", "drop=caption", "--record-template", template)
    assert r.exit_code == 2 and "error: --record-template: unbalanced brackets" in r.output, r.output


@pytest.mark.parametrize("template,words", [
    ("{caption}}", "unbalanced braces in the record template '{caption}}': '}' at character 10 has no opening partner"),
    ("{caption", "unbalanced braces in the record template '{caption': '{' at character 1 has no closing partner"),
    ("[{caption} [{place}]]", "'[' at character 12 opens inside the one opened at character 1"),
    ("{captoin}", "unknown field {captoin} in the record template (did you mean 'caption'?); known: {caption}"),
])
def test_template_braces_nesting_and_misspelt_fields_are_named_where_they_are(pb, tmp_path, template, words):
    r = _stress(pb, tmp_path / "o", "--stress", "drop=caption", "--record-template", template)
    assert r.exit_code == 2 and "error: --record-template: " in r.output and words in r.output, r.output


# ------------------------------------------------------------------------------ 5: nothing moved
def test_a_condition_that_changes_no_record_says_so(pb, tmp_path):
    r = _stress(pb, tmp_path / "o", "--stress", "drop=location,drop=caption", "--record-template", "[{caption}.]")
    assert r.exit_code == 0, r.output
    s = json.loads((tmp_path / "o" / "stress.json").read_text())
    clean = [json.loads(x)["text"] for x in (tmp_path / "o" / "records" / "clean.jsonl").read_text().splitlines()]
    moved = [json.loads(x)["text"] for x in (tmp_path / "o" / "records" / "drop=location.jsonl").read_text().splitlines()]
    assert clean == moved and s["conditions"]["drop=location"]["changed_records"] == 0
    notes = [n for n in s["notes"] if "'drop=location'" in n]
    assert len(notes) == 1 and "changed no record's text" in notes[0] and "does not write location" in notes[0]
    assert f"note: {notes[0]}" in r.output
    line = next(x for x in r.output.splitlines() if "Stress drop=location" in x)
    assert "changed no record's text" in line and "not distinguishable" not in line, line


def test_a_ci_of_exactly_zero_is_said_as_no_move():
    from snapbench.render.stress import stress_findings

    def summary(delta, ci):
        e = {"delta": delta, "ci": ci, "resampled": "query"}
        return {"metric": "hit@1", "ci_level": 0.95, "fixed_metrics": [],
                "conditions": {"time_dropout=0.5": {"changed_records": 4, "operators": [["time_dropout", 0.5]],
                                                    "groups": {"all": {"hit@1": e}}}}}

    [(_, zero)] = stress_findings(summary(0.0, [0.0, 0.0]))
    assert "did not move" in zero and "not distinguishable" not in zero, zero
    [(_, around)] = stress_findings(summary(0.0, [-0.02, 0.02]))
    assert "not distinguishable from none" in around, around


# ------------------------------------------------------------------------------ 6: wording
def test_the_too_few_albums_note_gives_the_reason_and_agrees_in_number():
    from snapbench.albums.evaluate import too_few_albums

    nine, one = too_few_albums(9), too_few_albums(1)
    assert "24310" not in nine and "too narrow" in nine and nine.startswith("9 albums are too few"), nine
    assert one.startswith("1 album is too few") and "1 albums" not in one, one


def test_the_no_ground_truth_error_says_qrels_works_for_photobench(pb, tmp_path):
    _without_ground_truth(pb, tmp_path / "pb")
    r = _stress(tmp_path / "pb", tmp_path / "o", "--stress", "drop=caption")
    assert r.exit_code == 2 and "no ground truth" in r.output, r.output
    msg = r.output.split("no ground truth", 1)[1]
    assert "--qrels" in msg and "<album>_qNNNN" in msg and "JSONL: give" not in msg, r.output


# ------------------------------------------------------------------------------ 7: empty --stress entries
@pytest.mark.parametrize("spec", ["drop=caption,,", ",drop=caption", "drop=caption,,drop=time"])
def test_empty_stress_entries_are_refused(pb, tmp_path, spec):
    r = _stress(pb, tmp_path / "o", "--stress", spec)
    assert r.exit_code == 2 and "error: --stress:" in r.output and "empty entr" in r.output, r.output


# ------------------------------------------------------------------------------ 8: one meaning of n_counted
def test_n_counted_means_the_same_in_clean_and_in_each_condition(pb, tmp_path):
    r = _stress(pb, tmp_path / "o", "--stress", "drop=caption", "--set-threshold", "0.3")
    assert r.exit_code == 0, r.output
    s = json.loads((tmp_path / "o" / "stress.json").read_text())
    gts = [q["ground_truth"] for a in fx.ALBUMS for q in json.loads((pb / a / "query.json").read_text())]
    n_all, n_gt = len(gts), sum(1 for g in gts if g)
    assert n_all > n_gt
    cond = s["conditions"]["drop=caption"]["groups"]["all"]
    for m in s["metrics"]:
        want = n_all if m.startswith("reject_") else n_gt
        assert s["clean"]["all"][m]["n_counted"] == cond[m]["n_counted"] == want, m
