"""ADD primitive: operators that put something on top of the photo (watermark, mosaic, scribble,
ui_elements), with the geometry of the authors' release of SnapBench.

The release composites Pillow overlays: text and UI bars are drawn on a transparent RGBA layer
(``ImageDraw``) and laid over the photo with ``Image.alpha_composite``.  These operators reproduce
that byte for byte without drawing a full-size layer per call, through the shared text rendering
and exact integer blending of :mod:`._overlay` (bundled DejaVu Sans Bold, basic layout).  Which
Pillow / FreeType rendered the text is reported by :func:`renderer_versions` (re-exported here; a
different FreeType may move anti-aliased edge pixels).

As everywhere in snapbench, ``sample_<op>(rng, level, shape)`` draws every random choice and returns
the complete JSON-serialisable parameters; ``<op>(image, params)`` is a pure function of them.
Every operator only touches the regions its parameters describe; the rest of the image is
bit-identical to the input.  Colours are RGB.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import cv2
import numpy as np
from PIL import Image, ImageDraw

from ...core.errors import ConfigError
from ._buffers import BytesLRU
from ._overlay import (
    FONT_FILE,
    blend,
    blend_premultiplied,
    clip,
    font,
    premultiply,
    renderer_versions,
    text_mask,
    union,
)
from .base import Knob, builtin_operator, fraction_value, integer_value, known_keys, level_value, rgb

__all__ = [
    "FONT_FILE",
    "renderer_versions",
    "watermark",
    "mosaic",
    "scribble",
    "ui_elements",
]


# --- watermark ------------------------------------------------------------------------------------

_WM_LAYOUTS = ("single", "tiled_center", "tiled_full")
_WM_MAX_WORDS = 10_000  # a tiny step_frac would otherwise write millions of origins into the manifest


def _sample_watermark(rng: np.random.Generator, level: Mapping[str, Any], shape: tuple[int, int]) -> dict[str, Any]:
    """The word's em size and the text origins of every copy (no randomness: the release's layout is
    fixed by the image size).  ``origins`` are Pillow text origins [x, y] (left edge, ascender line).
    """
    op = "watermark"
    known_keys(op, level, "layout", "opacity", "text", "size_frac", "min_size", "step_frac", "color")
    H, W = int(shape[0]), int(shape[1])
    layout = level_value(op, level, "layout")
    if layout not in _WM_LAYOUTS:
        raise ConfigError(f"image operator 'watermark': layout must be one of {', '.join(_WM_LAYOUTS)}, got {layout!r}")
    opacity = integer_value(op, level_value(op, level, "opacity"), "opacity", 0, 255)
    text = level_value(op, level, "text")
    if not isinstance(text, str) or not text.strip() or not text.isprintable():
        raise ConfigError(f"image operator 'watermark': text must be a non-empty printable string, got {text!r}")
    size_frac = fraction_value(op, level_value(op, level, "size_frac"), "size_frac")
    min_size = integer_value(op, level_value(op, level, "min_size"), "min_size", 1, 4096)
    color = rgb(op, level.get("color", (180, 180, 180)), "color")
    size = max(min_size, int(size_frac * W))
    params: dict[str, Any] = {**dict(level), "layout": layout, "opacity": opacity, "text": text,
                              "size_frac": size_frac, "min_size": min_size, "color": color, "size": size}
    if layout == "single":
        if "step_frac" in level:
            raise ConfigError("image operator 'watermark': step_frac applies to the tiled layouts only, not to 'single'")
        origins = [[W // 4, H // 2 - size // 2]]
    else:
        step_frac = fraction_value(op, level_value(op, level, "step_frac"), "step_frac")
        step = max(1, int(step_frac * W))
        params["step_frac"] = step_frac
        params["step"] = step
        if layout == "tiled_center":  # rows over the middle half, words from a quarter width left of it
            ys, xs = range(H // 4, 3 * H // 4, step), range(-W // 4, W, step)
        else:  # the whole image, from half a frame above and to the left
            ys, xs = range(-H // 2, H, step), range(-W // 2, W, step)
        if len(ys) * len(xs) > _WM_MAX_WORDS:
            raise ConfigError(f"image operator 'watermark': step_frac {step_frac} tiles {len(ys) * len(xs)} words on a "
                              f"{W}x{H} image (at most {_WM_MAX_WORDS}); use a larger step_frac")
        origins = [[x, y] for y in ys for x in xs]
    params["origins"] = origins
    return params


def _rows(origins: Sequence[Sequence[int]]) -> list[tuple[int, tuple[int, ...]]]:
    """Consecutive origins sharing a y, as (y, xs) in drawing order."""
    rows: list[tuple[int, list[int]]] = []
    for x, y in origins:
        if rows and rows[-1][0] == int(y):
            rows[-1][1].append(int(x))
        else:
            rows.append((int(y), [int(x)]))
    return [(y, tuple(xs)) for y, xs in rows]


# Severity table: the word "SAMPLE" in DejaVu Sans Bold, em size
# max(min_size, size_frac * w) = max(16, 0.16 w) px (the word spans ~0.72 w), grey (180, 180, 180),
# opacity out of 255:
#   s1  single        opacity  80   one word, origin (w/4, h/2 - size/2)
#   s2  tiled_center  opacity 160   rows every step_frac 0.32 w from h/4 to 3h/4, words every 0.32 w from -w/4
#   s3  tiled_full    opacity 220   rows and words every 0.16 w from (-w/2, -h/2) over the whole image
# Knob: opacity 0 .. 255 (integer); layout, size and origins kept.
_WATERMARK_LEVELS = {
    1: {"layout": "single", "opacity": 80, "text": "SAMPLE", "size_frac": 0.16, "min_size": 16},
    2: {"layout": "tiled_center", "opacity": 160, "text": "SAMPLE", "size_frac": 0.16, "min_size": 16,
        "step_frac": 0.32},
    3: {"layout": "tiled_full", "opacity": 220, "text": "SAMPLE", "size_frac": 0.16, "min_size": 16,
        "step_frac": 0.16},
}


@builtin_operator("watermark", levels=_WATERMARK_LEVELS, sample=_sample_watermark,
                  knob=Knob("opacity", 0, 255, integer=True))
def watermark(image: np.ndarray, params: Mapping[str, Any]) -> np.ndarray:
    """Composite the text at every origin of ``origins`` as one semi-transparent layer.

    Overlapping words share the layer's alpha (it never exceeds ``opacity``), as when the release
    draws them all on one RGBA layer.  A row of words is accumulated once and reused for every row
    with the same x positions; rows whose bands overlap fall back to a full-size layer.
    """
    text, size, opacity = str(params["text"]), int(params["size"]), int(params["opacity"])
    colour = np.asarray(params["color"], np.uint16).reshape(1, 1, 3)
    out = image.copy()
    H, W = out.shape[:2]
    mask, ox, oy = text_mask(text, size)
    origins = params["origins"]
    if mask.size == 0 or opacity == 0 or not origins:
        return out
    th = mask.shape[0]
    rows = _rows(origins)
    ys = sorted(y for y, _ in rows)
    if all(b - a >= th for a, b in zip(ys, ys[1:])):
        strips: dict[tuple[int, ...], tuple[int, np.ndarray, np.ndarray] | None] = {}
        for y, xs in rows:
            if clip(out.shape, y + oy, 0, th, W) is None:
                continue
            if xs not in strips:
                alpha = np.zeros((th, W), np.uint8)
                for x in xs:
                    union(alpha, 0, x + ox, mask, opacity)
                inked = np.flatnonzero(alpha.any(axis=0))  # blend only the columns with ink
                strips[xs] = None if inked.size == 0 else (
                    int(inked[0]), *premultiply(colour, alpha[:, inked[0] : inked[-1] + 1]))
            strip = strips[xs]
            if strip is not None:
                blend_premultiplied(out, y + oy, strip[0], strip[1], strip[2])
        return out
    alpha = np.zeros((H, W), np.uint8)
    for x, y in origins:
        union(alpha, int(y) + oy, int(x) + ox, mask, opacity)
    inked = np.flatnonzero(alpha.any(axis=1))
    if inked.size:
        y0, y1 = int(inked[0]), int(inked[-1]) + 1
        blend(out, y0, 0, colour, alpha[y0:y1])
    return out


# --- mosaic ---------------------------------------------------------------------------------------


def _sample_mosaic(rng: np.random.Generator, level: Mapping[str, Any], shape: tuple[int, int]) -> dict[str, Any]:
    """Draw the boxes [top, left, height, width] of ``regions`` mosaic regions.

    Each region is max(min_side, frac * side) on each side (at most the image).  Its top-left corner
    is drawn uniformly, up to ``tries`` times, until the region's centre lies outside the central
    half [0.25, 0.75]^2 of the image; the last draw is kept otherwise (so large regions, whose
    centre cannot leave the central half, land uniformly).  Regions may overlap.
    """
    op = "mosaic"
    known_keys(op, level, "regions", "frac", "min_side", "cell", "tries")
    H, W = int(shape[0]), int(shape[1])
    n = integer_value(op, level_value(op, level, "regions"), "regions", 0, 1000)
    frac = fraction_value(op, level_value(op, level, "frac"), "frac")
    min_side = integer_value(op, level_value(op, level, "min_side"), "min_side", 1)
    cell = integer_value(op, level_value(op, level, "cell"), "cell", 1)
    tries = integer_value(op, level_value(op, level, "tries"), "tries", 1, 10000)
    rw, rh = min(W, max(min_side, int(frac * W))), min(H, max(min_side, int(frac * H)))
    boxes: list[list[int]] = []
    for _ in range(n):
        lefts = rng.integers(0, W - rw + 1, size=tries)
        tops = rng.integers(0, H - rh + 1, size=tries)
        cx, cy = (lefts + rw / 2) / W, (tops + rh / 2) / H
        outside = np.flatnonzero((cx < 0.25) | (cx > 0.75) | (cy < 0.25) | (cy > 0.75))
        i = int(outside[0]) if outside.size else tries - 1
        boxes.append([int(tops[i]), int(lefts[i]), rh, rw])
    return {**dict(level), "regions": n, "frac": frac, "min_side": min_side, "cell": cell, "tries": tries,
            "grid": [max(1, rh // cell), max(1, rw // cell)], "boxes": boxes}


def _mosaic_at(params: Mapping[str, Any], value: float, shape: tuple[int, int]) -> dict[str, Any]:
    # knob update: sample_mosaic's sizing rule at the new fraction; each drawn box keeps its centre
    # (moved inside the image), and the grid follows
    H, W = int(shape[0]), int(shape[1])
    min_side, cell = int(params["min_side"]), int(params["cell"])
    rw, rh = min(W, max(min_side, int(value * W))), min(H, max(min_side, int(value * H)))
    boxes = []
    for top, left, bh, bw in params["boxes"]:
        t = min(max(0, int(top) + (int(bh) - rh) // 2), H - rh)
        lf = min(max(0, int(left) + (int(bw) - rw) // 2), W - rw)
        boxes.append([t, lf, rh, rw])
    return {**params, "frac": value, "grid": [max(1, rh // cell), max(1, rw // cell)], "boxes": boxes}


# Severity table: regions of max(min_side 80, frac * side) px on each side,
# placed by up to 40 draws preferring centres outside the middle half, each reduced to
# (side // cell 42) samples per side by nearest-neighbour sampling and scaled back up nearest:
#   s1  1 region,  frac 0.20      s2  2 regions, frac 0.35      s3  4 regions, frac 0.55
_MOSAIC_LEVELS = {
    1: {"regions": 1, "frac": 0.20, "min_side": 80, "cell": 42, "tries": 40},
    2: {"regions": 2, "frac": 0.35, "min_side": 80, "cell": 42, "tries": 40},
    3: {"regions": 4, "frac": 0.55, "min_side": 80, "cell": 42, "tries": 40},
}


@builtin_operator("mosaic", levels=_MOSAIC_LEVELS, sample=_sample_mosaic,
                  knob=Knob("frac", 0.01, 1.0, update=_mosaic_at))
def mosaic(image: np.ndarray, params: Mapping[str, Any]) -> np.ndarray:
    """Pixelate each box [top, left, height, width] of ``boxes`` in order (a later box works on the
    already pixelated pixels where boxes overlap): the box is reduced to ``grid`` [rows, columns]
    samples taken at the cell centres (nearest neighbour, as Pillow's NEAREST; no averaging), then
    enlarged back with nearest neighbour."""
    gh, gw = (int(v) for v in params["grid"])
    if gh < 1 or gw < 1:
        raise ConfigError(f"mosaic: grid must be two integers >= 1, got {params['grid']!r}")
    out = image.copy()
    for top, left, h, w in params["boxes"]:
        box = clip(out.shape, int(top), int(left), int(h), int(w))
        if box is None:
            continue
        y0, x0, y1, x1 = box
        roi = out[y0:y1, x0:x1]
        small = cv2.resize(roi, (min(gw, x1 - x0), min(gh, y1 - y0)), interpolation=cv2.INTER_NEAREST_EXACT)
        cv2.resize(small, (x1 - x0, y1 - y0), dst=roi, interpolation=cv2.INTER_NEAREST_EXACT)
    return out


# --- scribble -------------------------------------------------------------------------------------

# Five pen colours (RGB).  The release names black, red, blue, green and amber; these values give
# its measured strength (mean PSNR within ~0.7 dB of release_strength.json; pure primaries are ~1 dB
# too strong).
_SCRIBBLE_COLORS = ((0, 0, 0), (220, 20, 20), (20, 60, 220), (20, 160, 20), (255, 180, 0))
_STEPS = (4, 10)  # steps per stroke, inclusive
_STEP_FRAC = 0.2  # each step moves up to +-w/5 and +-h/5


def _sample_scribble(rng: np.random.Generator, level: Mapping[str, Any], shape: tuple[int, int]) -> dict[str, Any]:
    """Draw ``strokes`` random walks (points in (x, y) pixels) and a pen colour for each.

    A stroke starts at a uniform pixel and takes 4-10 steps of up to +-w/5, +-h/5 pixels, each new
    point clamped to the image.
    """
    op = "scribble"
    known_keys(op, level, "strokes", "thickness")
    H, W = int(shape[0]), int(shape[1])
    n = integer_value(op, level_value(op, level, "strokes"), "strokes", 0, 10000)
    thickness = integer_value(op, level_value(op, level, "thickness"), "thickness", 1, 1000)
    mx, my = int(W * _STEP_FRAC), int(H * _STEP_FRAC)
    paths = []
    for _ in range(n):
        colour = list(_SCRIBBLE_COLORS[int(rng.integers(len(_SCRIBBLE_COLORS)))])
        x, y = int(rng.integers(0, W)), int(rng.integers(0, H))
        steps = int(rng.integers(_STEPS[0], _STEPS[1] + 1))
        dx = rng.integers(-mx, mx + 1, size=steps)
        dy = rng.integers(-my, my + 1, size=steps)
        points = [[x, y]]
        for sx, sy in zip(dx.tolist(), dy.tolist()):
            x, y = min(max(x + sx, 0), W - 1), min(max(y + sy, 0), H - 1)
            points.append([x, y])
        paths.append({"color": colour, "points": points})
    return {**dict(level), "strokes": n, "thickness": thickness, "paths": paths}


# Severity table: random-walk strokes (4-10 steps of up to +-w/5, +-h/5) in one of five pen
# colours, anti-aliased lines ``thickness`` px wide:
#   s1  3 strokes, 2 px      s2  6 strokes, 4 px      s3  9 strokes, 5 px
# Knob: thickness 1 .. 255 (integer); strokes, paths and colours kept.
_SCRIBBLE_LEVELS = {
    1: {"strokes": 3, "thickness": 2},
    2: {"strokes": 6, "thickness": 4},
    3: {"strokes": 9, "thickness": 5},
}


@builtin_operator("scribble", levels=_SCRIBBLE_LEVELS, sample=_sample_scribble,
                  knob=Knob("thickness", 1, 255, integer=True))
def scribble(image: np.ndarray, params: Mapping[str, Any]) -> np.ndarray:
    """Draw each path of ``paths`` as an anti-aliased open polyline ``thickness`` pixels wide."""
    out = image.copy()
    thickness = int(params["thickness"])
    for path in params["paths"]:
        pts = np.asarray(path["points"], np.int32).reshape(-1, 1, 2)
        cv2.polylines(out, [pts], False, tuple(int(c) for c in path["color"]), thickness, cv2.LINE_AA)
    return out


# --- ui_elements ----------------------------------------------------------------------------------

_BAR_RGBA = [30, 30, 30, 245]
_ADDRESS_RGBA = [240, 240, 240, 210]
_BUTTON_RGBA = [66, 133, 244, 200]
_TEXT_RGBA = [255, 255, 255, 255]
_URL_RGBA = [80, 80, 80, 255]
_BAR_TEXT_FRAC, _URL_TEXT_FRAC, _MIN_TEXT = 0.035, 0.025, 8  # text em size, fraction of h (pixels)
_MARGIN_FRAC = 0.04  # text inset from the left / right edge, fraction of w
_BUTTON_RADIUS, _BUTTON_INSET = 22, 50  # pixels: a fixed-size button, as on a phone screen
_URL = "https://www.example.com/photo"
_NAV_SYMBOLS = ("\u25c1", "\u25cb", "\u25a1")  # back, home, recent: white triangle, circle, square


def _bar_height(op: str, level: Mapping[str, Any], name: str, H: int) -> int | None:
    value = level_value(op, level, name)
    if isinstance(value, bool):
        raise ConfigError(f"image operator 'ui_elements': {name!r} is a height (fraction of the image height, "
                          f"0 = off), not a switch; got {value!r}")
    frac = fraction_value(op, value, name, zero_ok=True)
    return None if frac == 0 else int(frac * H)


def _sample_ui_elements(rng: np.random.Generator, level: Mapping[str, Any], shape: tuple[int, int]) -> dict[str, Any]:
    """The drawing list of the enabled elements (no randomness), in drawing order: ``rect`` and
    ``ellipse`` boxes [x0, y0, x1, y1] (inclusive, as ``ImageDraw`` takes them) and ``text`` items
    with origin ``xy``, Pillow ``anchor`` and em ``size``; each with an RGBA ``fill``."""
    op = "ui_elements"
    known_keys(op, level, "status_bar", "nav_bar", "address_bar", "floating_button")
    H, W = int(shape[0]), int(shape[1])
    status = _bar_height(op, level, "status_bar", H)
    nav = _bar_height(op, level, "nav_bar", H)
    address = _bar_height(op, level, "address_bar", H)
    button = level_value(op, level, "floating_button")
    if not isinstance(button, bool):
        raise ConfigError(f"image operator 'ui_elements': 'floating_button' must be true or false, got {button!r}")
    text_size = max(_MIN_TEXT, int(_BAR_TEXT_FRAC * H))
    url_size = max(_MIN_TEXT, int(_URL_TEXT_FRAC * H))
    margin = int(_MARGIN_FRAC * W)
    draw: list[dict[str, Any]] = []

    def text(s: str, x: int, y: int, anchor: str, size: int, fill: list[int]) -> None:
        draw.append({"text": s, "xy": [x, y], "anchor": anchor, "size": size, "fill": fill})

    if status is not None:
        draw.append({"rect": [0, 0, W, status], "fill": _BAR_RGBA})
        text("9:41", margin, status // 2, "lm", text_size, _TEXT_RGBA)
        text("100%", W - margin, status // 2, "rm", text_size, _TEXT_RGBA)
    if address is not None:
        top = status or 0
        draw.append({"rect": [0, top, W, top + address], "fill": _ADDRESS_RGBA})
        text(_URL, margin, top + address // 2, "lm", url_size, _URL_RGBA)
    if nav is not None:
        draw.append({"rect": [0, H - nav, W, H], "fill": _BAR_RGBA})
        for k, symbol in enumerate(_NAV_SYMBOLS, start=1):
            text(symbol, k * W // 4, H - nav // 2, "mm", text_size, _TEXT_RGBA)
    if button:
        cx, cy, r = W - _BUTTON_INSET, H // 2, _BUTTON_RADIUS
        draw.append({"ellipse": [cx - r, cy - r, cx + r, cy + r], "fill": _BUTTON_RGBA})
    return {**dict(level), "floating_button": button, "draw": draw}


def _ints(value: Any, n: int, what: str) -> tuple[int, ...]:
    try:
        out = tuple(int(v) for v in value)
    except (TypeError, ValueError):
        out = ()
    if len(out) != n:
        raise ConfigError(f"ui_elements: {what} must be {n} integers, got {value!r}")
    return out


def _ui_items(params: Mapping[str, Any]) -> tuple:
    """The drawing list as nested tuples (hashable: the cache key of the rendered layer), checked."""
    items = []
    for d in params["draw"]:
        fill = _ints(d.get("fill"), 4, "fill")
        if "text" in d:
            items.append(("text", str(d["text"]), _ints(d["xy"], 2, "xy"), str(d["anchor"]), int(d["size"]), fill))
        elif "rect" in d or "ellipse" in d:
            kind = "rect" if "rect" in d else "ellipse"
            items.append((kind, _ints(d[kind], 4, kind), fill))
        else:
            raise ConfigError(f"ui_elements: drawing item {d!r} is neither a rect, an ellipse nor a text")
    return tuple(items)


def _ui_boxes(items: tuple) -> list[tuple[int, int, int, int]]:
    """Pixel boxes [x0, y0, x1, y1) each item may touch (text: its ink box from the font)."""
    boxes = []
    for item in items:
        if item[0] == "text":
            _, s, (x, y), anchor, size, _ = item
            left, top, right, bottom = font(size).getbbox(s, anchor=anchor)
            boxes.append((x + int(left), y + int(top), x + int(right), y + int(bottom)))
        else:
            x0, y0, x1, y1 = item[1]
            boxes.append((x0, y0, x1 + 1, y1 + 1))
    return boxes


#: Bytes of rendered ui_elements layers a process keeps (12 bytes a pixel of the rows they cover:
#: a severity-target search renders one layer per candidate, each up to 4 image sizes).
_UI_LAYER_CACHE_BYTES = 64 * 2**20
UI_LAYERS = BytesLRU(_UI_LAYER_CACHE_BYTES)


def _ui_layers(H: int, W: int, items: tuple) -> tuple[tuple[int, np.ndarray, np.ndarray], ...]:
    """:func:`_render_ui_layers`, from :data:`UI_LAYERS` (rendered once per image size and items)."""
    return UI_LAYERS.get((int(H), int(W), items), lambda: _render_ui_layers(H, W, items))


def _render_ui_layers(H: int, W: int, items: tuple) -> tuple[tuple[int, np.ndarray, np.ndarray], ...]:
    """The overlay as (top, 255 - alpha, premultiplied colour) bands over the rows it covers.

    Each band is drawn with Pillow on its own transparent canvas, with every item shifted up by the
    band's top: integer shifts leave Pillow's rasterisation unchanged, so the bands equal the
    corresponding rows of one full-size layer without allocating it.
    """
    spans = sorted((max(y0, 0), min(y1, H)) for _, y0, _, y1 in _ui_boxes(items) if min(y1, H) > max(y0, 0))
    merged: list[list[int]] = []
    for y0, y1 in spans:
        if merged and y0 <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], y1)
        else:
            merged.append([y0, y1])
    layers = []
    for top, bottom in merged:
        canvas = Image.new("RGBA", (W, bottom - top), (0, 0, 0, 0))
        draw = ImageDraw.Draw(canvas)
        for item in items:
            if item[0] == "text":
                _, s, (x, y), anchor, size, fill = item
                draw.text((x, y - top), s, fill=fill, font=font(size), anchor=anchor)
            else:
                x0, y0, x1, y1 = item[1]
                shape = getattr(draw, "rectangle" if item[0] == "rect" else "ellipse")
                shape([x0, y0 - top, x1, y1 - top], fill=item[2])
        rgba = np.asarray(canvas)
        inv, premult = premultiply(rgba[..., :3], rgba[..., 3])
        inv.setflags(write=False)
        premult.setflags(write=False)
        layers.append((top, inv, premult))
    return tuple(layers)


_UI_BARS = ("status_bar", "nav_bar", "address_bar")


def _ui_elements_at(params: Mapping[str, Any], value: float, shape: tuple[int, int]) -> Mapping[str, Any]:
    # knob update (bar_height, a resampling knob): the level at the new height, every enabled bar
    # keeping its height relative to the tallest (sample_ui_elements then lays the bars out); the
    # drawn params when unchanged
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


# Severity table: bar heights as fractions of the image height (0 = off).  Bars (30, 30, 30) at
# alpha 245 the full width, text 3.5% of h; address bar (240, 240, 240) at alpha 210 with a
# dark-grey URL (2.5% of h); button (66, 133, 244) at alpha 200, radius 22 px, centred at (w - 50, h/2):
#   s1  status bar 5% of h ("9:41", "100%")
#   s2  status bar 9% + navigation bar 8% at the bottom (three symbols)
#   s3  as s2 + address bar 5% under the status bar + floating button
_UI_LEVELS = {
    1: {"status_bar": 0.05, "nav_bar": 0.0, "address_bar": 0.0, "floating_button": False},
    2: {"status_bar": 0.09, "nav_bar": 0.08, "address_bar": 0.0, "floating_button": False},
    3: {"status_bar": 0.09, "nav_bar": 0.08, "address_bar": 0.05, "floating_button": True},
}


@builtin_operator("ui_elements", levels=_UI_LEVELS, sample=_sample_ui_elements,
                  knob=Knob("bar_height", 0.0, 0.3, update=_ui_elements_at, resample=True))
def ui_elements(image: np.ndarray, params: Mapping[str, Any]) -> np.ndarray:
    """Composite phone-interface overlays: the items of ``params["draw"]`` drawn in order on one
    transparent RGBA layer, as the release does."""
    out = image.copy()
    H, W = out.shape[:2]
    for top, inv, premult in _ui_layers(H, W, _ui_items(params)):
        blend_premultiplied(out, top, 0, inv, premult)
    return out
