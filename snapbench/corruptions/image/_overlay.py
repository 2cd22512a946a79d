"""What the ADD operators share: the bundled font, text masks, and Pillow's exact alpha compositing.

watermark and ui_elements draw text with the same font and all of them lay overlays over the photo
the way the authors' release does (Pillow's ``Image.alpha_composite`` of an RGBA layer).  That
machinery is one concern -- it decides the bytes of every drawn pixel, and :func:`renderer_versions`
reports what it depends on -- so it lives here, apart from :mod:`.add`, which keeps one function per
operator with its parameter sampling and severity table.

Text masks are rendered once per (text, size) with Pillow/FreeType from the font shipped in
``snapbench/assets/fonts`` (DejaVu Sans Bold, basic layout so the optional libraqm cannot change a
glyph position); a layer's alpha is accumulated with Pillow's own integer rule (:func:`union`), and
the blend is the exact integer form of ``alpha_composite`` over the rows an overlay covers
(:func:`blend_premultiplied`), so no full-size layer is drawn per call.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from importlib import resources

import cv2
import numpy as np
import PIL
from PIL import Image, ImageDraw, ImageFont, features

__all__ = [
    "FONT_FILE",
    "renderer_versions",
    "font",
    "text_mask",
    "clip",
    "premultiply",
    "blend_premultiplied",
    "blend",
    "union",
]

FONT_FILE = "DejaVuSans-Bold.ttf"


def _font_path() -> str:
    """Path of the bundled font file."""
    return str(resources.files("snapbench") / "assets" / "fonts" / FONT_FILE)


@lru_cache(maxsize=64)
def font(size: int) -> ImageFont.FreeTypeFont:
    """The bundled font at em ``size`` pixels, basic layout (cached)."""
    try:
        return ImageFont.truetype(_font_path(), int(size), layout_engine=ImageFont.Layout.BASIC)
    except OSError as exc:
        raise OSError(f"{_font_path()}: cannot load the bundled font ({exc}); reinstall snapbench") from exc


@lru_cache(maxsize=1)
def font_sha256() -> str:
    with open(_font_path(), "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


def renderer_versions() -> dict[str, str]:
    """What decides the bytes of drawn text: the bundled font (name and sha256), Pillow and FreeType.

    Text is rasterised by FreeType through Pillow with the basic layout engine; another FreeType
    release may shade anti-aliased edge pixels differently, so a run should record these and refuse
    to mix variants rendered under different ones.
    """
    return {
        "font": FONT_FILE,
        "font_sha256": font_sha256(),
        "pillow": PIL.__version__,
        "freetype": str(features.version("freetype2") or "unknown"),
        "text_layout": "basic",
    }


@lru_cache(maxsize=64)
def text_mask(text: str, size: int) -> tuple[np.ndarray, int, int]:
    """Coverage mask (0..255) of ``text`` drawn by Pillow at an integer origin, and the mask's offset
    from that origin (Pillow's default anchor: left, ascender line).

    Drawn with ``ImageDraw.text`` onto an "L" canvas exactly the size of ``getbbox`` with ink 255,
    which leaves the mask Pillow would paste unchanged.  Read-only: the cache hands out one array.
    """
    face = font(size)
    left, top, right, bottom = face.getbbox(text)
    w, h = max(int(right - left), 0), max(int(bottom - top), 0)
    if w == 0 or h == 0:
        mask = np.zeros((0, 0), np.uint8)
    else:
        canvas = Image.new("L", (w, h), 0)
        ImageDraw.Draw(canvas).text((-int(left), -int(top)), text, fill=255, font=face)
        mask = np.array(canvas)
    mask.setflags(write=False)
    return mask, int(left), int(top)


def clip(shape: tuple[int, ...], top: int, left: int, h: int, w: int) -> tuple[int, int, int, int] | None:
    """The visible part (y0, x0, y1, x1) of an h x w tile at (top, left) on an image of ``shape``;
    ``None`` when none of it is visible."""
    H, W = shape[:2]
    y0, x0, y1, x1 = max(top, 0), max(left, 0), min(top + h, H), min(left + w, W)
    return None if y0 >= y1 or x0 >= x1 else (y0, x0, y1, x1)


def premultiply(colour: np.ndarray, alpha: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(255 - alpha, colour * alpha + 128) as contiguous (h, w, 3) uint16 arrays, the two terms
    :func:`blend_premultiplied` needs; ``colour`` is one RGB triple or an (h, w, 3) array."""
    a = np.ascontiguousarray(alpha, dtype=np.uint16)
    inv = 255 - a
    colour = np.asarray(colour, np.uint16)
    if colour.size == 3:  # one colour: a product plane per distinct channel value, merged by OpenCV
        rgb = colour.reshape(3).tolist()
        planes = {c: a * c + 128 for c in set(rgb)}
        return cv2.merge([inv, inv, inv]), cv2.merge([planes[c] for c in rgb])
    return cv2.merge([inv, inv, inv]), colour * a[..., None] + 128


def blend_premultiplied(out: np.ndarray, top: int, left: int, inv_alpha: np.ndarray, premult: np.ndarray) -> None:
    """In place: ``out = round((out * (255 - a) + colour * a) / 255)`` over a tile at (top, left).

    This is Pillow's ``alpha_composite`` of an RGBA layer over an opaque image, bit for bit (checked
    against Pillow for every (pixel, colour, alpha)).  The tile may hang over any border; only its
    visible part is touched.  Three OpenCV passes: an exact integer multiply and add in uint16, then
    a scale by 1/255 (the +128 already in ``premult`` cancelled by the offset); that last step runs
    in float32, whose error (< 3e-5) never reaches a rounding boundary, because x / 255 for an
    integer x is never closer than 1/510 to a half-integer.  Identical, value for value, to numpy's
    ``(t + (t >> 8)) >> 8`` on ``t = out * (255 - a) + colour * a + 128`` (checked exhaustively),
    and 2-3x faster.
    """
    box = clip(out.shape, top, left, *inv_alpha.shape[:2])
    if box is None:
        return
    y0, x0, y1, x1 = box
    roi = out[y0:y1, x0:x1]
    t = cv2.multiply(roi, inv_alpha[y0 - top : y1 - top, x0 - left : x1 - left], dtype=cv2.CV_16U)
    cv2.add(t, premult[y0 - top : y1 - top, x0 - left : x1 - left], dst=t)
    res = cv2.convertScaleAbs(t, dst=roi, alpha=1 / 255, beta=-128 / 255)
    if res is not roi:  # OpenCV allocated instead of writing into the view (never seen; cheap to guard)
        roi[...] = res


def blend(out: np.ndarray, top: int, left: int, colour: np.ndarray, alpha: np.ndarray) -> None:
    """Alpha-composite a colour tile (h, w, 3) with alpha (h, w) in 0..255 onto ``out`` at (top, left)."""
    blend_premultiplied(out, top, left, *premultiply(colour, alpha))


def union(alpha: np.ndarray, top: int, left: int, mask: np.ndarray, opacity: int) -> None:
    """In place on an overlay's alpha: ``a = round((a * (255 - m) + opacity * m) / 255)`` under
    ``mask`` placed at (top, left) -- what Pillow does to the alpha of an RGBA layer when text of
    one ink is drawn on it (so overlapping words do not add up beyond ``opacity``)."""
    box = clip(alpha.shape, top, left, *mask.shape)
    if box is None:
        return
    y0, x0, y1, x1 = box
    roi = alpha[y0:y1, x0:x1]
    m = mask[y0 - top : y1 - top, x0 - left : x1 - left].astype(np.uint16)
    t = roi.astype(np.uint16)
    t *= 255 - m
    m *= opacity
    t += m
    t += 128
    t += t >> 8
    t >>= 8
    roi[...] = t
