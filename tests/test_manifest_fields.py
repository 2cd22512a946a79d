"""Query manifests: unknown fields are reported, the SnapBench release's names are understood, and a
guessed entity is counted in the run summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image
from skimage import data
from typer.testing import CliRunner

from snapbench.app.corrupt import run_corruption
from snapbench.cli import app
from snapbench.corruptions import load_manifest

runner = CliRunner()


def _photo(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(data.chelsea()[40:104, 100:164]).save(path)


def test_unknown_fields_are_reported_once_each_with_did_you_mean(tmp_path: Path) -> None:
    _photo(tmp_path / "cat.png")
    rows = [
        {"id": "a", "image": "cat.png", "questoin": "What kind of cat is this?", "entity": "cat"},
        {"id": "b", "image": "cat.png", "questoin": "Which cat is this?", "entitiy": "cat", "tags": {"anything": 1}},
        {"id": "c", "image": "cat.png", "question": "What cat?", "entity": "cat", "domain": "pets"},
    ]
    path = tmp_path / "q.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    got: list[str] = []
    recs = load_manifest(path, on_warning=got.append)
    assert len(got) == 2  # one line per distinct unknown field; fields under tags and 'domain' are known
    questoin = next(m for m in got if "'questoin'" in m)
    assert str(path) in questoin and "2 record(s)" in questoin and "line 1" in questoin and "id 'a'" in questoin
    assert "did you mean 'question'" in questoin
    entitiy = next(m for m in got if "'entitiy'" in m)
    assert "did you mean 'entity'" in entitiy and "line 2" in entitiy
    assert recs[2].tags == {"domain": "pets"} and recs[1].tags["anything"] == 1
    # the default channel is a Python warning
    with pytest.warns(UserWarning) as caught:
        load_manifest(path)
    assert sorted(str(w.message).split("'")[1] for w in caught) == ["entitiy", "questoin"]


def test_the_cli_prints_the_unknown_field_warning(tmp_path: Path) -> None:
    _photo(tmp_path / "cat.png")
    (tmp_path / "q.jsonl").write_text(json.dumps({"id": "a", "image": "cat.png", "questoin": "What cat is this?"}) + "\n")
    res = runner.invoke(app, ["corrupt", str(tmp_path / "q.jsonl"), "--out", str(tmp_path / "o"),
                              "--conditions", "img/overexposure/s1", "--no-progress"])
    assert res.exit_code == 0, res.output
    assert "unknown field 'questoin'" in res.output and "did you mean 'question'" in res.output


@pytest.mark.parametrize("where", ["beside", "inside", "relative"])
def test_snapbench_release_records(tmp_path: Path, where: str) -> None:
    bench = tmp_path / "benchmark"
    bench.mkdir()
    img = {
        "beside": tmp_path / "bench_images" / "query" / "0000.jpg",
        "inside": bench / "bench_images" / "query" / "0000.jpg",
        "relative": bench / "0000.jpg",
    }[where]
    _photo(img)
    record = {
        "query_id": "bench_0000",
        "query_text": "What kind of cat is this?",
        "query_entity": "cat",
        "query_image_local": "0000.jpg",
        "domain": "nature",
        "gallery": {"gt": [{"local": "08805.jpg", "caption": "a cat"}], "hard_negative": []},
        "text_perturbations": {"char_add": {"perturbed_text": "What kind of caat is this?", "changed": True}},
        "image_perturbations": {"rotation": {"severity": 3, "category": "transform", "angle": 30}},
    }
    (bench / "snap_bench.json").write_text(json.dumps([record], indent=2))
    got: list[str] = []
    (rec,) = load_manifest(bench / "snap_bench.json", on_warning=got.append)
    assert got == []
    assert rec.id == "bench_0000" and rec.question == "What kind of cat is this?" and rec.entity == "cat"
    assert rec.image == img and rec.tags == {"domain": "nature"}


def test_guessed_entities_are_counted_in_the_summary(tmp_path: Path) -> None:
    _photo(tmp_path / "cat.png")
    rows = [
        {"id": "a", "image": "cat.png", "question": "What kind of cat is this?"},  # no entity: guessed
        {"id": "b", "image": "cat.png", "question": "Which cat is this?", "entity": "cat"},
        {"id": "c", "image": "cat.png"},  # no question: nothing to guess
        {"id": "d", "question": "Where is the tower?", "entity": ""},  # blank entity: guessed
    ]
    (tmp_path / "q.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    s = run_corruption(tmp_path / "q.jsonl", tmp_path / "o1", conditions=["txt/char_swap"], progress=False)
    assert s.guessed_entities == 2
    s = run_corruption(tmp_path / "q.jsonl", tmp_path / "o2", conditions=["img/overexposure/s1"], progress=False)
    assert s.guessed_entities == 0  # no text condition edits a guessed word
    res = runner.invoke(app, ["corrupt", str(tmp_path / "q.jsonl"), "--out", str(tmp_path / "o3"),
                              "--conditions", "joint/overexposure+char_swap/s1", "--no-progress"])
    assert res.exit_code == 0, res.output
    assert "entity guessed for 2 queries" in res.output
    assert "added joint parts (for additivity): img/overexposure/s1, txt/char_swap" in res.output


def test_a_question_with_no_word_to_guess_is_not_counted_as_guessed(tmp_path: Path) -> None:
    """"what?" has only a stopword: its text conditions are skipped, so corrupt must not say it guessed."""
    _photo(tmp_path / "cat.png")
    rows = [{"id": "a", "image": "cat.png", "question": "what?"},
            {"id": "b", "image": "cat.png", "question": "What kind of cat is this?"}]
    (tmp_path / "q.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    res = runner.invoke(app, ["corrupt", str(tmp_path / "q.jsonl"), "--out", str(tmp_path / "o"),
                              "--conditions", "txt/char_swap,txt/word_swap", "--no-progress"])
    assert res.exit_code == 0, res.output
    skips = [json.loads(line) for line in (tmp_path / "o" / "skips.jsonl").read_text().splitlines()]
    assert sorted((s["id"], s["condition"]) for s in skips) == [("a", "txt/char_swap"), ("a", "txt/word_swap")]
    assert "entity guessed for 1 queries (no entity field)" in res.output  # b only
    assert ("no entity for 1 queries (no entity field, no non-stopword word in the question): "
            "their text conditions are skipped") in res.output
