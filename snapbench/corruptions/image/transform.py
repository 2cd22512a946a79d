"""TRANSFORM primitive: geometric distortions that keep the content and the frame size.

Three operators (SPEC §3): ``rotation``, ``perspective``, ``lens_distortion``.  Each is a single
resampling (one ``warpAffine`` / ``warpPerspective`` / ``remap``) whose geometry already includes
the crop of the empty border and the resize back to the input size, so the output is the input's
size, has no empty (black) corners or margins, and is interpolated only once.  None is random.

Coordinates: the continuous image plane spans [0, W] x [0, H] with pixel centres at
(x + 0.5, y + 0.5); matrices are built there and shifted to OpenCV's pixel-centre convention.
Samples that land a fraction of a pixel outside the image (rounding at the exact crop boundary)
replicate the edge pixel rather than read black.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping

import cv2
import numpy as np

from ...core.errors import ConfigError
from ._buffers import BytesLRU, scratch
from .base import Knob, builtin_operator, known_keys, level_param, number

__all__ = [
    "rotation",
    "perspective",
    "lens_distortion",
    "lens_crop_scale",
]

_SHIFT = np.array([[1.0, 0.0, 0.5], [0.0, 1.0, 0.5], [0.0, 0.0, 1.0]])  # pixel index -> continuous
_UNSHIFT = np.array([[1.0, 0.0, -0.5], [0.0, 1.0, -0.5], [0.0, 0.0, 1.0]])


def _to_pixel_convention(m: np.ndarray) -> np.ndarray:
    return _UNSHIFT @ m @ _SHIFT


def _on_rgba(image: np.ndarray, warp: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> np.ndarray:
    """``warp(src, dst)`` applied to ``image`` padded to four channels, the padding dropped again.

    OpenCV's bilinear warps and remap run about twice as fast on 4-channel images as on 3-channel
    ones, and they treat every channel alike, so the three colour channels come out byte for byte
    as a 3-channel warp would give them (tests/test_speed_equivalence.py checks this).  The two
    4-channel frames are this thread's scratch buffers (see :mod:`._buffers`).
    """
    h, w = image.shape[:2]
    src = cv2.cvtColor(image, cv2.COLOR_RGB2RGBA, dst=scratch("rgba_in", (h, w, 4)))
    return cv2.cvtColor(warp(src, scratch("rgba_out", (h, w, 4))), cv2.COLOR_RGBA2RGB)


# --------------------------------------------------------------------------------------------
# rotation

# angle in degrees, counter-clockwise
_ROTATION_LEVELS = {1: {"angle": 10.0}, 2: {"angle": 45.0}, 3: {"angle": 180.0}}


def _cos_sin(angle_deg: float) -> tuple[float, float]:
    # Exact values at multiples of 90 degrees, so those rotations move pixels onto pixels.
    quarter, rest = divmod(angle_deg, 90.0)
    if rest == 0.0:
        return [(1.0, 0.0), (0.0, 1.0), (-1.0, 0.0), (0.0, -1.0)][int(quarter) % 4]
    rad = math.radians(angle_deg)
    return math.cos(rad), math.sin(rad)


def _rotation_cover_scale(height: int, width: int, angle: float) -> float:
    """Smallest zoom at which the image rotated by ``angle`` degrees covers its own frame.

    The frame rotated back by ``angle`` has the bounding box W|cos|+H|sin| by W|sin|+H|cos|; the
    zoomed image must contain it on both axes.  Zooming by this factor and keeping the frame is the
    same as cutting the largest centred rectangle of the input's aspect ratio out of the rotated
    image and resizing it back.
    """
    c, s = _cos_sin(float(angle) % 360.0)
    c, s = abs(c), abs(s)
    return max((width * c + height * s) / width, (width * s + height * c) / height)


@builtin_operator("rotation", levels=_ROTATION_LEVELS, sample=level_param("rotation", "angle"),
                  knob=Knob("angle", 0.0, 180.0))
def rotation(image: np.ndarray, params: Mapping[str, Any]) -> np.ndarray:
    """Rotate by ``angle`` degrees counter-clockwise about the centre, zoomed to fill the frame.

    180 degrees is an exact flip of both axes, and 90/270 on a square image an exact quarter turn
    (byte-identical, no interpolation).  Every other angle is one bilinear ``cv2.warpAffine``
    with the zoom of :func:`_rotation_cover_scale` folded into the matrix, so there are no empty
    corners (the SPEC's "below ~85 degrees: enlarge and centre-crop" applied at every angle; 90/270
    on a non-square frame then need a 4:3 -> 3:4 zoom, and still no interpolation of the rotation
    itself, because the matrix holds exact 0 and +-1).
    """
    angle = number("rotation", params, "angle") % 360.0
    h, w = image.shape[:2]
    if angle == 0.0:
        return image.copy()
    # cv2.flip/cv2.rotate: pure pixel moves like np.flip/np.rot90, ~10x faster than numpy's strided copy.
    if angle == 180.0:
        return cv2.flip(image, -1)
    if angle in (90.0, 270.0) and h == w:
        return cv2.rotate(image, cv2.ROTATE_90_COUNTERCLOCKWISE if angle == 90.0 else cv2.ROTATE_90_CLOCKWISE)
    c, s = _cos_sin(angle)
    zoom = _rotation_cover_scale(h, w, angle)
    a, b = zoom * c, zoom * s
    cx, cy = w / 2.0, h / 2.0
    # Counter-clockwise on screen (y points down), about the centre: same as cv2.getRotationMatrix2D.
    m = np.array([[a, b, (1 - a) * cx - b * cy], [-b, a, b * cx + (1 - a) * cy], [0.0, 0.0, 1.0]])
    m = _to_pixel_convention(m)[:2]
    return _on_rgba(image, lambda src, dst: cv2.warpAffine(src, m, (w, h), dst=dst, flags=cv2.INTER_LINEAR,
                                                           borderMode=cv2.BORDER_REPLICATE))


# --------------------------------------------------------------------------------------------
# perspective

# d: fraction of the short side
_PERSPECTIVE_LEVELS = {1: {"d": 0.10}, 2: {"d": 0.20}, 3: {"d": 0.30}}


def _perspective_geometry(height: int, width: int, d: float) -> tuple[np.ndarray, tuple[float, float, float, float]]:
    """The keystone homography and the crop that removes its empty border.

    Returns ``(P, (x0, y0, x1, y1))``: ``P`` maps the input plane to the keystoned plane (top
    corners moved in by ``dx = d * short_side`` and down by ``dy = d / 2 * short_side``, bottom
    corners fixed); the keystoned image is a trapezoid widening downwards, and the crop is the
    rectangle between its moved top corners and its bottom edge, [dx, W - dx] x [dy, H].  That
    keeps the whole top edge of the picture (output corners come from input corners), and it is
    the largest rectangle inside the trapezoid whenever d <= W / (4 * short_side) (1/3 for 4:3
    landscape frames, 1/4 for square and portrait ones).
    """
    short = float(min(height, width))
    dx, dy = d * short, d / 2.0 * short
    if not (dx < width / 2.0 and dy < height):
        raise ConfigError(
            f"perspective: d={d} is too strong for a {width}x{height} image (the top edge would vanish)"
        )
    src = np.float32([[0, 0], [width, 0], [width, height], [0, height]])
    dst = np.float32([[dx, dy], [width - dx, dy], [width, height], [0, height]])
    p = cv2.getPerspectiveTransform(src, dst).astype(np.float64)
    return p, (dx, dy, width - dx, float(height))


@builtin_operator("perspective", levels=_PERSPECTIVE_LEVELS, sample=level_param("perspective", "d", lo=0.0),
                  knob=Knob("d", 0.0, 0.45))
def perspective(image: np.ndarray, params: Mapping[str, Any]) -> np.ndarray:
    """Keystone (camera tilted up): top corners in by ``d`` and down by ``d/2`` of the short side.

    The empty border is cropped (:func:`_perspective_geometry`) and the crop resized back to the
    input size; keystone, crop and resize are composed into one homography and applied with a
    single bilinear ``cv2.warpPerspective``.
    """
    d = number("perspective", params, "d", lo=0.0)
    h, w = image.shape[:2]
    if d == 0.0:
        return image.copy()
    p, (x0, y0, x1, y1) = _perspective_geometry(h, w, d)
    crop_to_frame = np.array([[w / (x1 - x0), 0.0, -x0 * w / (x1 - x0)],
                              [0.0, h / (y1 - y0), -y0 * h / (y1 - y0)],
                              [0.0, 0.0, 1.0]])
    m = _to_pixel_convention(crop_to_frame @ p)
    return _on_rgba(image, lambda src, dst: cv2.warpPerspective(src, m, (w, h), dst=dst, flags=cv2.INTER_LINEAR,
                                                                borderMode=cv2.BORDER_REPLICATE))


# --------------------------------------------------------------------------------------------
# lens_distortion

# k1; negative = barrel
_LENS_LEVELS = {1: {"k1": -0.10}, 2: {"k1": -0.20}, 3: {"k1": -0.30}}

_K1_MIN = -1.0 / 3.0  # below this r*(1 + k1*r^2) stops increasing before the corner: the image folds


def _sample_lens(rng: np.random.Generator, level: Mapping[str, Any], shape: tuple[int, int]) -> dict[str, Any]:
    known_keys("lens_distortion", level, "k1")
    return {"k1": _lens_k1(level)}


def _lens_k1(params: Mapping[str, Any]) -> float:
    k1 = number("lens_distortion", params, "k1")
    if k1 <= _K1_MIN:
        raise ConfigError(f"lens_distortion: k1 must be > -1/3 (the barrel model folds over), got {k1}")
    return k1


def _undistort_radius(r_d: np.ndarray, k1: float) -> np.ndarray:
    # Invert r_d = r_u * (1 + k1 r_u^2) on r_u in [0, 1] (monotonic for k1 > -1/3) by a dense table.
    r_u = np.linspace(0.0, 1.0, 8193)
    return np.interp(r_d, r_u * (1.0 + k1 * r_u * r_u), r_u)


def _source_points(xd: np.ndarray, yd: np.ndarray, k1: float) -> tuple[np.ndarray, np.ndarray]:
    r_d = np.hypot(xd, yd)
    ratio = np.ones_like(r_d)
    nz = r_d > 0
    ratio[nz] = _undistort_radius(r_d[nz], k1) / r_d[nz]
    return xd * ratio, yd * ratio


def lens_crop_scale(height: int, width: int, k1: float) -> float:
    """Largest s <= 1 such that the frame shrunk by s lies inside the distorted image.

    Found by bisection on points along the frame's edges (feasibility is monotonic in s because
    the radial map is); for barrel distortion (k1 < 0) this is 1 + k1, the corners being binding.
    """
    half_diag = math.hypot(width, height) / 2.0
    ax, ay = width / 2.0 / half_diag, height / 2.0 / half_diag
    t = np.linspace(-1.0, 1.0, 513)
    bx = np.concatenate([t * ax, t * ax, np.full_like(t, ax), np.full_like(t, -ax)])
    by = np.concatenate([np.full_like(t, ay), np.full_like(t, -ay), t * ay, t * ay])

    def inside(s: float) -> bool:
        ux, uy = _source_points(s * bx, s * by, k1)
        return bool(np.all(np.abs(ux) <= ax * (1 + 1e-9)) and np.all(np.abs(uy) <= ay * (1 + 1e-9)))

    if inside(1.0):
        return 1.0
    lo, hi = 0.0, 1.0
    for _ in range(50):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if inside(mid) else (lo, mid)
    return lo


#: Bytes of lens_distortion remap tables a process keeps (fixed-point map pairs, 6 bytes a pixel).
_LENS_MAP_CACHE_BYTES = 256 * 2**20
LENS_MAPS = BytesLRU(_LENS_MAP_CACHE_BYTES)


def _lens_maps(height: int, width: int, k1: float) -> tuple[np.ndarray, np.ndarray]:
    """Fixed-point remap tables for (height, width, k1), from :data:`LENS_MAPS` (a single pair larger
    than its bound is computed and returned, not kept)."""
    key = (int(height), int(width), float(k1))
    return LENS_MAPS.get(key, lambda: _compute_lens_maps(*key))


_LENS_ROWS = 32  # rows of the maps computed at once: float64 work arrays of 32 rows, not of the image


def _compute_lens_maps(height: int, width: int, k1: float) -> tuple[np.ndarray, np.ndarray]:
    half_diag = math.hypot(width, height) / 2.0
    s = lens_crop_scale(height, width, k1)
    # Output pixel centre -> distorted plane (zoomed in by 1/s) -> undistorted source point.
    xd = (np.arange(width) + 0.5 - width / 2.0) / half_diag * s
    yd = (np.arange(height) + 0.5 - height / 2.0) / half_diag * s
    # Fixed-point maps (1/32 pixel, the precision warpAffine uses internally) remap ~2x faster.
    m1 = np.empty((height, width, 2), np.int16)
    m2 = np.empty((height, width), np.uint16)
    for y0 in range(0, height, _LENS_ROWS):
        rows = slice(y0, min(y0 + _LENS_ROWS, height))
        ux, uy = _source_points(xd[None, :], yd[rows, None], k1)
        map_x = (ux * half_diag + width / 2.0 - 0.5).astype(np.float32)
        map_y = (uy * half_diag + height / 2.0 - 0.5).astype(np.float32)
        m1[rows], m2[rows] = cv2.convertMaps(map_x, map_y, cv2.CV_16SC2)
    m1.setflags(write=False)
    m2.setflags(write=False)
    return m1, m2


@builtin_operator("lens_distortion", levels=_LENS_LEVELS, sample=_sample_lens,
                  knob=Knob("k1", -0.33, 0.0))
def lens_distortion(image: np.ndarray, params: Mapping[str, Any]) -> np.ndarray:
    """Radial lens distortion ``r_d = r_u * (1 + k1 * r_u**2)``, cropped to the frame and resized.

    Radii are measured from the image centre in units of the half-diagonal (r = 1 at the corners),
    so ``k1`` is the relative radial displacement of the corners.  This is the Brown-Conrady model
    with OpenCV's sign convention: k1 < 0 is barrel (the grid's -0.1/-0.2/-0.3), k1 > 0 pincushion.
    (The SnapBench papers give only the k1 values; the model and normalisation are our choice.)
    Barrel distortion pulls the image in from the frame; the largest centred frame-shaped region
    it still covers (:func:`lens_crop_scale`) is resized back to full size.  Distortion, crop and
    resize are one ``cv2.remap`` with maps cached per (height, width, k1).
    """
    k1 = _lens_k1(params)
    h, w = image.shape[:2]
    if k1 == 0.0:
        return image.copy()
    m1, m2 = _lens_maps(h, w, k1)
    return _on_rgba(image, lambda src, dst: cv2.remap(src, m1, m2, dst=dst, interpolation=cv2.INTER_LINEAR,
                                                      borderMode=cv2.BORDER_REPLICATE))
