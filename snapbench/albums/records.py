"""Album records: one photo's fields (caption, OCR, time, location, people) and the checks on them.

A record is what a personal-album search indexes besides the pixels.  Absent fields are ``None``
(``people`` is an empty tuple): a missing geotag, an empty time or a photo without faces is
*absent*, never an error; a value that is present but wrong (latitude 200, time "yesterday") is an
:class:`~snapbench.core.errors.InputError` naming the file, the photo and the value.

A record's fields -> the text a text encoder indexes.

PhotoBench's caption-based pipelines index a caption per photo; personal-album queries also ask for
places, times and people, which live in the photo's metadata (PhotoBench's source types M and F).
The default template therefore writes the caption, the OCR, the time as the words people search by,
the place and the people::

    [{caption}.] [Text: {ocr}.] [Taken {time}.] [Place: {place}.] [People: {people}.]

A ``[...]`` group is written only when every field inside it is present, so an absent field writes
nothing (not "Place: ."); whitespace is collapsed.  Fields:

* ``caption``, ``ocr``: as given;
* ``time``: ``<year> <month name> <season> <part of day> <weekday>`` (``2023 May spring afternoon
  Saturday``); season by meteorological months of the northern hemisphere (Dec-Feb winter ...);
  part of day: night 0-5 h, morning 5-12, afternoon 12-17, evening 17-21, night 21-24; a date
  without a clock time has no part of day.  Also the parts alone: ``year``, ``month``, ``season``,
  ``part_of_day``, ``weekday``, ``date`` (ISO date);
* ``place``: the record's own place name, else ``city, region, country`` from offline reverse
  geocoding of latitude/longitude (the nearest populated place of GeoNames, via the
  ``reverse-geocode`` package: ``pip install 'snapbench[albums]'``); also ``city``, ``region``,
  ``country`` alone (geocoded only);
* ``people``: every nickname of every face in the photo, comma-separated (the owner: ``me, myself``).

``--record-template`` replaces the default with another string in the same syntax; an unknown
``{field}`` is an error listing the known ones.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..core.errors import ConfigError, InputError
from ..core.install_hint import import_extra
from ..core.validate import did_you_mean

__all__ = ['OWNER', 'OWNER_NAMES', 'AlbumRecord', 'Face', 'check_coordinates', 'parse_time', 'DEFAULT_TEMPLATE', 'RecordTemplate', 'reverse_geocode', 'time_words']

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
        """The fields as the records file writes them (absent = ``None``; the file's ``place`` is
        :meth:`RecordTemplate.place`, the geocoded one included)."""
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
        given, value, lacking = ("latitude", lat, "longitude") if b is None else ("longitude", lon, "latitude")
        raise InputError(f"{where}: {given} {value!r} but no {lacking}: give both or neither", path=path)
    return a, b


DEFAULT_TEMPLATE = "[{caption}.] [Text: {ocr}.] [Taken {time}.] [Place: {place}.] [People: {people}.]"

#: Every field a template may name.
_TEMPLATE_FIELDS: tuple[str, ...] = (
    "caption", "ocr", "time", "year", "month", "season", "part_of_day", "weekday", "date",
    "place", "city", "region", "country", "people",
)

_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
           "October", "November", "December")
_SEASONS = ("winter", "winter", "spring", "spring", "spring", "summer", "summer", "summer", "autumn",
            "autumn", "autumn", "winter")
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
#: The template fields read from the place (given, or geocoded from latitude/longitude).
_PLACE_FIELDS = frozenset({"place", "city", "region", "country"})
#: The template fields read from the time.
_TIME_FIELDS = frozenset({"time", "year", "month", "season", "part_of_day", "weekday", "date"})
#: The template fields that write each record field a stress moves (snapbench.albums.stress FIELDS).
_WRITTEN_BY = {"caption": frozenset({"caption"}), "ocr": frozenset({"ocr"}), "time": _TIME_FIELDS,
               "location": _PLACE_FIELDS, "people": frozenset({"people"})}
_FIELD = re.compile(r"\{([^{}]*)\}")
_GROUP = re.compile(r"\[([^\[\]]*)\]")
_PIECE = re.compile(_GROUP.pattern + r"|\{([^{}]*)\}")


def _part_of_day(hour: int) -> str:
    if 5 <= hour < 12:
        return "morning"
    if 12 <= hour < 17:
        return "afternoon"
    if 17 <= hour < 21:
        return "evening"
    return "night"


def time_words(value: str | None) -> dict[str, str]:
    """The time fields of an ISO time (empty for ``None``); see the module docstring."""
    if value is None:
        return {}
    dt = parse_time(value, where="time", path=None)
    if dt is None:
        return {}
    has_clock = "T" in value or " " in value.strip()  # a bare date says nothing about the part of day
    out = {"year": str(dt.year), "month": _MONTHS[dt.month - 1], "season": _SEASONS[dt.month - 1],
           "weekday": _WEEKDAYS[dt.weekday()], "date": dt.date().isoformat()}
    if has_clock:
        out["part_of_day"] = _part_of_day(dt.hour)
    out["time"] = " ".join(out[k] for k in ("year", "month", "season", "part_of_day", "weekday") if k in out)
    return out


@lru_cache(maxsize=1)
def _geocoder():
    # no param: the geocoder is needed by any template naming a place (the default one too), so no
    # flag the user gave (or did not give) is to blame
    return import_extra("reverse_geocode", "albums", "turning latitude/longitude into place names needs the offline "
                        "geocoder (reverse-geocode)", error=ConfigError)


@lru_cache(maxsize=65536)
def reverse_geocode(latitude: float, longitude: float) -> dict[str, str]:
    """``{"city", "region", "country"}`` of the nearest populated place (GeoNames via ``reverse-geocode``,
    offline: the data ships in the wheel)."""
    hit = _geocoder().get((float(latitude), float(longitude)))
    return {k: str(hit.get(src) or "") for k, src in (("city", "city"), ("region", "state"), ("country", "country"))}


def _place_fields(rec: AlbumRecord) -> dict[str, str]:
    if rec.place is not None:
        return {"place": rec.place}
    if rec.latitude is None or rec.longitude is None:
        return {}
    geo = {k: v for k, v in reverse_geocode(rec.latitude, rec.longitude).items() if v}
    parts: list[str] = []
    for k in ("city", "region", "country"):
        if k in geo and geo[k] not in parts:
            parts.append(geo[k])
    return {**geo, "place": ", ".join(parts)} if parts else {}


def _people(rec: AlbumRecord) -> str | None:
    names: list[str] = []
    for f in rec.faces:
        for n in (f.names + OWNER_NAMES) if f.owner else f.names:
            if n not in names:
                names.append(n)
    return ", ".join(names) or None


def _check_pairs(source: str, opening: str, closing: str, what: str, rule: str) -> None:
    """:class:`ConfigError` at the first of ``source``'s ``opening``/``closing`` characters that does not
    pair (read left to right: an opening inside an open pair, a closing with none open, one left open)."""
    start = None
    for i, ch in enumerate(source, 1):
        if ch == opening and start is not None:
            problem = f"{ch!r} at character {i} opens inside the one opened at character {start}"
        elif ch == closing and start is None:
            problem = f"{ch!r} at character {i} has no opening partner"
        else:
            start = i if ch == opening else None if ch == closing else start
            continue
        break
    else:
        if start is None:
            return
        problem = f"{opening!r} at character {start} has no closing partner"
    raise ConfigError(f"unbalanced {what} in the record template {source!r}: {problem} ({rule})",
                      param="record_template")


@dataclass(frozen=True)
class RecordTemplate:
    """A parsed template (see the module docstring); ``render(record)`` is the text to encode."""

    source: str = DEFAULT_TEMPLATE

    def __post_init__(self) -> None:
        if not isinstance(self.source, str) or not self.source.strip():
            raise ConfigError("a record template must be a non-empty string", param="record_template")
        # any "{" / "}" outside a {field}, "[" / "]" outside a [group], would be written as a literal character
        _check_pairs(self.source, "{", "}", "braces", "a {field} holds a field name only")
        _check_pairs(self.source, "[", "]", "brackets", "a [group] closes before the next one opens; groups do not nest")
        unknown = [f for f in _FIELD.findall(self.source) if f not in _TEMPLATE_FIELDS]
        if unknown:
            raise ConfigError(f"unknown field {{{unknown[0]}}} in the record template"
                              f"{did_you_mean(unknown[0], _TEMPLATE_FIELDS)}; known: "
                              f"{', '.join('{' + f + '}' for f in _TEMPLATE_FIELDS)}", param="record_template")
        if not _FIELD.search(self.source):
            raise ConfigError(f"the record template {self.source!r} names no field (e.g. {{caption}})",
                              param="record_template")

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(_FIELD.findall(self.source)))

    def writes(self, field: str) -> bool:
        """Whether the text holds anything of the record field ``field`` (``caption``, ``ocr``, ``time``,
        ``location``, ``people``): a stress of a field the template does not write changes no text."""
        return bool(set(self.fields) & _WRITTEN_BY[field])

    def place(self, rec: AlbumRecord) -> str | None:
        """The place name of ``rec`` as the records file writes it: its own place, else, when this
        template names a place field, the geocoded ``city, region, country`` its text says (a template
        without one needs no geocoder, so its records keep only their own place)."""
        if set(self.fields) & _PLACE_FIELDS:
            return _place_fields(rec).get("place")
        return rec.place

    def values(self, rec: AlbumRecord) -> dict[str, str]:
        """The present fields of ``rec`` as strings (absent fields are missing from the dict)."""
        need = set(self.fields)
        vals: dict[str, str] = {}
        if rec.caption:
            vals["caption"] = rec.caption.strip()
        if rec.ocr:
            vals["ocr"] = rec.ocr.strip()
        if need & _TIME_FIELDS:
            vals.update(time_words(rec.time))
        if need & _PLACE_FIELDS:
            vals.update(_place_fields(rec))
        people = _people(rec)
        if people:
            vals["people"] = people
        return vals

    def render(self, rec: AlbumRecord) -> str:
        vals = self.values(rec)

        def piece(m: re.Match) -> str:
            if m.group(1) is not None:  # a [group]: written only when all of its fields are present
                names = _FIELD.findall(m.group(1))
                if any(n not in vals for n in names):
                    return ""
                return _FIELD.sub(lambda f: vals[f.group(1)], m.group(1))
            return vals.get(m.group(2), "")

        # one pass over the template: a value holding "[" or "{name}" is written as it is, never re-read
        return " ".join(_PIECE.sub(piece, self.source).split())

    def render_all(self, records: Sequence[AlbumRecord]) -> list[str]:
        return [self.render(r) for r in records]
