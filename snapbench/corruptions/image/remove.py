"""REMOVE primitive: operators that take image content away (cropping, downscale).

Both are the two built-in operators whose meaning is a size change, so their output is smaller
than the input and is *not* resized back (SPEC §3).  Output sizes are computed with
:func:`._params.scaled_side` -- ``max(1, floor(fraction * side + 0.5))`` (round half up, never empty) -- so
anyone can predict them from the grid.
"""

from __future__ import annotations

from typing import Any, Mapping

import cv2
import numpy as np

from ...core.errors import ConfigError
from ._params import fraction, known_keys, scaled_side
from .base import register_image_operator

__all__ = ["sample_cropping", "cropping", "sample_downscale", "downscale"]


# --- cropping -------------------------------------------------------------------------------------


def sample_cropping(rng: np.random.Generator, level: Mapping[str, Any], shape: tuple[int, int]) -> dict[str, Any]:
    """Draw the crop window: ``keep`` of each side at a uniformly random (seeded) offset."""
    known_keys("cropping", level, "keep")
    keep = fraction("cropping", level, "keep")
    h, w = int(shape[0]), int(shape[1])
    ch, cw = scaled_side(h, keep), scaled_side(w, keep)
    # Offsets are uniform over every valid position, so the kept region is anywhere in the frame
    # (a centred crop would never cut the subject off, which is what the operator models).
    top = int(rng.integers(0, h - ch + 1))
    left = int(rng.integers(0, w - cw + 1))
    return {**dict(level), "keep": keep, "top": top, "left": left, "height": ch, "width": cw}


# Severity table: DEFAULT_GRID["cropping"] (keep fraction per side).
@register_image_operator("cropping", sample=sample_cropping, changes_size=True)
def cropping(image: np.ndarray, params: Mapping[str, Any]) -> np.ndarray:
    """Keep the ``height`` x ``width`` window at (``top``, ``left``); the output is the smaller crop."""
    top, left = int(params["top"]), int(params["left"])
    ch, cw = int(params["height"]), int(params["width"])
    h, w = image.shape[:2]
    if top < 0 or left < 0 or ch < 1 or cw < 1 or top + ch > h or left + cw > w:
        raise ConfigError(
            f"cropping: window top={top} left={left} height={ch} width={cw} does not fit a {h}x{w} image "
            "(were these parameters drawn for another image size?)"
        )
    return np.ascontiguousarray(image[top : top + ch, left : left + cw])


# --- downscale ------------------------------------------------------------------------------------


def sample_downscale(rng: np.random.Generator, level: Mapping[str, Any], shape: tuple[int, int]) -> dict[str, Any]:
    """No randomness: record the scale and the resulting output size."""
    known_keys("downscale", level, "scale")
    scale = fraction("downscale", level, "scale")
    h, w = int(shape[0]), int(shape[1])
    return {**dict(level), "scale": scale, "height": scaled_side(h, scale), "width": scaled_side(w, scale)}


# Severity table: DEFAULT_GRID["downscale"] (scale per side).
@register_image_operator("downscale", sample=sample_downscale, changes_size=True)
def downscale(image: np.ndarray, params: Mapping[str, Any]) -> np.ndarray:
    """Area-average the image down to ``height`` x ``width`` (``scale`` of each side); it stays small.

    INTER_AREA is an exact box filter for shrinking, so fine detail is averaged away rather than
    aliased (which is what ``low_resolution``'s nearest-neighbour sampling models instead).
    """
    h, w = image.shape[:2]
    if "height" in params and "width" in params:
        oh, ow = int(params["height"]), int(params["width"])
    else:
        scale = fraction("downscale", params, "scale")
        oh, ow = scaled_side(h, scale), scaled_side(w, scale)
    if oh < 1 or ow < 1:
        raise ConfigError(f"downscale: output size {oh}x{ow} must be at least 1x1")
    if (oh, ow) == (h, w):
        return image.copy()
    return cv2.resize(image, (ow, oh), interpolation=cv2.INTER_AREA)
