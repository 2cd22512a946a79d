"""Image detectors: small pure functions from decoded pixels to a score, and the fast decoder they share.

Every detector reads an :class:`ImageView` -- the luma and the per-pixel maximum channel at the
*analysis size* (the long side scaled down to at most :data:`ANALYSIS_SIDE` px by area averaging,
never up), the luma at the decoded resolution (for pixel-grid signals: 8x8 JPEG blocks, repeated
columns), the original size and, for a JPEG file, the quality its quantisation tables imply.
Scores, not flags: :mod:`snapbench.diagnose.thresholds` holds the thresholds.

* ``blur``: the smallest, over four directions, of the RMS second difference of the luma, scaled by
  255 / its 99th percentile (so a dark photo is not called blurry; directional, so a one-direction
  motion blur is seen).
* ``low_light``: the 95th percentile of the luma (how bright the bright parts are).
* ``overexposure``: the share of pixels with a channel at or above ``clip_level`` (clipped highlights).
* ``compression``: the estimated JPEG quality -- from the quantisation tables of a JPEG file, else
  from the 8x8 blockiness of the pixels through :data:`BLOCKINESS_QUALITY`.
* ``low_resolution``: the effective pixel count, width x height x the shares of distinct adjacent
  columns and rows (a nearest-neighbour upscale repeats them).

Decoding (:func:`decode_for_diagnosis`): a JPEG is decoded by OpenCV at a reduced size (libjpeg's DCT
scaling by 2, 4 or 8, as long as the long side stays >= :data:`ANALYSIS_SIDE`), which is most of
what makes the detectors fast; everything else goes through :func:`snapbench.corruptions.load_image`
(Pillow, with snapbench's normalisation rules).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from ..corruptions.io import DEFAULT_MAX_PIXELS, as_rgb_uint8, load_image, read_image_bytes
from .jpeg import ijg_quality, parse_jpeg_header

__all__ = [
    "ANALYSIS_SIDE",
    "BLOCKINESS_QUALITY",
    "ImageView",
    "blockiness",
    "blur_score",
    "compression_score",
    "decode_for_diagnosis",
    "image_scores",
    "low_light_score",
    "low_resolution_score",
    "overexposure_score",
    "perceptual_hash",
    "view_of",
]

#: Long side (px) of the analysis size; larger images are area-averaged down to it.
ANALYSIS_SIDE = 512

#: (blockiness, JPEG quality) pairs, blockiness decreasing: the median 8x8 blockiness of OpenCV JPEG
#: round trips at each quality, measured on scikit-image's photos that the demo is built from
#: (bench/validate_diagnose.py --calibrate).  Quality is interpolated linearly in log(blockiness - 1)
#: between them and clamped at both ends; the last pair (1.01, 100) is a convention, not a measurement:
#: blockiness at or below 1.01 means no visible blocking.
BLOCKINESS_QUALITY: tuple[tuple[float, float], ...] = (
    (3.73, 5.0), (2.50, 10.0), (1.93, 18.0), (1.64, 30.0), (1.44, 50.0), (1.23, 75.0), (1.06, 95.0), (1.01, 100.0),
)

_REDUCED = {1: cv2.IMREAD_COLOR, 2: cv2.IMREAD_REDUCED_COLOR_2, 4: cv2.IMREAD_REDUCED_COLOR_4,
            8: cv2.IMREAD_REDUCED_COLOR_8}


@dataclass(frozen=True)
class ImageView:
    """What the image detectors read (see the module docstring).  ``luma``/``maxc``: uint8 at the
    analysis size; ``luma_full``: uint8 at the decoded size; ``width``/``height``: the original size;
    ``jpeg_quality``: from the file's tables (``None`` when not a JPEG file)."""

    luma: np.ndarray
    maxc: np.ndarray
    luma_full: np.ndarray
    width: int
    height: int
    jpeg_quality: int | None = None


def _analysis(img: np.ndarray) -> np.ndarray:
    h, w = img.shape[:2]
    s = ANALYSIS_SIDE / max(h, w)
    if s >= 1.0:
        return img
    return cv2.resize(img, (max(1, round(w * s)), max(1, round(h * s))), interpolation=cv2.INTER_AREA)


def _view(colour: np.ndarray, gray_code: int, width: int, height: int, jpeg_quality: int | None) -> ImageView:
    luma_full = cv2.cvtColor(colour, gray_code)
    small = _analysis(colour)
    luma = luma_full if small is colour else cv2.cvtColor(small, gray_code)
    a, b, c = cv2.split(small)
    maxc = cv2.max(cv2.max(a, b), c)
    return ImageView(luma, maxc, luma_full, width, height, jpeg_quality)


def view_of(image: np.ndarray, *, jpeg_quality: int | None = None) -> ImageView:
    """The :class:`ImageView` of an HxWx3 uint8 RGB array (decoded at its own size)."""
    rgb = as_rgb_uint8(image)
    return _view(rgb, cv2.COLOR_RGB2GRAY, rgb.shape[1], rgb.shape[0], jpeg_quality)


def decode_for_diagnosis(path: str | os.PathLike, *, data: bytes | None = None,
                         max_pixels: int = DEFAULT_MAX_PIXELS) -> ImageView:
    """Read an image file into an :class:`ImageView` (JPEG: reduced-size decode, quality from its
    tables; others: :func:`~snapbench.corruptions.load_image`).  ``data``: the file's bytes when the
    caller has read them already.  Raises :class:`~snapbench.corruptions.ImageLoadError` naming the
    file when it cannot be decoded."""
    p = Path(path)
    if data is None:
        data = read_image_bytes(p)
    hdr = parse_jpeg_header(data) if data else None
    # A JPEG without its end marker is truncated: load_image reports it (OpenCV would return a
    # half-grey picture).
    if hdr is not None and data.rstrip(b"\0")[-2:] == b"\xff\xd9" and hdr.width * hdr.height <= max_pixels:
        r = 1
        while r < 8 and max(hdr.width, hdr.height) / (2 * r) >= ANALYSIS_SIDE:
            r *= 2
        bgr = cv2.imdecode(np.frombuffer(data, np.uint8), _REDUCED[r] | cv2.IMREAD_IGNORE_ORIENTATION)
        if bgr is not None and bgr.ndim == 3 and bgr.shape[2] == 3:
            quality = ijg_quality(hdr.tables[0]) if 0 in hdr.tables else None
            return _view(bgr, cv2.COLOR_BGR2GRAY, hdr.width, hdr.height, quality)
    return view_of(load_image(p, max_pixels=max_pixels))


# ------------------------------------------------------------------------------------------ scores


def _percentiles(img: np.ndarray, qs: tuple[float, ...]) -> list[float]:
    """Percentiles (0-100) of a uint8 image from its histogram (lower value at each quantile)."""
    hist = cv2.calcHist([np.ascontiguousarray(img)], [0], None, [256], [0, 256]).ravel()
    cdf = np.cumsum(hist)
    n = cdf[-1]
    return [float(np.searchsorted(cdf, q / 100.0 * n, side="left")) for q in qs]


_KERNELS = (
    np.array([[1, -2, 1]], np.float32),
    np.array([[1], [-2], [1]], np.float32),
    np.array([[1, 0, 0], [0, -2, 0], [0, 0, 1]], np.float32),
    np.array([[0, 0, 1], [0, -2, 0], [1, 0, 0]], np.float32),
)


def blur_score(luma: np.ndarray) -> float:
    """Directional sharpness: min over 4 directions (horizontal, vertical, both diagonals) of the RMS
    second difference ``y[i-1] - 2 y[i] + y[i+1]`` of the luma, times 255 / its 99th percentile
    (floored at 32 grey levels, so noise in a nearly black image is not amplified without bound)."""
    if min(luma.shape) < 3:
        return float("nan")
    hi = _percentiles(luma, (99.0,))[0]
    rms = []
    for k in _KERNELS:
        # int16 holds every second difference of uint8 (-510..510); the replicated border is left out.
        d = cv2.filter2D(luma, cv2.CV_16S, k, borderType=cv2.BORDER_REPLICATE)[1:-1, 1:-1]
        rms.append(cv2.norm(d, cv2.NORM_L2) / np.sqrt(d.size))
    return float(min(rms)) * 255.0 / max(hi, 32.0)


def low_light_score(luma: np.ndarray) -> float:
    """95th percentile of the luma (0-255)."""
    return _percentiles(luma, (95.0,))[0]


def overexposure_score(maxc: np.ndarray, clip_level: float = 250) -> float:
    """Share of pixels whose largest channel is >= ``clip_level``."""
    return float(np.count_nonzero(maxc >= clip_level)) / maxc.size


def blockiness(luma_full: np.ndarray) -> float:
    """8x8 blockiness: mean absolute luma step across the 8-pixel grid lines over the mean step
    elsewhere (columns and rows averaged); about 1 for an image without block structure."""
    y = luma_full.astype(np.int16)
    out = []
    for axis in (1, 0):
        d = np.abs(np.diff(y, axis=axis)).mean(axis=1 - axis)
        if d.size < 16:
            continue
        on = (np.arange(d.size) % 8) == 7
        out.append((d[on].mean() + 0.5) / (d[~on].mean() + 0.5))
    return float(np.mean(out)) if out else float("nan")


def compression_score(view: ImageView) -> float:
    """Estimated JPEG quality 1-100: the file's tables when it is a JPEG, else from :func:`blockiness`."""
    if view.jpeg_quality is not None:
        return float(view.jpeg_quality)
    b = blockiness(view.luma_full)
    if np.isnan(b):
        return float("nan")
    bs = np.array([p[0] for p in BLOCKINESS_QUALITY])
    qs = np.array([p[1] for p in BLOCKINESS_QUALITY])
    x = np.log(np.maximum(bs - 1.0, 1e-6))
    return float(np.interp(np.log(max(b - 1.0, 1e-6)), x[::-1], qs[::-1]))


def _distinct_share(y: np.ndarray, axis: int) -> float:
    n = y.shape[1 - axis]
    if n < 2:
        return 1.0
    same = ~np.any(np.diff(y, axis=1 - axis) != 0, axis=axis)  # adjacent columns (rows) identical
    return float(n - np.count_nonzero(same)) / n


def low_resolution_score(view: ImageView) -> float:
    """Effective pixel count: width x height x the shares of distinct adjacent columns and rows."""
    y = view.luma_full
    return float(view.width * view.height) * _distinct_share(y, 0) * _distinct_share(y, 1)


def perceptual_hash(luma: np.ndarray) -> int:
    """64-bit DCT perceptual hash: the 8x8 lowest frequencies of the 32x32 luma vs their median."""
    small = cv2.resize(luma, (32, 32), interpolation=cv2.INTER_AREA).astype(np.float32)
    low = cv2.dct(small)[:8, :8].ravel()
    bits = low > np.median(low[1:])
    return int.from_bytes(np.packbits(bits).tobytes(), "big")


def image_scores(view: ImageView, thresholds: dict[str, dict[str, float]]) -> dict[str, float]:
    """Every image detector's score for ``view`` (``thresholds`` supplies detector parameters)."""
    return {
        "blur": blur_score(view.luma),
        "low_light": low_light_score(view.luma),
        "overexposure": overexposure_score(view.maxc, thresholds["overexposure"]["clip_level"]),
        "compression": compression_score(view),
        "low_resolution": low_resolution_score(view),
    }
