"""DEGRADE and TRANSFORM image operators, checked on real photographs against independent references.

References are second code paths (numpy arithmetic, np.convolve, PIL's JPEG encoder, OpenCV's own
rotate/crop/resize in several steps, exact cv2.GaussianBlur), closed-form geometry (the analytic
edge width of a Gaussian, the radial model read back from a coordinate-encoded image) and noise
statistics -- never values produced by the code under test.
"""

from __future__ import annotations

import io
import json
import math
import subprocess
import sys

import cv2
import numpy as np
import pytest
from PIL import Image
from skimage import data
from skimage.metrics import peak_signal_noise_ratio

from snapbench.corruptions.image import (
    DEFAULT_GRID,
    corrupt_image,
    corrupt_image_with_params,
    get_image_operator,
    merge_grid,
)

DEGRADE = ("low_light", "overexposure", "defocus_blur", "motion_blur", "compression", "low_resolution")
TRANSFORM = ("rotation", "perspective", "lens_distortion")
OPS = DEGRADE + TRANSFORM
H, W = 256, 320


@pytest.fixture(scope="module")
def photos() -> dict[str, np.ndarray]:
    return {
        name: cv2.resize(getattr(data, name)(), (W, H), interpolation=cv2.INTER_AREA)
        for name in ("astronaut", "coffee", "chelsea")
    }


@pytest.fixture(scope="module")
def photo(photos) -> np.ndarray:
    return photos["astronaut"]


def _grid(**override) -> dict:
    return merge_grid(DEFAULT_GRID, override)


def _apply(image: np.ndarray, op: str, **params) -> np.ndarray:
    """Apply one operator with explicit parameters through the public corrupt_image path."""
    return corrupt_image(image, op, 1, grid=_grid(**{op: {"s1": params}}))


# ---------------------------------------------------------------------------------------------
# contract: registry, shapes, determinism, manifests


def test_registered_with_primitive_and_doc():
    for op in OPS:
        info = get_image_operator(op)
        assert info.primitive == ("degrade" if op in DEGRADE else "transform")
        assert info.changes_size is False
        assert info.doc, op


@pytest.mark.parametrize("shape", [(H, W), (37, 53), (53, 37), (7, 5), (1, 1)])
def test_same_size_uint8_rgb(photo, shape):
    image = photo if shape == (H, W) else cv2.resize(photo, shape[::-1], interpolation=cv2.INTER_AREA)
    for op in OPS:
        for sev in (1, 2, 3):
            out = corrupt_image(image, op, sev, seed=3, key="q1")
            assert out.shape == image.shape and out.dtype == np.uint8, (op, sev, shape)
            assert out.flags["C_CONTIGUOUS"]


def test_params_complete_and_json_serialisable(photo):
    for op in OPS:
        for sev in (1, 2, 3):
            res = corrupt_image_with_params(photo, op, sev, seed=1, key="k")
            params = json.loads(json.dumps(res.params))
            for name, value in DEFAULT_GRID[op][sev].items():
                assert params[name] == value, (op, sev, name)
            # apply is a pure function of (image, recorded params): replaying the manifest entry
            # reproduces the output byte for byte.
            again = get_image_operator(op).apply(photo, params)
            assert np.array_equal(again, res.image), (op, sev)
    assert "noise_seed" in corrupt_image_with_params(photo, "low_light", 2).params
    assert corrupt_image_with_params(photo, "motion_blur", 1).params["angle"] == 0.0


def test_seeding(photo):
    for op in OPS:
        a = corrupt_image(photo, op, 2, seed=7, key="q")
        assert np.array_equal(a, corrupt_image(photo, op, 2, seed=7, key="q")), op
        other = corrupt_image(photo, op, 2, seed=8, key="q")
        if op == "low_light":  # the only random operator here
            assert not np.array_equal(a, other)
            assert not np.array_equal(a, corrupt_image(photo, op, 2, seed=7, key="q2"))
        else:
            assert np.array_equal(a, other), op


@pytest.mark.slow
def test_low_light_bytes_identical_in_another_process(photo):
    code = (
        "import sys, hashlib, cv2\n"
        "from skimage import data\n"
        "from snapbench.corruptions.image import corrupt_image\n"
        f"img = cv2.resize(data.astronaut(), ({W}, {H}), interpolation=cv2.INTER_AREA)\n"
        "sys.stdout.write(hashlib.sha256(corrupt_image(img, 'low_light', 3, seed=11, key='abc').tobytes()).hexdigest())\n"
    )
    import hashlib

    here = hashlib.sha256(corrupt_image(photo, "low_light", 3, seed=11, key="abc").tobytes()).hexdigest()
    there = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert there == here


def test_degrade_psnr_falls_strictly_with_severity(photos):
    for name, img in photos.items():
        for op in DEGRADE + ("perspective", "lens_distortion"):
            psnr = [peak_signal_noise_ratio(img, corrupt_image(img, op, s, seed=0, key=name)) for s in (1, 2, 3)]
            assert psnr[0] > psnr[1] > psnr[2], (name, op, psnr)
            assert psnr[0] < 60, (name, op, psnr)  # s1 does change the image


def test_grid_override_changes_the_result(photo):
    default = corrupt_image(photo, "motion_blur", 2)
    longer = corrupt_image(photo, "motion_blur", 2, grid=_grid(motion_blur={"s2": {"kernel": 31}}))
    assert not np.array_equal(default, longer)
    assert np.array_equal(longer, _apply(photo, "motion_blur", kernel=31, angle=0.0))
    # s1 redefined as the s3 parameters gives the s3 result
    assert np.array_equal(
        corrupt_image(photo, "defocus_blur", 1, grid=_grid(defocus_blur={"s1": {"sigma": 10.0}})),
        corrupt_image(photo, "defocus_blur", 3),
    )
    assert np.array_equal(_apply(photo, "rotation", angle=180.0), np.flip(photo, (0, 1)))


@pytest.mark.parametrize(
    "op, params, words",
    [
        ("compression", {"quality": 0}, "quality"),
        ("compression", {"quality": 101}, "quality"),
        ("compression", {"quality": 50.5}, "integer"),
        ("low_resolution", {"scale": 0.0}, "scale"),
        ("low_resolution", {"scale": 1.5}, "scale"),
        ("lens_distortion", {"k1": -0.4}, "k1"),
        ("perspective", {"d": 0.7}, "too strong"),
        ("motion_blur", {"kernel": 0}, "kernel"),
        ("low_light", {"brightness": "dark"}, "number"),
        ("overexposure", {"gain": -1.0}, "gain"),
        ("defocus_blur", {"sigma": float("nan")}, "finite"),
    ],
)
def test_bad_parameters_raise_clear_errors(photo, op, params, words):
    with pytest.raises(ValueError, match=op) as exc:
        _apply(photo, op, **params)
    assert words in str(exc.value)


def test_missing_or_unknown_parameter_is_named(photo):
    with pytest.raises(ValueError, match="compression: missing parameter 'quality'"):
        corrupt_image(photo, "compression", 1, grid={"compression": {1: {}}})
    with pytest.raises(ValueError, match="motion_blur: unknown parameter.*'angel'"):
        corrupt_image(photo, "motion_blur", 1, grid={"motion_blur": {1: {"kernel": 5, "angel": 45}}})


# ---------------------------------------------------------------------------------------------
# low_light and overexposure


def test_overexposure_matches_numpy(photos):
    # every byte value, in rows whose length leaves a tail (OpenCV's scalar path) and in a photo;
    # gains whose products land on halves (0.5, 1.5, 2.5) or near them in float32 (0.7, 0.15)
    every = np.tile(np.arange(256, dtype=np.uint8), 3 * 37)[: 37 * 29 * 3].reshape(37, 29, 3)
    for img in [*photos.values(), every]:
        for gain in (1.4, 2.2, 3.0, 0.5, 0.7, 0.15, 1.5, 2.5, 1.0, 0.0, 1.0 / 3.0):
            expected = np.clip(np.rint(img.astype(np.float64) * gain), 0, 255).astype(np.uint8)
            assert np.array_equal(_apply(img, "overexposure", gain=gain), expected), gain


def test_low_light_without_noise_is_scaling(photo):
    out = _apply(photo, "low_light", brightness=0.4, noise_sigma=0.0)
    assert np.array_equal(out, np.clip(np.rint(photo * 0.4), 0, 255).astype(np.uint8))


def _reference_atoms() -> np.ndarray:
    """The 256 noise values by their definition, from scipy (not from snapbench): the mean of a
    standard normal over each 1/256 quantile bin, scaled to unit variance."""
    from scipy.stats import norm

    edges = norm.ppf(np.arange(257) / 256.0)  # -inf, a_1, ..., a_255, +inf
    atoms = 256.0 * (norm.pdf(edges[:-1]) - norm.pdf(edges[1:]))
    return atoms / np.sqrt(np.mean(atoms**2))


def _reference_low_light(img: np.ndarray, brightness: float, sigma: float, seed: int) -> np.ndarray:
    # byte i of the raw PCG64 stream (64-bit words, little-endian) picks the atom of value i
    raw = np.random.PCG64(seed).random_raw(-(-img.size // 8))
    picks = np.frombuffer(raw.astype("<u8").tobytes(), np.uint8)[: img.size].reshape(img.shape)
    return np.clip(np.rint(img * brightness + sigma * _reference_atoms()[picks]), 0, 255).astype(np.uint8)


def test_low_light_is_scaled_image_plus_its_noise(photos):
    for name, img in photos.items():
        for s in (1, 2, 3):
            res = corrupt_image_with_params(img, "low_light", s, seed=5, key=name)
            p = res.params
            expected = _reference_low_light(img, p["brightness"], p["noise_sigma"], p["noise_seed"])
            assert np.array_equal(res.image, expected), (name, s)
    # an odd number of values (not a multiple of the 8 bytes of a word, nor of the chunk size)
    odd = np.random.default_rng(3).integers(0, 256, (347, 211, 3), dtype=np.uint8)
    got = get_image_operator("low_light").apply(odd, {"brightness": 0.55, "noise_sigma": 7.5, "noise_seed": 2**40 + 17})
    assert np.array_equal(got, _reference_low_light(odd, 0.55, 7.5, 2**40 + 17))


def test_low_light_noise_atoms_are_normal_bin_means():
    from snapbench.corruptions.image.degrade import normal_atoms

    assert np.allclose(normal_atoms(), _reference_atoms(), rtol=0, atol=1e-12)
    a = normal_atoms()
    assert np.all(np.diff(a) > 0) and np.array_equal(a, -a[::-1])  # increasing, exactly symmetric
    assert a.max() == pytest.approx(2.970, abs=1e-3)  # the documented tail


@pytest.mark.parametrize("sigma", [3.0, 10.0, 22.0])
def test_low_light_noise_is_gaussian_with_sigma(sigma):
    gray = np.full((400, 500, 3), 128, np.uint8)
    out = _apply(gray, "low_light", brightness=1.0, noise_sigma=sigma).astype(np.float64) - 128.0
    # Rounding to integers adds variance 1/12.
    assert out.std() == pytest.approx(math.sqrt(sigma**2 + 1 / 12), rel=0.01)
    assert abs(out.mean()) < 0.05
    z = out / sigma
    from statistics import NormalDist

    if sigma >= 10:  # rounding distorts shape statistics of a 3-level-wide distribution
        assert abs(np.mean(z**3)) < 0.02  # skewness
        assert np.mean(z**4) == pytest.approx(3.0, abs=0.08)  # near-Gaussian kurtosis (2.96 before rounding)
        # tails: |out| > c  <=>  |sigma * z| >= c + 0.5 after rounding
        c = round(2 * sigma)
        expected = 2 * (1 - NormalDist().cdf((c + 0.5) / sigma))
        # 256 equiprobable values: each tail can be off the normal's by at most one value (1/256)
        assert np.mean(np.abs(out) > c) == pytest.approx(expected, abs=2 / 256), c
    # the noise stops at the outermost atom, 2.97 sigma (a normal passes it with probability 0.3 %)
    top = np.rint(sigma * _reference_atoms()[-1])
    assert np.abs(out).max() == top and np.mean(np.abs(out) == top) == pytest.approx(2 / 256, rel=0.1)
    # independent across neighbouring pixels and channels
    for a, b in [(out[:, :-1], out[:, 1:]), (out[:-1], out[1:]), (out[..., 0], out[..., 1])]:
        assert abs(np.corrcoef(a.ravel(), b.ravel())[0, 1]) < 0.01


def test_low_light_noise_bytes_are_uniform_and_seeded():
    from snapbench.corruptions.image.degrade import noise_bytes

    b = noise_bytes(np.random.PCG64(123), 1_000_000)
    counts = np.bincount(b, minlength=256)
    from scipy.stats import chisquare

    assert chisquare(counts).pvalue > 1e-4
    # one stream whatever the chunking (the operator draws it in chunks of a multiple of 8)
    bits = np.random.PCG64(123)
    assert np.array_equal(np.concatenate([noise_bytes(bits, 8 * 1000), noise_bytes(bits, 999)]), b[: 8 * 1000 + 999])
    assert not np.array_equal(noise_bytes(np.random.PCG64(124), 1000), b[:1000])


# ---------------------------------------------------------------------------------------------
# blur


def test_defocus_fast_path_close_to_exact_gaussian(photos):
    for name, img in photos.items():
        for sigma in (3.5, 6.0, 10.0):
            exact = cv2.GaussianBlur(img, (0, 0), sigma, borderType=cv2.BORDER_REFLECT_101)
            fast = _apply(img, "defocus_blur", sigma=sigma)
            mae = np.abs(fast.astype(np.float64) - exact).mean()
            assert mae < 1.0, (name, sigma, mae)
    big = cv2.resize(photos["astronaut"], (1024, 768), interpolation=cv2.INTER_CUBIC)
    exact = cv2.GaussianBlur(big, (0, 0), 10.0, borderType=cv2.BORDER_REFLECT_101)
    assert np.abs(_apply(big, "defocus_blur", sigma=10.0).astype(np.float64) - exact).mean() < 1.0


def test_defocus_exact_paths(photo):
    for sigma in (1.0, 2.5):
        assert np.array_equal(_apply(photo, "defocus_blur", sigma=sigma), cv2.GaussianBlur(photo, (0, 0), sigma))
    assert np.array_equal(
        _apply(photo, "defocus_blur", sigma=10.0, exact=True), cv2.GaussianBlur(photo, (0, 0), 10.0)
    )


def _edge_10_90(blurred: np.ndarray) -> tuple[float, float]:
    prof = blurred[32, 100:700, 0].astype(np.float64) / 250.0
    x = np.arange(100, 700)
    return float(np.interp(0.1, prof, x)), float(np.interp(0.9, prof, x))


@pytest.mark.parametrize("sigma", [3.5, 6.0, 10.0, 20.0])
def test_defocus_edge_width_matches_gaussian(sigma):
    # A Gaussian-blurred step rises from 10 % to 90 % over 2 * 1.2816 * sigma pixels (erf closed
    # form); 8-bit rounding biases that measurement by ~1 %, so it is also compared with the exact
    # filter measured the same way.
    step = np.zeros((64, 800, 3), np.uint8)
    step[:, 400:] = 250
    x10, x90 = _edge_10_90(_apply(step, "defocus_blur", sigma=sigma))
    e10, e90 = _edge_10_90(cv2.GaussianBlur(step, (0, 0), sigma))
    assert (x90 - x10) == pytest.approx(2 * 1.2815516 * sigma, rel=0.025)
    assert (x90 - x10) == pytest.approx(e90 - e10, rel=0.012)
    assert (x10 + x90) / 2 == pytest.approx(399.5, abs=0.25)  # not shifted


def test_motion_blur_matches_np_convolve(photo):
    for k in (5, 13, 25):
        out = _apply(photo, "motion_blur", kernel=k, angle=0.0)
        for row in (0, 100, H - 1):
            for ch in range(3):
                line = photo[row, :, ch].astype(np.float64)
                padded = np.pad(line, k // 2, mode="reflect")  # numpy "reflect" == OpenCV reflect-101
                ref = np.rint(np.convolve(padded, np.ones(k) / k, mode="valid"))
                assert np.abs(out[row, :, ch] - ref).max() <= 1, (k, row, ch)


def test_motion_blur_angles(photo):
    vertical = _apply(photo, "motion_blur", kernel=13, angle=90.0)
    transposed = _apply(np.ascontiguousarray(photo.transpose(1, 0, 2)), "motion_blur", kernel=13, angle=0.0)
    assert np.array_equal(vertical, transposed.transpose(1, 0, 2))
    assert np.array_equal(_apply(photo, "motion_blur", kernel=13, angle=180.0), _apply(photo, "motion_blur", kernel=13, angle=0.0))
    # 45 degrees: blur along the diagonal keeps diagonal stripes and smears anti-diagonal ones
    yy, xx = np.mgrid[:128, :128]
    diag = np.where(((xx - yy) // 4) % 2 == 0, 220, 30).astype(np.uint8)  # stripes along x=y
    anti = np.where(((xx + yy) // 4) % 2 == 0, 220, 30).astype(np.uint8)
    rgb = lambda a: np.repeat(a[..., None], 3, axis=2)  # noqa: E731
    # 45 deg counter-clockwise on screen (y down) is the direction (1, -1): along x + y = const.
    keep = _apply(rgb(anti), "motion_blur", kernel=13, angle=45.0)[20:-20, 20:-20, 0].std()
    smear = _apply(rgb(diag), "motion_blur", kernel=13, angle=45.0)[20:-20, 20:-20, 0].std()
    assert keep > 60 and smear < 30, (keep, smear)  # unblurred std is 95
    blurred = _apply(photo, "motion_blur", kernel=13, angle=30.0)
    assert abs(blurred.mean() - photo.mean()) < 1.0  # kernel is normalised


# ---------------------------------------------------------------------------------------------
# compression and low_resolution


def test_compression_keeps_colours():
    for colour in ((255, 0, 0), (0, 0, 255), (0, 255, 0), (250, 200, 20)):
        img = np.zeros((64, 64, 3), np.uint8)
        img[:] = colour
        img[16:48, 16:48] = (255, 255, 255)  # some structure so chroma is really encoded
        out = _apply(img, "compression", quality=50)
        assert np.abs(out[:8, :8].astype(int).mean(axis=(0, 1)) - np.array(colour)).max() < 12, colour


def test_compression_matches_pil_jpeg(photos):
    for img in photos.values():
        for q in (50, 18, 5):
            buf = io.BytesIO()
            Image.fromarray(img).save(buf, format="JPEG", quality=q)
            pil = np.asarray(Image.open(io.BytesIO(buf.getvalue())).convert("RGB"))
            ours = _apply(img, "compression", quality=q)
            assert peak_signal_noise_ratio(img, ours) == pytest.approx(peak_signal_noise_ratio(img, pil), abs=0.5)
            assert np.abs(pil.astype(float) - ours).mean() < 1.0  # same libjpeg tables: ~identical


def _nearest_float_reference(img: np.ndarray, scale: float) -> np.ndarray:
    h, w = img.shape[:2]
    sh, sw = max(1, round(h * scale)), max(1, round(w * scale))

    def idx(src, dst):  # pixel-centre nearest neighbour, written in floating point
        return np.minimum(np.floor((np.arange(dst) + 0.5) * src / dst).astype(int), src - 1)

    small = img[idx(h, sh)][:, idx(w, sw)]
    return small[idx(sh, h)][:, idx(sw, w)]


def test_low_resolution_matches_index_arithmetic(photos):
    for img in list(photos.values()) + [photos["coffee"][:101, :77]]:
        for scale in (0.5, 0.25, 0.08, 0.37, 1.0):
            assert np.array_equal(_apply(img, "low_resolution", scale=scale), _nearest_float_reference(img, scale))


def test_low_resolution_blocks_by_hand(photo):
    # scale 1/4 on 256x320: every 4x4 block is constant and equals the source pixel (4i+2, 4j+2).
    out = _apply(photo, "low_resolution", scale=0.25)
    assert np.array_equal(out, np.repeat(np.repeat(photo[2::4, 2::4], 4, axis=0), 4, axis=1))


# ---------------------------------------------------------------------------------------------
# transforms


def _bright(img: np.ndarray) -> np.ndarray:
    return (img // 2 + 128).astype(np.uint8)


def _corner_means(img: np.ndarray, n: int = 4) -> list[float]:
    return [float(img[sl].mean()) for sl in (np.s_[:n, :n], np.s_[:n, -n:], np.s_[-n:, :n], np.s_[-n:, -n:])]


def test_no_empty_corners_or_margins(photos):
    for img in map(_bright, photos.values()):
        for op, params in [("rotation", {"angle": 10.0}), ("rotation", {"angle": 45.0}), ("rotation", {"angle": 137.0}),
                           ("rotation", {"angle": 90.0}), ("perspective", {"d": 0.1}), ("perspective", {"d": 0.3}),
                           ("lens_distortion", {"k1": -0.1}), ("lens_distortion", {"k1": -0.3}),
                           ("lens_distortion", {"k1": 0.3})]:
            out = _apply(img, op, **params)
            assert min(_corner_means(out)) > 120, (op, params, _corner_means(out))
            # whole margins (first/last rows and columns), not only corners
            assert min(out[0].min(), out[-1].min(), out[:, 0].min(), out[:, -1].min()) >= 120, (op, params)


def test_rotation_exact_quarter_turns(photo):
    assert np.array_equal(_apply(photo, "rotation", angle=180.0), photo[::-1, ::-1])
    assert np.array_equal(_apply(photo, "rotation", angle=-180.0), np.flip(photo, (0, 1)))
    sq = np.ascontiguousarray(photo[:, :H])
    assert np.array_equal(_apply(sq, "rotation", angle=90.0), np.rot90(sq, 1))
    assert np.array_equal(_apply(sq, "rotation", angle=270.0), np.rot90(sq, -1))
    assert np.array_equal(_apply(sq, "rotation", angle=-90.0), np.rot90(sq, -1))
    assert np.array_equal(_apply(photo, "rotation", angle=360.0), photo)
    # the general warp turns the same way as the exact path
    near = _apply(sq, "rotation", angle=90.001)
    assert np.abs(near.astype(float) - np.rot90(sq, 1)).mean() < 2.0


def _min_cover_zoom(h: int, w: int, angle: float) -> float:
    """Smallest zoom whose rotated image covers the frame: bisection on the frame corners."""
    a = math.radians(angle)
    corners = np.array([[-w / 2, -h / 2], [w / 2, -h / 2], [w / 2, h / 2], [-w / 2, h / 2]])
    rot = np.array([[math.cos(a), math.sin(a)], [-math.sin(a), math.cos(a)]])  # screen CCW, y down
    back = corners @ np.linalg.inv(rot).T  # frame corners in the unrotated image's frame
    lo, hi = 1.0, 10.0
    for _ in range(60):
        z = (lo + hi) / 2
        inside = np.all(np.abs(back[:, 0]) / z <= w / 2 + 1e-12) and np.all(np.abs(back[:, 1]) / z <= h / 2 + 1e-12)
        lo, hi = (lo, z) if inside else (z, hi)
    return hi


@pytest.mark.parametrize("angle", [10.0, 45.0, -30.0, 100.0])
def test_rotation_matches_opencv_rotation_matrix(photo, angle):
    zoom = _min_cover_zoom(H, W, angle)
    m = cv2.getRotationMatrix2D(((W - 1) / 2, (H - 1) / 2), angle, zoom)
    ref = cv2.warpAffine(photo, m, (W, H), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    out = _apply(photo, "rotation", angle=angle)
    assert np.abs(out.astype(float) - ref).mean() < 0.5
    # and a zoom only 2 % smaller would leave black corners with a constant border
    m_small = cv2.getRotationMatrix2D(((W - 1) / 2, (H - 1) / 2), angle, zoom * 0.98)
    black = cv2.warpAffine(_bright(photo), m_small, (W, H), borderMode=cv2.BORDER_CONSTANT)
    assert min(_corner_means(black, 2)) < 60


@pytest.mark.parametrize("d", [0.1, 0.2, 0.3])
def test_perspective_matches_warp_crop_resize(photos, d):
    for img in photos.values():
        s = min(H, W)
        src = np.float32([[0, 0], [W, 0], [W, H], [0, H]])
        dst = np.float32([[d * s, d * s / 2], [W - d * s, d * s / 2], [W, H], [0, H]])
        shift = np.array([[1, 0, 0.5], [0, 1, 0.5], [0, 0, 1]])
        m = np.linalg.inv(shift) @ cv2.getPerspectiveTransform(src, dst) @ shift
        warped = cv2.warpPerspective(img, m, (W, H), flags=cv2.INTER_LINEAR)  # black border
        # Landscape frame: the empty border is removed by cutting below the top edge and between
        # the top corners.  Three resamplings here against one in the operator: allow a few levels.
        x0, y0 = d * s, d * s / 2
        crop = warped[int(math.ceil(y0)):, int(math.ceil(x0)): int(math.floor(W - x0))]
        ref = cv2.resize(crop, (W, H), interpolation=cv2.INTER_LINEAR)
        out = _apply(img, "perspective", d=d)
        assert peak_signal_noise_ratio(ref, out) > 24, d
        # the top corners of the output come from the top corners of the input
        assert np.abs(out[:3, :3].astype(float).mean() - img[:3, :3].mean()) < 25


@pytest.mark.parametrize("d", [0.1, 0.3])
def test_perspective_geometry_from_coded_coordinates(d):
    # Each source pixel's coordinates are its colour; the output must show, at every pixel, the
    # source point that the inverse keystone of the (hand-derived) crop point gives.
    n = 256
    yy, xx = np.mgrid[:n, :n]
    coded = np.stack([xx, yy, np.zeros_like(xx)], axis=2).astype(np.uint8)
    out = _apply(coded, "perspective", d=d).astype(np.float64)
    dx, dy = d * n, d * n / 2
    trapezoid = np.float32([[dx, dy], [n - dx, dy], [n, n], [0, n]])
    inverse = cv2.getPerspectiveTransform(trapezoid, np.float32([[0, 0], [n, 0], [n, n], [0, n]]))
    oy, ox = np.mgrid[:n, :n] + 0.5  # output pixel centres, continuous coordinates
    cx, cy = dx + ox * (n - 2 * dx) / n, dy + oy * (n - dy) / n  # the crop [dx, n-dx] x [dy, n]
    pts = cv2.perspectiveTransform(np.stack([cx, cy], -1).reshape(-1, 1, 2), inverse).reshape(n, n, 2)
    err_x, err_y = out[..., 0] + 0.5 - pts[..., 0], out[..., 1] + 0.5 - pts[..., 1]
    inner = np.s_[2:-2, 2:-2]  # edge pixels are clamped to the border
    assert np.abs(err_x[inner]).max() < 1.0 and np.abs(err_y[inner]).max() < 1.0
    assert abs(err_x[inner].mean()) < 0.1 and abs(err_y[inner].mean()) < 0.1


@pytest.mark.parametrize("k1", [-0.1, -0.2, -0.3, 0.2])
def test_lens_distortion_follows_radial_model(k1):
    # Encode each source pixel's coordinates in its colour and read them back after distortion.
    n = 256
    yy, xx = np.mgrid[:n, :n]
    coded = np.stack([xx, yy, np.zeros_like(xx)], axis=2).astype(np.uint8)
    out = _apply(coded, "lens_distortion", k1=k1).astype(np.float64)
    half_diag = math.hypot(n, n) / 2
    s = 1.0 + k1 if k1 < 0 else 1.0  # barrel: corners bind (derived by hand); pincushion: no crop
    oy, ox = np.mgrid[:n, :n]
    dx, dy = (ox + 0.5 - n / 2) / half_diag * s, (oy + 0.5 - n / 2) / half_diag * s  # distorted
    ux, uy = (out[..., 0] + 0.5 - n / 2) / half_diag, (out[..., 1] + 0.5 - n / 2) / half_diag  # source
    r_u, r_d = np.hypot(ux, uy), np.hypot(dx, dy)
    ring = (r_d > 0.2) & (r_d < 0.9 * s)
    predicted = r_u[ring] * (1 + k1 * r_u[ring] ** 2)
    assert np.abs(predicted - r_d[ring]).max() < 1.0 / half_diag  # within a pixel
    # Per axis, against the model inverted by Newton's method: no systematic offset (a half-pixel
    # convention error would show here).
    r = r_d.copy()
    for _ in range(30):
        r -= (r * (1 + k1 * r**2) - r_d) / (1 + 3 * k1 * r**2)
    ratio = np.divide(r, r_d, out=np.ones_like(r), where=r_d > 0)
    for got, want in ((ux, dx * ratio), (uy, dy * ratio)):
        err = (got - want)[ring] * half_diag
        assert np.abs(err).max() < 1.0 and abs(err.mean()) < 0.1, (err.max(), err.mean())
    cos = (ux * dx + uy * dy)[ring] / (r_u * r_d)[ring]
    assert cos.min() > 0.999  # purely radial
    if k1 < 0:  # barrel: source radius grows faster than output radius towards the edge
        assert np.all(r_u[ring] >= r_d[ring] - 1.0 / half_diag)


def test_lens_distortion_barrel_bows_lines_outward():
    # A vertical line right of centre: under barrel distortion its middle moves further out than
    # its ends (it bulges away from the centre).
    img = np.full((240, 320, 3), 255, np.uint8)
    img[:, 250:253] = 0
    rows = (3, 120, 236)
    cols = [int(np.argmin(_apply(img, "lens_distortion", k1=-0.3)[r, :, 0])) for r in rows]
    assert cols[1] > cols[0] + 5 and cols[1] > cols[2] + 5, cols
    # pincushion (k1 > 0) bends it the other way
    cols = [int(np.argmin(_apply(img, "lens_distortion", k1=0.3)[r, :, 0])) for r in rows]
    assert cols[1] < cols[0] - 5 and cols[1] < cols[2] - 5, cols


def test_lens_map_cache_is_bounded_by_bytes(monkeypatch):
    from snapbench.corruptions.image import transform as tr
    from snapbench.corruptions.image._buffers import BytesLRU

    monkeypatch.setattr(tr, "LENS_MAPS", BytesLRU(3 * 64 * 48 * 6))  # room for three 64x48 map pairs
    img = np.random.default_rng(0).integers(0, 256, (48, 64, 3), dtype=np.uint8)
    first = _apply(img, "lens_distortion", k1=-0.1)
    for k1 in (-0.2, -0.3, 0.2, 0.3):
        _apply(img, "lens_distortion", k1=k1)
    assert len(tr.LENS_MAPS) == 3 and tr.LENS_MAPS.nbytes == 3 * 64 * 48 * 6
    assert (48, 64, -0.1) not in tr.LENS_MAPS  # least recently used went first
    assert list(tr.LENS_MAPS.keys()) == [(48, 64, k1) for k1 in (-0.3, 0.2, 0.3)]
    assert np.array_equal(_apply(img, "lens_distortion", k1=-0.1), first)  # recomputed, same pixels
    big = np.zeros((200, 300, 3), dtype=np.uint8)  # one pair larger than the bound: used, not kept
    _apply(big, "lens_distortion", k1=-0.1)
    assert all(key[:2] != (200, 300) for key in tr.LENS_MAPS.keys())


def test_lens_map_cache_is_thread_safe(monkeypatch):
    import sys
    import threading

    from snapbench.corruptions.image import transform as tr
    from snapbench.corruptions.image._buffers import BytesLRU

    monkeypatch.setattr(tr, "LENS_MAPS", BytesLRU(2 * 40 * 30 * 6))  # constant eviction
    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)
    errors: list[BaseException] = []
    ref = {k1: tr._compute_lens_maps(30, 40, k1) for k1 in (-0.1, -0.2, -0.3, 0.2)}

    def work(seed: int) -> None:
        try:
            for i in range(60):
                k1 = (-0.1, -0.2, -0.3, 0.2)[(seed + i) % 4]
                m1, m2 = tr._lens_maps(30, 40, k1)
                assert np.array_equal(m1, ref[k1][0]) and np.array_equal(m2, ref[k1][1])
        except BaseException as exc:  # noqa: BLE001 - collected for the main thread
            errors.append(exc)

    try:
        threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old_interval)
    assert not errors, errors[:3]
    assert len(tr.LENS_MAPS) <= 2 and tr.LENS_MAPS.nbytes == len(tr.LENS_MAPS) * 40 * 30 * 6 <= tr.LENS_MAPS.max_bytes
