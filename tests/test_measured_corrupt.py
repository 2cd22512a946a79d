"""Measured strength through `snapbench corrupt`'s manifest (issue #17 point 1).

Every recorded value is recomputed from the files the run wrote, by an independent path:
PSNR / SSIM with scikit-image on the documented preprocessing (tests/measure_reference.py),
``changed`` with numpy, ``area_kept`` from the written crop's size, edit distances with a full
dynamic-programming table written here.  Photos: scikit-image photos snapbench does not ship.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import cv2
import numpy as np
import pytest
from measure_reference import photo, ref_strength
from PIL import Image
from typer.testing import CliRunner

from snapbench.app.corrupt import MANIFEST_FIELDS, run_corruption
from snapbench.cli import app
from snapbench.core.errors import RunConfigError

CONDS = ["img/defocus_blur/s2", "img/cropping/s3", "img/downscale/s2", "img/low_light/s1", "img/scribble/s2",
         "img/compression/s3", "txt/char_swap", "txt/word_swap", "joint/low_light+word_swap/s1"]
runner = CliRunner()


def _dp(a, b) -> int:
    """Levenshtein distance by the full (len(a)+1) x (len(b)+1) table."""
    t = [[i + j if i * j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            t[i][j] = min(t[i - 1][j] + 1, t[i][j - 1] + 1, t[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
    return t[-1][-1]


def make_set(root: Path, sizes=((333, 517), (700, 1000))) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    lines = []
    for k, (name, (h, w)) in enumerate(zip(("moto_left", "gravel"), sizes)):
        Image.fromarray(photo(name, h, w)).save(root / f"{name}.png")
        lines.append({"id": f"q{k}", "image": f"{name}.png", "question": f"Which {name.split('_')[0]} is this?",
                      "entity": name.split("_")[0]})
    (root / "q.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return root / "q.jsonl"


def read_lines(out: Path) -> list[dict]:
    return [json.loads(x) for x in (out / "manifest.jsonl").read_text().splitlines()]


def decode(path: Path) -> np.ndarray:
    return cv2.imread(str(path), cv2.IMREAD_COLOR)[..., ::-1]


@pytest.fixture(scope="module")
def measured(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("measured")
    run_corruption(make_set(root), root / "out", conditions=CONDS, progress=False)
    return root / "out"


@pytest.mark.slow
def test_every_line_is_measured_and_equals_scikit_image_on_the_written_files(measured: Path) -> None:
    lines = read_lines(measured)
    clean = {ln["id"]: ln for ln in lines if ln["condition"] == "clean"}
    assert all(list(ln) == list(MANIFEST_FIELDS) for ln in lines)
    seen = set()
    for ln in lines:
        m = ln["measured"]
        assert ln["target"] is None
        if ln["kind"] == "clean":
            assert m is None
            continue
        seen.add(ln["kind"])
        # the sides spelled out here, not read from KIND_SIDES: the test's own statement of them
        if ln["kind"] in ("image", "joint"):
            src, var = decode(measured / clean[ln["id"]]["path"]), decode(measured / ln["path"])
            psnr, ssim, changed = ref_strength(src, var)
            assert abs(m["ssim"] - ssim) <= 1e-4 + 5e-7, (ln["condition"], m, ssim)  # + the JSON rounding
            assert abs(m["psnr"] - psnr) <= 1e-4 + 5e-5, (ln["condition"], m, psnr)
            assert abs(m["changed"] - changed) <= 5e-7
            if ln["condition"].startswith("img/cropping"):
                assert m["area_kept"] == pytest.approx(var.size / src.size, abs=5e-7)
            else:
                assert m["area_kept"] is None
        if ln["kind"] in ("text", "joint"):
            q0, q1 = clean[ln["id"]]["question"], ln["question"]
            assert m["char_edits"] == _dp(q0, q1) > 0
            assert m["word_edits"] == _dp(q0.rstrip("?").split(), q1.rstrip("?").split())
            entity = ln["text_params"]["entity"]
            assert m["entity_intact"] == (entity in q1.rstrip("?").split())
        if ln["kind"] == "image":
            assert set(m) == {"psnr", "ssim", "changed", "area_kept"}
        if ln["kind"] == "text":
            assert set(m) == {"char_edits", "word_edits", "entity_intact"}
    assert seen == {"image", "text", "joint"}
    # a joint line carries both parts' values: its image part's and its text part's
    by = {(ln["id"], ln["condition"]): ln["measured"] for ln in lines}
    for q in clean:
        joint = by[(q, "joint/low_light+word_swap/s1")]
        assert joint == {**by[(q, "img/low_light/s1")], **by[(q, "txt/word_swap")]}


@pytest.mark.slow
def test_measuring_changes_no_byte_and_no_measure_writes_null(measured: Path, tmp_path: Path) -> None:
    src = make_set(tmp_path / "in")
    run_corruption(src, tmp_path / "plain", conditions=CONDS, progress=False, measure=False)
    plain, with_m = read_lines(tmp_path / "plain"), read_lines(measured)
    assert all(ln["measured"] is None for ln in plain)
    strip = [{k: v for k, v in ln.items() if k != "measured"} for ln in with_m]
    assert strip == [{k: v for k, v in ln.items() if k != "measured"} for ln in plain]
    for ln in plain:
        if ln["path"]:
            assert (tmp_path / "plain" / ln["path"]).read_bytes() == (measured / ln["path"]).read_bytes()
    cfg = json.loads((tmp_path / "plain" / "run.json").read_text())
    assert cfg["measure"] is False and cfg["fingerprint"]["measure"] is False
    assert "measure" not in json.loads((measured / "run.json").read_text())["fingerprint"]  # the default: no entry


@pytest.mark.slow
def test_one_and_two_workers_write_the_same_measured_manifest(measured: Path, tmp_path: Path) -> None:
    src = make_set(tmp_path / "in")
    run_corruption(src, tmp_path / "two", conditions=CONDS, progress=False, workers=2)
    assert (tmp_path / "two" / "manifest.jsonl").read_bytes() == (measured / "manifest.jsonl").read_bytes()


def test_resume_with_the_other_measure_setting_is_refused_naming_it(tmp_path: Path) -> None:
    src = make_set(tmp_path / "in", sizes=((120, 160), (100, 100)))
    run_corruption(src, tmp_path / "o", conditions=CONDS[:2], progress=False)
    with pytest.raises(RunConfigError, match=r"measuring: on, the default \(this run: off \(measure\)\)"):
        run_corruption(src, tmp_path / "o", conditions=CONDS[:2], progress=False, measure=False)
    res = runner.invoke(app, ["corrupt", str(src), "--out", str(tmp_path / "o"), "--conditions", CONDS[0], "--no-measure",
                              "--no-progress"])
    assert res.exit_code == 2 and "--force" in res.output, res.output
    # in words and flags, not the fingerprint's keys and JSON values
    assert "measuring: on, the default (this run: off (--no-measure))" in res.output, res.output


def test_cli_reports_measured_values_and_rejects_nothing_by_default(tmp_path: Path) -> None:
    src = make_set(tmp_path / "in", sizes=((120, 160), (100, 100)))
    res = runner.invoke(app, ["corrupt", str(src), "--out", str(tmp_path / "o"), "--conditions", "img/defocus_blur/s1",
                              "--no-progress"])
    assert res.exit_code == 0, res.output
    ssim = [ln["measured"]["ssim"] for ln in read_lines(tmp_path / "o") if ln["kind"] == "image"]
    assert len(ssim) == 2 and all(0 < s < 1 and math.isfinite(s) for s in ssim)
