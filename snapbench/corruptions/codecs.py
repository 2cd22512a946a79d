"""Lossless image codecs for writing variants: PNG, QOI, JPEG XL, WebP and NumPy ``.npz``.

Writing variants to disk is bounded by the lossless encoder, not by the operators: PNG costs
tens of milliseconds per 1024x768 image while most operators take a few.  Every format here is
**lossless** -- decoding gives back the exact uint8 pixels -- so the choice changes file size and
speed, never the results (a lossy format would add its own corruption to every condition).  The
formats, their extensions and the extra each needs are the table :data:`snapbench.core.image_formats.IMAGE_FORMATS`
(``corrupt --help`` lists them from it):

=======  =============================================  ======================================
format   encoder                                        needs
=======  =============================================  ======================================
png      OpenCV, zlib level 1, Paeth filter, RLE        nothing extra (the default)
qoi      imagecodecs (QOI, "Quite OK Image")            the ``codecs`` extra
jxl      imagecodecs (libjxl, lossless, effort 1)       the ``codecs`` extra
webp     imagecodecs (libwebp, lossless, method 0)      the ``codecs`` extra
npz      numpy ``savez_compressed`` (no pickle)         nothing extra
=======  =============================================  ======================================

Decisions:

* **JPEG XL at effort 1** (libjxl's fastest lossless mode) and **WebP at method 0**: the point of
  these formats here is write speed; higher efforts shrink files by 10-30 % at many times the cost
  (see ``bench/RESULTS_formats.md``).
* QOI and JPEG XL run single-threaded (``numthreads=1`` for libjxl) so that a multi-process run
  does not oversubscribe the cores and the bytes never depend on a thread count.
* ``npz`` holds one array named ``image`` (H x W x 3 uint8), written with ``allow_pickle`` off and
  read with ``allow_pickle=False``: loading a user's file can never execute code.
* The format of encoded bytes is recognised from their magic bytes (PNG signature, ``qoif``,
  the two JPEG XL signatures, ``RIFF....WEBP``, the ZIP local-header of ``.npz``), so a decoder
  never trusts a file extension over the content.
"""

from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path

import numpy as np

from ..core.errors import CodecError, InputError
from ..core.image_formats import IMAGE_FORMATS, formats_needing
from ..core.install_hint import import_extra
from ..core.validate import choice, listing
from .pixels import PNG_SIGNATURE, as_rgb_uint8, encode_png, to_rgb_uint8

__all__ = ["FORMATS", "check_format", "decode_image", "detect_format", "encode_image", "extension"]

#: The format names (the table :data:`snapbench.core.image_formats.IMAGE_FORMATS`: extension, extra needed).
FORMATS: tuple[str, ...] = tuple(IMAGE_FORMATS)

_EXTENSIONS = {name: f.extension for name, f in IMAGE_FORMATS.items()}
_BY_EXTENSION = {v: k for k, v in _EXTENSIONS.items()}
_JXL_EFFORT = 1
_WEBP_METHOD = 0
_NPZ_KEY = "image"
_QOI_END = b"\x00" * 7 + b"\x01"


def check_format(fmt: str) -> str:
    """The canonical name of ``fmt`` (case and a leading dot ignored); ConfigError for an unknown one."""
    return choice(str(fmt).lower().lstrip("."), FORMATS, "image_format", what="image format")


def extension(fmt: str) -> str:
    """File extension (with the dot) for ``fmt``: ``extension("jxl") == ".jxl"``."""
    return _EXTENSIONS[check_format(fmt)]


def _imagecodecs():
    names = formats_needing("codecs")
    return import_extra("imagecodecs", "codecs", f"the {', '.join(names[:-1])} and {names[-1]} formats need imagecodecs")


def encode_image(image: np.ndarray, fmt: str = "png") -> bytes:
    """Encode an ``HxWx3`` uint8 RGB array losslessly as ``fmt`` (one of :data:`FORMATS`)."""
    f = check_format(fmt)
    img = as_rgb_uint8(image)
    if f == "png":
        return encode_png(img)
    if f == "npz":
        buf = io.BytesIO()
        np.savez_compressed(buf, **{_NPZ_KEY: img})
        return buf.getvalue()
    ic = _imagecodecs()
    if f == "qoi":
        return bytes(ic.qoi_encode(img))
    if f == "jxl":
        return bytes(ic.jpegxl_encode(img, lossless=True, effort=_JXL_EFFORT, numthreads=1))
    return bytes(ic.webp_encode(img, lossless=True, method=_WEBP_METHOD))


def detect_format(data: bytes) -> str | None:
    """The format of encoded ``data`` from its magic bytes, or ``None`` when it is none of :data:`FORMATS`."""
    head = bytes(data[:16])
    if head.startswith(PNG_SIGNATURE):
        return "png"
    if head.startswith(b"qoif"):
        return "qoi"
    if head.startswith((b"\xff\n", b"\x00\x00\x00\x0cJXL \r\n\x87\n")):
        return "jxl"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "webp"
    if head.startswith(b"PK\x03\x04"):
        return "npz"
    return None


def _as_rgb(arr: np.ndarray, what: str) -> np.ndarray:
    arr = np.asarray(arr)
    if arr.dtype != np.uint8:
        raise CodecError(f"{what}: decoded {arr.dtype} samples, expected uint8")
    try:  # our encoders never write grey or alpha; a foreign file gets the loader's rule (alpha over white)
        return to_rgb_uint8(arr)
    except InputError:
        raise CodecError(f"{what}: decoded an array of shape {arr.shape}, expected H x W x 3") from None


def _decode_npz(data: bytes, what: str) -> np.ndarray:
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            if _NPZ_KEY in z.files:
                arr = z[_NPZ_KEY]
            elif len(z.files) == 1:
                arr = z[z.files[0]]
            else:
                raise CodecError(f"{what}: .npz holds the arrays {listing(sorted(z.files), quote=True)}, expected one array named {_NPZ_KEY!r}")
    except CodecError:
        raise
    except (ValueError, OSError, zipfile.BadZipFile, EOFError) as exc:
        raise CodecError(f"{what}: not a readable .npz image ({exc})") from None
    return arr


def decode_image(data: bytes | str | os.PathLike, fmt: str | None = None, *, source: str | None = None) -> np.ndarray:
    """Decode bytes or a file written by :func:`encode_image` back to ``HxWx3`` uint8 RGB.

    ``fmt`` defaults to the format recognised from the magic bytes (then from the file extension);
    a given ``fmt`` that contradicts the magic bytes is an error.  Raises :class:`CodecError`
    (an :class:`~snapbench.core.errors.InputError`) naming the file or the format for unreadable bytes;
    ``source`` names where in-memory bytes came from in those messages.
    """
    if isinstance(data, (str, os.PathLike)):
        path = Path(data)
        what = str(path)
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise CodecError(f"{what}: cannot read image file ({exc.strerror or exc})") from None
        ext_fmt = _BY_EXTENSION.get(path.suffix.lower())
    else:
        raw = bytes(data)
        what = source or f"{len(raw)} bytes of image data"
        ext_fmt = None
    if not raw:
        raise CodecError(f"{what}: empty (0 bytes)")
    found = detect_format(raw)
    if fmt is not None:
        want = check_format(fmt)
        if found is not None and found != want:
            raise CodecError(f"{what}: asked to decode as {want} but the bytes are {found}")
        found = want
    found = found or ext_fmt
    if found is None:
        raise CodecError(f"{what}: not a recognised image format (magic bytes {raw[:8]!r}; known: {', '.join(FORMATS)})")
    if found == "npz":
        return _as_rgb(_decode_npz(raw, what), what)
    if found == "png":
        import cv2

        arr = cv2.imdecode(np.frombuffer(raw, np.uint8), cv2.IMREAD_UNCHANGED)
        if arr is None:
            raise CodecError(f"{what}: corrupt or truncated png data")
        if arr.dtype != np.uint8:
            raise CodecError(f"{what}: decoded {arr.dtype} samples, expected uint8")
        if arr.ndim == 3:
            arr = arr[..., ::-1] if arr.shape[2] == 3 else arr[..., [2, 1, 0, 3]]
        return _as_rgb(arr, what)
    if found == "qoi" and not raw.endswith(_QOI_END):
        # libqoi decodes a cut stream without complaint (the missing pixels come out black).
        raise CodecError(f"{what}: truncated qoi data (no end marker)")
    ic = _imagecodecs()
    dec = {"qoi": ic.qoi_decode, "jxl": ic.jpegxl_decode, "webp": ic.webp_decode}[found]
    try:
        arr = dec(raw, numthreads=1) if found == "jxl" else dec(raw)
    except Exception as exc:  # noqa: BLE001 - imagecodecs raises its own error class per codec
        raise CodecError(f"{what}: corrupt or truncated {found} data ({type(exc).__name__}: {exc})") from None
    return _as_rgb(arr, what)
