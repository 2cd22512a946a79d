"""DEGRADE primitive: signal-quality loss that keeps the scene geometry.

Six operators (SPEC §3): ``low_light``, ``overexposure``, ``defocus_blur``, ``motion_blur``,
``compression``, ``low_resolution``.  Each is one ``apply(image, params)`` registered once
(:func:`~.base.builtin_operator`) with its severity table (right above it), ``sample`` function,
knob, revision and diagnose flag; every operator keeps the input size and returns uint8 RGB.  Only
``low_light`` is random, and its randomness is a noise seed drawn in ``sample`` and recorded in the
parameters, so ``apply`` is a pure function of (image, params).

Every ``sample`` validates a level's parameters, fills in defaults and returns the complete dict
that is applied.
"""

from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist
from typing import Any, Mapping

import cv2
import numpy as np

from ...core.errors import ConfigError
from ._buffers import scratch
from .base import DiagnoseFlag, Knob, builtin_operator, integer, known_keys, level_param, number

__all__ = [
    "low_light",
    "overexposure",
    "defocus_blur",
    "motion_blur",
    "compression",
    "low_resolution",
    "noise_bytes",
    "normal_atoms",
]


def _gain_lut(gain: float) -> np.ndarray:
    return np.clip(np.rint(np.arange(256, dtype=np.float64) * gain), 0, 255).astype(np.uint8)


@lru_cache(maxsize=64)
def _scale_is_exact(gain: float) -> bool:
    """Whether ``cv2.convertScaleAbs(v, alpha=gain)`` equals ``clip(round_half_even(v * gain))`` for
    every v, on OpenCV's vector path (one 256-value row) and on its scalar path (one value at a
    time, what a row's tail takes).  It computes in float32, which can round a product that lies
    on (or within float32 error of) a half the other way; where it never does, it is ~3x faster
    than the 256-entry table."""
    if not 0.0 <= gain <= 2**16:
        return False
    lut = _gain_lut(gain)
    values = np.arange(256, dtype=np.uint8)
    if not np.array_equal(cv2.convertScaleAbs(values[None, :], alpha=gain)[0], lut):
        return False
    return all(int(cv2.convertScaleAbs(values[v : v + 1, None], alpha=gain)[0, 0]) == int(lut[v]) for v in range(256))


def _scale(image: np.ndarray, gain: float) -> np.ndarray:
    """``clip(round_half_even(image * gain), 0, 255)`` as uint8."""
    if _scale_is_exact(float(gain)):
        return cv2.convertScaleAbs(image, alpha=float(gain))
    return cv2.LUT(image, _gain_lut(gain))


# --------------------------------------------------------------------------------------------
# low_light

# Multiply brightness, add per-pixel per-channel Gaussian noise (0-255 units); sample adds noise_seed.
_LOW_LIGHT_LEVELS = {
    1: {"brightness": 0.70, "noise_sigma": 3.0},
    2: {"brightness": 0.40, "noise_sigma": 10.0},
    3: {"brightness": 0.15, "noise_sigma": 22.0},
}

_NOISE_CHUNK = 1 << 17  # image bytes per pass: the index and the lookup stay in the CPU cache


@lru_cache(maxsize=1)
def normal_atoms() -> np.ndarray:
    """The 256 equiprobable values of the low-light noise, in units of sigma (read-only).

    Atom k is the mean of a standard normal over its k-th quantile bin [Φ⁻¹(k/256), Φ⁻¹((k+1)/256)],
    i.e. 256 (φ(a_k) - φ(a_(k+1))); the set is made exactly antisymmetric (mean 0) and rescaled to
    variance 1.  A uniform byte picks one, so the noise has the normal's shape up to |z| ≈ 2.97 (the
    outermost atoms; a normal exceeds that with probability 0.3 %) and its exact standard deviation.
    """
    nd = NormalDist()
    edges = [nd.inv_cdf(k / 256.0) for k in range(128, 256)] + [math.inf]  # 0, a_129, ..., +inf
    dens = np.array([nd.pdf(a) if math.isfinite(a) else 0.0 for a in edges])
    upper = 256.0 * (dens[:-1] - dens[1:])  # atoms 128..255 (positive)
    atoms = np.concatenate([-upper[::-1], upper])
    atoms /= math.sqrt(float(np.mean(atoms * atoms)))
    atoms.setflags(write=False)
    return atoms


@lru_cache(maxsize=16)
def _low_light_table(brightness: float, sigma: float) -> np.ndarray:
    """out[v * 256 + k] = clip(round_half_even(v * brightness + sigma * atom_k), 0, 255) as uint8."""
    value = np.arange(256, dtype=np.float64)[:, None]
    table = np.clip(np.rint(value * brightness + sigma * normal_atoms()[None, :]), 0, 255).astype(np.uint8).reshape(-1)
    table.setflags(write=False)
    return table


def noise_bytes(bits: np.random.BitGenerator, count: int) -> np.ndarray:
    """The next ``count`` uniform bytes of ``bits`` (its raw 64-bit words read little-endian, so the
    same on every platform; numpy guarantees the raw PCG64 stream across versions, unlike the
    Generator's distribution methods).  Whole words are consumed: call with multiples of 8 to
    continue one stream."""
    return bits.random_raw((count + 7) // 8).astype("<u8", copy=False).view(np.uint8)[:count]


def _sample_low_light(rng: np.random.Generator, level: Mapping[str, Any], shape: tuple[int, int]) -> dict[str, Any]:
    known_keys("low_light", level, "brightness", "noise_sigma")
    params = _low_light_params(level)
    # 2**53 keeps the seed exact in any JSON reader (JavaScript numbers are doubles).
    params["noise_seed"] = int(rng.integers(0, 2**53))
    return params


def _low_light_params(params: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "brightness": number("low_light", params, "brightness", lo=0.0),
        "noise_sigma": number("low_light", params, "noise_sigma", lo=0.0),
    }


def _low_light_at(params: Mapping[str, Any], value: float, shape: tuple[int, int]) -> dict[str, Any]:
    # knob update: the noise grows with the darkening, anchored at the level's own (brightness, noise) pair
    b0, n0 = float(params["brightness"]), float(params["noise_sigma"])
    noise = n0 if b0 >= 1.0 else n0 * max(0.0, 1.0 - value) / (1.0 - b0)
    return {**params, "brightness": value, "noise_sigma": n0 if value == b0 else noise}


# Revision 2: noise from one byte per value (normal_atoms) instead of 16-bit quantiles, ~2-3x faster.
# Knob: brightness 0 .. 1; noise_sigma follows in proportion to the darkening 1 - brightness.
@builtin_operator("low_light", levels=_LOW_LIGHT_LEVELS, sample=_sample_low_light,
                  knob=Knob("brightness", 0.0, 1.0, update=_low_light_at), revision=2,
                  diagnose=DiagnoseFlag("low_light", (3,), why="recall 1.00 at s3, 0.10 at s1 and s2"))
def low_light(image: np.ndarray, params: Mapping[str, Any]) -> np.ndarray:
    """Dim the image and add sensor noise: ``clip(round(image * brightness + noise_sigma * z))``.

    ``z`` is independent per pixel and channel: the value at flat position i of the HxWx3 array
    takes byte i of PCG64(``noise_seed``)'s stream (:func:`noise_bytes`) and uses it to pick one of
    the 256 :func:`normal_atoms`.  Brightness, noise and rounding (half to even) are one lookup in
    a 64 KiB table indexed by (pixel value, noise byte), done in cache-sized chunks over uint8 data.
    """
    p = _low_light_params(params)
    if "noise_seed" not in params:
        raise ConfigError("low_light: missing parameter 'noise_seed' (sample() draws it)")
    seed = integer("low_light", params, "noise_seed", lo=0)
    if p["noise_sigma"] == 0.0:
        return _scale(image, p["brightness"])
    table = _low_light_table(p["brightness"], p["noise_sigma"])
    flat = image.reshape(-1)
    out = np.empty_like(flat)
    bits = np.random.PCG64(seed)
    index = np.empty(min(_NOISE_CHUNK, flat.size), np.uint16)
    for start in range(0, flat.size, _NOISE_CHUNK):  # a multiple of 8: one continuous byte stream
        stop = min(start + _NOISE_CHUNK, flat.size)
        ix = index[: stop - start]
        np.left_shift(flat[start:stop], 8, out=ix, dtype=np.uint16)
        np.bitwise_or(ix, noise_bytes(bits, stop - start), out=ix)
        np.take(table, ix, out=out[start:stop])
    return out.reshape(image.shape)


# --------------------------------------------------------------------------------------------
# overexposure

_OVEREXPOSURE_LEVELS = {1: {"gain": 1.4}, 2: {"gain": 2.2}, 3: {"gain": 3.0}}


@builtin_operator("overexposure", levels=_OVEREXPOSURE_LEVELS, sample=level_param("overexposure", "gain", lo=0.0),
                  knob=Knob("gain", 1.0, 16.0, log=True),
                  diagnose=DiagnoseFlag("overexposure", (2, 3), why="recall 0.80 at s2, 0.90 at s3, 0.30 at s1"))
def overexposure(image: np.ndarray, params: Mapping[str, Any]) -> np.ndarray:
    """Multiply by ``gain`` and clip: ``clip(round(image * gain), 0, 255)``, round half to even (one
    256-entry table, or OpenCV's convertScaleAbs where that gives the table's values for every byte)."""
    gain = number("overexposure", params, "gain", lo=0.0)
    return _scale(image, gain)


# --------------------------------------------------------------------------------------------
# defocus_blur

# sigma in pixels; an optional exact=true forces the exact filter
_DEFOCUS_LEVELS = {1: {"sigma": 1.0}, 2: {"sigma": 3.5}, 3: {"sigma": 10.0}}

_EXACT_BELOW_SIGMA = 3.5  # exact Gaussian is cheap enough below this (kernel <= 21 taps)


def _sample_defocus(rng: np.random.Generator, level: Mapping[str, Any], shape: tuple[int, int]) -> dict[str, Any]:
    known_keys("defocus_blur", level, "sigma", "exact")
    params: dict[str, Any] = {"sigma": number("defocus_blur", level, "sigma", lo=0.0)}
    exact = level.get("exact", False)
    if not isinstance(exact, bool):
        raise ConfigError(f"defocus_blur: parameter 'exact' must be true or false, got {exact!r}")
    params["exact"] = exact
    return params


def _gaussian_reduced(image: np.ndarray, sigma: float, factor: int) -> np.ndarray:
    h, w = image.shape[:2]
    sh, sw = max(1, round(h / factor)), max(1, round(w / factor))
    fy, fx = h / sh, w / sw
    small = cv2.resize(image, (sw, sh), interpolation=cv2.INTER_AREA)

    # In full-resolution pixels, area averaging adds a box of f taps (variance (f²-1)/12) and
    # bilinear upsampling, averaged over the f sub-pixel phases, a variance of (2f²+1)/12: together
    # f²/4.  The small image is blurred by what is left, in its own pixel units.
    def residual(f: float) -> float:
        return math.sqrt(max(sigma * sigma - f * f / 4.0, 0.25)) / f

    small = cv2.GaussianBlur(small, (0, 0), sigmaX=residual(fx), sigmaY=residual(fy),
                             borderType=cv2.BORDER_REFLECT_101)
    return cv2.resize(small, (w, h), interpolation=cv2.INTER_LINEAR)


@builtin_operator("defocus_blur", levels=_DEFOCUS_LEVELS, sample=_sample_defocus,
                  knob=Knob("sigma", 0.1, 64.0, log=True),
                  diagnose=DiagnoseFlag("blur", (2, 3), why="recall 1.00 at s2 and s3, 0.20 at s1"))
def defocus_blur(image: np.ndarray, params: Mapping[str, Any]) -> np.ndarray:
    """Gaussian blur with standard deviation ``sigma`` pixels (reflect-101 borders).

    Below sigma 3.5 (and whenever ``exact`` is true) this is ``cv2.GaussianBlur`` itself.  For
    larger sigma a 61-tap kernel costs ~16-25 ms at 1024x768, so the blur is computed at reduced
    resolution: area-downsample by f = 2**floor(log2(sigma / 1.75)) (2 at sigma 3.5, 4 at sigma
    10), Gaussian-blur the small image by the residual sigma sqrt(sigma² - f²/4) / f (the box
    of the downsampling and the bilinear upsampling supply the rest), bilinearly upsample.  A blurred image has no detail left at the scale that is dropped, so the result
    differs from the exact filter by ~0.2-0.5 gray levels mean absolute error on photographs
    (tests/test_image_degrade_transform.py checks < 1.0) at 3-10x lower cost.
    """
    sigma = number("defocus_blur", params, "sigma", lo=0.0)
    if sigma == 0.0:
        return image.copy()
    exact = bool(params.get("exact", False))
    factor = 1 if sigma < _EXACT_BELOW_SIGMA else 2 ** int(math.floor(math.log2(sigma / 1.75)))
    factor = min(factor, max(1, min(image.shape[:2]) // 8))  # keep the small image meaningful
    if exact or factor == 1:
        return cv2.GaussianBlur(image, (0, 0), sigmaX=sigma, sigmaY=sigma, borderType=cv2.BORDER_REFLECT_101)
    return _gaussian_reduced(image, sigma, factor)


# --------------------------------------------------------------------------------------------
# motion_blur

# line kernel length in pixels, angle in degrees (0 = horizontal)
_MOTION_LEVELS = {
    1: {"kernel": 5, "angle": 0.0},
    2: {"kernel": 13, "angle": 0.0},
    3: {"kernel": 25, "angle": 0.0},
}


def _sample_motion(rng: np.random.Generator, level: Mapping[str, Any], shape: tuple[int, int]) -> dict[str, Any]:
    known_keys("motion_blur", level, "kernel", "angle")
    return {
        "kernel": integer("motion_blur", level, "kernel", lo=1),
        "angle": number("motion_blur", level, "angle", default=0.0),
    }


@lru_cache(maxsize=32)
def _line_kernel(length: int, angle: float) -> np.ndarray:
    # A horizontal line of `length` ones, rotated about the kernel centre with bilinear weights.
    k = np.zeros((length, length), np.float32)
    k[(length - 1) // 2, :] = 1.0
    c = (length - 1) / 2.0
    rot = cv2.getRotationMatrix2D((c, c), angle, 1.0)
    k = cv2.warpAffine(k, rot, (length, length), flags=cv2.INTER_LINEAR)
    k /= k.sum()
    k.setflags(write=False)
    return k


_BOX_RGBA_FROM = 8  # box length from which filtering a 4-channel copy is faster (measured at 512-2048 px)


# Knob: kernel 1 .. 401 (integer), the angle kept.
@builtin_operator("motion_blur", levels=_MOTION_LEVELS, sample=_sample_motion,
                  knob=Knob("kernel", 1, 401, integer=True),
                  diagnose=DiagnoseFlag("blur", (2, 3), why="recall 1.00 at s2 and s3, 0.30 at s1"))
def motion_blur(image: np.ndarray, params: Mapping[str, Any]) -> np.ndarray:
    """Linear motion blur: mean over a ``kernel``-pixel line through each pixel.

    ``angle`` is in degrees counter-clockwise from horizontal (default 0).  Horizontal and vertical
    lines are a 1-D box filter (``cv2.blur``, O(1) per pixel whatever the length); other angles use
    a rotated line kernel with ``cv2.filter2D``.  Borders reflect (reflect-101).
    """
    length = integer("motion_blur", params, "kernel", lo=1)
    angle = number("motion_blur", params, "angle", default=0.0) % 180.0
    if length == 1:
        return image.copy()
    if angle in (0.0, 90.0):
        ksize = (length, 1) if angle == 0.0 else (1, length)
        if length < _BOX_RGBA_FROM:
            return cv2.blur(image, ksize, borderType=cv2.BORDER_REFLECT_101)
        # OpenCV's box filter takes a faster path on 4 channels for longer boxes; channels are
        # filtered independently, so the colour channels are the 3-channel result byte for byte.
        h, w = image.shape[:2]
        src = cv2.cvtColor(image, cv2.COLOR_RGB2RGBA, dst=scratch("rgba_in", (h, w, 4)))
        dst = cv2.blur(src, ksize, dst=scratch("rgba_out", (h, w, 4)), borderType=cv2.BORDER_REFLECT_101)
        return cv2.cvtColor(dst, cv2.COLOR_RGBA2RGB)
    return cv2.filter2D(image, -1, _line_kernel(length, angle), borderType=cv2.BORDER_REFLECT_101)


# --------------------------------------------------------------------------------------------
# compression

# JPEG quality 1-100, RGB-correct
_COMPRESSION_LEVELS = {1: {"quality": 50}, 2: {"quality": 18}, 3: {"quality": 5}}


_IMREAD_RGB = getattr(cv2, "IMREAD_COLOR_RGB", None)  # OpenCV >= 4.10 decodes straight to RGB


@builtin_operator("compression", levels=_COMPRESSION_LEVELS,
                  sample=level_param("compression", "quality", integer, lo=1, hi=100),
                  knob=Knob("quality", 1, 100, integer=True),
                  diagnose=DiagnoseFlag("compression", (3,), why="recall 1.00 at s3, 0.30 at s2"))
def compression(image: np.ndarray, params: Mapping[str, Any]) -> np.ndarray:
    """JPEG round trip at ``quality`` (libjpeg via OpenCV, 4:2:0 chroma, standard tables).

    The image is handed to the encoder as BGR, which is what OpenCV's encoder expects, so colours
    survive (albumentations' ``ImageCompression`` passes RGB, swapping red and blue in the chroma
    channels the codec degrades).
    """
    quality = integer("compression", params, "quality", lo=1, hi=100)
    bgr = cv2.cvtColor(image, cv2.COLOR_RGB2BGR, dst=scratch("bgr", image.shape))
    ok, buf = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, quality])
    if not ok:
        raise RuntimeError(f"compression: OpenCV could not JPEG-encode an image of shape {image.shape}")
    if _IMREAD_RGB is not None:
        return cv2.imdecode(buf, _IMREAD_RGB)
    return cv2.cvtColor(cv2.imdecode(buf, cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)


# --------------------------------------------------------------------------------------------
# low_resolution

# scale of each side (0 < scale <= 1): nearest down, nearest back up
_LOW_RESOLUTION_LEVELS = {1: {"scale": 0.50}, 2: {"scale": 0.25}, 3: {"scale": 0.08}}


def _nearest_indices(src: int, dst: int) -> np.ndarray:
    """Source index of each of ``dst`` samples resampling ``src`` pixels by nearest neighbour.

    Pixel centres are aligned: ``floor((i + 0.5) * src / dst)``, computed in integers so it is
    exact (``cv2.INTER_NEAREST_EXACT`` uses fixed point and breaks exact ties either way).
    """
    return ((2 * np.arange(dst, dtype=np.int64) + 1) * src) // (2 * dst)


@lru_cache(maxsize=32)
def _low_res_indices(h: int, w: int, scale: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    sh, sw = max(1, round(h * scale)), max(1, round(w * scale))
    out = (_nearest_indices(h, sh), _nearest_indices(w, sw), _nearest_indices(sh, h), _nearest_indices(sw, w))
    for a in out:
        a.setflags(write=False)
    return out


@builtin_operator("low_resolution", levels=_LOW_RESOLUTION_LEVELS,
                  sample=level_param("low_resolution", "scale", lo=0.0, lo_open=True, hi=1.0),
                  knob=Knob("scale", 0.01, 1.0, log=True),
                  diagnose=DiagnoseFlag("low_resolution", (2, 3), why="recall 1.00 at s2 and s3"))
def low_resolution(image: np.ndarray, params: Mapping[str, Any]) -> np.ndarray:
    """Nearest-neighbour downsample to ``round(side * scale)`` pixels, nearest back up to full size.

    Index arithmetic: :func:`_nearest_indices` (pixel-centre aligned, exact integers).
    """
    scale = number("low_resolution", params, "scale", lo=0.0, lo_open=True, hi=1.0)
    h, w = image.shape[:2]
    down_r, down_c, up_r, up_c = _low_res_indices(h, w, scale)
    # Gathering 3-byte pixels is slow in numpy; pack each pixel into one uint32 and gather those.
    # Each intermediate is dropped as soon as the next exists (at scale 0.5 they are half the image).
    packed = cv2.cvtColor(np.take(image, down_r, axis=0), cv2.COLOR_RGB2RGBA).view(np.uint32)[..., 0]
    small = np.take(packed, down_c, axis=1)
    del packed
    wide = np.take(small, up_c, axis=1)
    del small
    full = np.take(wide, up_r, axis=0, out=scratch("rgba_out", (h, w), np.uint32))
    del wide
    return cv2.cvtColor(full.view(np.uint8).reshape(h, w, 4), cv2.COLOR_RGBA2RGB)
