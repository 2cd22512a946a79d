"""`snapbench preview`: the same variants as `corrupt` for the same query id and seed; clean errors."""

from __future__ import annotations

import json
import os
from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image
from skimage import data
from typer.testing import CliRunner

from snapbench.cli import app

runner = CliRunner()


def _contains(sheet: np.ndarray, patch: np.ndarray) -> bool:
    """Whether ``patch`` appears pixel-exactly somewhere in ``sheet`` (independent of the layout)."""
    res = cv2.matchTemplate(sheet.astype(np.float32), patch.astype(np.float32), cv2.TM_SQDIFF)
    y, x = np.unravel_index(int(np.argmin(res)), res.shape)  # best match (float sums are approximate)
    h, w = patch.shape[:2]
    return bool(np.array_equal(sheet[y : y + h, x : x + w], patch))


def _read_rgb(path: Path) -> np.ndarray:
    return cv2.imread(str(path), cv2.IMREAD_COLOR)[..., ::-1]


@pytest.mark.slow
def test_preview_with_the_query_id_shows_exactly_what_corrupt_writes(tmp_path: Path) -> None:
    # 240x180 is the sheet's cell size: thumbnails are then the variants themselves, unscaled.
    Image.fromarray(np.ascontiguousarray(data.chelsea()[40:220, 60:300])).save(tmp_path / "photo.png")
    (tmp_path / "q.jsonl").write_text(json.dumps({"id": "q_7", "image": "photo.png", "question": "What cat is this?", "entity": "cat"}) + "\n")
    conds = ["img/low_light/s3", "img/scribble/s2"]  # both seeded by (seed, query id, operator, severity)
    res = runner.invoke(app, ["corrupt", str(tmp_path / "q.jsonl"), "--out", str(tmp_path / "o"), "--seed", "5",
                              "--conditions", ",".join(conds), "--no-progress"])
    assert res.exit_code == 0, res.output
    variants = {c: _read_rgb(tmp_path / "o" / "images" / c.replace("/", "__") / "q_7.png") for c in conds}

    res = runner.invoke(app, ["preview", str(tmp_path / "photo.png"), "--id", "q_7", "--seed", "5", "--out", str(tmp_path / "a.png")])
    assert res.exit_code == 0, res.output
    assert "seed key (query id): q_7" in res.output
    sheet = _read_rgb(tmp_path / "a.png")
    for c in conds:
        assert _contains(sheet, variants[c]), c

    # without --id the file name keys the randomness: other noise, other strokes
    res = runner.invoke(app, ["preview", str(tmp_path / "photo.png"), "--seed", "5", "--out", str(tmp_path / "b.png")])
    assert res.exit_code == 0 and "seed key (query id): photo (the file name" in res.output
    sheet = _read_rgb(tmp_path / "b.png")
    assert not any(_contains(sheet, variants[c]) for c in conds)


def test_preview_out_errors_are_clean(tmp_path: Path) -> None:
    Image.fromarray(data.chelsea()[:60, :80]).save(tmp_path / "photo.png")
    (tmp_path / "afile").write_text("a file")
    (tmp_path / "folder.png").mkdir()
    for out, message in ((tmp_path / "afile" / "s.png", "is a file, not a folder"),
                         (tmp_path / "folder.png", "is a folder"),
                         (tmp_path / "s.txt", "must be a .png file")):
        res = runner.invoke(app, ["preview", str(tmp_path / "photo.png"), "--out", str(out)])
        assert res.exit_code == 2 and res.output.startswith("error: ") and message in res.output, res.output
        assert res.exception is None or isinstance(res.exception, SystemExit)


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root can write into read-only folders")
def test_preview_into_a_read_only_folder_is_a_clean_error(tmp_path: Path) -> None:
    Image.fromarray(data.chelsea()[:60, :80]).save(tmp_path / "photo.png")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        res = runner.invoke(app, ["preview", str(tmp_path / "photo.png"), "--out", str(ro / "s.png")])
        assert res.exit_code == 2 and res.output.startswith("error: ") and "not writable" in res.output, res.output
    finally:
        ro.chmod(0o755)


def test_an_entity_not_in_the_question_is_one_warning(tmp_path: Path) -> None:
    Image.fromarray(data.chelsea()[:60, :80]).save(tmp_path / "photo.png")
    args = ["preview", str(tmp_path / "photo.png"), "--question", "What is this camera?", "--no-measure"]
    res = runner.invoke(app, [*args, "--entity", "dog", "--out", str(tmp_path / "a.png")])
    assert res.exit_code == 0 and (tmp_path / "a.png").exists(), res.output
    warnings = [line for line in res.output.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "'dog'" in warnings[0] and "'What is this camera?'" in warnings[0], res.output
    assert res.output.count("not found") == 1 and "8 text conditions: skipped" in res.output
    # an entity of the question: the eight corrupted questions, no warning
    res = runner.invoke(app, [*args, "--entity", "camera", "--out", str(tmp_path / "b.png")])
    assert res.exit_code == 0 and "warning" not in res.output, res.output
    assert sum(line.startswith("txt/") for line in res.output.splitlines()) == 8


@pytest.mark.parametrize(("extra", "reason"), [
    ([], "the question is empty and no entity was given"),
    (["--entity", "cup"], "the question is empty"),
    (["--entity", "dog"], None),
])
def test_the_text_skip_line_gives_the_warnings_reason(tmp_path: Path, extra: list[str], reason: str | None) -> None:
    Image.fromarray(data.chelsea()[:60, :80]).save(tmp_path / "photo.png")
    question = "" if reason else "What is this camera?"
    res = runner.invoke(app, ["preview", str(tmp_path / "photo.png"), "--question", question, "--no-measure",
                              "--out", str(tmp_path / "s.png"), *extra])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    warnings = [line for line in lines if line.startswith("warning:")]
    skipped = [line for line in lines if "text conditions: skipped" in line]
    if reason is None:  # the entity is not in a non-empty question
        assert skipped == ["8 text conditions: skipped, the entity is not in the question"], res.output
        return
    assert skipped == [f"8 text conditions: skipped, {reason}"], res.output
    assert len(warnings) == 1 and reason in warnings[0] and "word of the question" not in warnings[0], res.output


def _photo(w: int, h: int) -> np.ndarray:
    return np.ascontiguousarray(cv2.resize(data.chelsea(), (w, h), interpolation=cv2.INTER_LINEAR))


@pytest.mark.slow
def test_scaled_thumbnails_are_the_full_size_variants_scaled(tmp_path: Path) -> None:
    # 600x400 in 240x180 cells: every thumbnail is its full-size variant scaled by the clean image's
    # factor min(240/600, 180/400) = 0.4 with INTER_AREA (computed here from corrupt_image, not the sheet
    # code), so a variant made from a downscaled copy, or scaled by its own factor, is not found.
    from snapbench.corruptions import corrupt_image

    img = _photo(600, 400)
    Image.fromarray(img).save(tmp_path / "photo.png")
    res = runner.invoke(app, ["preview", str(tmp_path / "photo.png"), "--id", "q3", "--seed", "2",
                              "--out", str(tmp_path / "s.png")])
    assert res.exit_code == 0, res.output
    sheet = _read_rgb(tmp_path / "s.png")

    def thumb(a: np.ndarray) -> np.ndarray:
        h, w = a.shape[:2]
        return cv2.resize(a, (max(1, round(w * 0.4)), max(1, round(h * 0.4))), interpolation=cv2.INTER_AREA)

    assert _contains(sheet, thumb(img))
    for op, sev in (("scribble", 2), ("cropping", 2), ("motion_blur", 3), ("lens_distortion", 1), ("downscale", 1)):
        variant = corrupt_image(img, op, sev, seed=2, key="q3")
        assert _contains(sheet, thumb(variant)), (op, sev)
    assert not _contains(sheet, thumb(corrupt_image(img, "scribble", 2, seed=2, key="other")))


@pytest.mark.slow
def test_preview_memory_is_a_few_image_sizes_not_one_per_variant(tmp_path: Path) -> None:
    # The 45 variants are made one at a time and each becomes its thumbnail before the next is made:
    # the traced peak of a preview (numpy buffers are traced) stays a few sizes of the image, while
    # holding every full-size variant (the old behaviour) peaked at ~46 sizes here.
    import tracemalloc

    img = _photo(1500, 1000)
    Image.fromarray(img).save(tmp_path / "photo.png")
    args = ["preview", str(tmp_path / "photo.png"), "--question", "What cat is this?", "--entity", "cat"]
    # the same command once first: the operators' own bounded caches (lens maps, scratch arrays) are
    # filled then, so the second run's peak is the preview's working set
    assert runner.invoke(app, [*args, "--out", str(tmp_path / "warm.png")]).exit_code == 0
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        res = runner.invoke(app, [*args, "--out", str(tmp_path / "s.png")])
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert res.exit_code == 0, res.output
    assert peak < 16 * img.nbytes, f"peak {peak / img.nbytes:.1f} image sizes"
