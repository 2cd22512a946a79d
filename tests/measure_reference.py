"""Independent reference for measured strength (tests/test_measure.py, tests/test_target.py).

The documented preprocessing transcribed in float64 (numpy BT.601 luma, ``cv2.resize(...,
INTER_AREA)`` as the documentation specifies it, comparison sizes by exact rational rounding), then
scikit-image's PSNR and SSIM; photos from ``skimage.data`` that the package does not ship
(snapbench/assets/demo uses astronaut, chelsea, coffee, rocket, hubble_deep_field,
immunohistochemistry, retina, camera, clock, coins, brick, moon).
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache

import cv2
import numpy as np
from skimage import data
from skimage.metrics import peak_signal_noise_ratio, structural_similarity


def _round_half_up(x: Fraction) -> int:
    return int(x + Fraction(1, 2))  # x > 0: int() floors


def ref_size(h: int, w: int) -> tuple[int, int]:
    long_side = max(h, w)
    if long_side <= 512:
        return h, w
    return (max(1, _round_half_up(Fraction(h * 512, long_side))), max(1, _round_half_up(Fraction(w * 512, long_side))))


def ref_luma(rgb: np.ndarray) -> np.ndarray:
    f = rgb.astype(np.float64)
    y = 0.299 * f[..., 0] + 0.587 * f[..., 1] + 0.114 * f[..., 2]
    h, w = ref_size(*y.shape)
    if (h, w) != y.shape:
        y = cv2.resize(y, (w, h), interpolation=cv2.INTER_AREA)
    return y


def ref_strength(clean: np.ndarray, variant: np.ndarray) -> tuple[float, float, float]:
    if variant.shape != clean.shape:
        variant = cv2.resize(variant, (clean.shape[1], clean.shape[0]), interpolation=cv2.INTER_AREA)
    x, y = ref_luma(clean), ref_luma(variant)
    ssim = structural_similarity(x, y, gaussian_weights=True, sigma=1.5, use_sample_covariance=False, data_range=255)
    psnr = math.inf if np.array_equal(x, y) else peak_signal_noise_ratio(x, y, data_range=255)
    changed = float(np.mean(np.any(clean != variant, axis=2)))
    return float(psnr), float(ssim), changed


@lru_cache(maxsize=None)
def photo(name: str, h: int, w: int) -> np.ndarray:
    if name == "moto_left":
        img = data.stereo_motorcycle()[0]
    elif name == "moto_right":
        img = data.stereo_motorcycle()[1]
    else:
        img = getattr(data, name)()
    if img.ndim == 2:
        img = np.dstack([img] * 3)
    img = np.ascontiguousarray(img[..., :3])
    interp = cv2.INTER_AREA if h < img.shape[0] else cv2.INTER_CUBIC
    out = np.ascontiguousarray(cv2.resize(img, (w, h), interpolation=interp))
    out.setflags(write=False)
    return out
