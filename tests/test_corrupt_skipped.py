"""`snapbench corrupt` where no query can be read: the error counts every skipped query by cause (not
only the first), and skips.jsonl says its reasons in words (it is read from the CLI and from Python).
"""

from __future__ import annotations

import json

import numpy as np
from PIL import Image
from typer.testing import CliRunner

from snapbench.cli import app

runner = CliRunner()


def _manifest(tmp_path):
    """Two images too large for --max-pixels 1000 (40x40 = 1600 px), one missing, one not an image."""
    rng = np.random.default_rng(0)
    for name in ("big1.png", "big2.png"):
        Image.fromarray(rng.integers(0, 256, (40, 40, 3), dtype=np.uint8)).save(tmp_path / name)
    (tmp_path / "fake.jpg").write_bytes(b"not an image at all")
    rows = [("a", "big1.png"), ("b", "missing.jpg"), ("c", "fake.jpg"), ("d", "big2.png")]
    path = tmp_path / "q.jsonl"
    path.write_text("".join(json.dumps({"id": i, "image": str(tmp_path / f), "question": "what is this?"}) + "\n"
                            for i, f in rows), encoding="utf-8")
    return path


def test_every_cause_is_counted_with_its_first_query(tmp_path):
    out = tmp_path / "out"
    r = runner.invoke(app, ["corrupt", str(_manifest(tmp_path)), "--out", str(out), "--conditions", "clean",
                            "--max-pixels", "1000", "--no-progress"])
    assert r.exit_code == 2, r.output
    err = [line for line in r.output.splitlines() if line.startswith("error:")]
    assert len(err) == 1, r.output
    msg = err[0]
    assert "4 of 4 skipped" in msg
    assert "2 of 4 queries have an image too large (first: " + str(tmp_path / "big1.png") in msg
    assert "1,600 pixels exceeds the limit of 1,000 pixels (raise --max-pixels to allow it)" in msg
    assert "1 of 4 queries have no image file (first: " + str(tmp_path / "missing.jpg") in msg
    assert "1 of 4 queries have an unreadable image (first: " + str(tmp_path / "fake.jpg") in msg
    assert str(out / "skips.jsonl") in msg


def test_skip_reasons_in_the_file_name_no_python_parameter(tmp_path):
    out = tmp_path / "out"
    runner.invoke(app, ["corrupt", str(_manifest(tmp_path)), "--out", str(out), "--conditions", "clean",
                        "--max-pixels", "1000", "--no-progress"])
    reasons = {s["id"]: s["reason"] for s in map(json.loads, (out / "skips.jsonl").read_text().splitlines())}
    assert reasons["a"].endswith("(raise the max pixels setting to allow it)")
    assert not any("max_pixels" in r for r in reasons.values())


def test_a_directory_and_a_non_image_are_both_unreadable(tmp_path):
    """corrupt groups by corruptions.io.image_problem: "cannot be read" (a directory) and "cannot be
    decoded" (not an image) are one cause in its message, "have an unreadable image"."""
    (tmp_path / "adir.jpg").mkdir()
    (tmp_path / "fake.jpg").write_bytes(b"not an image at all")
    path = tmp_path / "q.jsonl"
    path.write_text("".join(json.dumps({"id": i, "image": str(tmp_path / f), "question": "what is this?"}) + "\n"
                            for i, f in [("a", "adir.jpg"), ("b", "fake.jpg"), ("c", "gone.jpg")]), encoding="utf-8")
    r = runner.invoke(app, ["corrupt", str(path), "--out", str(tmp_path / "out"), "--conditions", "clean", "--no-progress"])
    assert r.exit_code == 2, r.output
    msg = next(line for line in r.output.splitlines() if line.startswith("error:"))
    assert "2 of 3 queries have an unreadable image (first: " + str(tmp_path / "adir.jpg") + ": is a directory" in msg
    assert "1 of 3 queries have no image file" in msg
    assert msg.index("have no image file") < msg.index("have an unreadable image")
