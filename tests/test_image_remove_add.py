"""REMOVE (cropping, downscale) and ADD (watermark, mosaic, scribble, ui_elements) operators.

Expected values come from hand arithmetic, from PIL / OpenCV used as independent references, or
from geometry recomputed here (distance to a stroke, band heights); never from the operators.
"""

import json
import math
import os
import subprocess
import sys

import cv2
import numpy as np
import pytest
from PIL import Image
from skimage import data

from snapbench.corruptions.image import (
    DEFAULT_GRID,
    corrupt_image,
    corrupt_image_with_params,
    get_image_operator,
)
from snapbench.corruptions.image.add import ui_regions

REMOVE = ("cropping", "downscale")
ADD = ("watermark", "mosaic", "scribble", "ui_elements")
OPS = REMOVE + ADD


def _small(img: np.ndarray, w: int, h: int) -> np.ndarray:
    return np.ascontiguousarray(cv2.resize(img, (w, h), interpolation=cv2.INTER_AREA))


@pytest.fixture(scope="module")
def photos() -> dict[str, np.ndarray]:
    # real photos, small enough that the whole file runs in a few seconds
    return {
        "astronaut": _small(data.astronaut(), 256, 192),
        "coffee": _small(data.coffee(), 240, 160),
        "chelsea": _small(data.chelsea(), 225, 150),
    }


def _changed(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.any(a != b, axis=2)


def _plain_json(x) -> bool:
    """True if x is made only of plain Python JSON types (no numpy scalars, which subclass float)."""
    if type(x) in (str, int, float, bool, type(None)):
        return True
    if type(x) is list:
        return all(_plain_json(v) for v in x)
    if type(x) is dict:
        return all(type(k) is str and _plain_json(v) for k, v in x.items())
    return False


# --- registration and shapes ----------------------------------------------------------------------


def test_registered_with_primitive_and_size_flag():
    for name in REMOVE:
        op = get_image_operator(name)
        assert (op.primitive, op.changes_size) == ("remove", True)
    for name in ADD:
        op = get_image_operator(name)
        assert (op.primitive, op.changes_size) == ("add", False)


def test_output_sizes_at_1024x768_match_hand_arithmetic():
    img = np.zeros((768, 1024, 3), np.uint8)
    # keep 0.90/0.65/0.40 and scale 0.20/0.10/0.04 of 1024 x 768, rounded half up by hand
    expected = {
        "cropping": {1: (691, 922), 2: (499, 666), 3: (307, 410)},
        "downscale": {1: (154, 205), 2: (77, 102), 3: (31, 41)},
    }
    for op, sizes in expected.items():
        for s, hw in sizes.items():
            out = corrupt_image(img, op, s, seed=1, key="q")
            assert out.shape == (*hw, 3) and out.dtype == np.uint8, (op, s)


def test_output_shapes_on_photos(photos):
    for img in photos.values():
        H, W = img.shape[:2]
        for s in (1, 2, 3):
            keep = DEFAULT_GRID["cropping"][s]["keep"]
            scale = DEFAULT_GRID["downscale"][s]["scale"]
            side = lambda n, f: max(1, math.floor(n * f + 0.5))  # noqa: E731
            assert corrupt_image(img, "cropping", s, key="k").shape == (side(H, keep), side(W, keep), 3)
            assert corrupt_image(img, "downscale", s, key="k").shape == (side(H, scale), side(W, scale), 3)
            for op in ADD:
                out = corrupt_image(img, op, s, key="k")
                assert out.shape == img.shape and out.dtype == np.uint8, (op, s)


# --- cropping -------------------------------------------------------------------------------------


def test_crop_is_the_input_window_found_by_template_matching(photos):
    img = photos["astronaut"]
    for s in (1, 2, 3):
        for key in ("a", "b"):
            r = corrupt_image_with_params(img, "cropping", s, seed=3, key=key)
            p = r.params
            assert np.array_equal(r.image, img[p["top"] : p["top"] + p["height"], p["left"] : p["left"] + p["width"]])
            # second path: where in the original does the output sit?
            score = cv2.matchTemplate(img, r.image, cv2.TM_SQDIFF)
            y, x = np.unravel_index(np.argmin(score), score.shape)
            # (float32 FFT correlation: "zero" is zero up to rounding of sums ~1e8)
            assert (y, x) == (p["top"], p["left"]) and score[y, x] < 1e-5 * score.mean()


def test_crop_offsets_cover_the_frame():
    img = np.zeros((400, 400, 3), np.uint8)
    tops = {corrupt_image_with_params(img, "cropping", 3, seed=sd, key="k").params["top"] for sd in range(40)}
    # keep 0.40 leaves 241 possible offsets; 40 seeds should spread over much of them
    assert len(tops) > 25 and min(tops) < 60 and max(tops) > 180


def test_crop_params_for_another_size_are_rejected(photos):
    img = photos["coffee"]
    p = corrupt_image_with_params(np.zeros((500, 500, 3), np.uint8), "cropping", 1, key="k").params
    with pytest.raises(ValueError, match="does not fit"):
        get_image_operator("cropping").apply(img, p)
    with pytest.raises(ValueError, match="keep"):
        corrupt_image(img, "cropping", 1, grid={"cropping": {1: {"keep": 1.5}}})


# --- downscale ------------------------------------------------------------------------------------


def test_downscale_matches_pil_box_and_lanczos():
    img = np.ascontiguousarray(data.astronaut())  # 512x512, full resolution
    for s in (1, 2, 3):
        out = corrupt_image(img, "downscale", s).astype(float)
        h, w = out.shape[:2]
        box = np.asarray(Image.fromarray(img).resize((w, h), Image.Resampling.BOX), float)
        lanczos = np.asarray(Image.fromarray(img).resize((w, h), Image.Resampling.LANCZOS), float)
        nearest = img[:: img.shape[0] // h, :: img.shape[1] // w][:h, :w].astype(float)
        assert np.abs(out - box).mean() < 1.5, s
        assert np.abs(out - lanczos).mean() < 6.0, s
        # area averaging, not point sampling: far closer to BOX than naive decimation is
        assert np.abs(out - box).mean() < 0.5 * np.abs(nearest - box).mean(), s


# --- determinism and parameters -------------------------------------------------------------------


def test_same_seed_same_bytes_and_params_reproduce(photos):
    img = photos["coffee"]
    for op in OPS:
        for s in (1, 2, 3):
            a = corrupt_image_with_params(img, op, s, seed=7, key="q12")
            b = corrupt_image_with_params(img.copy(), op, s, seed=7, key="q12")
            assert a.image.tobytes() == b.image.tobytes() and a.params == b.params, (op, s)
            assert _plain_json(a.params), (op, s, a.params)
            params = json.loads(json.dumps(a.params))  # as read back from a manifest
            again = get_image_operator(op).apply(img, params)
            assert np.array_equal(again, a.image), (op, s)
            assert np.array_equal(img, photos["coffee"])  # input untouched


def test_bytes_identical_in_a_fresh_process(photos):
    img = photos["chelsea"]
    digest = lambda arrs: __import__("hashlib").sha256(b"".join(a.tobytes() for a in arrs)).hexdigest()  # noqa: E731
    here = digest([corrupt_image(img, op, s, seed=5, key="x") for op in OPS for s in (1, 2, 3)])
    code = (
        "import hashlib, sys, numpy as np\n"
        "from snapbench.corruptions.image import corrupt_image\n"
        "img = np.load(sys.argv[1])\n"
        f"ops = {OPS!r}\n"
        "print(hashlib.sha256(b''.join(corrupt_image(img, o, s, seed=5, key='x').tobytes()"
        " for o in ops for s in (1, 2, 3))).hexdigest())\n"
    )
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"snapbench_ra_{os.getpid()}.npy")
    np.save(path, img)
    try:
        env = {**os.environ, "PYTHONHASHSEED": "123"}
        out = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True, env=env, check=True)
    finally:
        os.remove(path)
    assert out.stdout.strip() == here


@pytest.mark.parametrize(
    "op, placement",
    [("cropping", ("top", "left")), ("mosaic", ("boxes",)), ("scribble", ("paths",)), ("watermark", ("positions",))],
)
def test_seed_and_key_move_the_placement(photos, op, placement):
    img = photos["astronaut"]

    def where(**kw):
        r = corrupt_image_with_params(img, op, 2, **kw)
        return json.dumps([r.params[k] for k in placement]), r.image.tobytes()

    base = where(seed=0, key="q1")
    for other in (where(seed=1, key="q1"), where(seed=0, key="q2")):
        assert other[0] != base[0] and other[1] != base[1]


# --- add operators: coverage grows with severity, nothing outside the overlay changes ------------


def test_changed_fraction_grows_with_severity(photos):
    for name, img in photos.items():
        for op in ADD:
            fr = [
                np.mean([_changed(img, corrupt_image(img, op, s, seed=0, key=k)).mean() for k in ("a", "b", "c")])
                for s in (1, 2, 3)
            ]
            assert 0 < fr[0] < fr[1] < fr[2], (name, op, fr)


def test_watermark_text_size_opacity_and_tiles():
    img = _small(data.astronaut(), 640, 480)
    H, W = img.shape[:2]
    single = corrupt_image_with_params(img, "watermark", 1, seed=2, key="w")
    ys, xs = np.nonzero(_changed(img, single.image))
    # one word about 16% of the width, centred in the middle half
    assert 0.13 * W < xs.max() - xs.min() + 1 < 0.21 * W
    assert W / 4 - 2 <= (xs.max() + xs.min()) / 2 <= 3 * W / 4 + 2
    assert H / 4 - 2 <= (ys.max() + ys.min()) / 2 <= 3 * H / 4 + 2
    for s in (1, 2, 3):
        r = corrupt_image_with_params(img, "watermark", s, seed=2, key="w")
        opacity = DEFAULT_GRID["watermark"][s]["opacity"]
        diff = np.abs(r.image.astype(int) - img)
        # a pixel moves at most alpha/255 of the way to the text colour, alpha <= opacity
        assert diff.max() <= opacity + 1
        assert diff.max() >= 0.6 * opacity  # and fully inked pixels get close to that
        th, tw = r.params["tile_size"]
        inside = np.zeros((H, W), bool)
        for top, left in r.params["positions"]:
            inside[max(top, 0) : max(top + th, 0), max(left, 0) : max(left + tw, 0)] = True
        assert not _changed(img, r.image)[~inside].any(), s
    centre = corrupt_image(img, "watermark", 2, seed=2, key="w")
    ys, xs = np.nonzero(_changed(img, centre))
    assert ys.min() >= H // 4 and ys.max() < H // 4 + H // 2 and xs.min() >= W // 4 and xs.max() < W // 4 + W // 2
    full = corrupt_image(img, "watermark", 3, seed=2, key="w")
    ys, xs = np.nonzero(_changed(img, full))
    assert ys.min() < H / 8 and ys.max() > 7 * H / 8 and xs.min() < W / 8 and xs.max() > 7 * W / 8


def test_mosaic_cells_are_constant_means_inside_the_boxes(photos):
    for name, img in photos.items():
        for s in (1, 2, 3):
            r = corrupt_image_with_params(img, "mosaic", s, seed=4, key=name)
            cell, boxes = r.params["cell"], r.params["boxes"]
            bh, bw = boxes[0][2], boxes[0][3]
            assert min(bh, bw) // cell >= 2  # at least 2x2 cells even on small images
            inside = np.zeros(img.shape[:2], bool)
            for t, l, h, w in boxes:
                inside[t : t + h, l : l + w] = True
            assert not _changed(img, r.image)[~inside].any()
            # the last box is drawn last, so all of its cells must be flat and equal the mean of the
            # pixels they replaced, where no earlier box overlapped them
            t, l, h, w = boxes[-1]
            earlier = np.zeros(img.shape[:2], bool)
            for t2, l2, h2, w2 in boxes[:-1]:
                earlier[t2 : t2 + h2, l2 : l2 + w2] = True
            for y in range(t, t + h, cell):
                for x in range(l, l + w, cell):
                    c = r.image[y : min(y + cell, t + h), x : min(x + cell, l + w)].reshape(-1, 3)
                    assert (c == c[0]).all(), (name, s, y, x)
                    if not earlier[y : y + cell, x : x + cell].any():
                        src = img[y : min(y + cell, t + h), x : min(x + cell, l + w)].reshape(-1, 3)
                        assert np.abs(c[0].astype(float) - src.mean(axis=0)).max() <= 1.0


def test_mosaic_blocks_do_not_overlap_when_they_fit():
    img = np.zeros((300, 400, 3), np.uint8)
    for sd in range(10):
        boxes = corrupt_image_with_params(img, "mosaic", 2, seed=sd, key="m").params["boxes"]
        (t1, l1, h, w), (t2, l2, _, _) = boxes
        assert h == 105 and w == 140  # 0.35 * 300, 0.35 * 400
        assert t1 + h <= t2 or t2 + h <= t1 or l1 + w <= l2 or l2 + w <= l1, boxes


def test_scribble_only_touches_pixels_near_its_strokes(photos):
    img = photos["coffee"]
    for s in (1, 2, 3):
        r = corrupt_image_with_params(img, "scribble", s, seed=9, key="s")
        p = r.params
        assert len(p["paths"]) == DEFAULT_GRID["scribble"][s]["strokes"]
        # second path: a 1-px centre line and a distance transform instead of thick AA drawing
        centre = np.full(img.shape[:2], 255, np.uint8)
        for path in p["paths"]:
            cv2.polylines(centre, [np.asarray(path["points"], np.int32)], False, 0, 1, cv2.LINE_8)
        dist = cv2.distanceTransform(centre, cv2.DIST_L2, cv2.DIST_MASK_PRECISE)
        changed = _changed(img, r.image)
        # OpenCV's anti-aliased thick lines reach up to ~2.5 px past half the thickness
        assert dist[changed].max() <= p["thickness"] / 2 + 2.5, s
        assert changed[centre == 0].mean() > 0.9  # and the strokes are really drawn along those lines
        # colours come from a small set of pen colours, drawn from the seed
        assert all(len(path["color"]) == 3 for path in p["paths"])


def test_ui_elements_stay_in_their_bars(photos):
    img = photos["astronaut"]
    H, W = img.shape[:2]
    status = math.floor(0.05 * H + 0.5)
    nav = math.floor(0.08 * H + 0.5)
    address = math.floor(0.07 * H + 0.5)
    rows = np.arange(H)[:, None]
    cols = np.arange(W)[None, :]
    expected_zone = {
        1: rows < status,
        2: (rows < status) | (rows >= H - nav),
    }
    for s in (1, 2, 3):
        r = corrupt_image_with_params(img, "ui_elements", s, seed=1, key="u")
        changed = _changed(img, r.image)
        if s < 3:
            zone = np.broadcast_to(expected_zone[s], (H, W))
        else:
            cy, cx, rad = r.params["button"]
            assert cy + rad < H - nav and cx + rad < W  # above the navigation bar, inside the frame
            zone = (rows < status + address) | (rows >= H - nav)
            zone = zone | ((rows - cy) ** 2 + (cols - cx) ** 2 <= (rad + max(1, rad // 8) + 2) ** 2)
        assert not changed[~zone].any(), s
        reported = np.zeros((H, W), bool)
        for t, l, h, w in ui_regions((H, W), r.params):
            reported[max(t, 0) : t + h, max(l, 0) : l + w] = True
        assert not changed[~reported].any(), s
        assert changed[:status].mean() > 0.9  # the status bar is drawn over the full width
        if s >= 2:
            assert changed[H - nav :].mean() > 0.9


# --- edge cases -----------------------------------------------------------------------------------


@pytest.mark.parametrize("hw", [(1, 1), (2, 3), (8, 8), (5, 40)])
def test_tiny_images_do_not_crash(hw):
    img = np.random.default_rng(0).integers(0, 256, (*hw, 3), dtype=np.uint8)
    for op in OPS:
        for s in (1, 2, 3):
            out = corrupt_image(img, op, s, seed=0, key="t")
            assert out.dtype == np.uint8 and out.ndim == 3 and out.shape[2] == 3
            if op in ADD:
                assert out.shape == img.shape
            else:
                assert 1 <= out.shape[0] <= hw[0] and 1 <= out.shape[1] <= hw[1]
    assert corrupt_image(np.zeros((1, 1, 3), np.uint8), "downscale", 3).shape == (1, 1, 3)


@pytest.mark.parametrize(
    "op, typo",
    [("cropping", "kep"), ("downscale", "scal"), ("watermark", "opacty"), ("mosaic", "block"),
     ("scribble", "stroke"), ("ui_elements", "navbar")],
)
def test_unknown_grid_key_is_rejected_not_ignored(op, typo):
    # A typo in a grid override (e.g. {"mosaic": {"s2": {"block": 3}}}) must not silently run the
    # default level: the operator names the key, as the degrade/transform operators do.
    img = np.zeros((64, 80, 3), np.uint8)
    level = {**DEFAULT_GRID[op][2], typo: 3}
    with pytest.raises(ValueError, match=rf"{op}.*unknown parameter.*'{typo}'"):
        corrupt_image(img, op, 2, grid={op: {2: level}})
