"""Each image operator's continuous knob: the one parameter a severity target searches (issue #17).

A :class:`Knob` names the parameter that sets an operator's strength, its range, whether it is an
integer or searched on a log scale, and how the operator's *drawn* parameters become the
parameters at another knob value (:attr:`Knob.update`).  Every random draw of ``sample`` (noise
seed, crop offset, mosaic boxes, scribble paths) stays fixed: only the knob and the parameters
derived from it change.  At the level's own knob value every update returns the drawn parameters
unchanged, so a target search passes through the default variant.

The built-in operators' knobs are declared here (:data:`BUILTIN_KNOBS`); the operator table
(:mod:`.base`) attaches them to the built-in records, and a user operator declares its own with
``register_image_operator(..., knob=Knob(...))`` -- or has none, and a target then keeps its
default level, flagged not reached.  The updates use only the operators' parameters and their
public ``sample`` functions (handed to :meth:`Knob.params_at` by the caller), never their internals.

==================  ============  ================  =======================================================
operator            knob          range             what follows it
==================  ============  ================  =======================================================
low_light           brightness    0 .. 1            noise_sigma in proportion to the darkening 1 - brightness
overexposure        gain          1 .. 16, log      --
defocus_blur        sigma         0.1 .. 64, log    --
motion_blur         kernel        1 .. 401, int     angle kept
compression         quality       1 .. 100, int     --
low_resolution      scale         0.01 .. 1, log    --
rotation            angle         0 .. 180          --
perspective         d             0 .. 0.45         --
lens_distortion     k1            -0.33 .. 0        --
cropping            keep          0.05 .. 1         height, width; the offsets keep their drawn share of the slack
downscale           scale         0.01 .. 1, log    height, width
watermark           opacity       0 .. 255, int     layout, size and origins kept
mosaic              frac          0.01 .. 1         each box keeps its drawn centre (moved inside the image); grid
scribble            thickness     1 .. 255, int     strokes, paths and colours kept
ui_elements         bar_height    0 .. 0.3          every enabled bar keeps its height relative to the tallest
==================  ============  ================  =======================================================
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...core.errors import ConfigError
from ._params import scaled_side

__all__ = ["BUILTIN_KNOBS", "Knob", "builtin_knob", "check_knob"]

UpdateFn = Callable[[Mapping[str, Any], float, tuple[int, int]], dict[str, Any]]


@dataclass(frozen=True)
class Knob:
    """An operator's continuous strength parameter.

    ``name`` is what the manifest's ``target.knob`` records (for the built-ins, the parameter
    itself, except ``ui_elements``' ``bar_height``); ``lo`` / ``hi`` its range; ``integer`` knobs
    take whole values, ``log`` ones are bisected geometrically (``lo > 0``).  ``update(params,
    value, shape)`` returns the complete parameters at ``value`` from the drawn ``params`` of an
    image of ``shape`` (height, width); None sets ``params[name] = value``.  With ``resample``,
    ``update`` returns the operator's *level* parameters instead and the operator's own ``sample``
    makes the parameters from them (for an operator whose ``sample`` draws nothing and derives
    the rest, such as ``ui_elements``' drawing list).  Use module-level functions: records are sent
    to worker processes by pickling.
    """

    name: str
    lo: float
    hi: float
    integer: bool = False
    log: bool = False
    update: UpdateFn | None = None
    resample: bool = False

    def params_at(self, params: Mapping[str, Any], value: float, shape: tuple[int, int],
                  sample: Callable[..., dict[str, Any]] | None = None) -> dict[str, Any]:
        """The operator's parameters at knob ``value`` (see :attr:`update`); ``sample`` is the
        operator's ``sample`` function, which a ``resample`` knob needs."""
        value = int(value) if self.integer else float(value)
        if self.update is None:
            return {**params, self.name: value}
        out = self.update(params, value, shape)
        if not self.resample or out is params:
            return dict(out)
        if sample is None:
            raise ConfigError(f"knob {self.name!r} resamples: pass the operator's sample function", param="knob")
        # the sample of a resampling knob's operator draws nothing: the generator is never read
        return sample(np.random.default_rng(0), out, (int(shape[0]), int(shape[1])))


def check_knob(operator: str, knob: Any) -> Knob | None:
    """``knob`` validated for ``operator`` (None: the operator has no knob); :class:`ConfigError` otherwise."""
    if knob is None:
        return None
    if not isinstance(knob, Knob):
        raise ConfigError(f"image operator {operator!r}: knob must be a snapbench.corruptions.image.Knob or None, "
                          f"got {type(knob).__name__}", param="knob")
    lo, hi = knob.lo, knob.hi
    if not (isinstance(knob.name, str) and knob.name):
        raise ConfigError(f"image operator {operator!r}: the knob needs a name", param="knob")
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ConfigError(f"image operator {operator!r}: knob {knob.name!r} needs a finite range with lo < hi, "
                          f"got [{lo}, {hi}]", param="knob")
    if knob.integer and (lo != int(lo) or hi != int(hi)):
        raise ConfigError(f"image operator {operator!r}: integer knob {knob.name!r} needs integer ends, got "
                          f"[{lo}, {hi}]", param="knob")
    if knob.log and lo <= 0:
        raise ConfigError(f"image operator {operator!r}: log-scale knob {knob.name!r} needs lo > 0, got {lo}",
                          param="knob")
    if knob.update is not None and not callable(knob.update):
        raise ConfigError(f"image operator {operator!r}: knob {knob.name!r} update must be callable", param="knob")
    if knob.resample and knob.update is None:
        raise ConfigError(f"image operator {operator!r}: knob {knob.name!r} resamples, so it needs an update that "
                          "returns the level parameters", param="knob")
    return knob


# ------------------------------------------------------------------------------------------------
# updates of the built-ins (module level: picklable)


def _low_light(params: Mapping[str, Any], value: float, shape: tuple[int, int]) -> dict[str, Any]:
    # the noise grows with the darkening, anchored at the level's own (brightness, noise) pair
    b0, n0 = float(params["brightness"]), float(params["noise_sigma"])
    noise = n0 if b0 >= 1.0 else n0 * max(0.0, 1.0 - value) / (1.0 - b0)
    return {**params, "brightness": value, "noise_sigma": n0 if value == b0 else noise}


def _cropping(params: Mapping[str, Any], value: float, shape: tuple[int, int]) -> dict[str, Any]:
    h, w = int(shape[0]), int(shape[1])
    ch0, cw0 = int(params["height"]), int(params["width"])
    ch, cw = scaled_side(h, value), scaled_side(w, value)

    def offset(drawn: int, slack0: int, slack: int) -> int:
        # the drawn offset's share of the slack, kept (half when the level left no slack to draw in)
        share = drawn / slack0 if slack0 > 0 else 0.5
        return min(slack, max(0, int(math.floor(share * slack + 0.5))))

    return {**params, "keep": value, "height": ch, "width": cw,
            "top": offset(int(params["top"]), h - ch0, h - ch), "left": offset(int(params["left"]), w - cw0, w - cw)}


def _downscale(params: Mapping[str, Any], value: float, shape: tuple[int, int]) -> dict[str, Any]:
    return {**params, "scale": value, "height": scaled_side(shape[0], value), "width": scaled_side(shape[1], value)}


def _mosaic(params: Mapping[str, Any], value: float, shape: tuple[int, int]) -> dict[str, Any]:
    # sample_mosaic's sizing rule at the new fraction; each drawn box keeps its centre
    H, W = int(shape[0]), int(shape[1])
    min_side, cell = int(params["min_side"]), int(params["cell"])
    rw, rh = min(W, max(min_side, int(value * W))), min(H, max(min_side, int(value * H)))
    boxes = []
    for top, left, bh, bw in params["boxes"]:
        t = min(max(0, int(top) + (int(bh) - rh) // 2), H - rh)
        lf = min(max(0, int(left) + (int(bw) - rw) // 2), W - rw)
        boxes.append([t, lf, rh, rw])
    return {**params, "frac": value, "grid": [max(1, rh // cell), max(1, rw // cell)], "boxes": boxes}


_UI_BARS = ("status_bar", "nav_bar", "address_bar")


def _ui_elements(params: Mapping[str, Any], value: float, shape: tuple[int, int]) -> Mapping[str, Any]:
    # the level at the new height (sample_ui_elements then lays the bars out); the drawn params when unchanged
    bars = {k: float(params.get(k) or 0.0) for k in _UI_BARS}
    tallest = max(bars.values())
    if tallest > 0:
        level = {k: v * value / tallest for k, v in bars.items()}
    else:  # no bar in the level: the knob sets the status bar
        level = {"status_bar": value, "nav_bar": 0.0, "address_bar": 0.0}
    if value == tallest:
        return params
    level["floating_button"] = bool(params.get("floating_button", False))
    return level


#: The knob of every built-in operator (see the module docstring's table).
BUILTIN_KNOBS: dict[str, Knob] = {
    "low_light": Knob("brightness", 0.0, 1.0, update=_low_light),
    "overexposure": Knob("gain", 1.0, 16.0, log=True),
    "defocus_blur": Knob("sigma", 0.1, 64.0, log=True),
    "motion_blur": Knob("kernel", 1, 401, integer=True),
    "compression": Knob("quality", 1, 100, integer=True),
    "low_resolution": Knob("scale", 0.01, 1.0, log=True),
    "rotation": Knob("angle", 0.0, 180.0),
    "perspective": Knob("d", 0.0, 0.45),
    "lens_distortion": Knob("k1", -0.33, 0.0),
    "cropping": Knob("keep", 0.05, 1.0, update=_cropping),
    "downscale": Knob("scale", 0.01, 1.0, log=True, update=_downscale),
    "watermark": Knob("opacity", 0, 255, integer=True),
    "mosaic": Knob("frac", 0.01, 1.0, update=_mosaic),
    "scribble": Knob("thickness", 1, 255, integer=True),
    "ui_elements": Knob("bar_height", 0.0, 0.3, update=_ui_elements, resample=True),
}


def builtin_knob(operator: str) -> Knob | None:
    """The knob declared for the built-in ``operator`` (None for any other name)."""
    return BUILTIN_KNOBS.get(operator)
