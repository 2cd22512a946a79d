"""REMOVE (cropping, downscale) and ADD (watermark, mosaic, scribble, ui_elements) operators.

Expected values come from hand arithmetic, from PIL / OpenCV used as independent references, or
from geometry recomputed here (distance to a stroke, band heights); never from the operators.
"""

import hashlib
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import PIL
import PIL.features
import pytest
from PIL import Image, ImageFont
from skimage import data

import snapbench
from snapbench.corruptions.image import (
    DEFAULT_GRID,
    corrupt_image,
    corrupt_image_with_params,
    get_image_operator,
)
from snapbench.corruptions.image.add import renderer_versions

REMOVE = ("cropping", "downscale")
FONT = str(Path(snapbench.__file__).parent / "assets" / "fonts" / "DejaVuSans-Bold.ttf")
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


@pytest.mark.slow
def test_bytes_identical_in_a_fresh_process(photos):
    # a small photo for every operator, and a 640x480 one where text renders at a realistic size
    imgs = [photos["chelsea"], _small(data.coffee(), 640, 480)]
    ops = [(op, img_i) for op in OPS for img_i in range(len(imgs)) if img_i == 0 or op in ADD]
    digest = lambda arrs: __import__("hashlib").sha256(b"".join(a.tobytes() for a in arrs)).hexdigest()  # noqa: E731
    here = digest([corrupt_image(imgs[i], op, s, seed=5, key="x") for op, i in ops for s in (1, 2, 3)])
    code = (
        "import hashlib, sys, numpy as np\n"
        "from snapbench.corruptions.image import corrupt_image\n"
        "imgs = [np.load(p) for p in sys.argv[1:]]\n"
        f"ops = {ops!r}\n"
        "print(hashlib.sha256(b''.join(corrupt_image(imgs[i], o, s, seed=5, key='x').tobytes()"
        " for o, i in ops for s in (1, 2, 3))).hexdigest())\n"
    )
    paths = [os.path.join(os.environ.get("TMPDIR", "/tmp"), f"snapbench_ra_{os.getpid()}_{i}.npy") for i in range(2)]
    for path, img in zip(paths, imgs):
        np.save(path, img)
    try:
        env = {**os.environ, "PYTHONHASHSEED": "123"}
        out = subprocess.run([sys.executable, "-c", code, *paths], capture_output=True, text=True, env=env, check=True)
    finally:
        for path in paths:
            os.remove(path)
    assert out.stdout.strip() == here


def test_repeated_calls_do_not_share_state(photos):
    # Text masks and UI layers are cached per size: a call on another size in between, or a caller
    # writing into an output, must not change the next output.
    a, b = photos["astronaut"], photos["coffee"]
    for op in ADD:
        for s in (1, 2, 3):
            first = corrupt_image(a, op, s, seed=2, key="r")
            expected = first.copy()
            first[...] = 255  # the caller owns its output
            corrupt_image(b, op, s, seed=2, key="r")
            corrupt_image(a, op, 3 if s != 3 else 1, seed=2, key="r")
            assert np.array_equal(corrupt_image(a, op, s, seed=2, key="r"), expected), (op, s)


@pytest.mark.parametrize("op, placement", [("cropping", ("top", "left")), ("mosaic", ("boxes",)), ("scribble", ("paths",))])
def test_seed_and_key_move_the_placement(photos, op, placement):
    img = photos["astronaut"]

    def where(**kw):
        r = corrupt_image_with_params(img, op, 2, **kw)
        return json.dumps([r.params[k] for k in placement]), r.image.tobytes()

    base = where(seed=0, key="q1")
    for other in (where(seed=1, key="q1"), where(seed=0, key="q2")):
        assert other[0] != base[0] and other[1] != base[1]


@pytest.mark.parametrize("op", ["watermark", "ui_elements"])
def test_release_layouts_do_not_depend_on_the_seed(photos, op):
    # the release places its watermark and interface bars by the image size alone
    img = photos["chelsea"]
    for s in (1, 2, 3):
        ref = corrupt_image_with_params(img, op, s, seed=0, key="a")
        for seed, key in ((1, "a"), (0, "b"), (99, "zz")):
            r = corrupt_image_with_params(img, op, s, seed=seed, key=key)
            assert r.params == ref.params and np.array_equal(r.image, ref.image), (op, s)


def test_renderer_versions_name_the_bundled_font():
    v = renderer_versions()
    font = Path(snapbench.__file__).parent / "assets" / "fonts" / v["font"]
    assert v["font"] == "DejaVuSans-Bold.ttf"
    assert v["font_sha256"] == hashlib.sha256(font.read_bytes()).hexdigest()
    assert ImageFont.truetype(str(font), 12).getname() == ("DejaVu Sans", "Bold")
    assert v["pillow"] == PIL.__version__ and v["freetype"] == PIL.features.version("freetype2")
    assert "Bitstream Vera" in (font.parent / "LICENSE-DejaVu.txt").read_text()
    assert json.loads(json.dumps(v)) == v


# --- add operators: coverage grows with severity, nothing outside the overlay changes ------------


def test_changed_fraction_grows_with_severity(photos):
    for name, img in photos.items():
        for op in ADD:
            fr = [
                np.mean([_changed(img, corrupt_image(img, op, s, seed=0, key=k)).mean() for k in ("a", "b", "c")])
                for s in (1, 2, 3)
            ]
            assert 0 < fr[0] < fr[1] < fr[2], (name, op, fr)


def test_watermark_geometry_and_opacity():
    img = _small(data.astronaut(), 640, 480)
    H, W = img.shape[:2]
    size = max(16, int(0.16 * W))  # the em height: 102 px
    ys, xs = np.nonzero(_changed(img, corrupt_image(img, "watermark", 1)))
    # one word from w/4 (plus the S's side bearing), spanning ~0.72 w ...
    assert W / 4 <= xs.min() <= W / 4 + 0.1 * size
    assert 0.66 * W < xs.max() - xs.min() + 1 < 0.78 * W
    # ... its capitals (~0.73 em high) inside the em box whose top is at h/2 - size/2
    assert H / 2 - size / 2 <= ys.min() and ys.max() < H / 2 + size / 2
    assert 0.65 * size < ys.max() - ys.min() + 1 < 0.8 * size
    grey = 180
    for s in (1, 2, 3):
        opacity = DEFAULT_GRID["watermark"][s]["opacity"]
        out = corrupt_image(img, "watermark", s)
        changed = _changed(img, out)
        src, dst = img.astype(int), out.astype(int)
        # every pixel moves toward the grey, at most opacity/255 of the way (+1 for rounding) ...
        assert (np.sign(dst - src) * np.sign(grey - src) >= 0).all()
        assert (np.abs(dst - src) <= opacity * np.abs(grey - src) / 255 + 1).all()
        # ... and inside the letters exactly that far: round((p * (255 - o) + 180 * o) / 255)
        full = np.floor((src * (255 - opacity) + grey * opacity) / 255 + 0.5).astype(int)
        assert np.all(dst == full, axis=2)[changed].mean() > 0.5, s
    rows = np.nonzero(_changed(img, corrupt_image(img, "watermark", 2)).any(axis=1))[0]
    cols = np.nonzero(_changed(img, corrupt_image(img, "watermark", 2)).any(axis=0))[0]
    # rows of words from h/4 (the last row starting above 3h/4), overlapping words across the width
    assert H // 4 <= rows.min() < H // 4 + size // 4 and rows.max() < 3 * H // 4 + size
    assert cols.size > 0.98 * W and cols.min() <= 2 and cols.max() >= W - 3
    full = _changed(img, corrupt_image(img, "watermark", 3))
    assert full.any(axis=1).mean() > 0.7 and full.any(axis=0).all() and full.mean() > 0.6


def _nearest(n_out: int, n_in: int) -> np.ndarray:
    """Source index of each output index when resizing n_in -> n_out by nearest neighbour on pixel
    centres, as Pillow computes it: a float64 position starting at half a step and advanced by
    n_in / n_out per output pixel, truncated (at exact ties the running sum may land just below the
    integer, so this is not always floor((i + 1/2) * n_in / n_out))."""
    step, pos, out = n_in / n_out, n_in / n_out * 0.5, []
    for _ in range(n_out):
        out.append(int(pos))
        pos += step
    return np.array(out)


def test_mosaic_cells_sample_the_cell_centres(photos):
    for name, img in photos.items():
        H, W = img.shape[:2]
        for s in (1, 2, 3):
            level = DEFAULT_GRID["mosaic"][s]
            r = corrupt_image_with_params(img, "mosaic", s, seed=4, key=name)
            boxes = r.params["boxes"]
            bh, bw = min(H, max(80, int(level["frac"] * H))), min(W, max(80, int(level["frac"] * W)))
            assert len(boxes) == level["regions"] and all(b[2:] == [bh, bw] for b in boxes)
            gh, gw = max(1, bh // 42), max(1, bw // 42)
            inside = np.zeros(img.shape[:2], bool)
            for t, l, h, w in boxes:
                inside[t : t + h, l : l + w] = True
            assert not _changed(img, r.image)[~inside].any()
            # The last box is drawn last: reduced to gh x gw samples and enlarged back, each output
            # pixel shows the source pixel at the centre of its cell (where no earlier box overlaps).
            t, l, h, w = boxes[-1]
            earlier = np.zeros(img.shape[:2], bool)
            for t2, l2, h2, w2 in boxes[:-1]:
                earlier[t2 : t2 + h2, l2 : l2 + w2] = True
            sy = _nearest(gh, h)[_nearest(h, gh)]
            sx = _nearest(gw, w)[_nearest(w, gw)]
            expected = img[t + sy][:, l + sx]
            clean = ~earlier[t : t + h, l : l + w] & ~earlier[t + sy][:, l + sx]  # pixel and its sample
            assert np.array_equal(r.image[t : t + h, l : l + w][clean], expected[clean]), (name, s)


def test_mosaic_regions_keep_off_the_centre_and_may_overlap():
    img = np.zeros((300, 400, 3), np.uint8)
    overlaps = 0
    for sd in range(20):
        for s, (h, w) in ((1, (80, 80)), (2, (105, 140)), (3, (165, 220))):  # max(80, frac * side)
            boxes = corrupt_image_with_params(img, "mosaic", s, seed=sd, key="m").params["boxes"]
            assert all(b[2:] == [h, w] for b in boxes)
            if s < 3:  # small regions find a place whose centre is off the middle half
                for t, l, _, _ in boxes:
                    cy, cx = (t + h / 2) / 300, (l + w / 2) / 400
                    assert not (0.25 <= cy <= 0.75 and 0.25 <= cx <= 0.75), (s, boxes)
            else:
                (t1, l1, _, _), (t2, l2, _, _) = boxes[:2]
                overlaps += abs(t1 - t2) < h and abs(l1 - l2) < w
    assert overlaps > 0  # regions are placed independently, as in the release


def test_scribble_only_touches_pixels_near_its_strokes(photos):
    img = photos["coffee"]
    H, W = img.shape[:2]
    pens = {(0, 0, 0), (220, 20, 20), (20, 60, 220), (20, 160, 20), (255, 180, 0)}  # black red blue green amber
    for s in (1, 2, 3):
        r = corrupt_image_with_params(img, "scribble", s, seed=9, key="s")
        p = r.params
        assert len(p["paths"]) == DEFAULT_GRID["scribble"][s]["strokes"]
        assert p["thickness"] == DEFAULT_GRID["scribble"][s]["thickness"]
        for path in p["paths"]:
            pts = np.asarray(path["points"])
            assert tuple(path["color"]) in pens
            assert 5 <= len(pts) <= 11  # a start and 4-10 steps
            assert (pts >= 0).all() and (pts[:, 0] < W).all() and (pts[:, 1] < H).all()
            steps = np.abs(np.diff(pts, axis=0))
            assert (steps[:, 0] <= W // 5).all() and (steps[:, 1] <= H // 5).all()
        # second path: a 1-px centre line and a distance transform instead of thick AA drawing
        centre = np.full(img.shape[:2], 255, np.uint8)
        for path in p["paths"]:
            cv2.polylines(centre, [np.asarray(path["points"], np.int32)], False, 0, 1, cv2.LINE_8)
        dist = cv2.distanceTransform(centre, cv2.DIST_L2, cv2.DIST_MASK_PRECISE)
        changed = _changed(img, r.image)
        # OpenCV's anti-aliased thick lines reach up to ~2.5 px past half the thickness
        assert dist[changed].max() <= p["thickness"] / 2 + 2.5, s
        assert changed[centre == 0].mean() > 0.9  # and the strokes are really drawn along those lines


def _over(img: np.ndarray, rgb, alpha: int) -> np.ndarray:
    """Hand arithmetic: ``rgb`` at ``alpha``/255 over ``img``, rounded half up."""
    return np.floor((img.astype(int) * (255 - alpha) + np.asarray(rgb) * alpha) / 255 + 0.5).astype(int)


def test_ui_elements_bars_and_button():
    img = _small(data.astronaut(), 640, 480)
    H, W = img.shape[:2]
    rows = np.arange(H)[:, None]
    cols = np.arange(W)[None, :]
    nav = int(0.08 * H)
    for s in (1, 2, 3):
        status = int((0.05 if s == 1 else 0.09) * H)
        address = int(0.05 * H) if s == 3 else 0
        r = corrupt_image_with_params(img, "ui_elements", s, seed=1, key="u")
        changed = _changed(img, r.image)
        out = r.image.astype(int)
        # status bar: rows 0..status (Pillow rectangles include both ends), dark at alpha 245
        top = rows <= status + address
        zone = top | (rows >= H - nav) if s >= 2 else top
        if s == 3:  # the floating button: radius 22 around (w - 50, h/2)
            zone = zone | ((rows - H // 2) ** 2 + (cols - (W - 50)) ** 2 <= 23**2)
        assert not changed[~np.broadcast_to(zone, (H, W))].any(), s
        assert changed[: status + 1].mean() > 0.95 and not changed[status + address + 1 : H // 2 - 23].any()
        bar = np.all(out[: status + 1] == _over(img[: status + 1], (30, 30, 30), 245), axis=2)
        assert bar.mean() > 0.9, s  # all but the clock and battery text
        if s >= 2:
            assert np.all(out[H - nav :] == _over(img[H - nav :], (30, 30, 30), 245), axis=2).mean() > 0.9
            assert changed[H - nav :].all() and not changed[H // 2 + 23 : H - nav].any()
        if s == 3:
            band = slice(status + 1, status + address + 1)  # the address bar overlaps the status bar's last row
            assert np.all(out[band] == _over(img[band], (240, 240, 240), 210), axis=2).mean() > 0.8
            cy, cx = H // 2, W - 50
            assert np.array_equal(out[cy - 15 : cy + 16, cx - 15 : cx + 16],
                                  _over(img[cy - 15 : cy + 16, cx - 15 : cx + 16], (66, 133, 244), 200))
        # nothing changes outside the boxes of the drawing list the parameters record (rect and
        # ellipse boxes inclusive; text: the ink box of the bundled font, read here with Pillow)
        reported = np.zeros((H, W), bool)
        for item in r.params["draw"]:
            if "text" in item:
                x, y = item["xy"]
                face = ImageFont.truetype(FONT, item["size"], layout_engine=ImageFont.Layout.BASIC)
                x0, y0, x1, y1 = face.getbbox(item["text"], anchor=item["anchor"])
                box = (x + x0, y + y0, x + x1, y + y1)
            else:
                x0, y0, x1, y1 = item.get("rect") or item["ellipse"]
                box = (x0, y0, x1 + 1, y1 + 1)
            reported[max(box[1], 0) : max(box[3], 0), max(box[0], 0) : max(box[2], 0)] = True
        assert reported.any() and not changed[~reported].any(), s


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


@pytest.mark.parametrize(
    "op, s, change, message",
    [
        ("watermark", 2, {"opacity": 300}, r"'opacity' must be an integer 0\.\.255, got 300"),
        ("watermark", 2, {"layout": "diagonal"}, r"layout must be one of single, tiled_center, tiled_full, got 'diagonal'"),
        ("watermark", 2, {"text": ""}, r"text must be a non-empty printable string"),
        ("watermark", 2, {"size_frac": 0}, r"'size_frac' must be in \(0, 1\], got 0"),
        ("watermark", 2, {"step_frac": None}, r"'step_frac' must be a fraction"),
        ("watermark", 1, {"step_frac": 0.3}, r"step_frac applies to the tiled layouts only"),
        ("watermark", 2, {"color": [1, 2]}, r"'color' must be three integers 0-255"),
        ("watermark", 3, {"step_frac": 0.001}, r"tiles \d+ words on a 80x64 image \(at most 10000\)"),
        ("mosaic", 2, {"frac": 1.5}, r"'frac' must be in \(0, 1\], got 1\.5"),
        ("mosaic", 2, {"regions": -1}, r"'regions' must be an integer 0\.\.1000, got -1"),
        ("mosaic", 2, {"cell": 0}, r"'cell' must be an integer >= 1, got 0"),
        ("mosaic", 2, {"tries": 2.5}, r"'tries' must be an integer"),
        ("scribble", 2, {"thickness": 0}, r"'thickness' must be an integer 1\.\.1000, got 0"),
        ("scribble", 2, {"strokes": "many"}, r"'strokes' must be an integer"),
        ("ui_elements", 3, {"address_bar": True}, r"'address_bar' is a height .* not a switch"),
        ("ui_elements", 3, {"status_bar": 1.5}, r"'status_bar' must be in \[0, 1\], got 1\.5"),
        ("ui_elements", 3, {"floating_button": "yes"}, r"'floating_button' must be true or false"),
    ],
)
def test_bad_add_parameters_are_rejected(op, s, change, message):
    img = np.zeros((64, 80, 3), np.uint8)
    with pytest.raises(ValueError, match=rf"{op}.*{message}"):
        corrupt_image(img, op, s, grid={op: {s: {**DEFAULT_GRID[op][s], **change}}})


def test_missing_add_parameter_is_named():
    level = {k: v for k, v in DEFAULT_GRID["watermark"][2].items() if k != "step_frac"}
    with pytest.raises(ValueError, match=r"watermark.*lack 'step_frac'"):
        corrupt_image(np.zeros((64, 80, 3), np.uint8), "watermark", 2, grid={"watermark": {2: level}})


def test_overlay_composite_is_pillows_for_every_pixel_and_alpha():
    # ui_elements applies any drawing list: one-pixel-wide rectangles give every alpha 0..255
    # (columns) over every grey level 0..255 (rows); Pillow's alpha_composite of the same layer,
    # built here as an array, is the reference, for colours covering the channel range.
    img = np.repeat(np.arange(256, dtype=np.uint8)[:, None], 256, axis=1)[..., None].repeat(3, axis=2)
    layer = np.zeros((256, 256, 4), np.uint8)
    layer[..., 3] = np.arange(256)[None, :]
    op = get_image_operator("ui_elements")
    for c in range(0, 256, 15):
        rgb = [c, 255 - c, (7 * c + 3) % 256]
        draw = [{"rect": [x, 0, x, 255], "fill": [*rgb, x]} for x in range(256)]
        got = op.apply(img, {"draw": draw})
        layer[..., :3] = rgb
        ref = Image.alpha_composite(Image.fromarray(img).convert("RGBA"), Image.fromarray(layer, "RGBA"))
        assert np.array_equal(got, np.asarray(ref.convert("RGB"))), rgb
