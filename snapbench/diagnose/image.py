"""Image detectors: small pure functions from decoded pixels to a score, and the fast decoder they share.

Every detector reads an :class:`ImageView` -- the luma and the per-pixel maximum channel at the
*analysis size* (the long side scaled down to at most :data:`_ANALYSIS_SIDE` px by area averaging,
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
scaling by 2, 4 or 8, as long as the long side stays >= :data:`_ANALYSIS_SIDE`), which is most of
what makes the detectors fast; everything else goes through :func:`snapbench.corruptions.load_image`
(Pillow, with snapbench's normalisation rules).

JPEG headers without decoding: frame size and quantisation tables, and the IJG quality they imply.

A JPEG's quantisation tables say how hard it was compressed, exactly and for free (they sit in the
header): libjpeg, and the many encoders built on it (OpenCV, Pillow, most phones' and web tools'
pipelines), scale one standard table by the "quality" q (ITU T.81 Annex K, IJG ``jcparam.c``):

    scale = 5000 / q  (q < 50),   200 - 2 q  (q >= 50);   T_q[i] = clamp((K[i] * scale + 50) // 100, 1, 255)

:func:`ijg_quality` returns the q whose scaled luminance table is closest (L1) to the file's; for
an IJG-made table that is exact, for other encoders' tables it is the nearest IJG equivalent.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np

from ..corruptions.io import DEFAULT_MAX_PIXELS, as_rgb_uint8, load_image, read_image_bytes
from .thresholds import default_thresholds

__all__ = ['BLOCKINESS_QUALITY', 'ImageView', 'blockiness', 'blur_score', 'decode_for_diagnosis', 'image_scores', 'low_light_score', 'low_resolution_score', 'overexposure_score', 'perceptual_hash', 'view_of', 'JpegHeader', 'parse_jpeg_header', 'ijg_table', 'ijg_quality']

#: Long side (px) of the analysis size; larger images are area-averaged down to it.
_ANALYSIS_SIDE = 512

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
    s = _ANALYSIS_SIDE / max(h, w)
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
        while r < 8 and max(hdr.width, hdr.height) / (2 * r) >= _ANALYSIS_SIDE:
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


def overexposure_score(maxc: np.ndarray, clip_level: float | None = None) -> float:
    """Share of pixels whose largest channel is >= ``clip_level`` (default: the shipped
    ``[overexposure] clip_level``)."""
    if clip_level is None:
        clip_level = default_thresholds()["overexposure"]["clip_level"]
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


def _compression_score(view: ImageView) -> float:
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
        "compression": _compression_score(view),
        "low_resolution": low_resolution_score(view),
    }


# ITU T.81 Table K.1 (luminance), natural (row-major) order.
_K1 = np.array([
    16, 11, 10, 16, 24, 40, 51, 61,
    12, 12, 14, 19, 26, 58, 60, 55,
    14, 13, 16, 24, 40, 57, 69, 56,
    14, 17, 22, 29, 51, 87, 80, 62,
    18, 22, 37, 56, 68, 109, 103, 77,
    24, 35, 55, 64, 81, 104, 113, 92,
    49, 64, 78, 87, 103, 121, 120, 101,
    72, 92, 95, 98, 112, 100, 103, 99,
], dtype=np.int64)

# Zig-zag scan order: position k of a DQT segment holds natural-order coefficient _ZIGZAG[k].
_ZIGZAG = np.array([
    0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6, 7, 14, 21,
    28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61,
    54, 47, 55, 62, 63,
], dtype=np.int64)

# Markers that stand alone (no length field): TEM, RSTn, SOI, EOI.
_STANDALONE = {0x01, *range(0xD0, 0xD8), 0xD8, 0xD9}
# Start-of-frame markers (SOF0-3, 5-7, 9-11, 13-15): they carry the image size.
_SOF = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}


@dataclass
class JpegHeader:
    """Frame size and the quantisation tables (id -> 64 values in natural order) of a JPEG."""

    width: int
    height: int
    tables: dict[int, np.ndarray] = field(default_factory=dict)


def parse_jpeg_header(data: bytes) -> JpegHeader | None:
    """The header of JPEG bytes ``data``, read up to the first scan; ``None`` when ``data`` is not a
    JPEG or its header is malformed (the caller decodes it the ordinary way and reports errors)."""
    if len(data) < 4 or data[0] != 0xFF or data[1] != 0xD8:
        return None
    pos, n = 2, len(data)
    width = height = 0
    tables: dict[int, np.ndarray] = {}
    while pos + 4 <= n:
        if data[pos] != 0xFF:
            return None
        marker = data[pos + 1]
        if marker == 0xFF:  # fill byte
            pos += 1
            continue
        if marker in _STANDALONE:
            pos += 2
            continue
        length = int.from_bytes(data[pos + 2:pos + 4], "big")
        seg = data[pos + 4:pos + 2 + length]
        if length < 2 or len(seg) != length - 2:
            return None
        if marker == 0xDB:
            i = 0
            while i < len(seg):
                precision, tid = seg[i] >> 4, seg[i] & 0x0F
                size = 128 if precision else 64
                raw = seg[i + 1:i + 1 + size]
                if len(raw) != size:
                    return None
                vals = np.frombuffer(raw, dtype=">u2" if precision else np.uint8).astype(np.int64)
                natural = np.empty(64, dtype=np.int64)
                natural[_ZIGZAG] = vals
                tables[tid] = natural
                i += 1 + size
        elif marker in _SOF and len(seg) >= 5:
            height = int.from_bytes(seg[1:3], "big")
            width = int.from_bytes(seg[3:5], "big")
        elif marker == 0xDA:
            break
        pos += 2 + length
    if width <= 0 or height <= 0:
        return None
    return JpegHeader(width, height, tables)


def ijg_table(quality: int) -> np.ndarray:
    """The IJG luminance table (natural order) of ``quality`` 1-100 (baseline: entries <= 255)."""
    q = min(100, max(1, int(quality)))
    scale = 5000 // q if q < 50 else 200 - 2 * q
    return np.clip((_K1 * scale + 50) // 100, 1, 255)


_ALL = np.stack([ijg_table(q) for q in range(1, 101)])


def ijg_quality(table: np.ndarray) -> int:
    """The IJG quality 1-100 whose luminance table is nearest (L1) to ``table`` (64 values, natural
    order); ties go to the higher quality."""
    t = np.asarray(table, dtype=np.int64).reshape(64)
    dist = np.abs(_ALL - t).sum(axis=1)
    best = np.flatnonzero(dist == dist.min())
    return int(best[-1]) + 1
