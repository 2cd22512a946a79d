"""The pixel array every operator and encoder takes, and the lossless PNG encoder of variants.

A leaf module (NumPy and OpenCV only): :mod:`.io` (decoding files) and :mod:`.codecs` (the other
lossless formats) both build on it, so neither needs the other to write PNG bytes, turn decoded
grey or alpha samples into RGB (:func:`to_rgb_uint8`) or recognise a PNG (:data:`PNG_SIGNATURE`).
"""

from __future__ import annotations

import numpy as np

from ..core.errors import InputError

__all__ = ["PNG_COMPRESSION", "PNG_SIGNATURE", "as_rgb_uint8", "encode_png", "to_rgb_uint8"]

#: The eight bytes every PNG file starts with.
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

# PNG settings for variants.  Lossless PNG encoding dominates the cost of writing variants (SPEC
# §2: more than any operator), so the settings are chosen for speed at a reasonable size.  Measured
# (CPU time, one thread, four 1024x768 photos; bench/bench_pipeline.py): OpenCV's default level 1
# with adaptive filters 67 ms / 869 KiB; level 3 81-98 ms / 825 KiB; level 1 + Paeth filter + RLE
# strategy 48 ms / 763 KiB (faster *and* smaller: trying all five filters per row is what costs,
# and Paeth residuals of photos are short runs that RLE matching catches); level 0 (stored) 38 ms
# but 2.3 MiB.  The pixels are identical under every setting.
PNG_COMPRESSION = 1


def as_rgb_uint8(image: np.ndarray) -> np.ndarray:
    """``image`` as a C-contiguous HxWx3 uint8 RGB array, or an InputError saying what it is instead
    (every operator and every encoder of variant files takes exactly this)."""
    if not isinstance(image, np.ndarray) or image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3:
        raise InputError(
            "image must be an HxWx3 uint8 RGB array (use snapbench.corruptions.load_image for files); got "
            f"{getattr(image, 'dtype', type(image).__name__)} {getattr(image, 'shape', '')}"
        )
    if image.shape[0] < 1 or image.shape[1] < 1:
        raise InputError(f"image is empty: shape {image.shape}")
    return np.ascontiguousarray(image)


def to_rgb_uint8(samples: np.ndarray) -> np.ndarray:
    """Decoded uint8 samples -- HxW or HxWx1 grey, HxWx2 grey + alpha, HxWx3 RGB, HxWx4 RGBA -- as a
    C-contiguous HxWx3 RGB array: the one rule of every image file snapbench reads (see
    :mod:`.io`).  Grey is replicated to the three channels; **alpha is composited over white**,
    ``round((c * a + 255 * (255 - a)) / 255)`` in exact integers (no float drift between machines).
    Any other dtype or shape is an InputError."""
    a = np.asarray(samples)
    if a.dtype == np.uint8 and a.ndim == 2:
        a = a[..., None]
    if a.dtype != np.uint8 or a.ndim != 3 or a.shape[2] not in (1, 2, 3, 4):
        raise InputError(f"expected HxW or HxWx{{1,2,3,4}} uint8 image samples, got {a.dtype} {a.shape}")
    if a.shape[2] in (2, 4):
        alpha = a[..., -1:].astype(np.uint16)
        colour = a[..., :-1].astype(np.uint16)
        a = ((colour * alpha + 255 * (255 - alpha) + 127) // 255).astype(np.uint8)  # <= 65152: no overflow
    if a.shape[2] == 1:
        a = np.repeat(a, 3, axis=2)
    return np.ascontiguousarray(a)


def encode_png(image: np.ndarray, *, compression: int = PNG_COMPRESSION) -> bytes:
    """Encode an ``HxWx3`` uint8 RGB array as PNG bytes (lossless; OpenCV, RGB->BGR handled).

    zlib level ``compression`` with the Paeth filter and the RLE strategy (see ``PNG_COMPRESSION``).
    """
    import cv2

    image = as_rgb_uint8(image)
    params = [
        cv2.IMWRITE_PNG_COMPRESSION, int(compression),
        cv2.IMWRITE_PNG_STRATEGY, cv2.IMWRITE_PNG_STRATEGY_RLE,
        cv2.IMWRITE_PNG_FILTER, cv2.IMWRITE_PNG_FILTER_PAETH,
    ]
    ok, buf = cv2.imencode(".png", np.ascontiguousarray(image[..., ::-1]), params)
    if not ok:  # OpenCV could not encode a valid array: not the user's doing
        raise RuntimeError(f"PNG encoding failed for an image of shape {image.shape}")
    return buf.tobytes()
