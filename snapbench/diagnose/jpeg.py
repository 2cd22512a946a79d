"""JPEG headers without decoding: frame size and quantisation tables, and the IJG quality they imply.

A JPEG's quantisation tables say how hard it was compressed, exactly and for free (they sit in the
header): libjpeg, and the many encoders built on it (OpenCV, Pillow, most phones' and web tools'
pipelines), scale one standard table by the "quality" q (ITU T.81 Annex K, IJG ``jcparam.c``):

    scale = 5000 / q  (q < 50),   200 - 2 q  (q >= 50);   T_q[i] = clamp((K[i] * scale + 50) // 100, 1, 255)

:func:`ijg_quality` returns the q whose scaled luminance table is closest (L1) to the file's; for
an IJG-made table that is exact, for other encoders' tables it is the nearest IJG equivalent.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["JpegHeader", "parse_jpeg_header", "ijg_table", "ijg_quality"]

# ITU T.81 Table K.1 (luminance), natural (row-major) order.
_K1 = np.array([
    16, 11, 10, 16, 24, 40, 51, 61,
    12, 12, 14, 19, 26, 58, 60, 55,
    14, 13, 16, 24, 40, 57, 69, 56,
    14, 17, 22, 29, 51, 87, 80, 62,
    18, 22, 37, 56, 68, 109, 103, 77,
    24, 35, 55, 64, 81, 104, 113, 92,
    49, 64, 78, 87, 103, 121, 120, 101,
    72, 92, 95, 98, 112, 100, 103, 99,
], dtype=np.int64)

# Zig-zag scan order: position k of a DQT segment holds natural-order coefficient _ZIGZAG[k].
_ZIGZAG = np.array([
    0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6, 7, 14, 21,
    28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61,
    54, 47, 55, 62, 63,
], dtype=np.int64)

# Markers that stand alone (no length field): TEM, RSTn, SOI, EOI.
_STANDALONE = {0x01, *range(0xD0, 0xD8), 0xD8, 0xD9}
# Start-of-frame markers (SOF0-3, 5-7, 9-11, 13-15): they carry the image size.
_SOF = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}


@dataclass
class JpegHeader:
    """Frame size and the quantisation tables (id -> 64 values in natural order) of a JPEG."""

    width: int
    height: int
    tables: dict[int, np.ndarray] = field(default_factory=dict)


def parse_jpeg_header(data: bytes) -> JpegHeader | None:
    """The header of JPEG bytes ``data``, read up to the first scan; ``None`` when ``data`` is not a
    JPEG or its header is malformed (the caller decodes it the ordinary way and reports errors)."""
    if len(data) < 4 or data[0] != 0xFF or data[1] != 0xD8:
        return None
    pos, n = 2, len(data)
    width = height = 0
    tables: dict[int, np.ndarray] = {}
    while pos + 4 <= n:
        if data[pos] != 0xFF:
            return None
        marker = data[pos + 1]
        if marker == 0xFF:  # fill byte
            pos += 1
            continue
        if marker in _STANDALONE:
            pos += 2
            continue
        length = int.from_bytes(data[pos + 2:pos + 4], "big")
        seg = data[pos + 4:pos + 2 + length]
        if length < 2 or len(seg) != length - 2:
            return None
        if marker == 0xDB:
            i = 0
            while i < len(seg):
                precision, tid = seg[i] >> 4, seg[i] & 0x0F
                size = 128 if precision else 64
                raw = seg[i + 1:i + 1 + size]
                if len(raw) != size:
                    return None
                vals = np.frombuffer(raw, dtype=">u2" if precision else np.uint8).astype(np.int64)
                natural = np.empty(64, dtype=np.int64)
                natural[_ZIGZAG] = vals
                tables[tid] = natural
                i += 1 + size
        elif marker in _SOF and len(seg) >= 5:
            height = int.from_bytes(seg[1:3], "big")
            width = int.from_bytes(seg[3:5], "big")
        elif marker == 0xDA:
            break
        pos += 2 + length
    if width <= 0 or height <= 0:
        return None
    return JpegHeader(width, height, tables)


def ijg_table(quality: int) -> np.ndarray:
    """The IJG luminance table (natural order) of ``quality`` 1-100 (baseline: entries <= 255)."""
    q = min(100, max(1, int(quality)))
    scale = 5000 // q if q < 50 else 200 - 2 * q
    return np.clip((_K1 * scale + 50) // 100, 1, 255)


_ALL = np.stack([ijg_table(q) for q in range(1, 101)])


def ijg_quality(table: np.ndarray) -> int:
    """The IJG quality 1-100 whose luminance table is nearest (L1) to ``table`` (64 values, natural
    order); ties go to the higher quality."""
    t = np.asarray(table, dtype=np.int64).reshape(64)
    dist = np.abs(_ALL - t).sum(axis=1)
    best = np.flatnonzero(dist == dist.min())
    return int(best[-1]) + 1
