"""`snapbench corrupt --format`: every lossless format holds exactly the pixels of the PNG run."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from snapbench.app.corrupt import run_corruption
from snapbench.cli import app
from snapbench.core.defaults import DEFAULT_DATA
from snapbench.core.errors import ConfigError
from snapbench.corruptions import load_image

pytest.importorskip("imagecodecs")
CONDS = ["img/motion_blur/s2", "img/cropping/s3", "txt/char_swap", "joint/compression+char_add/s1"]


def _lines(folder):
    return {(d["id"], d["condition"]): d for d in map(json.loads, (folder / "manifest.jsonl").read_text().splitlines())}


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["qoi", "jxl", "webp", "npz"])
def test_each_format_decodes_to_the_png_pixels(tmp_path, fmt):
    run_corruption(DEFAULT_DATA / "queries.jsonl", tmp_path / "png", conditions=CONDS, progress=False)
    run_corruption(DEFAULT_DATA / "queries.jsonl", tmp_path / fmt, conditions=CONDS, progress=False, image_format=fmt)
    png, other = _lines(tmp_path / "png"), _lines(tmp_path / fmt)
    assert png.keys() == other.keys()
    for key, line in other.items():
        assert line["path"].endswith("." + fmt) and line["question"] == png[key]["question"]
        a = load_image(tmp_path / "png" / png[key]["path"])
        b = load_image(tmp_path / fmt / line["path"])
        assert np.array_equal(a, b), key


def test_one_folder_holds_one_format(tmp_path):
    run_corruption(DEFAULT_DATA / "queries.jsonl", tmp_path, conditions=CONDS[:1], progress=False)
    with pytest.raises(ConfigError, match=r'different image_format "png" \(this run: "jxl"\)'):
        run_corruption(DEFAULT_DATA / "queries.jsonl", tmp_path, conditions=CONDS[:1], progress=False, image_format="jxl")


def test_unknown_format_is_a_clean_cli_error(tmp_path):
    res = CliRunner().invoke(app, ["corrupt", str(DEFAULT_DATA / "queries.jsonl"), "--out", str(tmp_path), "--format", "gif"])
    assert res.exit_code == 2 and "--format: unknown image format 'gif'; known: png" in res.output, res.output


def test_a_run_drawn_with_another_text_renderer_is_not_resumed(tmp_path):
    """Watermark / UI text bytes depend on the font file, Pillow and FreeType: never mix two."""
    from snapbench.core.errors import RunConfigError
    from snapbench.corruptions.image.add import renderer_versions

    run_corruption(DEFAULT_DATA / "queries.jsonl", tmp_path, conditions=["img/watermark/s1"], progress=False)
    cfg = json.loads((tmp_path / "run.json").read_text())
    assert cfg["text_renderer"] == renderer_versions()
    cfg["fingerprint"]["text_renderer.freetype"] = "1.0.0"
    (tmp_path / "run.json").write_text(json.dumps(cfg))
    with pytest.raises(RunConfigError, match=r'text_renderer\.freetype "1\.0\.0" \(this run: '):
        run_corruption(DEFAULT_DATA / "queries.jsonl", tmp_path, conditions=["img/watermark/s1"], progress=False)
