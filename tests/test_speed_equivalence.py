"""The fast paths of issue 19 against the algorithms they replaced.

Operators whose algorithm did not change must give exactly the bytes they gave before:

* against the outputs recorded with the old code (``tests/data/operator_sha256_r1.json``: every
  built-in condition on five images of different sizes, two seeds each), for every operator still at
  revision 1 -- so an operator whose bytes change without a revision bump fails here.  Bytes depend on
  the library versions (OpenCV's warps, FreeType's text), so the outputs are recorded per version set
  (``tests/operator_records.py``, ``tests/data/operator_hashes/``; re-record with
  ``python scripts/record_operator_hashes.py``): exact under recorded versions, and under others the
  difference from the nearest record is measured, bounded and reported -- never skipped;
* against slow reference copies of the old code kept in this file (3-channel warps, lens maps built
  in one float64 pass, the 3-channel box filter, the JPEG round trip without scratch buffers, a numpy
  index gather for the nearest-neighbour resize), over more parameters than the grid's and with the
  per-thread scratch buffers reused across sizes and threads.

``low_light`` changed (revision 2, one noise byte per value instead of a 16-bit quantile): its old
algorithm is kept here too, to bound the difference the change makes, and every degrade / transform /
remove condition is checked against the release's measured strength (the add operators are in
tests/test_add_strength.py).
"""

from __future__ import annotations

import json
import math
import threading
import warnings
from pathlib import Path

import cv2
import numpy as np
import operator_records
import pytest

from snapbench.corruptions import corrupt_image, default_grid, image_operators
from snapbench.corruptions.image import get_image_operator

RELEASE = json.loads((Path(__file__).parent / "data" / "release_strength.json").read_text())


_photo = operator_records.photo


@pytest.fixture(scope="module")
def images() -> dict[str, np.ndarray]:
    # the images the recorded outputs were made from
    return operator_records.images()


def _apply(op: str, img: np.ndarray, **params) -> np.ndarray:
    return get_image_operator(op).apply(img, params)


# --- recorded outputs of the old code -------------------------------------------------------------


def _check_against_records(images, now: dict[str, str]) -> dict | None:
    """The recorded-outputs check under library versions ``now``: exact bytes against the record of
    those versions, or, with none, the difference from the nearest record measured, bounded and
    reported in a warning (never a skip).  Returns the measured difference (None: exact record)."""
    revs = operator_records.revisions()
    got = {k: (operator_records.sha(o), operator_records.fingerprint(o)) for k, o in operator_records.outputs(images)}
    assert len(got) == 5 * 45 * 2
    records = operator_records.load_records()
    exact = [r for r in records if r["versions"] == now and r["fingerprints"] is not None]
    if exact:
        rec = exact[0]
        changed = {k.split("|")[1].split("/")[0] for k, d in rec["hashes"].items() if got[k][0] != d}
        # exactly the operators whose revision went up since the record produce other bytes
        assert changed == {op for op in revs if revs[op] != rec["revisions"][op]}, sorted(changed)
        return None
    rec = operator_records.nearest(records, now)
    moved = operator_records.measure(rec, got, revs)
    too_far = {c: e for c, e in moved["conditions"].items() if e["max_block_mean_diff"] > operator_records.TOLERANCE}
    assert not too_far, f"moved by more than {operator_records.TOLERANCE} grey levels from {rec['name']}: {too_far}"
    warnings.warn(
        f"no recorded operator outputs for {now}; measured against {rec['name']} ({rec['versions']}): "
        f"{len(moved['conditions'])} conditions give other bytes "
        f"({json.dumps(moved['conditions'])}), all within {operator_records.TOLERANCE} grey levels of block "
        f"means; record these versions with: python scripts/record_operator_hashes.py", stacklevel=2)
    return moved


def test_operators_give_the_recorded_bytes(images):
    # runs on any install: exact under recorded library versions, measured and reported under others
    _check_against_records(images, operator_records.versions())


def test_unrecorded_library_versions_are_measured_not_skipped(images):
    now = {**operator_records.versions(), "opencv": "99.0.0"}
    with pytest.warns(UserWarning, match=r"no recorded operator outputs .*record_operator_hashes\.py"):
        moved = _check_against_records(images, now)
    assert moved is not None and moved["versions"]["opencv"] != "99.0.0"


def test_records_of_the_first_versions_keep_the_first_bytes():
    # the record of the first record's library versions, made with today's code, has the revision-1
    # bytes for every operator still at revision 1 and other bytes exactly for those bumped since
    records = operator_records.load_records()
    first = records[0]
    same = [r for r in records[1:] if r["versions"] == first["versions"]]
    assert same, "no record under the first record's versions"
    for rec in same:
        changed = {k.split("|")[1].split("/")[0] for k, d in first["hashes"].items() if rec["hashes"][k] != d}
        assert changed == {op for op, r in rec["revisions"].items() if r > 1} == {"low_light"}


def test_measure_reports_changed_outputs_and_block_mean_difference():
    rec = operator_records.load_records()[-1]
    revs = dict(rec["revisions"])
    got = {k: (d, rec["fingerprints"][k].copy()) for k, d in rec["hashes"].items()}
    keys = [k for k in got if "|rotation/s2|" in k][:2]
    for i, k in enumerate(keys):
        fp = got[k][1]
        fp[3, 4, 1] += 64 * (i + 1)  # block mean up by 1 and 2 grey levels
        got[k] = ("0" * 64, fp)
    k3 = next(k for k in got if "|compression/s1|" in k)
    got[k3] = ("0" * 64, got[k3][1])  # other bytes, same block means
    moved = operator_records.measure(rec, got, revs)
    cond3 = k3.split("|")[1]
    assert moved["conditions"] == {"rotation/s2": {"outputs_changed": 2, "max_block_mean_diff": 2.0},
                                   cond3: {"outputs_changed": 1, "max_block_mean_diff": 0.0}}
    revs["rotation"] += 1  # a bumped operator is not measured: its bytes are meant to change
    assert set(operator_records.measure(rec, got, revs)["conditions"]) == {cond3}


# --- slow copies of the old code ------------------------------------------------------------------

_SHIFT = np.array([[1.0, 0.0, 0.5], [0.0, 1.0, 0.5], [0.0, 0.0, 1.0]])
_UNSHIFT = np.array([[1.0, 0.0, -0.5], [0.0, 1.0, -0.5], [0.0, 0.0, 1.0]])


def old_rotation(image, angle):
    angle %= 360.0
    h, w = image.shape[:2]
    if angle == 0.0:
        return image.copy()
    if angle == 180.0:
        return cv2.flip(image, -1)
    if angle in (90.0, 270.0) and h == w:
        return cv2.rotate(image, cv2.ROTATE_90_COUNTERCLOCKWISE if angle == 90.0 else cv2.ROTATE_90_CLOCKWISE)
    quarter, rest = divmod(angle, 90.0)
    c, s = [(1.0, 0.0), (0.0, 1.0), (-1.0, 0.0), (0.0, -1.0)][int(quarter) % 4] if rest == 0.0 else (
        math.cos(math.radians(angle)), math.sin(math.radians(angle)))
    zoom = max((w * abs(c) + h * abs(s)) / w, (w * abs(s) + h * abs(c)) / h)
    a, b = zoom * c, zoom * s
    cx, cy = w / 2.0, h / 2.0
    m = _UNSHIFT @ np.array([[a, b, (1 - a) * cx - b * cy], [-b, a, b * cx + (1 - a) * cy], [0, 0, 1.0]]) @ _SHIFT
    return cv2.warpAffine(image, m[:2], (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)


def old_perspective(image, d):
    h, w = image.shape[:2]
    short = float(min(h, w))
    dx, dy = d * short, d / 2.0 * short
    src = np.float32([[0, 0], [w, 0], [w, h], [0, h]])
    dst = np.float32([[dx, dy], [w - dx, dy], [w, h], [0, h]])
    p = cv2.getPerspectiveTransform(src, dst).astype(np.float64)
    x0, y0, x1, y1 = dx, dy, w - dx, float(h)
    crop = np.array([[w / (x1 - x0), 0.0, -x0 * w / (x1 - x0)], [0.0, h / (y1 - y0), -y0 * h / (y1 - y0)], [0, 0, 1.0]])
    m = _UNSHIFT @ (crop @ p) @ _SHIFT
    return cv2.warpPerspective(image, m, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)


def _old_source_points(xd, yd, k1):
    r_d = np.hypot(xd, yd)
    ratio = np.ones_like(r_d)
    nz = r_d > 0
    r_u = np.linspace(0.0, 1.0, 8193)
    ratio[nz] = np.interp(r_d[nz], r_u * (1.0 + k1 * r_u * r_u), r_u) / r_d[nz]
    return xd * ratio, yd * ratio


def old_lens(image, k1):
    from snapbench.corruptions.image.transform import lens_crop_scale  # geometry only, unchanged

    h, w = image.shape[:2]
    half_diag = math.hypot(w, h) / 2.0
    s = lens_crop_scale(h, w, k1)
    xd = (np.arange(w) + 0.5 - w / 2.0) / half_diag * s
    yd = (np.arange(h) + 0.5 - h / 2.0) / half_diag * s
    ux, uy = _old_source_points(xd[None, :], yd[:, None], k1)  # the whole frame in one float64 pass
    map_x = (ux * half_diag + w / 2.0 - 0.5).astype(np.float32)
    map_y = (uy * half_diag + h / 2.0 - 0.5).astype(np.float32)
    m1, m2 = cv2.convertMaps(map_x, map_y, cv2.CV_16SC2)
    return cv2.remap(image, m1, m2, interpolation=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)


def old_motion(image, length, angle):
    ksize = (length, 1) if angle == 0 else (1, length)
    return cv2.blur(image, ksize, borderType=cv2.BORDER_REFLECT_101)


def old_compression(image, quality):
    ok, buf = cv2.imencode(".jpg", cv2.cvtColor(image, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, quality])
    return cv2.cvtColor(cv2.imdecode(buf, cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)


def nearest_resize(image, scale):
    # pixel-centre aligned nearest neighbour, down then up: floor((i + 0.5) * src / dst)
    h, w = image.shape[:2]
    sh, sw = max(1, round(h * scale)), max(1, round(w * scale))
    idx = lambda src, dst: ((2 * np.arange(dst) + 1) * src) // (2 * dst)  # noqa: E731
    small = image[np.ix_(idx(h, sh), idx(w, sw))]
    return small[np.ix_(idx(sh, h), idx(sw, w))]


CASES = (
    [("rotation", old_rotation, {"angle": a}) for a in (3, 10, 33.3, 45, 77, 90, 100, 135, 180, 200, 270, 300)]
    + [("perspective", old_perspective, {"d": d}) for d in (0.02, 0.1, 0.2, 0.3)]
    + [("lens_distortion", old_lens, {"k1": k}) for k in (-0.3, -0.2, -0.1, -0.04, 0.1, 0.25)]
    + [("motion_blur", old_motion, {"kernel": n, "angle": a}) for n in (2, 5, 7, 8, 13, 25, 40) for a in (0, 90)]
    + [("compression", old_compression, {"quality": q}) for q in (95, 50, 18, 5)]
    + [("low_resolution", nearest_resize, {"scale": s}) for s in (1.0, 0.5, 0.33, 0.25, 0.08, 0.01)]
)


def _old(fn, img, params):
    if fn is old_motion:
        return fn(img, params["kernel"], params["angle"])
    return fn(img, *params.values())


@pytest.mark.parametrize("op,fn,params", CASES, ids=[f"{c[0]}-{list(c[2].values())}" for c in CASES])
def test_fast_paths_equal_the_old_code(images, op, fn, params):
    # sizes alternate, so the scratch buffers are re-made and reused between calls
    for name in ("astronaut@1024x768", "chelsea@333x517", "coffee@640x480", "noise@37x23", "astronaut@1024x768"):
        img = images[name]
        if op == "perspective" and params["d"] * min(img.shape[:2]) >= img.shape[1] / 2:
            continue
        got = _apply(op, img, **params)
        assert got.flags.c_contiguous and got.dtype == np.uint8
        assert np.array_equal(got, _old(fn, img, params)), (op, params, name)


def test_outputs_never_share_the_scratch_buffers(images):
    img = images["coffee@640x480"]
    ops = [("rotation", {"angle": 10}), ("perspective", {"d": 0.2}), ("lens_distortion", {"k1": -0.2}),
           ("motion_blur", {"kernel": 13, "angle": 0}), ("compression", {"quality": 50}),
           ("low_resolution", {"scale": 0.5})]
    outs = [_apply(op, img, **p) for op, p in ops]
    again = [_apply(op, img, **p) for op, p in ops]  # reuses every scratch buffer
    for i, a in enumerate(outs):
        assert np.array_equal(a, again[i])  # the second round did not write into the first's results
        assert a.base is None or not any(np.shares_memory(a, b) for b in outs[:i] + outs[i + 1:] + again)


def test_threads_get_their_own_scratch_buffers(images):
    # four threads warp images of different sizes at once; each must get the single-thread result
    jobs = [(images[n], a) for n in ("astronaut@1024x768", "chelsea@333x517", "coffee@640x480", "rocket@512x512")
            for a in (10, 45)]
    expected = [old_rotation(img, a) for img, a in jobs]
    results: list[tuple[int, np.ndarray]] = []

    def work(k: int) -> None:
        for _ in range(5):
            for i in range(k, len(jobs), 4):
                results.append((i, _apply("rotation", jobs[i][0], angle=jobs[i][1])))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 5 * len(jobs)
    assert all(np.array_equal(out, expected[i]) for i, out in results)


# --- low_light: the old algorithm, to measure the change --------------------------------------------


def old_low_light(image, brightness, sigma, seed):
    from statistics import NormalDist

    inv = NormalDist().inv_cdf
    table = (sigma * np.array([inv((i + 0.5) / 65536.0) for i in range(0, 65536, 1)])).astype(np.float32)
    raw = np.random.PCG64(seed).random_raw((image.size + 3) // 4)
    u16 = raw.astype("<u8", copy=False).view("<u2")[: image.size]
    noise = np.take(table, u16).reshape(image.shape)
    return cv2.addWeighted(image, brightness, noise, 1.0, 0.0, dtype=cv2.CV_8U)


def _psnr(a: np.ndarray, b: np.ndarray) -> float:
    return 10 * math.log10(255.0**2 / float(np.mean((a.astype(np.float64) - b) ** 2)))


def test_low_light_revision_2_differs_from_revision_1_only_in_the_draw(images):
    # Same parameters, other noise draw: the strength (PSNR vs the clean photo), the mean and the
    # spread of the output around the dimmed photo agree to within what two draws of one
    # distribution do; the documented figures (docs/corruptions.md) come from this comparison.
    grid = default_grid()["low_light"]
    for name in ("astronaut@1024x768", "coffee@640x480", "rocket@512x512"):
        img = images[name]
        for s in (1, 2, 3):
            b, sigma = grid[s]["brightness"], grid[s]["noise_sigma"]
            new = _apply("low_light", img, brightness=b, noise_sigma=sigma, noise_seed=99)
            old = old_low_light(img, b, sigma, 99)
            assert abs(_psnr(img, new) - _psnr(img, old)) < 0.05, (name, s)
            assert abs(new.mean() - old.mean()) < 0.05
            dim = img * b
            assert (new - dim).std() == pytest.approx((old - dim).std(), rel=0.01)
            assert not np.array_equal(new, old)


# --- strength against the release ----------------------------------------------------------------


@pytest.fixture(scope="module")
def release_photos() -> dict[str, np.ndarray]:
    w, h = RELEASE["size"]
    return {n: _photo(n, w, h) for n in RELEASE["images"]}


NON_ADD = [c for c in RELEASE["figures"] if c.split("/")[0] not in ("watermark", "mosaic", "scribble", "ui_elements")]


@pytest.mark.parametrize("cond", NON_ADD)
def test_degrade_transform_remove_within_the_release_strength(release_photos, cond):
    # release_strength.json: mean PSNR within 1.5 dB, changed share within max(3 points, 25 %)
    op, s = cond.split("/")
    ref = RELEASE["figures"][cond]
    seeds = 8 if op == "cropping" else 2
    psnr, changed = [], []
    for img in release_photos.values():
        for seed in range(seeds):
            out = corrupt_image(img, op, int(s[1:]), seed=seed, key="strength")
            if out.shape != img.shape:  # cropping, downscale: back to full size as the release figures
                out = cv2.resize(out, img.shape[1::-1], interpolation=cv2.INTER_AREA)
            psnr.append(_psnr(img, out))
            changed.append(float(np.mean(np.any(out != img, axis=2))))
    assert abs(np.mean(psnr) - ref["psnr"]) <= 1.5, (cond, np.mean(psnr), ref)
    if ref["changed"] is not None:
        assert abs(np.mean(changed) - ref["changed"]) <= max(0.03, 0.25 * ref["changed"]), (cond, np.mean(changed), ref)


# --- memory: no full-frame float64 (or other wide) copies ---------------------------------------------


def test_no_operator_allocates_a_wide_copy_of_the_image(images):
    # A float64 copy of the frame is 8x its bytes, int64 indices 8x, float32 noise 4x.  Traced peak
    # (numpy and OpenCV-returned arrays) of one call, after a warm-up call that fills the caches
    # (lens maps, lookup tables, fonts, scratch buffers): at most the output plus 1.25 image sizes.
    import tracemalloc

    img = images["astronaut@1024x768"]
    grid = default_grid()
    worst = {}
    for op in image_operators():
        for s in sorted(grid[op]):
            corrupt_image(img, op, s, seed=0, key="mem")
            tracemalloc.start()
            try:
                corrupt_image(img, op, s, seed=0, key="mem")
                worst[f"{op}/s{s}"] = tracemalloc.get_traced_memory()[1] / img.nbytes
            finally:
                tracemalloc.stop()
    assert max(worst.values()) <= 2.25, sorted(worst.items(), key=lambda kv: -kv[1])[:5]


def test_lens_maps_are_built_without_full_frame_float64(images):
    import tracemalloc

    from snapbench.corruptions.image import transform

    img = images["astronaut@1024x768"]
    transform.LENS_MAPS.clear()  # force the maps to be built in this call
    tracemalloc.start()
    try:
        _apply("lens_distortion", img, k1=-0.17)
        peak = tracemalloc.get_traced_memory()[1] / img.nbytes
    finally:
        tracemalloc.stop()
    # the cached fixed-point maps are 2 image sizes (6 bytes a pixel), the output 1; float64 maps of
    # the frame would add 2 x 8 / 3 = 5.3 image sizes
    assert peak <= 3.75, peak
