"""ADD primitive: operators that put something on top of the photo (watermark, mosaic, scribble,
ui_elements).

Each operator only touches the regions it reports in its parameters (tile positions, block boxes,
stroke points, bar heights), so the rest of the image is bit-identical to the input and the
work is proportional to the overlay, not to the image.  All drawing uses OpenCV on the RGB array
directly; colours are therefore given and recorded in RGB order.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, Mapping, Sequence

import cv2
import numpy as np

from .base import register_image_operator
from .degrade import _known
from .remove import scaled_side

__all__ = [
    "sample_watermark",
    "watermark",
    "sample_mosaic",
    "mosaic",
    "sample_scribble",
    "scribble",
    "sample_ui_elements",
    "ui_elements",
    "ui_regions",
]


def _level(operator: str, level: Mapping[str, Any], name: str) -> Any:
    try:
        return level[name]
    except KeyError:
        raise ValueError(f"image operator {operator!r}: severity parameters lack {name!r} (got {dict(level)})") from None


def _rgb(operator: str, value: Any, name: str) -> list[int]:
    try:
        rgb = [int(c) for c in value]
    except (TypeError, ValueError):
        rgb = []
    if len(rgb) != 3 or not all(0 <= c <= 255 for c in rgb):
        raise ValueError(f"image operator {operator!r}: {name!r} must be three integers 0-255 (RGB), got {value!r}")
    return rgb


def _premultiply(colour: np.ndarray, alpha: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(255 - alpha, colour * alpha + 128) as uint16, the two terms :func:`_blend_premultiplied` needs."""
    a = alpha.astype(np.uint16)[..., None]
    return (255 - a), colour.astype(np.uint16) * a + 128


def _blend_premultiplied(out: np.ndarray, top: int, left: int, inv_alpha: np.ndarray, premult: np.ndarray) -> None:
    """In place: ``out = round((out * (255 - a) + colour * a) / 255)`` over a tile at (top, left).

    The tile may hang over any border; only its visible part is touched.  Integer arithmetic keeps
    the result exact and identical on every platform; ``(t + (t >> 8)) >> 8`` with the +128 already
    in ``premult`` is the exact round(x / 255) for x <= 255 * 255, without a division.
    """
    h, w = inv_alpha.shape[:2]
    H, W = out.shape[:2]
    y0, x0 = max(top, 0), max(left, 0)
    y1, x1 = min(top + h, H), min(left + w, W)
    if y0 >= y1 or x0 >= x1:
        return
    roi = out[y0:y1, x0:x1]
    t = roi.astype(np.uint16)
    t *= inv_alpha[y0 - top : y1 - top, x0 - left : x1 - left]
    t += premult[y0 - top : y1 - top, x0 - left : x1 - left]
    t += t >> 8
    t >>= 8
    roi[...] = t


def _blend(out: np.ndarray, top: int, left: int, colour: np.ndarray, alpha: np.ndarray) -> None:
    """Alpha-blend a colour tile (h, w, 3) with alpha (h, w) in 0..255 into ``out`` at (top, left)."""
    _blend_premultiplied(out, top, left, *_premultiply(colour, alpha))


# --- watermark ------------------------------------------------------------------------------------

# One font for rendering and for measuring; OpenCV's built-in faces need no font files.  (The
# glyphs differ between OpenCV major versions, so bytes are reproducible for a given OpenCV.)
_WM_FONT = cv2.FONT_HERSHEY_DUPLEX
_WM_COLOR = (255, 255, 255)  # light text ...
_WM_OUTLINE_COLOR = (40, 40, 40)  # ... with a thin dark outline, as stock-photo watermarks look
# Lattice of a tiled watermark, in tile sizes: the gaps keep every word legible as a word.
_WM_PERIOD_X = 1.35
_WM_PERIOD_Y = 2.2


@lru_cache(maxsize=32)
def _watermark_tile(
    text: str, font_scale: float, thickness: int, outline: int, color: tuple, outline_color: tuple, opacity: int
) -> tuple[np.ndarray, np.ndarray]:
    """Render ``text`` once, cropped to the ink, as the (255 - alpha, premultiplied colour) pair of
    :func:`_blend_premultiplied`.

    Cached because a tiled watermark repeats the same tile and every query of a given size and
    severity renders the same one; the arrays are made read-only so a cached tile cannot be
    modified by a caller.
    """
    (tw, th), base = cv2.getTextSize(text, _WM_FONT, font_scale, thickness + 2 * outline)
    pad = thickness + 2 * outline + 2
    canvas = (th + base + 2 * pad, tw + 2 * pad)
    org = (pad, pad + th)
    halo = np.zeros(canvas, np.uint8)
    fill = np.zeros(canvas, np.uint8)
    if outline > 0:
        cv2.putText(halo, text, org, _WM_FONT, font_scale, 255, thickness + 2 * outline, cv2.LINE_AA)
    cv2.putText(fill, text, org, _WM_FONT, font_scale, 255, thickness, cv2.LINE_AA)
    np.maximum(halo, fill, out=halo)
    ys, xs = np.nonzero(halo)
    if ys.size == 0:  # too small to render anything (tiny images): an empty 1x1 tile
        colour = np.zeros((1, 1, 3), np.uint8)
        alpha = np.zeros((1, 1), np.uint8)
    else:
        sl = np.s_[ys.min() : ys.max() + 1, xs.min() : xs.max() + 1]
        f = fill[sl].astype(np.uint16)[..., None]
        dark = np.asarray(outline_color, np.uint16)
        light = np.asarray(color, np.uint16)
        # inside the glyph the light colour, on the outline ring the dark one, anti-aliased between
        colour = ((dark * (255 - f) + light * f + 127) // 255).astype(np.uint8)
        alpha = ((halo[sl].astype(np.uint16) * int(opacity) + 127) // 255).astype(np.uint8)
    inv_alpha, premult = _premultiply(colour, alpha)
    inv_alpha.setflags(write=False)
    premult.setflags(write=False)
    return inv_alpha, premult


def _watermark_style(width: int, text: str, width_frac: float) -> tuple[float, int, int]:
    """Font scale, stroke thickness and outline width so the text spans ``width_frac`` of the width."""
    ref_w = cv2.getTextSize(text, _WM_FONT, 1.0, 1)[0][0]
    font_scale = round(max(width_frac * width / max(ref_w, 1), 1e-3), 4)
    thickness = max(1, round(font_scale * 2.5))  # bold: a thin Hershey stroke reads as a caption
    outline = max(1, round(thickness / 3))
    return font_scale, thickness, outline


def _lattice(start: float, stop: float, period: float, size: int, phase: float) -> list[int]:
    """Tile origins ``phase + k * period`` whose tiles intersect [start, stop)."""
    k0 = math.floor((start - size - phase) / period) + 1
    out = []
    k = k0
    while phase + k * period < stop:
        out.append(int(round(phase + k * period)))
        k += 1
    return out


def sample_watermark(rng: np.random.Generator, level: Mapping[str, Any], shape: tuple[int, int]) -> dict[str, Any]:
    """Size the text from the image width and draw the tile positions.

    ``single``: one word, its centre uniform in the middle half of the image (where stock-photo
    watermarks sit, so it covers the subject at least partly).  ``tiled_center``: a staggered
    lattice with a seeded phase; only tiles that lie wholly inside the middle half are kept (no cut
    words inside the image; one centred tile if none fits).  ``tiled_full``: the same lattice over the
    whole image, cut at the borders.
    """
    _known("watermark", level, "layout", "opacity", "text", "width_frac", "color", "outline_color")
    H, W = int(shape[0]), int(shape[1])
    layout = str(_level("watermark", level, "layout"))
    if layout not in ("single", "tiled_center", "tiled_full"):
        raise ValueError(f"image operator 'watermark': layout must be single, tiled_center or tiled_full, got {layout!r}")
    opacity = int(_level("watermark", level, "opacity"))
    if not 0 <= opacity <= 255:
        raise ValueError(f"image operator 'watermark': opacity must be in 0..255, got {opacity}")
    text = str(_level("watermark", level, "text"))
    if not text or not all(32 <= ord(ch) < 127 for ch in text):
        raise ValueError(f"image operator 'watermark': text must be non-empty printable ASCII (Hershey fonts), got {text!r}")
    width_frac = float(_level("watermark", level, "width_frac"))
    if not width_frac > 0:
        raise ValueError(f"image operator 'watermark': width_frac must be > 0, got {width_frac}")
    color = _rgb("watermark", level.get("color", _WM_COLOR), "color")
    outline_color = _rgb("watermark", level.get("outline_color", _WM_OUTLINE_COLOR), "outline_color")

    font_scale, thickness, outline = _watermark_style(W, text, width_frac)
    tile = _watermark_tile(text, font_scale, thickness, outline, tuple(color), tuple(outline_color), opacity)[0]
    th, tw = tile.shape[:2]
    positions: list[list[int]] = []
    if layout == "single":
        cy = rng.uniform(0.25, 0.75) * H
        cx = rng.uniform(0.25, 0.75) * W
        positions.append([int(round(cy - th / 2)), int(round(cx - tw / 2))])
    else:
        py, px = _WM_PERIOD_Y * th, _WM_PERIOD_X * tw
        phase_y, phase_x = float(rng.uniform(0, py)), float(rng.uniform(0, px))
        if layout == "tiled_center":
            ry0, rx0, ry1, rx1 = H // 4, W // 4, H // 4 + max(H // 2, 1), W // 4 + max(W // 2, 1)
        else:
            ry0, rx0, ry1, rx1 = 0, 0, H, W
        for row, top in enumerate(_lattice(ry0, ry1, py, th, ry0 + phase_y)):
            # stagger alternate rows by half a period, like brick-laid stock watermarks
            shift = 0.5 * px if row % 2 else 0.0
            for left in _lattice(rx0, rx1, px, tw, rx0 + (phase_x + shift) % px):
                inside = top >= ry0 and left >= rx0 and top + th <= ry1 and left + tw <= rx1
                if layout == "tiled_full" or inside:
                    positions.append([top, left])
        if not positions:  # middle half smaller than one word: one centred word
            positions.append([int(round((ry0 + ry1 - th) / 2)), int(round((rx0 + rx1 - tw) / 2))])
    return {
        **dict(level),
        "layout": layout,
        "opacity": opacity,
        "text": text,
        "width_frac": width_frac,
        "color": color,
        "outline_color": outline_color,
        "font_scale": font_scale,
        "thickness": thickness,
        "outline": outline,
        "tile_size": [int(th), int(tw)],
        "positions": positions,
    }


# Severity table: DEFAULT_GRID["watermark"] (layout, opacity, text, width_frac).
@register_image_operator("watermark", primitive="add", sample=sample_watermark)
def watermark(image: np.ndarray, params: Mapping[str, Any]) -> np.ndarray:
    """Blend the semi-transparent text tile at every ``positions`` entry (top, left); tiles are cut at
    the image border.  Only the tiles' rectangles are touched."""
    inv_alpha, premult = _watermark_tile(
        str(params["text"]),
        float(params["font_scale"]),
        int(params["thickness"]),
        int(params["outline"]),
        tuple(int(c) for c in params["color"]),
        tuple(int(c) for c in params["outline_color"]),
        int(params["opacity"]),
    )
    out = image.copy()
    for top, left in params["positions"]:
        _blend_premultiplied(out, int(top), int(left), inv_alpha, premult)
    return out


# --- mosaic ---------------------------------------------------------------------------------------

# Candidate placements drawn per block; the one overlapping earlier blocks least is kept, so blocks
# do not overlap whenever that is possible (and overlap as little as the draws allow otherwise).
_MOSAIC_CANDIDATES = 16


def sample_mosaic(rng: np.random.Generator, level: Mapping[str, Any], shape: tuple[int, int]) -> dict[str, Any]:
    """Draw ``blocks`` boxes of ``block_frac`` of each side and the effective cell size.

    ``cell`` is in pixels of the image as given (the release's 42 px), not scaled with the image,
    except that it is capped at half the block's shorter side so every block keeps at least 2x2
    cells on small images (a one-cell block would be a flat patch, a different corruption).
    """
    _known("mosaic", level, "blocks", "block_frac", "cell")
    H, W = int(shape[0]), int(shape[1])
    n = int(_level("mosaic", level, "blocks"))
    frac = float(_level("mosaic", level, "block_frac"))
    cell_req = int(_level("mosaic", level, "cell"))
    if n < 0 or not 0 < frac <= 1 or cell_req < 1:
        raise ValueError(f"image operator 'mosaic': need blocks >= 0, 0 < block_frac <= 1, cell >= 1; got {dict(level)}")
    bh, bw = scaled_side(H, frac), scaled_side(W, frac)
    cell = max(1, min(cell_req, min(bh, bw) // 2))
    boxes: list[list[int]] = []
    for _ in range(n):
        tops = rng.integers(0, H - bh + 1, size=_MOSAIC_CANDIDATES)
        lefts = rng.integers(0, W - bw + 1, size=_MOSAIC_CANDIDATES)
        overlap = np.zeros(_MOSAIC_CANDIDATES, np.int64)
        for t, l, h, w in boxes:
            oy = np.clip(np.minimum(tops + bh, t + h) - np.maximum(tops, t), 0, None)
            ox = np.clip(np.minimum(lefts + bw, l + w) - np.maximum(lefts, l), 0, None)
            overlap += oy * ox
        i = int(np.argmin(overlap))  # first of the least-overlapping candidates
        boxes.append([int(tops[i]), int(lefts[i]), bh, bw])
    return {**dict(level), "blocks": n, "block_frac": frac, "cell": cell, "cell_requested": cell_req, "boxes": boxes}


def _pixelate(roi: np.ndarray, cell: int) -> None:
    """In place: replace each ``cell`` x ``cell`` square of ``roi`` (anchored at its top-left; the
    last row and column of cells may be narrower) by its mean colour.

    The ROI is cut into the whole-cell part and the partial right / bottom strips so that every
    INTER_AREA call has an integer factor, where OpenCV computes the exact box mean; the nearest
    upscale by the same integer factor then writes each mean over exactly its cell, straight into
    the output view (no full-size temporaries).
    """
    h, w = roi.shape[:2]
    nyf, nxf = h // cell, w // cell
    fy, fx = nyf * cell, nxf * cell
    area, nearest = cv2.INTER_AREA, cv2.INTER_NEAREST
    if nyf and nxf:
        means = cv2.resize(roi[:fy, :fx], (nxf, nyf), interpolation=area)
        cv2.resize(means, (fx, fy), dst=roi[:fy, :fx], interpolation=nearest)
    if nyf and fx < w:
        means = cv2.resize(roi[:fy, fx:], (1, nyf), interpolation=area).reshape(nyf, 1, 1, 3)
        roi[:fy, fx:].reshape(nyf, cell, w - fx, 3)[...] = means
    if fy < h and nxf:
        means = cv2.resize(roi[fy:, :fx], (nxf, 1), interpolation=area).reshape(1, nxf, 1, 3)
        roi[fy:, :fx].reshape(h - fy, nxf, cell, 3)[...] = means
    if fy < h and fx < w:
        roi[fy:, fx:] = cv2.resize(roi[fy:, fx:], (1, 1), interpolation=area).reshape(3)


# Severity table: DEFAULT_GRID["mosaic"] (blocks, block_frac, cell).
@register_image_operator("mosaic", primitive="add", sample=sample_mosaic)
def mosaic(image: np.ndarray, params: Mapping[str, Any]) -> np.ndarray:
    """Pixelate each box [top, left, height, width] of ``boxes`` in order with ``cell``-pixel cells
    (a later box overrides an earlier one where they overlap)."""
    cell = int(params["cell"])
    if cell < 1:
        raise ValueError(f"mosaic: cell must be >= 1, got {cell}")
    out = image.copy()
    H, W = out.shape[:2]
    for top, left, h, w in params["boxes"]:
        y0, x0 = max(int(top), 0), max(int(left), 0)
        y1, x1 = min(int(top) + int(h), H), min(int(left) + int(w), W)
        if y0 < y1 and x0 < x1:
            _pixelate(out[y0:y1, x0:x1], cell)
    return out


# --- scribble -------------------------------------------------------------------------------------

# Pen colours (RGB) a person doodling on a photo would pick.
_SCRIBBLE_PALETTE = (
    (230, 30, 35),  # red
    (30, 80, 230),  # blue
    (15, 15, 15),  # black
    (250, 215, 0),  # yellow
    (20, 170, 60),  # green
    (250, 250, 250),  # white
)


def _stroke(rng: np.random.Generator, H: int, W: int) -> list[list[int]]:
    """A free-hand stroke: a random walk whose turning rate itself drifts (smooth curvature).

    Step and length scale with the image diagonal so a stroke looks the same at any resolution;
    the walk bounces off the borders so the whole stroke stays on the photo.
    """
    diag = math.hypot(H, W)
    n = int(rng.integers(16, 33))
    step = diag * float(rng.uniform(0.012, 0.025))
    x, y = float(rng.uniform(0.1, 0.9) * (W - 1)), float(rng.uniform(0.1, 0.9) * (H - 1))
    heading = float(rng.uniform(0, 2 * math.pi))
    turns = rng.normal(0.0, 0.3, size=n)
    rate = 0.0
    pts = [[int(round(x)), int(round(y))]]
    for i in range(1, n):
        rate = 0.75 * rate + float(turns[i])
        heading += rate
        dx, dy = step * math.cos(heading), step * math.sin(heading)
        x, y = x + dx, y + dy
        if not 0 <= x <= W - 1:
            x = min(max(x, 0.0), W - 1.0)
            heading = math.pi - heading
        if not 0 <= y <= H - 1:
            y = min(max(y, 0.0), H - 1.0)
            heading = -heading
        pts.append([int(round(x)), int(round(y))])
    return pts


def sample_scribble(rng: np.random.Generator, level: Mapping[str, Any], shape: tuple[int, int]) -> dict[str, Any]:
    """Draw ``strokes`` free-hand polylines (points in (x, y) pixels) and a palette colour for each."""
    _known("scribble", level, "strokes", "thickness")
    H, W = int(shape[0]), int(shape[1])
    n = int(_level("scribble", level, "strokes"))
    thickness = int(_level("scribble", level, "thickness"))
    if n < 0 or thickness < 1:
        raise ValueError(f"image operator 'scribble': need strokes >= 0 and thickness >= 1; got {dict(level)}")
    strokes = []
    for _ in range(n):
        colour = list(_SCRIBBLE_PALETTE[int(rng.integers(len(_SCRIBBLE_PALETTE)))])
        strokes.append({"color": colour, "points": _stroke(rng, H, W)})
    return {**dict(level), "strokes": n, "thickness": thickness, "paths": strokes}


# Severity table: DEFAULT_GRID["scribble"] (strokes, thickness in px).
@register_image_operator("scribble", primitive="add", sample=sample_scribble)
def scribble(image: np.ndarray, params: Mapping[str, Any]) -> np.ndarray:
    """Draw each path of ``paths`` as an anti-aliased open polyline ``thickness`` pixels wide."""
    out = image.copy()
    thickness = int(params["thickness"])
    for path in params["paths"]:
        pts = np.asarray(path["points"], np.int32).reshape(-1, 1, 2)
        colour = tuple(int(c) for c in path["color"])
        cv2.polylines(out, [pts], False, colour, thickness, cv2.LINE_AA)
    return out


# --- ui_elements ----------------------------------------------------------------------------------

# Sub-element sizes that the grid does not name (the grid switches elements on and sizes the bars).
_ADDRESS_BAR_FRAC = 0.07  # browser toolbar height, fraction of image height
_BUTTON_FRAC = 0.14  # floating action button diameter, fraction of the shorter side
_UI_FONT = cv2.FONT_HERSHEY_SIMPLEX
_BAR_COLORS = ((0, 0, 0), (18, 18, 18), (32, 33, 36), (22, 30, 46))  # dark system bars
_ACCENT_COLORS = ((33, 150, 243), (233, 30, 99), (76, 175, 80), (255, 152, 0), (103, 58, 183))
_URLS = (
    "www.example.com",
    "shop.example.com/item/48213",
    "m.example.org/gallery",
    "news.example.net/2024/photo",
    "search.example.com/?q=photo",
)
_MIN_DETAIL_PX = 8  # bars thinner than this get no icons or text (nothing legible fits)


def _fraction_px(side: int, frac: Any, name: str) -> int:
    frac = float(frac)
    if not 0 <= frac < 1:
        raise ValueError(f"image operator 'ui_elements': {name!r} must be a fraction in [0, 1), got {frac}")
    return 0 if frac == 0 else scaled_side(side, frac)


def sample_ui_elements(rng: np.random.Generator, level: Mapping[str, Any], shape: tuple[int, int]) -> dict[str, Any]:
    """Pixel geometry of the enabled elements plus their seeded details (clock, battery, colours, URL).

    Every detail is drawn whether or not its element is enabled, so turning one element on or off in
    the grid does not reshuffle the others.
    """
    _known("ui_elements", level, "status_bar", "nav_bar", "address_bar", "floating_button")
    H, W = int(shape[0]), int(shape[1])
    status_h = _fraction_px(H, _level("ui_elements", level, "status_bar"), "status_bar")
    nav_h = _fraction_px(H, _level("ui_elements", level, "nav_bar"), "nav_bar")
    address = bool(_level("ui_elements", level, "address_bar"))
    button = bool(_level("ui_elements", level, "floating_button"))
    hour, minute = int(rng.integers(1, 13)), int(rng.integers(0, 60))
    battery = round(float(rng.uniform(0.15, 1.0)), 2)
    bar_color = list(_BAR_COLORS[int(rng.integers(len(_BAR_COLORS)))])
    nav_color = list(_BAR_COLORS[int(rng.integers(len(_BAR_COLORS)))])
    accent = list(_ACCENT_COLORS[int(rng.integers(len(_ACCENT_COLORS)))])
    url = _URLS[int(rng.integers(len(_URLS)))]
    address_h = scaled_side(H, _ADDRESS_BAR_FRAC) if address else 0
    address_h = min(address_h, max(H - status_h - nav_h, 0))
    params: dict[str, Any] = {
        **dict(level),
        "status_height": status_h,
        "nav_height": nav_h,
        "address_height": address_h,
        "time": f"{hour}:{minute:02d}",
        "battery": battery,
        "bar_color": bar_color,
        "nav_color": nav_color,
        "accent_color": accent,
        "url": url,
        "button": None,
    }
    if button:
        r = max(1, scaled_side(min(H, W), _BUTTON_FRAC) // 2)
        margin = scaled_side(min(H, W), 0.05)
        params["button"] = [int(H - nav_h - margin - r), int(W - margin - r), int(r)]  # centre y, x, radius
    return params


def _text_scale(height_px: float) -> float:
    """Font scale whose digit height is ``height_px``."""
    return max(height_px, 1.0) / cv2.getTextSize("0", _UI_FONT, 1.0, 1)[0][1]


def _status_bar(out: np.ndarray, p: Mapping[str, Any]) -> None:
    h, W = out.shape[:2]
    out[:] = p["bar_color"]
    if h < _MIN_DETAIL_PX:
        return
    fg = (240, 240, 240)
    lw = max(1, h // 16)
    scale = _text_scale(0.45 * h)
    cv2.putText(out, str(p["time"]), (int(0.04 * W), int(0.72 * h)), _UI_FONT, scale, fg, max(1, round(scale * 1.6)), cv2.LINE_AA)
    # right to left: battery, wifi, signal
    bw, bh = int(0.9 * h), max(3, int(0.42 * h))
    x1 = W - int(0.04 * W)
    x0, y0 = x1 - bw, (h - bh) // 2
    nub = max(1, bh // 3)
    cv2.rectangle(out, (x0, y0), (x1, y0 + bh), fg, lw, cv2.LINE_AA)
    cv2.rectangle(out, (x1, y0 + nub), (x1 + max(1, lw + 1), y0 + bh - nub), fg, -1)
    level_w = int((bw - 4 * lw) * float(p["battery"]))
    if level_w > 0:
        cv2.rectangle(out, (x0 + 2 * lw, y0 + 2 * lw), (x0 + 2 * lw + level_w, y0 + bh - 2 * lw), fg, -1)
    # wifi: a dot under two arcs (arcs of an upward quarter circle; angles run clockwise, y down)
    cx, cy = x0 - int(0.55 * h), int(0.72 * h)
    cv2.circle(out, (cx, cy - max(1, h // 20)), max(1, h // 20), fg, -1, cv2.LINE_AA)
    for k in (2, 3):
        rad = int(0.14 * h * k)
        cv2.ellipse(out, (cx, cy), (rad, rad), 0, 225, 315, fg, max(1, round(0.06 * h)), cv2.LINE_AA)
    sx = cx - int(0.55 * h) - int(0.6 * h)
    bar_w = max(1, int(0.1 * h))
    for k in range(4):
        top = cy - int(0.12 * h * (k + 1))
        bx = sx + k * int(0.16 * h)
        cv2.rectangle(out, (bx, top), (bx + bar_w, cy), fg, -1)


def _nav_bar(out: np.ndarray, p: Mapping[str, Any]) -> None:
    h, W = out.shape[:2]
    out[:] = p["nav_color"]
    if h < _MIN_DETAIL_PX:
        return
    fg = (225, 225, 225)
    lw = max(1, h // 20)
    cy, s = h // 2, max(2, int(0.16 * h))
    back_x, home_x, rec_x = int(0.25 * W), W // 2, int(0.75 * W)
    tri = np.array([[back_x - s, cy], [back_x + s, cy - s], [back_x + s, cy + s]], np.int32)
    cv2.polylines(out, [tri], True, fg, lw, cv2.LINE_AA)
    cv2.circle(out, (home_x, cy), s, fg, lw, cv2.LINE_AA)
    cv2.rectangle(out, (rec_x - s, cy - s), (rec_x + s, cy + s), fg, lw, cv2.LINE_AA)


def _rounded_box(out: np.ndarray, x0: int, y0: int, x1: int, y1: int, r: int, colour: Sequence[int]) -> None:
    r = max(0, min(r, (x1 - x0) // 2, (y1 - y0) // 2))
    colour = tuple(int(c) for c in colour)
    cv2.rectangle(out, (x0 + r, y0), (x1 - r, y1), colour, -1)
    cv2.rectangle(out, (x0, y0 + r), (x1, y1 - r), colour, -1)
    if r > 0:
        for cx, cy in ((x0 + r, y0 + r), (x1 - r, y0 + r), (x0 + r, y1 - r), (x1 - r, y1 - r)):
            cv2.circle(out, (cx, cy), r, colour, -1, cv2.LINE_AA)


def _address_bar(out: np.ndarray, p: Mapping[str, Any]) -> None:
    h, W = out.shape[:2]
    top = 0
    out[:] = (241, 243, 244)  # light browser toolbar
    if h < _MIN_DETAIL_PX:
        return
    pad_y, pad_x = max(1, int(0.15 * h)), int(0.03 * W)
    y0, y1 = top + pad_y, top + h - 1 - pad_y
    _rounded_box(out, pad_x, y0, W - 1 - pad_x, y1, (y1 - y0) // 2, (255, 255, 255))
    scale = _text_scale(0.32 * h)
    bh = y1 - y0
    # padlock: a small filled body under a shackle arc
    lx, lb = pad_x + int(0.6 * bh), y0 + int(0.72 * bh)
    lk = max(2, int(0.16 * bh))
    cv2.rectangle(out, (lx - lk, lb - lk), (lx + lk, lb + lk // 2), (95, 99, 104), -1)
    cv2.ellipse(out, (lx, lb - lk), (max(1, int(0.7 * lk)), lk), 0, 180, 360, (95, 99, 104), max(1, lk // 3), cv2.LINE_AA)
    tx = lx + 2 * lk + int(0.2 * bh)
    cv2.putText(out, str(p["url"]), (tx, y0 + int(0.68 * bh)), _UI_FONT, scale, (60, 64, 67), max(1, round(scale * 1.3)), cv2.LINE_AA)


def _button_box(cy: int, cx: int, r: int) -> tuple[int, int, int, int]:
    """[top, left, height, width] of the button with its shadow (offset down by ``r // 8``) and
    one pixel of anti-aliasing all round."""
    off = max(1, r // 8)
    return cy - r - 1, cx - r - 1, 2 * r + off + 3, 2 * r + 3


def _floating_button(out: np.ndarray, cy: int, cx: int, r: int, p: Mapping[str, Any]) -> None:
    # soft shadow: darken a slightly offset disc, then the accent disc with a white plus on top
    off = max(1, r // 8)
    y0, y1 = max(cy - r + off - 1, 0), min(cy + r + off + 2, out.shape[0])
    x0, x1 = max(cx - r - 1, 0), min(cx + r + 2, out.shape[1])
    if y0 < y1 and x0 < x1:
        mask = np.zeros((y1 - y0, x1 - x0), np.uint8)
        cv2.circle(mask, (cx - x0, cy + off - y0), r, 90, -1, cv2.LINE_AA)
        _blend(out, y0, x0, np.zeros((*mask.shape, 3), np.uint8), mask)
    cv2.circle(out, (cx, cy), r, tuple(int(c) for c in p["accent_color"]), -1, cv2.LINE_AA)
    arm, lw = max(1, int(0.45 * r)), max(1, r // 6)
    cv2.line(out, (cx - arm, cy), (cx + arm, cy), (255, 255, 255), lw, cv2.LINE_AA)
    cv2.line(out, (cx, cy - arm), (cx, cy + arm), (255, 255, 255), lw, cv2.LINE_AA)


def ui_regions(shape: tuple[int, int], params: Mapping[str, Any]) -> list[list[int]]:
    """The rectangles [top, left, height, width] that :func:`ui_elements` may change."""
    H, W = int(shape[0]), int(shape[1])
    regions = []
    s, n, a = int(params["status_height"]), int(params["nav_height"]), int(params["address_height"])
    if s:
        regions.append([0, 0, s, W])
    if a:
        regions.append([s, 0, a, W])
    if n:
        regions.append([H - n, 0, n, W])
    if params.get("button"):
        cy, cx, r = (int(v) for v in params["button"])
        regions.append(list(_button_box(cy, cx, r)))
    return regions


# Severity table: DEFAULT_GRID["ui_elements"] (status_bar / nav_bar height fractions, address_bar,
# floating_button switches).
@register_image_operator("ui_elements", primitive="add", sample=sample_ui_elements)
def ui_elements(image: np.ndarray, params: Mapping[str, Any]) -> np.ndarray:
    """Draw phone-interface overlays: a dark status bar (clock, signal, wifi, battery) on top, a
    browser address bar under it, a navigation bar (back, home, recent) at the bottom and a
    floating action button above it -- whichever ``params`` enables."""
    out = image.copy()
    H = out.shape[0]
    status_h = min(int(params["status_height"]), H)
    nav_h = min(int(params["nav_height"]), H)
    address_h = int(params["address_height"])
    # Each element draws into a view of its own rectangle: OpenCV clips to the view, so anti-aliased
    # edges can never spill outside the regions that ui_regions() reports.
    if status_h:
        _status_bar(out[:status_h], params)
    address_h = min(address_h, max(H - status_h, 0))
    if address_h:
        _address_bar(out[status_h : status_h + address_h], params)
    if nav_h:
        _nav_bar(out[H - nav_h :], params)
    if params.get("button"):
        cy, cx, r = (int(v) for v in params["button"])
        top, left, h, w = _button_box(cy, cx, r)
        y0, x0 = max(top, 0), max(left, 0)
        view = out[y0 : max(top + h, y0), x0 : max(left + w, x0)]
        if view.size:
            _floating_button(view, cy - y0, cx - x0, r, params)
    return out
