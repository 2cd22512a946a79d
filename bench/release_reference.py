"""The SnapBench release's 15 image perturbations, transcribed as a speed reference (bench only).

The authors' generator (``benchmark/gen_image_perturbations.py`` in the SnapBench release; severities
sev1/sev3/sev5 = our s1/s2/s3) perturbs a Pillow RGB image with Pillow and OpenCV calls.  This module
performs the same calls in the same order on the same data types, so timing it beside snapbench in
one process gives the release's cost on this machine.  It is a *timing* reference: nothing in
snapbench imports it, and the strength reference of the add operators is the separate transcription
in tests/test_add_strength.py.

Differences from the release that do not change the work done:
- randomness comes from explicit instances (``random.Random`` / ``np.random.RandomState``, the same
  algorithms the release seeds globally) so the bench never touches a global RNG;
- the fonts are looked up in this machine's DejaVu folder (the release hard-codes
  /usr/share/fonts/dejavu/), falling back to snapbench's bundled DejaVu Sans Bold;
- the release's final JPEG q92 save is not part of an operator and is not timed here.
"""

from __future__ import annotations

import io
import math
import random
from functools import lru_cache
from pathlib import Path

import cv2
import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

import snapbench

# (operator, severity 1..3) -> the release's parameters at sev1 / sev3 / sev5
LEVELS = {
    "low_light": [(0.70, 3), (0.40, 10), (0.15, 22)],  # brightness, noise std
    "overexposure": [1.4, 2.2, 3.0],
    "defocus_blur": [1.0, 3.5, 10.0],  # Pillow GaussianBlur radius
    "motion_blur": [5, 13, 25],  # kernel size
    "compression": [50, 18, 5],  # Pillow JPEG quality
    "low_resolution": [0.50, 0.25, 0.08],
    "rotation": [10, 45, 180],  # degrees
    "perspective": [0.10, 0.20, 0.30],  # d, fraction of the short side
    "lens_distortion": [-0.10, -0.20, -0.30],  # k1
    "cropping": [0.90, 0.65, 0.40],  # keep ratio
    "downscale": [0.20, 0.10, 0.04],
    "watermark": [(80, "single"), (160, "half_tile"), (220, "full_tile")],
    "mosaic": [(1, 0.20), (2, 0.35), (4, 0.55)],  # regions, region size ratio; cell 42 px
    "scribble": [(3, 2), (6, 4), (9, 5)],  # lines, thickness
    "ui_elements": [("top",), ("top", "bottom"), ("top", "bottom", "address", "fab")],
}

_SYSTEM_FONTS = (Path("/usr/share/fonts/truetype/dejavu"), Path("/usr/share/fonts/dejavu"))
_BUNDLED_BOLD = Path(snapbench.__file__).parent / "assets" / "fonts" / "DejaVuSans-Bold.ttf"


@lru_cache(maxsize=None)
def _font_file(name: str) -> str:
    for folder in _SYSTEM_FONTS:
        if (folder / name).is_file():
            return str(folder / name)
    return str(_BUNDLED_BOLD)


def _to_bgr(img: Image.Image) -> np.ndarray:
    return cv2.cvtColor(np.array(img), cv2.COLOR_RGB2BGR)


def _from_bgr(arr: np.ndarray) -> Image.Image:
    return Image.fromarray(cv2.cvtColor(arr, cv2.COLOR_BGR2RGB))


def low_light(img, s, rnd, nrs):
    brightness, std = LEVELS["low_light"][s - 1]
    dim = np.array(img).astype(np.float32) * brightness
    noise = nrs.randn(*dim.shape) * std  # float64, as np.random.randn
    return Image.fromarray(np.clip(dim + noise, 0, 255).astype(np.uint8))


def overexposure(img, s, rnd, nrs):
    gain = LEVELS["overexposure"][s - 1]
    return Image.fromarray(np.clip(np.array(img).astype(np.float32) * gain, 0, 255).astype(np.uint8))


def defocus_blur(img, s, rnd, nrs):
    return img.filter(ImageFilter.GaussianBlur(radius=LEVELS["defocus_blur"][s - 1]))


def motion_blur(img, s, rnd, nrs):
    n = LEVELS["motion_blur"][s - 1]
    kernel = np.zeros((n, n))  # float64 n x n kernel with one non-zero row, as released
    kernel[n // 2, :] = 1.0 / n
    return _from_bgr(cv2.filter2D(_to_bgr(img), -1, kernel))


def compression(img, s, rnd, nrs):
    buf = io.BytesIO()
    img.save(buf, format="JPEG", quality=LEVELS["compression"][s - 1])
    buf.seek(0)
    return Image.open(buf).copy()


def low_resolution(img, s, rnd, nrs):
    scale = LEVELS["low_resolution"][s - 1]
    w, h = img.size
    small = img.resize((max(4, int(w * scale)), max(4, int(h * scale))), Image.NEAREST)
    return small.resize((w, h), Image.NEAREST)


def rotation(img, s, rnd, nrs):
    angle = LEVELS["rotation"][s - 1]
    w, h = img.size
    if angle >= 85:
        return img.rotate(angle, resample=Image.BICUBIC, expand=True).resize((w, h), Image.LANCZOS)
    c, si = math.cos(math.radians(abs(angle) % 90)), math.sin(math.radians(abs(angle) % 90))
    zoom = max(c + h / w * si, c + w / h * si) + 0.02
    ew, eh = int(w * zoom) + 4, int(h * zoom) + 4
    turned = img.resize((ew, eh), Image.LANCZOS).rotate(angle, resample=Image.BICUBIC, expand=False)
    left, top = ew // 2 - w // 2, eh // 2 - h // 2
    return turned.crop((left, top, left + w, top + h))


def perspective(img, s, rnd, nrs):
    arr = _to_bgr(img)
    h, w = arr.shape[:2]
    d = int(min(w, h) * LEVELS["perspective"][s - 1])
    src = np.float32([[0, 0], [w, 0], [w, h], [0, h]])
    dst = np.float32([[d, d // 2], [w - d, d // 2], [w, h], [0, h]])
    warped = cv2.warpPerspective(arr, cv2.getPerspectiveTransform(src, dst), (w, h),
                                 borderMode=cv2.BORDER_CONSTANT, borderValue=(0, 0, 0))
    crop = warped[d // 2 + 2 : h, d + 2 : w - d - 2]
    if crop.shape[0] < 8 or crop.shape[1] < 8:
        crop = warped
    return _from_bgr(cv2.resize(crop, (w, h)))


def lens_distortion(img, s, rnd, nrs):
    k1 = LEVELS["lens_distortion"][s - 1]
    arr = _to_bgr(img)
    h, w = arr.shape[:2]
    cx, cy = w / 2.0, h / 2.0
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    xn, yn = (xx - cx) / cx, (yy - cy) / cy
    f = 1.0 + k1 * (xn**2 + yn**2)
    map_x, map_y = (xn * f * cx + cx).astype(np.float32), (yn * f * cy + cy).astype(np.float32)
    out = cv2.remap(arr, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=(0, 0, 0))
    margin = min(0.18, abs(k1) * 0.12)
    mx, my = max(2, int(w * margin)), max(2, int(h * margin))
    return _from_bgr(cv2.resize(out[my : h - my, mx : w - mx], (w, h)))


def cropping(img, s, rnd, nrs):
    keep = LEVELS["cropping"][s - 1]
    w, h = img.size
    cw, ch = int(w * keep), int(h * keep)
    x, y = rnd.randint(0, max(0, w - cw)), rnd.randint(0, max(0, h - ch))
    return img.crop((x, y, x + cw, y + ch))


def downscale(img, s, rnd, nrs):
    scale = LEVELS["downscale"][s - 1]
    w, h = img.size
    return img.resize((max(4, int(w * scale)), max(4, int(h * scale))), Image.LANCZOS)


def watermark(img, s, rnd, nrs):
    opacity, mode = LEVELS["watermark"][s - 1]
    base = img.copy().convert("RGBA")
    w, h = base.size
    layer = Image.new("RGBA", (w, h), (0, 0, 0, 0))
    draw = ImageDraw.Draw(layer)
    size = max(16, int(w * 0.16))
    font = ImageFont.truetype(_font_file("DejaVuSans-Bold.ttf"), size)
    fill = (180, 180, 180, opacity)
    if mode == "single":
        origins = [(w // 4, h // 2 - size // 2)]
    elif mode == "half_tile":
        step = max(1, int(w * 0.32))
        origins = [(x, y) for y in range(h // 4, 3 * h // 4, step) for x in range(-w // 4, w, step)]
    else:
        step = max(1, int(w * 0.16))
        origins = [(x, y) for y in range(-h // 2, h, step) for x in range(-w // 2, w, step)]
    for xy in origins:
        draw.text(xy, "SAMPLE", font=font, fill=fill)
    return Image.alpha_composite(base, layer).convert("RGB")


def mosaic(img, s, rnd, nrs):
    regions, ratio = LEVELS["mosaic"][s - 1]
    out = img.copy()
    w, h = img.size
    x_lo, x_hi, y_lo, y_hi = int(w * 0.25), int(w * 0.75), int(h * 0.25), int(h * 0.75)
    for _ in range(regions):
        rw, rh = min(max(80, int(w * ratio)), w), min(max(80, int(h * ratio)), h)
        rx = ry = 0
        for _ in range(40):
            rx, ry = rnd.randint(0, max(0, w - rw)), rnd.randint(0, max(0, h - rh))
            if rx + rw <= x_lo or rx >= x_hi or ry + rh <= y_lo or ry >= y_hi:
                break
        small = out.crop((rx, ry, rx + rw, ry + rh)).resize((max(1, rw // 42), max(1, rh // 42)), Image.NEAREST)
        out.paste(small.resize((rw, rh), Image.NEAREST), (rx, ry))
    return out


_PENS = [(0, 0, 0), (220, 30, 30), (30, 30, 220), (30, 200, 30), (200, 150, 0)]


def scribble(img, s, rnd, nrs):
    lines, thickness = LEVELS["scribble"][s - 1]
    arr = _to_bgr(img)
    h, w = arr.shape[:2]
    for _ in range(lines):
        pen = rnd.choice(_PENS)
        x, y = rnd.randint(0, w - 1), rnd.randint(0, h - 1)
        pts = [(x, y)]
        for _ in range(rnd.randint(4, 10)):
            x = max(0, min(w - 1, x + rnd.randint(-w // 5, w // 5)))
            y = max(0, min(h - 1, y + rnd.randint(-h // 5, h // 5)))
            pts.append((x, y))
        for a, b in zip(pts, pts[1:]):
            cv2.line(arr, a, b, pen, thickness, cv2.LINE_AA)
    return _from_bgr(arr)


def ui_elements(img, s, rnd, nrs):
    parts = LEVELS["ui_elements"][s - 1]
    base = img.copy().convert("RGBA")
    w, h = base.size
    layer = Image.new("RGBA", (w, h), (0, 0, 0, 0))
    draw = ImageDraw.Draw(layer)
    big = ImageFont.truetype(_font_file("DejaVuSans.ttf"), max(10, int(h * 0.035)))
    small = ImageFont.truetype(_font_file("DejaVuSans.ttf"), max(9, int(h * 0.025)))
    top = int(h * 0.09) if s >= 2 else int(h * 0.05)  # the release's sev3/sev5 status bar
    if "top" in parts:
        draw.rectangle([0, 0, w, top], fill=(30, 30, 30, 245))
        draw.text((8, 2), "9:41", font=big, fill=(255, 255, 255, 230))
        draw.text((w - 60, 2), "100%\u25a0", font=big, fill=(255, 255, 255, 230))
    if "bottom" in parts:
        bb = int(h * 0.08)
        draw.rectangle([0, h - bb, w, h], fill=(30, 30, 30, 245))
        for i, sym in enumerate(["\u25c1", "\u25cb", "\u25a1"]):
            draw.text(((i + 1) * w // 4 - 6, h - bb + 4), sym, font=big, fill=(255, 255, 255, 200))
    if "address" in parts:
        ab = int(h * 0.05)
        draw.rectangle([0, top, w, top + ab], fill=(240, 240, 240, 210))
        draw.text((8, top + 4), "www.example.com/photo", font=small, fill=(80, 80, 80, 200))
    if "fab" in parts:
        bx, by = w - 50, h // 2
        draw.ellipse([bx - 22, by - 22, bx + 22, by + 22], fill=(66, 133, 244, 200))
        draw.text((bx - 6, by - 8), "+", font=big, fill=(255, 255, 255, 230))
    return Image.alpha_composite(base, layer).convert("RGB")


OPERATORS = {f.__name__: f for f in (low_light, overexposure, defocus_blur, motion_blur, compression, low_resolution,
                                     rotation, perspective, lens_distortion, cropping, downscale, watermark, mosaic,
                                     scribble, ui_elements)}


def perturb(img: Image.Image, operator: str, severity: int, seed: int = 0) -> Image.Image:
    """The release's ``operator`` at severity 1-3 (its sev1/3/5) on a Pillow RGB image."""
    return OPERATORS[operator](img, severity, random.Random(seed), np.random.RandomState(seed & 0xFFFFFFFF))
