"""Tables operators keep between calls are bounded by bytes (lens_distortion's remap maps,
ui_elements' rendered layers), and evicting them never changes a pixel."""

from __future__ import annotations

import numpy as np
import pytest
from skimage import data as skd

from snapbench.core.conditions import parse_condition
from snapbench.corruptions import corrupt_image, generate_variants, parse_severity_target
from snapbench.corruptions.image import add
from snapbench.corruptions.image._buffers import BytesLRU, array_bytes


def test_bytes_lru_keeps_the_most_recent_entries_within_its_bytes():
    cache = BytesLRU(100)
    made: list[str] = []

    def make(name: str, n: int):
        return lambda: (made.append(name), np.zeros(n, np.uint8))[1]

    assert cache.get("a", make("a", 40)).nbytes == 40
    cache.get("b", make("b", 40))
    cache.get("a", make("a", 40))  # a hit: "a" becomes the most recent
    cache.get("c", make("c", 40))  # 120 > 100: the least recent ("b") goes
    assert made == ["a", "b", "c"] and list(cache.keys()) == ["a", "c"] and cache.nbytes == 80
    cache.get("huge", make("huge", 101))  # larger than the bound: returned, not kept
    assert "huge" not in cache and cache.nbytes == 80
    assert array_bytes((1, np.zeros(3, np.uint16), [np.zeros((2, 2), np.float32)])) == 6 + 16


@pytest.fixture(scope="module")
def photo() -> np.ndarray:
    import cv2

    return np.ascontiguousarray(cv2.resize(skd.astronaut(), (640, 480), interpolation=cv2.INTER_AREA))


def test_ui_layers_are_rendered_once_and_evicting_them_changes_no_pixel(photo, monkeypatch):
    monkeypatch.setattr(add, "UI_LAYERS", BytesLRU(10**12))
    ref = [corrupt_image(photo, "ui_elements", s, seed=0, key="q") for s in (1, 2, 3)]
    assert len(add.UI_LAYERS) == 3
    # a bound below one s3 layer: every call renders afresh
    monkeypatch.setattr(add, "UI_LAYERS", BytesLRU(1))
    for s, want in zip((1, 2, 3), ref):
        assert np.array_equal(corrupt_image(photo, "ui_elements", s, seed=0, key="q"), want)
    assert len(add.UI_LAYERS) == 0


def test_a_severity_target_search_keeps_ui_layers_within_the_bound(photo, monkeypatch):
    target = parse_severity_target("ssim=0.95,0.85,0.75")
    conds = [parse_condition(f"img/ui_elements/s{s}") for s in (1, 2, 3)]

    def variants():
        return [v.image for v in generate_variants(photo, None, key="q", entity=None, seed=0, conditions=conds,
                                                   target=target)]

    monkeypatch.setattr(add, "UI_LAYERS", BytesLRU(10**12))
    unbounded = variants()
    every_layer = add.UI_LAYERS.nbytes
    bound = every_layer // 4
    assert len(add.UI_LAYERS) > 8 and bound > 0  # the search renders many candidates (a count bound of 8 kept the last 8)
    monkeypatch.setattr(add, "UI_LAYERS", BytesLRU(bound))
    bounded = variants()
    assert 0 < add.UI_LAYERS.nbytes <= bound
    assert all(np.array_equal(a, b) for a, b in zip(bounded, unbounded))
