"""Image files in and out: one normalised decoder for every query image, one lossless atomic writer.

Every image that reaches an operator or an encoder goes through :func:`load_image`, so clean and
corrupted variants see the same preprocessing:

* formats: whatever Pillow decodes (JPEG, PNG, WebP, BMP, TIFF, GIF, ...); multi-frame files use
  their first frame;
* **EXIF orientation is applied** (``ImageOps.exif_transpose``): phone photos are stored sideways
  with an Orientation tag, and a person looking at the photo (and the gallery, which is usually
  stored upright) sees the rotated image.  Ignoring the tag would make "clean" queries rotated by
  90 degrees for a large share of phone captures;
* grayscale and 1-bit -> RGB by channel replication; palette images through their palette (with
  transparency when the palette has it); CMYK/YCbCr/LAB -> RGB by Pillow's conversion;
* **alpha is composited over white** (``out = rgb * a + 255 * (1 - a)``, rounded): screenshots and
  product cut-outs with transparent backgrounds are displayed on white, and white is what most
  encoders' preprocessing would otherwise produce by dropping alpha from a premultiplied-on-white
  export.  Dropping alpha instead would reveal whatever colour the transparent pixels happen to
  store (often black);
* 16-bit samples -> 8 bit by keeping the high byte (``x >> 8``), the rule Pillow itself applies when
  it opens 16-bit RGB PNGs, so grey and colour 16-bit files are scaled alike;
* no colour management: ICC profiles are ignored and pixel values are taken as stored.

The size is checked from the header **before** any pixel is decoded (Pillow's ``Image.open`` only
parses the header), so a small file claiming a huge size cannot exhaust memory.  Truncated files are
errors (Pillow's ``LOAD_TRUNCATED_IMAGES`` is never enabled); for PNG the chunk list is also walked
to its ``IEND``, because Pillow accepts a PNG whose pixel data is complete but whose tail is cut.
"""

from __future__ import annotations

import io
import os
import struct
import threading
import warnings
from pathlib import Path

import numpy as np

from ..core.defaults import DEFAULT_MAX_PIXELS
from ..core.errors import ImageLoadError, ImageMissingError, ImageTooLargeError, ImageUnreadableError, arg
from . import codecs
from .pixels import PNG_COMPRESSION, PNG_SIGNATURE, as_rgb_uint8, encode_png, to_rgb_uint8

__all__ = ["image_problem",
           "read_image_bytes", "as_rgb_uint8", "load_image", "encode_png", "DEFAULT_MAX_PIXELS", "PNG_COMPRESSION"]


def image_problem(exc: ImageLoadError) -> str:
    """What kind of problem a load error is, in the words reports use: ``"file not found"``,
    ``"cannot be read"``, ``"too large"`` or ``"cannot be decoded"`` (an empty, truncated, corrupt
    or unknown file)."""
    if isinstance(exc, ImageMissingError):
        return "file not found"
    if isinstance(exc, ImageUnreadableError):
        return "cannot be read"
    if isinstance(exc, ImageTooLargeError):
        return "too large"
    return "cannot be decoded"


def read_image_bytes(path: str | os.PathLike) -> bytes:
    """The bytes of an image file; :class:`ImageLoadError` naming the file when it is missing, is not
    a readable file, or is empty."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ImageMissingError(f"{path}: image file not found") from None
    except IsADirectoryError:
        raise ImageUnreadableError(f"{path}: is a directory, not an image file") from None
    except OSError as exc:
        raise ImageUnreadableError(f"{path}: cannot read image file ({exc.strerror or exc})") from None
    if not data:
        raise ImageLoadError(f"{path}: image file is empty (0 bytes)")
    return data


def _too_large(path: Path, width: int, height: int, max_pixels: int) -> ImageLoadError:
    return ImageTooLargeError(
        f"image too large: {width}x{height} = {width * height:,} pixels exceeds the limit of {max_pixels:,} "
        f"pixels (raise {arg('max_pixels')} to allow it)", path=path)


def _check_png_complete(path: Path, data: bytes) -> None:
    """Walk the PNG chunk list to IEND; a cut anywhere (even only in the tail) is an error."""
    pos = len(PNG_SIGNATURE)
    n = len(data)
    while True:
        if pos + 8 > n:
            raise ImageLoadError(f"{path}: truncated PNG (file ends inside the chunk list at byte {n}, no IEND)")
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        ctype = data[pos + 4 : pos + 8]
        end = pos + 12 + length
        if end > n:
            raise ImageLoadError(
                f"{path}: truncated PNG (chunk {ctype.decode('latin-1')!r} needs {end} bytes, file has {n})"
            )
        if ctype == b"IEND":
            return
        pos = end


def _to_rgb_array(img, path: Path) -> np.ndarray:
    """Convert a loaded Pillow image to HxWx3 uint8 RGB following the module's documented rules."""

    mode = img.mode
    if mode == "P":
        img = img.convert("RGBA" if "transparency" in img.info else "RGB")
    elif mode == "PA":
        img = img.convert("RGBA")
    elif mode in ("RGBa", "La"):  # premultiplied: un-premultiply first
        img = img.convert("RGBA")
    mode = img.mode

    if mode in ("RGB", "RGBA", "LA", "L"):  # HxWx3, HxWx4, HxWx2, HxW samples
        return to_rgb_uint8(np.asarray(img, dtype=np.uint8))
    if mode == "1":
        return to_rgb_uint8(np.asarray(img.convert("L"), dtype=np.uint8))
    if mode.startswith("I;16") or mode == "I":
        # "I" is how some Pillow versions/formats expose 16-bit grey; values are taken as 0..65535.
        arr = np.asarray(img)
        arr = np.clip(arr.astype(np.int64), 0, 65535)
        return to_rgb_uint8((arr >> 8).astype(np.uint8))
    if mode == "F":
        raise ImageLoadError(f"{path}: floating-point images (Pillow mode 'F') are not supported; convert to 8/16-bit")
    try:
        return np.asarray(img.convert("RGB"), dtype=np.uint8)
    except Exception as exc:  # noqa: BLE001 - any conversion failure is reported with the file
        raise ImageLoadError(f"{path}: cannot convert image mode {mode!r} to RGB ({exc})") from None


def _load_non_pillow(path: Path, data: bytes, max_pixels: int) -> np.ndarray | None:
    """Decode the variant formats Pillow cannot read (JPEG XL, NumPy ``.npz``; QOI when Pillow lacks
    it) through :mod:`snapbench.corruptions.codecs`; ``None`` for everything else (Pillow's job).

    ``.npz`` is read with ``allow_pickle=False`` and its size checked from the array header before
    the pixels are inflated; a JPEG XL file's size is checked after decoding (libjxl's header is not
    exposed), which is acceptable for the files ``corrupt`` writes.
    """
    fmt = codecs.detect_format(data)
    if fmt not in ("jxl", "npz", "qoi"):
        return None
    if fmt == "qoi":
        if _pillow_reads_qoi():
            return None
        if len(data) >= 12:
            w, h = struct.unpack(">II", data[4:12])
            if w * h > max_pixels:
                raise _too_large(path, w, h, max_pixels)
    if fmt == "npz":
        shape = _npz_shape(path, data)
        if shape is not None and len(shape) >= 2 and int(shape[0]) * int(shape[1]) > max_pixels:
            raise _too_large(path, int(shape[1]), int(shape[0]), max_pixels)
    try:
        out = codecs.decode_image(data, fmt, source=str(path))
    except ImportError as exc:
        raise ImageLoadError(f"{path}: {exc}") from None
    except ValueError as exc:
        raise ImageLoadError(str(exc)) from None
    if out.shape[0] * out.shape[1] > max_pixels:
        raise _too_large(path, out.shape[1], out.shape[0], max_pixels)
    return out


def _pillow_reads_qoi() -> bool:
    from PIL import Image

    Image.init()
    return "QOI" in Image.OPEN


def _npz_shape(path: Path, data: bytes) -> tuple[int, ...] | None:
    """Shape of the (single) array in an .npz from its .npy header, without inflating the pixels."""
    import zipfile

    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            names = z.namelist()
            if len(names) != 1:
                return None
            with z.open(names[0]) as f:
                version = np.lib.format.read_magic(f)
                reader = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
                shape, _, _ = reader(f)
                return tuple(shape)
    except Exception as exc:  # noqa: BLE001 - any malformed zip/npy header
        raise ImageLoadError(f"{path}: not a readable .npz image ({exc})") from None


def load_image(path: str | os.PathLike, *, max_pixels: int = DEFAULT_MAX_PIXELS) -> np.ndarray:
    """Load an image file as a contiguous ``uint8`` RGB array of shape ``(H, W, 3)``.

    See the module docstring for the normalisation rules (EXIF orientation applied, alpha over
    white, 16-bit -> high byte, grey/palette -> RGB).  ``max_pixels`` bounds ``W * H`` and is checked
    from the header before decoding; it is the only size limit (Pillow's own decompression-bomb
    limit, ``Image.MAX_IMAGE_PIXELS``, is lifted for an image that ``max_pixels`` allows).

    Raises :class:`ImageLoadError` (a ``ValueError``) naming the file for: a missing or empty file,
    a file that is not an image, a truncated or corrupt file, or one larger than ``max_pixels``.
    """
    from PIL import Image

    path = Path(path)
    data = read_image_bytes(path)
    other = _load_non_pillow(path, data, max_pixels)
    if other is not None:
        return other
    try:
        return _load_pillow(path, data, max_pixels)
    except Image.DecompressionBombError:
        # Pillow refuses images over 2 * MAX_IMAGE_PIXELS (~179 Mpx) before we see the header, with
        # its own wording and no regard for max_pixels.  Read again with its limit lifted: the header
        # check below then says "too large" in our words, or decodes an image max_pixels allows.
        # The lock keeps concurrent lifts from restoring each other's value.
        with _PILLOW_LIMIT_LOCK:
            saved = Image.MAX_IMAGE_PIXELS
            Image.MAX_IMAGE_PIXELS = None
            try:
                return _load_pillow(path, data, max_pixels)
            finally:
                Image.MAX_IMAGE_PIXELS = saved


_PILLOW_LIMIT_LOCK = threading.Lock()


def _load_pillow(path: Path, data: bytes, max_pixels: int) -> np.ndarray:
    """Decode with Pillow; ``Image.DecompressionBombError`` propagates (see :func:`load_image`)."""
    from PIL import Image, ImageOps, UnidentifiedImageError

    with warnings.catch_warnings():
        # We enforce our own limit (max_pixels) before decoding; Pillow's warning would be noise.
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        try:
            img = Image.open(io.BytesIO(data))
        except UnidentifiedImageError:
            raise ImageLoadError(f"{path}: not a recognised image file ({len(data)} bytes)") from None
        except Image.DecompressionBombError:
            raise
        except Exception as exc:  # noqa: BLE001 - header parse errors of any plugin
            raise ImageLoadError(f"{path}: corrupt image header ({exc})") from None
        with img:
            width, height = img.size
            if width <= 0 or height <= 0:
                raise ImageLoadError(f"{path}: image has an empty size {width}x{height}")
            if width * height > max_pixels:
                raise _too_large(path, width, height, max_pixels)
            fmt = img.format
            try:
                img.load()
            except Image.DecompressionBombError:
                raise
            except Exception as exc:  # noqa: BLE001 - decoders raise OSError, SyntaxError, ValueError...
                msg = str(exc)
                kind = "truncated" if "truncat" in msg.lower() else "corrupt or truncated"
                raise ImageLoadError(f"{path}: {kind} {fmt or 'image'} file, cannot decode ({msg})") from None
            if fmt == "PNG" or data.startswith(PNG_SIGNATURE):
                _check_png_complete(path, data)
            try:
                oriented = ImageOps.exif_transpose(img)
            except Exception as exc:  # noqa: BLE001 - malformed EXIF blocks
                raise ImageLoadError(f"{path}: cannot apply EXIF orientation ({exc})") from None
            out = _to_rgb_array(oriented if oriented is not None else img, path)
    return np.ascontiguousarray(out)


