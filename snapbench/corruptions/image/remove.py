"""REMOVE primitive: operators that take image content away (cropping, downscale).

Both are the two built-in operators whose meaning is a size change, so their output is smaller
than the input and is *not* resized back (SPEC §3).  Output sizes are computed with
:func:`.base.scaled_side` -- ``max(1, floor(fraction * side + 0.5))`` (round half up, never empty) -- so
anyone can predict them from the grid.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import cv2
import numpy as np

from ...core.errors import ConfigError
from .base import DiagnoseFlag, Knob, builtin_operator, fraction, known_keys, scaled_side

__all__ = ["cropping", "downscale"]


# --- cropping -------------------------------------------------------------------------------------

# keep: fraction of each side, at a seeded offset
_CROPPING_LEVELS = {1: {"keep": 0.90}, 2: {"keep": 0.65}, 3: {"keep": 0.40}}


def _sample_cropping(rng: np.random.Generator, level: Mapping[str, Any], shape: tuple[int, int]) -> dict[str, Any]:
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


def _cropping_at(params: Mapping[str, Any], value: float, shape: tuple[int, int]) -> dict[str, Any]:
    # knob update: height and width follow keep; the offsets keep their drawn share of the slack
    h, w = int(shape[0]), int(shape[1])
    ch0, cw0 = int(params["height"]), int(params["width"])
    ch, cw = scaled_side(h, value), scaled_side(w, value)

    def offset(drawn: int, slack0: int, slack: int) -> int:
        # the drawn offset's share of the slack, kept (half when the level left no slack to draw in)
        share = drawn / slack0 if slack0 > 0 else 0.5
        return min(slack, max(0, int(math.floor(share * slack + 0.5))))

    return {**params, "keep": value, "height": ch, "width": cw,
            "top": offset(int(params["top"]), h - ch0, h - ch), "left": offset(int(params["left"]), w - cw0, w - cw)}


@builtin_operator("cropping", levels=_CROPPING_LEVELS, sample=_sample_cropping,
                  knob=Knob("keep", 0.05, 1.0, update=_cropping_at), changes_size=True)
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

# scale of each side; the output stays small
_DOWNSCALE_LEVELS = {1: {"scale": 0.20}, 2: {"scale": 0.10}, 3: {"scale": 0.04}}


def _sample_downscale(rng: np.random.Generator, level: Mapping[str, Any], shape: tuple[int, int]) -> dict[str, Any]:
    """No randomness: record the scale and the resulting output size."""
    known_keys("downscale", level, "scale")
    scale = fraction("downscale", level, "scale")
    h, w = int(shape[0]), int(shape[1])
    return {**dict(level), "scale": scale, "height": scaled_side(h, scale), "width": scaled_side(w, scale)}


def _downscale_at(params: Mapping[str, Any], value: float, shape: tuple[int, int]) -> dict[str, Any]:
    # knob update: height and width follow scale
    return {**params, "scale": value, "height": scaled_side(shape[0], value), "width": scaled_side(shape[1], value)}


@builtin_operator("downscale", levels=_DOWNSCALE_LEVELS, sample=_sample_downscale,
                  knob=Knob("scale", 0.01, 1.0, log=True, update=_downscale_at), changes_size=True,
                  diagnose=DiagnoseFlag("low_resolution", (1, 2, 3), why="recall 1.00 at every severity"))
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
