"""The lossless image formats variant files are written in: name -> file extension and the extra it needs.

The one table of them: :mod:`snapbench.corruptions.codecs` encodes and decodes them, ``corrupt --format``
lists them in its help.  It imports nothing because the CLI builds that help when it starts (importing
the codecs module would load the corruptions package with OpenCV).
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["DEFAULT_IMAGE_FORMAT", "IMAGE_FORMATS", "formats_needing"]


class _ImageFormat(NamedTuple):
    """One lossless format: its file extension (with the dot) and the ``snapbench[extra]`` it needs
    (``None``: nothing beyond snapbench's own dependencies)."""

    extension: str
    extra: str | None


#: Format name -> :class:`_ImageFormat`.
IMAGE_FORMATS: dict[str, _ImageFormat] = {
    "png": _ImageFormat(".png", None),       # OpenCV
    "qoi": _ImageFormat(".qoi", "codecs"),   # imagecodecs
    "jxl": _ImageFormat(".jxl", "codecs"),
    "webp": _ImageFormat(".webp", "codecs"),
    "npz": _ImageFormat(".npz", None),       # numpy
}

#: The format of ``corrupt`` and :class:`snapbench.app.corrupt.CorruptOptions` unless told otherwise.
DEFAULT_IMAGE_FORMAT = "png"


def formats_needing(extra: str) -> tuple[str, ...]:
    """The formats that need the ``<extra>`` extra, in table order."""
    return tuple(name for name, f in IMAGE_FORMATS.items() if f.extra == extra)
