"""What `snapbench diagnose` says about bad input files and one-sided query sets (the new-user trial)."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest
from typer.testing import CliRunner

from snapbench.cli import app

runner = CliRunner()


@pytest.fixture(scope="module")
def images(tmp_path_factory) -> Path:
    """Three small, different, readable photos-like images (no questions)."""
    root = tmp_path_factory.mktemp("imgs")
    rng = np.random.default_rng(7)
    for i in range(3):
        img = cv2.GaussianBlur(rng.integers(0, 256, (96, 128, 3), dtype=np.uint8), (3, 3), 0)
        cv2.imwrite(str(root / f"p{i}.png"), img)
    return root


def _diagnose(*args: str, out: Path) -> tuple[int, str]:
    res = runner.invoke(app, ["diagnose", *args, "--out", str(out), "--no-progress"])
    assert "Traceback" not in res.output
    return res.exit_code, res.output


def test_text_files_are_read_through_textio(images, tmp_path) -> None:
    """Non-UTF-8, missing and folder arguments name the file and say what is wrong, in words."""
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"What is this?\n\xff\xfe which one\n")
    good = tmp_path / "qs.txt"
    good.write_text("What is this temple?\n", encoding="utf-8")
    bad_csv = tmp_path / "bad.csv"
    bad_csv.write_bytes(b"image,question\np0.png,caf\xe9?\n")
    cases = (([str(bad)], "not UTF-8 text: byte 0xff at line 2, column 1", bad),
             ([str(images), "--questions", str(bad_csv)], "not UTF-8 text: byte 0xe9 at line 2, column 11", bad_csv),
             ([str(good), "--words", str(bad)], "not UTF-8 text: byte 0xff at line 2", bad),
             ([str(images), "--questions", str(tmp_path / "nope.csv")], "questions file not found", "nope.csv"),
             ([str(images), "--questions", str(images)], "is a folder, not a questions file", images),
             ([str(good), "--words", str(tmp_path / "nope.txt")], "word list not found", "nope.txt"))
    for i, (args, expect, named) in enumerate(cases):
        code, output = _diagnose(*args, out=tmp_path / f"o{i}")
        assert code == 2 and expect in output and str(named) in output, output
        assert "Errno" not in output and "codec" not in output, output


@pytest.mark.parametrize("content", ["", "image,question\n", "image,question\np0.png,\np1.png,  \n"])
def test_a_questions_file_without_questions_is_refused(images, tmp_path, content) -> None:
    qfile = tmp_path / "questions.csv"
    qfile.write_text(content, encoding="utf-8")
    code, output = _diagnose(str(images), "--questions", str(qfile), out=tmp_path / "o")
    assert code == 2 and str(qfile) in output, output
    assert "leave out --questions" in output and not (tmp_path / "o" / "summary.json").exists()


def test_options_are_named_as_flags(images, tmp_path) -> None:
    qs = tmp_path / "qs.txt"
    qs.write_text("What is this?\n", encoding="utf-8")
    qcsv = tmp_path / "q.csv"
    qcsv.write_text("image,question\np0.png,What is this?\n", encoding="utf-8")
    code, output = _diagnose(str(qs), "--questions", str(qcsv), out=tmp_path / "o1")
    assert code == 2 and "--questions applies to a folder of images only" in output and "questions=" not in output
    code, output = _diagnose(str(images), "--format", "bogus", out=tmp_path / "o2")
    assert code == 2 and "--format: unknown input format 'bogus'; known: " in output, output


def test_a_side_the_set_does_not_have_has_no_share(images, tmp_path) -> None:
    code, output = _diagnose(str(images), out=tmp_path / "o")
    assert code == 0, output
    assert "text only n/a (no questions)" in output and "both n/a (no questions)" in output
    s = json.loads((tmp_path / "o" / "summary.json").read_text(encoding="utf-8"))
    for k in ("text_only", "both"):
        assert s[k] == {"share": None, "ci": [None, None], "count": 0, "n": 0, "not_applicable": "no questions"}
    assert s["image_only"]["n"] == s["clean"]["n"] == 3 and "not_applicable" not in s["image_only"]
    lo, hi = s["image_only"]["ci"]
    assert f"image only {100 * s['image_only']['share']:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]  " in output
    page = (tmp_path / "o" / "diagnose.html").read_text(encoding="utf-8")
    assert "n/a (no questions)" in page


def test_questions_only_set_has_no_image_share(tmp_path) -> None:
    qs = tmp_path / "qs.txt"
    qs.write_text("What is this temple?\nWhich astrbonaut is this?\n", encoding="utf-8")
    code, output = _diagnose(str(qs), out=tmp_path / "o")
    assert code == 0 and "image only n/a (no images)" in output and "both n/a (no images)" in output, output
    s = json.loads((tmp_path / "o" / "summary.json").read_text(encoding="utf-8"))
    assert s["text_only"]["n"] == 2 and f"text only {100 * s['text_only']['share']:.1f}% [" in output


@pytest.mark.parametrize("stop", [KeyboardInterrupt, RuntimeError])
def test_an_unfinished_run_leaves_no_folder_it_created(images, tmp_path, monkeypatch, stop) -> None:
    """The library call (no CLI around it) removes every folder it created, the missing parents of --out
    included, and keeps a folder that was there before."""
    from snapbench.app import diagnose as diagnose_run

    def boom(*_a, **_k):
        raise stop("stopped while diagnosing")

    monkeypatch.setattr(diagnose_run, "diagnose_record", boom)
    with pytest.raises(stop):
        diagnose_run.run_diagnose(images, tmp_path / "a" / "b" / "out")
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "kept").mkdir()
    with pytest.raises(stop):
        diagnose_run.run_diagnose(images, tmp_path / "kept")
    assert (tmp_path / "kept").is_dir() and list((tmp_path / "kept").iterdir()) == []


@pytest.mark.parametrize("second_line,expect", [
    ('["p1.png", "what is this?"]', "line 2: expected a JSON object"),
    ('{"image": "p1.png", "question": "what is this?", "score": NaN}',
     "line 2: invalid JSON (NaN is not valid JSON (use null for an undefined value))"),
    ('{"image": "p1.png", "question": }', "line 2: invalid JSON (Expecting value at column 33)"),
])
def test_a_bad_line_of_a_jsonl_questions_file_names_the_file_and_line(images, tmp_path, second_line, expect) -> None:
    """A questions file is read like every JSONL snapbench reads: objects only, no NaN, the column of a syntax error."""
    qfile = tmp_path / "questions.jsonl"
    qfile.write_text('{"image": "p0.png", "question": "what is this?"}\n' + second_line + "\n", encoding="utf-8")
    code, output = _diagnose(str(images), "--questions", str(qfile), out=tmp_path / "o")
    assert code == 2 and f"{qfile}: {expect}" in output, output
    assert not (tmp_path / "o" / "summary.json").exists()
