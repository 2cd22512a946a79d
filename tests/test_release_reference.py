"""bench/release_reference.py (the release's 15 functions, transcribed as the speed reference of
bench/bench_corruptions.py) reproduces the strength measured from the release's own generator
(tests/data/release_strength.json) on every condition without randomness: the ratios the benchmark
reports are against the release's real work, not against a slower or faster stand-in."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image
from skimage import data


def _bench_script(name: str):
    """A script of bench/ as a module (bench/ is not a package, and sys.path is left alone)."""
    spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parents[1] / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


release_reference = _bench_script("release_reference")

RELEASE = json.loads((Path(__file__).parent / "data" / "release_strength.json").read_text())
RANDOM = ("cropping", "mosaic", "scribble", "low_light")  # placement or noise drawn: not comparable draw for draw


@pytest.fixture(scope="module")
def photos() -> list[np.ndarray]:
    w, h = RELEASE["size"]
    out = []
    for name in RELEASE["images"]:
        img = getattr(data, name)()
        img = img if img.ndim == 3 else np.dstack([img] * 3)
        out.append(np.ascontiguousarray(cv2.resize(img[..., :3], (w, h), interpolation=cv2.INTER_AREA)))
    return out


@pytest.mark.parametrize("cond", [c for c in RELEASE["figures"] if c.split("/")[0] not in RANDOM])
def test_transcription_has_the_release_strength(photos, cond):
    op, s = cond.split("/")
    if op == "ui_elements" and release_reference._font_file("DejaVuSans.ttf").endswith("Bold.ttf"):  # noqa: SLF001
        pytest.skip("the release's regular DejaVu Sans is not installed here (the bold one stands in)")
    psnr = []
    for img in photos:
        out = np.asarray(release_reference.perturb(Image.fromarray(img), op, int(s[1:])))
        if out.shape != img.shape:
            out = cv2.resize(out, img.shape[1::-1], interpolation=cv2.INTER_AREA)
        psnr.append(10 * math.log10(255.0**2 / float(np.mean((out.astype(np.float64) - img) ** 2))))
    assert float(np.mean(psnr)) == pytest.approx(RELEASE["figures"][cond]["psnr"], abs=0.01)


def test_every_release_function_is_transcribed():
    assert sorted(release_reference.OPERATORS) == sorted({c.split("/")[0] for c in RELEASE["figures"]})
