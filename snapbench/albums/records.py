"""Album records: one photo's fields (caption, OCR, time, location, people) and the checks on them.

A record is what a personal-album search indexes besides the pixels.  Absent fields are ``None``
(``people`` is an empty tuple): a missing geotag, an empty time or a photo without faces is
*absent*, never an error; a value that is present but wrong (latitude 200, time "yesterday") is an
:class:`~snapbench.errors.InputError` naming the file, the photo and the value.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from ..errors import InputError

__all__ = ["OWNER", "OWNER_NAMES", "AlbumRecord", "Face", "check_coordinates", "parse_time"]

#: The face id PhotoBench gives the album's owner, and the name snapbench writes for the owner.
OWNER = "1"
OWNER_NAMES: tuple[str, ...] = ("me", "myself")


@dataclass(frozen=True)
class Face:
    """One appearance of a person in a photo: the face id and all its nicknames (the first is the
    name written to records files); ``owner`` marks the album owner (PhotoBench face id ``"1"``,
    JSONL name ``me``)."""

    face_id: str
    names: tuple[str, ...]
    owner: bool = False

    @property
    def name(self) -> str:
        return "me" if self.owner else self.names[0]


@dataclass(frozen=True)
class AlbumRecord:
    """One gallery photo of one album.  ``id`` is ``<album>/<file name>`` (unique across albums);
    ``time`` the ISO 8601 string as read (``None``: absent); ``place`` a place name given by the data
    (JSONL), used instead of reverse geocoding ``latitude``/``longitude``."""

    id: str
    album: str
    image: Path | None = None
    caption: str | None = None
    ocr: str | None = None
    time: str | None = None
    latitude: float | None = None
    longitude: float | None = None
    place: str | None = None
    faces: tuple[Face, ...] = field(default_factory=tuple)

    @property
    def has_location(self) -> bool:
        return self.place is not None or (self.latitude is not None and self.longitude is not None)

    @property
    def people(self) -> list[str]:
        """The people as names (the owner ``me``), one per face appearance."""
        return [f.name for f in self.faces]

    def without(self, **fields: Any) -> AlbumRecord:
        """A copy with ``fields`` replaced (ids and album never change: the stress keeps them)."""
        return replace(self, **fields)

    def fields(self) -> dict[str, Any]:
        """The fields as the records file writes them (absent = ``None``)."""
        return {"caption": self.caption, "ocr": self.ocr, "time": self.time, "latitude": self.latitude,
                "longitude": self.longitude, "place": self.place, "people": self.people or None}


_EXIF_TIME = re.compile(r"^(\d{4}):(\d{2}):(\d{2})([ T].*)?$")


def parse_time(value: Any, *, where: str, path: Path | None) -> datetime | None:
    """The time of a photo: ISO 8601 (``2023-05-12``, ``2023-05-12T14:30:00``, with an offset or
    ``Z``), or the EXIF form ``2023:05:12 14:30:00`` cameras write; ``None``/``""`` are absent;
    anything else is an :class:`InputError` naming ``where`` and the value."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str):
        raise InputError(f"{where}: time must be an ISO 8601 string, got {value!r}", path=path)
    text = value.strip()
    m = _EXIF_TIME.match(text)
    if m:
        text = f"{m.group(1)}-{m.group(2)}-{m.group(3)}{m.group(4) or ''}"
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        raise InputError(f"{where}: time {value!r} is not an ISO 8601 date/time (e.g. 2023-05-12T14:30:00)",
                         path=path) from None


def check_coordinates(lat: Any, lon: Any, *, where: str, path: Path | None) -> tuple[float | None, float | None]:
    """Latitude/longitude as floats; both ``None``/``""`` = absent location; only one of them,
    a value out of range (latitude 200) or not a number is an :class:`InputError`."""
    def num(v: Any, name: str, bound: float) -> float | None:
        if v is None or (isinstance(v, str) and not v.strip()):
            return None
        try:
            x = float(v)
        except (TypeError, ValueError):
            raise InputError(f"{where}: {name} must be a number, got {v!r}", path=path) from None
        if isinstance(v, bool) or not math.isfinite(x) or abs(x) > bound:
            raise InputError(f"{where}: {name} {v!r} is outside -{bound:g}..{bound:g}", path=path)
        return x

    a, b = num(lat, "latitude", 90.0), num(lon, "longitude", 180.0)
    if (a is None) != (b is None):
        raise InputError(f"{where}: latitude {lat!r} and longitude {lon!r}: give both or neither", path=path)
    return a, b
