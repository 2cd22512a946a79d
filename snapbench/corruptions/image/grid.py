"""The severity grid: one table of every image operator's parameters at every severity.

Defaults are the grid of the authors' release of SnapBench (SPEC §3), so results are comparable
with the paper.  Override values or add severities from one place: pass a grid to the functions
that take ``grid=``, or load one with :func:`load_grid` from a JSON or TOML file shaped like::

    [motion_blur.s2]        # TOML             {"motion_blur": {"s2": {"kernel": 15}},   # JSON
    kernel = 15                                 "defocus_blur": {"s4": {"sigma": 16.0}}}
    [defocus_blur.s4]
    sigma = 16.0

A file entry updates the named keys of an existing level and creates new levels; operators not
named keep their defaults.  An operator name that is neither in the base grid nor registered is an
error with the closest names (``[motionblur.s2]`` would otherwise be ignored silently).

This module holds parameters only and knows no registry: which operators exist and their
primitives are defined in :mod:`snapbench.core.conditions` (built-ins) and the registry (:mod:`.base`,
whose ``load_grid`` / ``merge_grid`` pass the registered names to :func:`merge_levels`).
"""

from __future__ import annotations

import copy
import json
import os
import re
from pathlib import Path
from typing import Any, Collection, Mapping

from ...core.errors import ConfigError
from ...core.userfiles import read_text
from ...core.validate import unknown_name

__all__ = ["Grid", "DEFAULT_GRID", "merge_levels", "read_grid_file", "severities_of"]

Grid = dict[str, dict[int, dict[str, Any]]]

DEFAULT_GRID: Grid = {
    "low_light": {  # multiply brightness, add per-pixel per-channel Gaussian noise (0-255 units)
        1: {"brightness": 0.70, "noise_sigma": 3.0},
        2: {"brightness": 0.40, "noise_sigma": 10.0},
        3: {"brightness": 0.15, "noise_sigma": 22.0},
    },
    "overexposure": {1: {"gain": 1.4}, 2: {"gain": 2.2}, 3: {"gain": 3.0}},
    "defocus_blur": {1: {"sigma": 1.0}, 2: {"sigma": 3.5}, 3: {"sigma": 10.0}},
    "motion_blur": {  # line kernel, angle in degrees (0 = horizontal)
        1: {"kernel": 5, "angle": 0.0},
        2: {"kernel": 13, "angle": 0.0},
        3: {"kernel": 25, "angle": 0.0},
    },
    "compression": {1: {"quality": 50}, 2: {"quality": 18}, 3: {"quality": 5}},  # JPEG, RGB-correct
    "low_resolution": {1: {"scale": 0.50}, 2: {"scale": 0.25}, 3: {"scale": 0.08}},  # nearest down+up
    "rotation": {1: {"angle": 10.0}, 2: {"angle": 45.0}, 3: {"angle": 180.0}},
    "perspective": {1: {"d": 0.10}, 2: {"d": 0.20}, 3: {"d": 0.30}},  # fraction of the short side
    "lens_distortion": {1: {"k1": -0.10}, 2: {"k1": -0.20}, 3: {"k1": -0.30}},
    "cropping": {1: {"keep": 0.90}, 2: {"keep": 0.65}, 3: {"keep": 0.40}},  # of each side, seeded offset
    "downscale": {1: {"scale": 0.20}, 2: {"scale": 0.10}, 3: {"scale": 0.04}},  # output stays small
    "watermark": {  # "SAMPLE", em size max(min_size, size_frac * w) px, grey (180,180,180), opacity /255
        1: {"layout": "single", "opacity": 80, "text": "SAMPLE", "size_frac": 0.16, "min_size": 16},
        2: {"layout": "tiled_center", "opacity": 160, "text": "SAMPLE", "size_frac": 0.16, "min_size": 16,
            "step_frac": 0.32},
        3: {"layout": "tiled_full", "opacity": 220, "text": "SAMPLE", "size_frac": 0.16, "min_size": 16,
            "step_frac": 0.16},
    },
    "mosaic": {  # regions of max(min_side, frac * side), nearest-sampled to side // cell, <= tries draws
        1: {"regions": 1, "frac": 0.20, "min_side": 80, "cell": 42, "tries": 40},
        2: {"regions": 2, "frac": 0.35, "min_side": 80, "cell": 42, "tries": 40},
        3: {"regions": 4, "frac": 0.55, "min_side": 80, "cell": 42, "tries": 40},
    },
    "scribble": {  # random-walk strokes, anti-aliased lines `thickness` px wide
        1: {"strokes": 3, "thickness": 2},
        2: {"strokes": 6, "thickness": 4},
        3: {"strokes": 9, "thickness": 5},
    },
    "ui_elements": {  # bar heights as fractions of the image height (0 = off)
        1: {"status_bar": 0.05, "nav_bar": 0.0, "address_bar": 0.0, "floating_button": False},
        2: {"status_bar": 0.09, "nav_bar": 0.08, "address_bar": 0.0, "floating_button": False},
        3: {"status_bar": 0.09, "nav_bar": 0.08, "address_bar": 0.05, "floating_button": True},
    },
}

_LEVEL_RE = re.compile(r"^s?(\d+)$")


def severities_of(grid: Mapping[str, Mapping[int, Any]]) -> dict[str, list[int]]:
    """Sorted severity levels per operator in ``grid``."""
    return {op: sorted(levels) for op, levels in grid.items()}


def merge_levels(base: Mapping[str, Mapping[int, Mapping[str, Any]]], override: Mapping[str, Any],
                 known: Collection[str]) -> Grid:
    """Return a new grid: ``base`` updated by ``override`` (levels given as 1 / "1" / "s1").

    ``known`` are the operator names ``override`` may name; any other name raises
    :class:`ConfigError` with the closest known names: a misspelt operator must not leave the
    intended one at its defaults unnoticed.
    """
    known = list(known)
    out: Grid = copy.deepcopy({op: dict(levels) for op, levels in base.items()})
    for op, levels in override.items():
        if op not in known:
            raise ConfigError(unknown_name("image operator", op, known, where=" in the grid")
                              + " (register an operator of your own before giving its levels)", param="grid")
        if not isinstance(levels, Mapping):
            raise ConfigError(f"grid entry for {op!r} must map severities to parameter tables", param="grid")
        target = out.setdefault(op, {})
        for level, params in levels.items():
            m = _LEVEL_RE.match(str(level))
            if not m or int(m[1]) < 1:
                raise ConfigError(f"grid entry {op}.{level}: severity must look like 's1', '2', ...", param="grid")
            if not isinstance(params, Mapping):
                raise ConfigError(f"grid entry {op}.{level}: parameters must be a table", param="grid")
            target.setdefault(int(m[1]), {}).update(copy.deepcopy(dict(params)))
    return out


def read_grid_file(path: str | os.PathLike) -> dict[str, Any]:
    """The table of a JSON (``.json``) or TOML (``.toml``) grid file, unmerged; errors name the file
    (text decoded through :mod:`snapbench.core.userfiles`, so bad bytes are an error with line and column)."""
    path = Path(path)
    text = read_text(path, what="grid file")
    try:
        if path.suffix.lower() == ".toml":
            import tomllib

            data = tomllib.loads(text)
        else:
            data = json.loads(text)
    except Exception as exc:  # noqa: BLE001 - report any parse error with the file name
        raise ConfigError(f"not a valid grid file: {exc}", path=path) from None
    if not isinstance(data, dict):
        raise ConfigError("grid file must hold a table of operators", path=path)
    return data
