"""`snapbench corrupt` / `snapbench preview` / `snapbench conditions` as a user runs them.

Determinism across processes and the kill-and-resume guarantee are checked with real
subprocesses (different PYTHONHASHSEED each), everything else through typer's CliRunner.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image
from query_sets import snapbench_cmd, tree
from query_sets import twelve_query_set as make_queries
from skimage import data
from typer.testing import CliRunner

from snapbench.cli import app

runner = CliRunner()


def run_cli(args: list[str], *, hashseed: str = "0", **kw) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONHASHSEED": hashseed}
    return subprocess.run(snapbench_cmd() + args, env=env, capture_output=True, text=True, timeout=300, **kw)


def sorted_lines(path: Path) -> list[str]:
    return sorted(path.read_text().splitlines())


@pytest.fixture(scope="module")
def queries(tmp_path_factory) -> Path:
    return make_queries(tmp_path_factory.mktemp("cli_qs"))


@pytest.fixture(scope="module")
def full_run(queries: Path, tmp_path_factory) -> Path:
    """An uninterrupted CLI run of the default 54 states."""
    out = tmp_path_factory.mktemp("cli_full") / "out"
    res = run_cli(["corrupt", str(queries), "--out", str(out), "--seed", "7", "--no-progress"])
    assert res.returncode == 0, res.stderr
    # 11 loadable queries x 54, less q04's 8 text conditions; skips: those 8 + the broken file
    assert "written: 586" in res.stdout and "skipped: 9 (1 whole query)" in res.stdout, res.stdout
    return out


def test_full_run_layout(full_run: Path) -> None:
    lines = [json.loads(x) for x in (full_run / "manifest.jsonl").read_text().splitlines()]
    assert len({x["condition"] for x in lines}) == 54
    dirs = sorted(p.name for p in (full_run / "images").iterdir())
    assert len(dirs) == 46 and "clean" in dirs and "img__motion_blur__s2" in dirs  # clean + 45 image conditions
    skips = [json.loads(x) for x in (full_run / "skips.jsonl").read_text().splitlines()]
    assert {(s["id"], s["condition"]) for s in skips if s["id"] == "q11"} == {("q11", None)}
    assert len([s for s in skips if s["id"] == "q04"]) == 8 and all("giraffe" in s["reason"] for s in skips if s["id"] == "q04")
    assert json.loads((full_run / "run.json").read_text())["seed"] == 7


def test_two_processes_and_worker_counts_give_identical_bytes(queries: Path, full_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "again"
    res = run_cli(["corrupt", str(queries), "--out", str(out), "--seed", "7", "--workers", "2", "--no-progress"], hashseed="12345")
    assert res.returncode == 0, res.stderr
    assert tree(out) == tree(full_run)  # images, manifest.jsonl (same order), skips.jsonl, run.json


@pytest.mark.slow
def test_kill_midway_then_resume_equals_an_uninterrupted_run(queries: Path, full_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "killed"
    args = ["corrupt", str(queries), "--out", str(out), "--seed", "7", "--no-progress"]
    proc = subprocess.Popen(snapbench_cmd() + args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "PYTHONHASHSEED": "99"})
    manifest = out / "manifest.jsonl"
    deadline = time.monotonic() + 120
    n_lines = 0
    while time.monotonic() < deadline and proc.poll() is None:
        if manifest.exists():
            n_lines = manifest.read_bytes().count(b"\n")
            if n_lines >= 54:  # at least one query committed
                break
        time.sleep(0.002)
    assert proc.poll() is None, "the run finished before it could be killed; make the query set larger"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    total = len((full_run / "manifest.jsonl").read_text().splitlines())
    n_at_kill = manifest.read_bytes().count(b"\n")
    assert 54 <= n_at_kill < total

    res = run_cli(args)
    assert res.returncode == 0, res.stderr
    assert f"reused: {n_at_kill}" in res.stdout
    assert sorted_lines(out / "manifest.jsonl") == sorted_lines(full_run / "manifest.jsonl")
    assert sorted_lines(out / "skips.jsonl") == sorted_lines(full_run / "skips.jsonl")
    images = lambda d: {k: v for k, v in tree(d).items() if k.startswith("images/")}  # noqa: E731
    assert images(out) == images(full_run)  # no temp file left, nothing missing, same bytes
    assert (out / "run.json").read_bytes() == (full_run / "run.json").read_bytes()


# ---------------------------------------------------------------------------------------------
# options and exit codes (in-process)


def test_conditions_option_validation_and_joint_ids(queries: Path, tmp_path: Path) -> None:
    res = runner.invoke(app, ["corrupt", str(queries), "--out", str(tmp_path / "o"), "--conditions", "img/scribbel/s2"])
    assert res.exit_code == 2
    assert "did you mean 'img/scribble/s2'" in res.output
    res = runner.invoke(
        app,
        ["corrupt", str(queries), "--out", str(tmp_path / "o"), "--no-progress",
         "--conditions", "joint/scribble+char_swap/s2, txt/char_swap", "--joint"],
    )
    assert res.exit_code == 0, res.output
    conds = json.loads((tmp_path / "o" / "run.json").read_text())["conditions"]
    # every joint condition brings its image and text parts (additivity needs them), right before it
    assert conds[:4] == ["clean", "img/scribble/s2", "txt/char_swap", "joint/scribble+char_swap/s2"]
    assert conds[4:8] == ["img/compression/s1", "txt/char_add", "joint/compression+char_add/s1", "img/compression/s2"]
    paper = [("compression", "char_add"), ("downscale", "char_delete"), ("low_light", "word_swap"),
             ("mosaic", "sent_add"), ("overexposure", "word_repeat"), ("rotation", "sent_replace")]
    expected = {"clean", "img/scribble/s2", "txt/char_swap", "joint/scribble+char_swap/s2"}
    for i, t in paper:
        expected |= {f"txt/{t}"} | {f"img/{i}/s{s}" for s in (1, 2, 3)} | {f"joint/{i}+{t}/s{s}" for s in (1, 2, 3)}
    assert sorted(conds) == sorted(expected)
    added = next(ln for ln in res.output.splitlines() if ln.startswith("added joint parts"))
    assert "img/scribble/s2" in added and "txt/char_add" in added and "txt/char_swap" not in added
    assert (tmp_path / "o" / "images" / "joint__scribble+char_swap__s2" / "q00.png").exists()
    assert (tmp_path / "o" / "images" / "joint__compression+char_add__s3" / "q00.png").exists()


def test_other_seed_is_refused_then_forced(queries: Path, tmp_path: Path) -> None:
    base = ["corrupt", str(queries), "--out", str(tmp_path / "o"), "--conditions", "img/cropping/s1", "--no-progress"]
    assert runner.invoke(app, base).exit_code == 0
    res = runner.invoke(app, base + ["--seed", "3"])
    assert res.exit_code == 2 and "seed 0 (this run: 3)" in res.output and "--force" in res.output
    res = runner.invoke(app, base + ["--seed", "3", "--force"])
    assert res.exit_code == 0 and "reused: 0" in res.output


def test_exit_status_when_nothing_can_be_processed(tmp_path: Path) -> None:
    # no query readable at all is an input error (exit 2) naming the first file and why
    (tmp_path / "x.jpg").write_text("not an image")
    (tmp_path / "q.jsonl").write_text(json.dumps({"id": "a", "image": "x.jpg", "question": "What?"}) + "\n")
    res = runner.invoke(app, ["corrupt", str(tmp_path / "q.jsonl"), "--out", str(tmp_path / "o"), "--no-progress"])
    assert res.exit_code == 2 and "error: " in res.output and "x.jpg: not a recognised image file" in res.output
    res = runner.invoke(app, ["corrupt", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "missing.jsonl" in res.output and "not found" in res.output


def test_bad_grid_file_is_an_option_error(queries: Path, tmp_path: Path) -> None:
    (tmp_path / "g.json").write_text(json.dumps({"mosaic": {"s2": {"block": 3}}}))
    res = runner.invoke(app, ["corrupt", str(queries), "--out", str(tmp_path / "o"), "--grid", str(tmp_path / "g.json"),
                              "--conditions", "img/mosaic/s2", "--no-progress"])
    assert res.exit_code == 2 and "img/mosaic/s2" in res.output and "'block'" in res.output, res.output


def test_out_that_is_a_file_is_a_clean_error(queries: Path, tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("a file, not a directory")
    res = runner.invoke(app, ["corrupt", str(queries), "--out", str(tmp_path / "taken"), "--no-progress"])
    assert res.exit_code == 2 and res.output.startswith("error: ") and "taken" in res.output, res.output


def test_conditions_command_counts() -> None:
    res = runner.invoke(app, ["conditions"])
    assert res.exit_code == 0 and len(res.output.split()) == 54
    res = runner.invoke(app, ["conditions", "--joint"])
    assert res.exit_code == 0 and len(res.output.split()) == 72


def test_conditions_with_a_bad_grid_file_is_a_clean_error(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text("{not json")
    for grid in (tmp_path / "bad.json", tmp_path / "missing.toml"):
        res = runner.invoke(app, ["conditions", "--grid", str(grid)])
        assert res.exit_code == 2 and res.output.startswith("error: ") and grid.name in res.output, res.output
    (tmp_path / "extra.json").write_text(json.dumps({"motion_blur": {"s4": {"kernel": 31}}}))
    res = runner.invoke(app, ["conditions", "--grid", str(tmp_path / "extra.json")])
    assert res.exit_code == 0 and "img/motion_blur/s4" in res.output.split()


def test_preview_writes_one_labelled_contact_sheet(tmp_path: Path) -> None:
    src = tmp_path / "cat.png"
    photo = data.chelsea()[40:232, 100:356]  # 192x256
    Image.fromarray(photo).save(src)
    sheet_path = tmp_path / "sheet.png"
    res = runner.invoke(app, ["preview", str(src), "--out", str(sheet_path), "--question", "What kind of cat is this?", "--entity", "cat"])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[0] == "clean: What kind of cat is this?"
    assert [ln.split(":")[0] for ln in lines[1:9]] == [f"txt/{op}" for op in
        ("char_add", "char_delete", "char_change", "char_swap", "word_repeat", "word_swap", "sent_add", "sent_replace")]
    sheet = cv2.imread(str(sheet_path), cv2.IMREAD_COLOR)[..., ::-1]
    cell_w, cell_h = 240 + 8, 180 + 36 + 8  # thumbnail box + padding, + label strip (two lines: id, measured)
    assert sheet.shape[1] == 3 * cell_w
    assert 16 * cell_h < sheet.shape[0] < 16 * cell_h + 400  # clean row + 15 operator rows + text lines
    # the clean thumbnail is the photo scaled to the box (letterboxed, aspect kept)
    f = min(240 / 256, 180 / 192)
    tw, th = round(256 * f), round(192 * f)
    y0, x0 = 4 + (180 - th) // 2, 4 + (240 - tw) // 2
    ref = cv2.resize(np.ascontiguousarray(photo), (tw, th), interpolation=cv2.INTER_AREA)
    np.testing.assert_array_equal(sheet[y0 : y0 + th, x0 : x0 + tw], ref)
    # downscale s3 (row of 'downscale', third column) is drawn at its true small size
    from snapbench.core.conditions import IMAGE_OPERATORS

    row = 1 + IMAGE_OPERATORS.index("downscale")
    box = sheet[row * cell_h + 4 : row * cell_h + 4 + 180, 2 * cell_w + 4 : 2 * cell_w + 4 + 240]
    content = np.any(box != 225, axis=2)
    assert 0 < content.sum() <= (256 * 0.04 * f + 2) * (192 * 0.04 * f + 2)
