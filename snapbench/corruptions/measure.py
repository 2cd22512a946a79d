"""Measured strength: what a variant actually did to the clean query (issue #17).

A severity level is a parameter, not an effect: the same blur wipes out a small photo and barely
touches a large one.  These pure functions measure the damage of one variant against its clean
query, so ``corrupt`` can record it per manifest line and ``run`` per query.

Images (:func:`measure_image` -> :class:`ImageStrength`), in this order:

1. a variant whose size differs from the clean image's (``cropping``, ``downscale``) is resized
   to the clean size with ``cv2.INTER_AREA`` (uint8 RGB in, uint8 RGB out);
2. ``changed``: the share of clean-size pixels where any of the three channels differs;
3. both images become BT.601 luma, ``0.299 R + 0.587 G + 0.114 B`` in float32 (not rounded);
4. both lumas are resized with ``cv2.INTER_AREA`` so that the long side is at most
   :data:`_COMPARE_MAX_SIDE` (512) px: ``side * 512 / long_side`` rounded half up, at least 1
   (smaller images are compared as they are).  This keeps the cost a few ms per variant whatever
   the photo's size;
5. ``psnr = 10 log10(255² / MSE)`` of the two lumas (``inf`` when they are equal);
6. ``ssim``: Wang et al. 2004, the mean of the SSIM map with an 11x11 Gaussian window
   (σ 1.5, truncated at 3.5σ: radius int(3.5 * 1.5 + 0.5) = 5, weights normalised to sum 1),
   K1 0.01, K2 0.03, data range 255, population (co)variances.  The mean is taken over the map
   without its 5-pixel border (every window there lies inside the image, so border handling
   never enters; the filter itself reflects, ``d c b a | a b c d``).  This is scikit-image's
   ``structural_similarity(gaussian_weights=True, sigma=1.5, use_sample_covariance=False,
   data_range=255)``.  An image with a side under 11 px has no SSIM (NaN);
7. ``area_kept``: for ``cropping`` the kept share of the clean image's area, from the applied
   parameters (``height * width / (H * W)``); None for every other operator.

Precision (what the code does to agree with a float64 computation): the luma is computed in
thousandths, ``299 R + 587 G + 114 B``, exact integers in float32; the difference x - y of the two
full-size lumas is taken before resizing (the resize is linear), so PSNR stays exact even for a
one-level change of one pixel.  The SSIM map is computed in float32 with OpenCV's Gaussian filter
in a rearranged, equal form that stays accurate near identity: with d = x - y,
l = 1 - μd² / (μx² + μy² + C1) and cs = 1 - σd² / (σx² + σy² + C2), S = l * cs (μd = μx - μy,
σd² = σx² + σy² - 2σxy); each image is centred on its own mean before squaring.  The clean side
(its luma and window statistics) is computed once per query (:func:`image_reference`) and reused by
its 45 variants.

Text (:func:`measure_text` -> :class:`TextStrength`):

* ``char_edits``: Levenshtein distance (insert, delete, substitute, each 1) between the two
  questions as sequences of code points, exactly as given.  A swap of two letters counts 2.
* ``word_edits``: Levenshtein distance between their word sequences (words as the text operators
  define them, :data:`~snapbench.corruptions.entity.WORD_RE`, after NFC normalisation; case
  counts, punctuation and spacing do not).
* ``entity_intact``: the entity (as it appears in the clean question, the text operators'
  ``params["entity"]``) still occurs as whole words in the corrupted question: its words, NFC
  normalised and case-folded, are consecutive words of the corrupted question, a possessive
  ``'s`` not counting as part of a word.  None when there is no entity or it is not a whole word
  of the clean question either.
"""

from __future__ import annotations

import math
import threading
import unicodedata
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np

from ..core.errors import InputError
from ..core.records import Record
from .entity import WORD_RE

__all__ = [
    "ImageReference",
    "ImageStrength",
    "TextStrength",
    "compare_size",
    "entity_intact",
    "image_reference",
    "levenshtein",
    "luma",
    "measure_image",
    "measure_text",
]

#: Both lumas are compared at a long side of at most this many pixels.
_COMPARE_MAX_SIDE = 512
_SSIM_SIGMA = 1.5
_RADIUS = int(3.5 * _SSIM_SIGMA + 0.5)  # scipy/scikit-image truncate the Gaussian at 3.5 sigma
_KSIZE = 2 * _RADIUS + 1
#: the smallest side (px, at the comparison size) an image needs for an SSIM: one whole window
SSIM_MIN_SIDE = _KSIZE
_C1 = (0.01 * 255.0) ** 2
_C2 = (0.03 * 255.0) ** 2
_LUMA_MILLI = np.array([[299.0, 587.0, 114.0]], dtype=np.float32)
_ONES = np.ones((1, 3), dtype=np.float32)


# ------------------------------------------------------------------------------------------------
# records


@dataclass(frozen=True)
class ImageStrength:
    """Measured strength of one image variant (see the module docstring for the definitions).

    ``psnr`` is ``inf`` when the two lumas are equal at the comparison size, ``ssim`` NaN when the
    comparison image has a side under 11 px, ``area_kept`` None except for ``cropping``.
    """

    psnr: float
    ssim: float
    changed: float
    area_kept: float | None = None

    def to_json(self) -> dict[str, Any]:
        """The manifest's ``"measured"`` object: ``psnr`` (dB, 4 decimals; null when identical),
        ``ssim`` (6 decimals; null when undefined), ``changed`` and ``area_kept`` (6 decimals)."""
        return {
            "psnr": round(self.psnr, 4) if math.isfinite(self.psnr) else None,
            "ssim": round(self.ssim, 6) if math.isfinite(self.ssim) else None,
            "changed": round(self.changed, 6),
            "area_kept": None if self.area_kept is None else round(self.area_kept, 6),
        }


@dataclass(frozen=True)
class TextStrength(Record):
    """Measured strength of one corrupted question (see the module docstring); :meth:`to_json` is the
    manifest's ``"measured"`` object."""

    char_edits: int
    word_edits: int
    entity_intact: bool | None


@dataclass(frozen=True, eq=False)
class ImageReference:
    """The clean side of the comparison, computed once per query by :func:`image_reference`.

    ``rgb`` is the clean image, ``full`` its luma in thousandths at full size (exact integers),
    ``luma`` its luma at the comparison size; the rest are SSIM window statistics of ``luma``.
    """

    rgb: np.ndarray
    full: np.ndarray
    luma: np.ndarray
    mean: np.ndarray     # window mean of the luma centred on its mean
    var: np.ndarray      # window variance
    mean_sq: np.ndarray  # (window mean of the luma)²


# ------------------------------------------------------------------------------------------------
# images


def _check_rgb(image: Any, what: str) -> np.ndarray:
    if not isinstance(image, np.ndarray) or image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3:
        got = f"{image.dtype} array of shape {image.shape}" if isinstance(image, np.ndarray) else type(image).__name__
        raise InputError(f"measure: the {what} image must be an HxWx3 uint8 RGB array, got {got}")
    if image.shape[0] < 1 or image.shape[1] < 1:
        raise InputError(f"measure: the {what} image is empty ({image.shape[1]}x{image.shape[0]})")
    return image


def compare_size(height: int, width: int, max_side: int = _COMPARE_MAX_SIDE) -> tuple[int, int]:
    """``(height, width)`` at which an image of that size is compared: unchanged if its long side
    is at most ``max_side``, else each side scaled by ``max_side / long side``, rounded half up."""
    long_side = max(height, width)
    if long_side <= max_side:
        return height, width
    # integer round-half-up of side * max_side / long_side: no float ties
    return (max(1, (2 * height * max_side + long_side) // (2 * long_side)),
            max(1, (2 * width * max_side + long_side) // (2 * long_side)))


_LUMA_ROWS = 128  # rows converted at a time: the float32 RGB temporary stays small (<= 3 MB at 2048 px wide)


def _luma_milli(image: np.ndarray) -> np.ndarray:
    # 299 R + 587 G + 114 B: integers below 2**24, so exact in float32 (thousandths of luma).  In row
    # blocks, so that a 12 Mpx photo does not need a 144 MB float copy of its three channels.
    h = image.shape[0]
    if h <= _LUMA_ROWS:
        return cv2.transform(image.astype(np.float32), _LUMA_MILLI)
    out = np.empty(image.shape[:2], np.float32)
    for r in range(0, h, _LUMA_ROWS):
        cv2.transform(image[r : r + _LUMA_ROWS].astype(np.float32), _LUMA_MILLI, dst=out[r : r + _LUMA_ROWS])
    return out


def _fit(a: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    if a.shape[:2] == size:
        return a
    return cv2.resize(a, (size[1], size[0]), interpolation=cv2.INTER_AREA)


def _fit_scaled(milli: np.ndarray, out: np.ndarray) -> None:
    # thousandths at full size -> luma at the comparison size, written into ``out``
    if milli.shape == out.shape:
        np.multiply(milli, np.float32(0.001), out=out)
    else:
        cv2.resize(milli, (out.shape[1], out.shape[0]), dst=out, interpolation=cv2.INTER_AREA)
        out *= np.float32(0.001)


def luma(image: np.ndarray, max_side: int = _COMPARE_MAX_SIDE) -> np.ndarray:
    """BT.601 luma (float32, unrounded) of an RGB uint8 image at its comparison size
    (:func:`compare_size`, ``cv2.INTER_AREA``)."""
    image = _check_rgb(image, "input")
    size = compare_size(image.shape[0], image.shape[1], max_side)
    return _fit(_luma_milli(image), size) * np.float32(0.001)


def _blur(a: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    return cv2.GaussianBlur(a, (_KSIZE, _KSIZE), _SSIM_SIGMA, dst=out, sigmaY=_SSIM_SIGMA,
                            borderType=cv2.BORDER_REFLECT)


_scratch = threading.local()


def _buffers(shape: tuple[int, int], n: int) -> list[np.ndarray]:
    # Reused float32 work arrays of the comparison size (<= 1 MiB each; 5 for the SSIM map, then
    # the variant's luma and the difference), one set per thread: fresh
    # 1 MiB arrays are mapped and zeroed by the kernel on every call (glibc serves them with mmap),
    # which tripled the cost of one SSIM at 512x512.
    bufs = getattr(_scratch, "bufs", None)
    if bufs is None or bufs[0].shape != shape or len(bufs) < n:
        bufs = [np.empty(shape, np.float32) for _ in range(n)]
        _scratch.bufs = bufs
    return bufs[:n]


def image_reference(clean: np.ndarray) -> ImageReference:
    """Precompute the clean image's side of every comparison (its luma and SSIM statistics)."""
    clean = _check_rgb(clean, "clean")
    full = _luma_milli(clean)
    size = compare_size(clean.shape[0], clean.shape[1])
    y = _fit(full, size) * np.float32(0.001)
    centre = np.float32(y.mean(dtype=np.float64))
    c = y - centre
    mean = _blur(c)
    var = _blur(c * c) - mean * mean
    mu = mean + centre
    ref = ImageReference(clean, full, y, mean, var, mu * mu)
    for a in (full, y, mean, var, ref.mean_sq):
        a.setflags(write=False)  # shared by a query's variants (and threads): never written
    return ref


def _ssim(ref: ImageReference, y: np.ndarray, d: np.ndarray) -> float:
    h, w = y.shape
    if min(h, w) < SSIM_MIN_SIDE:
        return math.nan
    t, my, vy, dm, vd = _buffers((h, w), 7)[:5]
    centre = np.float32(y.mean(dtype=np.float64))
    np.subtract(y, centre, out=t)  # y centred on its mean
    _blur(t, my)
    np.multiply(t, t, out=t)
    _blur(t, vy)
    vy -= my * my                  # window variance of y
    my += centre                   # window mean of y
    _blur(d, dm)                   # window mean of d = x - y
    np.multiply(d, d, out=t)
    _blur(t, vd)
    dm *= dm
    vd -= dm                       # window variance of d
    # luminance term 1 - μd² / (μx² + μy² + C1), in dm
    my *= my
    my += ref.mean_sq
    my += _C1
    dm /= my
    np.subtract(1.0, dm, out=dm)
    # contrast-structure term 1 - σd² / (σx² + σy² + C2), in vd
    vy += ref.var
    vy += _C2
    vd /= vy
    np.subtract(1.0, vd, out=vd)
    dm *= vd
    r = _RADIUS
    return float(dm[r : h - r, r : w - r].mean(dtype=np.float64))


def _psnr(d: np.ndarray) -> float:
    sq = cv2.norm(d, cv2.NORM_L2SQR)  # accumulated in double
    if sq == 0.0:
        return math.inf
    return 10.0 * math.log10(255.0 * 255.0 * d.size / sq)


def _changed(clean: np.ndarray, variant: np.ndarray) -> float:
    # |clean - variant| summed over channels with uint8 saturation: non-zero iff any channel differs.
    diff = cv2.transform(cv2.absdiff(clean, variant), _ONES)
    return cv2.countNonZero(diff) / float(clean.shape[0] * clean.shape[1])


def _area_kept(operator: str | None, params: Mapping[str, Any] | None, shape: tuple[int, ...]) -> float | None:
    if operator != "cropping" or not params:
        return None
    try:
        return int(params["height"]) * int(params["width"]) / float(shape[0] * shape[1])
    except (KeyError, TypeError, ValueError):
        raise InputError(f"measure: cropping parameters lack an integer height/width: {dict(params)!r}") from None


def measure_image(
    clean: np.ndarray | ImageReference,
    variant: np.ndarray,
    *,
    operator: str | None = None,
    params: Mapping[str, Any] | None = None,
) -> ImageStrength:
    """Measured strength of ``variant`` against ``clean`` (an RGB uint8 array, or its
    :func:`image_reference` when one query's variants are measured in a row).

    ``operator`` and ``params`` (the parameters actually applied) give ``area_kept`` for
    ``cropping``.  Definitions: the module docstring.
    """
    ref = clean if isinstance(clean, ImageReference) else image_reference(clean)
    variant = _check_rgb(variant, "variant")
    h, w = ref.rgb.shape[:2]
    if variant.shape[:2] != (h, w):
        variant = cv2.resize(variant, (w, h), interpolation=cv2.INTER_AREA)
    full = _luma_milli(variant)
    y, d = _buffers(ref.luma.shape, 7)[5:]
    _fit_scaled(full, y)
    # The difference of the exact full-size lumas, resized (INTER_AREA is linear): precise even
    # when the images differ by one grey level in one pixel.
    np.subtract(ref.full, full, out=full)
    _fit_scaled(full, d)
    return ImageStrength(
        psnr=_psnr(d),
        ssim=_ssim(ref, y, d),
        changed=_changed(ref.rgb, variant),
        area_kept=_area_kept(operator, params, ref.rgb.shape),
    )


# ------------------------------------------------------------------------------------------------
# text


def levenshtein(a: Sequence[Hashable], b: Sequence[Hashable]) -> int:
    """Edit distance (insertions, deletions, substitutions, each 1) between two sequences."""
    # A shared prefix or suffix never takes part in an optimal alignment's edits: strip them, so a
    # local edit of a long question costs a small table.
    start = 0
    stop_a, stop_b = len(a), len(b)
    while start < stop_a and start < stop_b and a[start] == b[start]:
        start += 1
    while stop_a > start and stop_b > start and a[stop_a - 1] == b[stop_b - 1]:
        stop_a -= 1
        stop_b -= 1
    a, b = a[start:stop_a], b[start:stop_b]
    if len(a) < len(b):
        a, b = b, a
    if not b:
        return len(a)
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def _question_words(text: str) -> list[str]:
    """The words of ``text`` (NFC-normalised) as :data:`~snapbench.corruptions.entity.WORD_RE` finds them."""
    return WORD_RE.findall(unicodedata.normalize("NFC", text))


def _folded_words(text: str) -> list[str]:
    folded = unicodedata.normalize("NFC", unicodedata.normalize("NFC", text).casefold())
    words = WORD_RE.findall(folded)
    return [w[:-2] if len(w) > 2 and w[-2] in "'’" and w[-1] == "s" else w for w in words]


def _contains(words: list[str], part: list[str]) -> bool:
    n = len(part)
    return any(words[i : i + n] == part for i in range(len(words) - n + 1))


def entity_intact(clean: str, corrupted: str, entity: str | None) -> bool | None:
    """Whether ``entity`` survives as whole words in ``corrupted`` (rule: the module docstring);
    None when there is no entity or it is not a whole word of ``clean`` either."""
    if not entity:
        return None
    part = _folded_words(entity)
    if not part or not _contains(_folded_words(clean), part):
        return None
    return _contains(_folded_words(corrupted), part)


def measure_text(clean: str, corrupted: str, entity: str | None = None) -> TextStrength:
    """Measured strength of the corrupted question ``corrupted`` against ``clean``.

    ``entity`` is the entity as it appears in the clean question (the text operators record it as
    ``params["entity"]``).  Definitions: the module docstring.
    """
    for what, value in (("clean", clean), ("corrupted", corrupted)):
        if not isinstance(value, str):
            raise InputError(f"measure: the {what} question must be a str, got {type(value).__name__}")
    return TextStrength(
        char_edits=levenshtein(clean, corrupted),
        word_edits=levenshtein(_question_words(clean), _question_words(corrupted)),
        entity_intact=entity_intact(clean, corrupted, entity),
    )
