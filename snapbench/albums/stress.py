"""Record-field stress operators: PAL-Bench's Realism Stress Suite, for retrieval.

They change only the *gallery records'* fields; ids, album membership and ground truth never change.
Every random choice of an operator on a record comes from
``derive_generator("albums.stress", seed, record id, operator)``, so a record's stress does not
depend on the order of the records, on other operators in the same condition, on workers or engines.

==========================  ===================================================================  ===========
``caption_truncate=F``      keep a prefix of each caption; per-record shares ``min(1, F·e^(0.3 z))``   PAL-Bench
                            (z standard normal), so their median is F (PAL-Bench: 0.51)
``ocr_dropout=P``           each photo's OCR text removed with probability P (PAL-Bench: 0.25)     PAL-Bench
``location_sparsify=P``     each photo's location (latitude, longitude, place) removed with P      PAL-Bench
                            (PAL-Bench: 0.30)
``time_dropout=P``          each photo's time removed with probability P                          PhotoBench M
``face_dropout=P``          each appearance of a non-owner face removed with P (PAL-Bench: 0.10)   PAL-Bench
``owner_face_dropout=P``    each appearance of the owner's face removed with P (PAL-Bench: 0.02)   PAL-Bench
``drop=FIELD``              field ablation: FIELD (caption, ocr, time, location, people) removed    PhotoBench
                            from every record
``caption_swap``            each caption replaced by a donor caption from **another album**,       PAL-Bench
                            matched by calendar month, caption length bin and face count (the
                            shortcut probe)
==========================  ===================================================================  ===========

Operators combine into one condition with ``+`` (``face_dropout=0.1+owner_face_dropout=0.02``),
applied left to right; presets name combinations (``combined-mild`` is PAL-Bench's).
A condition id is the string as given; it must be a safe file name on every OS.  Unknown names and
out-of-range values are :class:`~snapbench.core.errors.ConfigError`\\ s listing what is known.

Caption-swap matching: length bins by word count (1-5, 6-15, 16+); a record whose exact
(month, bin, faces) key has no donor in another album is matched on (month, bin), then (month), then
any caption of another album; the match level of every record is counted in
:attr:`StressResult.swap_levels` (and the donor's id is in the records file).  A record without a
time has month "unknown" and matches other records without one first.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..core.errors import ConfigError
from ..core.registry import Table
from ..core.seeding import derive_generator
from ..core.validate import unknown_name
from .records import AlbumRecord, time_words

__all__ = ["CLEAN", "FIELDS", "OPERATORS", "Condition", "StressOperator", "StressResult",
           "apply_condition", "parse_conditions"]

CLEAN = "clean"
#: Fields ``drop=`` accepts (``location`` = latitude, longitude and place together).
FIELDS: tuple[str, ...] = ("caption", "ocr", "time", "location", "people")
_TRUNCATE_SIGMA = 0.3  # spread of the per-record caption shares around their median (log scale)
_SAFE = re.compile(r"^[A-Za-z0-9_.=+\-]+$")


@dataclass
class StressResult:
    """Records after a condition, with what the operators did (for the report and the audit)."""

    records: list[AlbumRecord]
    donors: dict[str, str] = field(default_factory=dict)  # record id -> donor record id (caption_swap)
    swap_levels: Counter = field(default_factory=Counter)


@dataclass(frozen=True)
class StressOperator:
    """One operator: ``kind`` of its value (``"share"`` a number in (0, 1], ``"rate"`` in [0, 1],
    ``"field"`` one of :data:`FIELDS`, ``"none"`` no value), what it moves (``fields``), its source and
    ``apply(records, value, seed, result)``."""

    name: str
    kind: str
    fields: tuple[str, ...]
    source: str
    help: str
    apply: Callable[[list[AlbumRecord], object, int, StressResult], list[AlbumRecord]]


#: Every operator by name; an unknown name is an error listing the known ones.
OPERATORS: Table[StressOperator] = Table("record-field stress operator", param="stress")

#: Named combinations (the ids users give to --stress).
_PRESETS: dict[str, str] = {
    "combined-mild": "caption_truncate=0.51+ocr_dropout=0.25+location_sparsify=0.3+face_dropout=0.1+owner_face_dropout=0.02",
    "faces-mild": "face_dropout=0.1+owner_face_dropout=0.02",
}


def _rng(seed: int, rec: AlbumRecord, op: str):
    return derive_generator("albums.stress", int(seed), rec.id, op)


def _truncate(records, share, seed, _res):
    out = []
    for r in records:
        if not r.caption:
            out.append(r)
            continue
        s = min(1.0, float(share) * math.exp(_TRUNCATE_SIGMA * _rng(seed, r, "caption_truncate").standard_normal()))
        keep = int(round(s * len(r.caption)))
        out.append(r.without(caption=r.caption[:keep].rstrip() or None))
    return out


def _dropout(field_name: str, op: str) -> Callable:
    def apply(records, rate, seed, _res):
        out = []
        for r in records:
            present = r.has_location if field_name == "location" else getattr(r, field_name) is not None
            if present and _rng(seed, r, op).random() < float(rate):
                r = _removed(r, field_name)
            out.append(r)
        return out
    return apply


def _removed(r: AlbumRecord, field_name: str) -> AlbumRecord:
    if field_name == "location":
        return r.without(latitude=None, longitude=None, place=None)
    if field_name == "people":
        return r.without(faces=())
    return r.without(**{field_name: None})


def _face_dropout(owner: bool, op: str) -> Callable:
    def apply(records, rate, seed, _res):
        out = []
        for r in records:
            if not r.faces:
                out.append(r)
                continue
            rng = _rng(seed, r, op)
            u = rng.random(len(r.faces))  # one draw per appearance, in the record's own face order
            kept = tuple(f for f, x in zip(r.faces, u) if f.owner != owner or x >= float(rate))
            out.append(r.without(faces=kept))
        return out
    return apply


def _drop(records, field_name, _seed, _res):
    return [_removed(r, str(field_name)) for r in records]


def _length_bin(caption: str) -> str:
    n = len(caption.split())
    return "1-5" if n <= 5 else "6-15" if n <= 15 else "16+"


def _swap(records, _value, seed, res: StressResult):
    def key(r: AlbumRecord) -> tuple[str, str, int]:
        month = time_words(r.time).get("month", "unknown")
        return month, _length_bin(r.caption or ""), len(r.faces)

    levels = (("month+length+faces", lambda k: k), ("month+length", lambda k: k[:2]), ("month", lambda k: k[:1]),
              ("any", lambda k: ()))
    index: list[dict[tuple, list[AlbumRecord]]] = [defaultdict(list) for _ in levels]
    with_caption = sorted((r for r in records if r.caption), key=lambda r: r.id)  # donor order: by id, not input order
    for r in with_caption:
        for (_, f), ix in zip(levels, index):
            ix[f(key(r))].append(r)
    out = []
    for r in records:
        if not r.caption:
            out.append(r)
            continue
        k = key(r)
        for (name, f), ix in zip(levels, index):
            pool = [d for d in ix.get(f(k), ()) if d.album != r.album]
            if pool:
                donor = pool[int(_rng(seed, r, "caption_swap").integers(len(pool)))]
                res.donors[r.id] = donor.id
                res.swap_levels[name] += 1
                out.append(r.without(caption=donor.caption))
                break
        else:
            res.swap_levels["no donor (single album)"] += 1
            out.append(r)
    return out


for _op in (
    StressOperator("caption_truncate", "share", ("caption",), "PAL-Bench Realism Stress Suite (median 0.51)",
                   "keep a prefix of each caption; per-record shares with median F", _truncate),
    StressOperator("ocr_dropout", "rate", ("ocr",), "PAL-Bench Realism Stress Suite (0.25)",
                   "remove each photo's OCR text with probability P", _dropout("ocr", "ocr_dropout")),
    StressOperator("location_sparsify", "rate", ("location",), "PAL-Bench Realism Stress Suite (0.30)",
                   "remove each photo's location with probability P", _dropout("location", "location_sparsify")),
    StressOperator("time_dropout", "rate", ("time",), "PhotoBench metadata source (M)",
                   "remove each photo's time with probability P", _dropout("time", "time_dropout")),
    StressOperator("face_dropout", "rate", ("people",), "PAL-Bench Realism Stress Suite (0.10)",
                   "remove each non-owner face appearance with probability P", _face_dropout(False, "face_dropout")),
    StressOperator("owner_face_dropout", "rate", ("people",), "PAL-Bench Realism Stress Suite (0.02)",
                   "remove each appearance of the owner with probability P", _face_dropout(True, "owner_face_dropout")),
    StressOperator("drop", "field", (), "PhotoBench source ablation",
                   "remove FIELD from every record", _drop),
    StressOperator("caption_swap", "none", ("caption",), "PAL-Bench caption-swap shortcut probe",
                   "replace each caption with a donor's from another album (same month, length bin, faces)", _swap),
):
    OPERATORS.register(_op.name, _op)


@dataclass(frozen=True)
class Condition:
    """One stress condition: its id (as given) and its ``(operator, value)`` steps."""

    id: str
    steps: tuple[tuple[str, object], ...]

    @property
    def fields(self) -> tuple[str, ...]:
        """The record fields this condition can move."""
        out: list[str] = []
        for name, value in self.steps:
            op = OPERATORS.get(name)
            for f in (op.fields or (str(value),)):
                if f not in out:
                    out.append(f)
        return tuple(out)


def _parse_step(text: str, cid: str) -> tuple[str, object]:
    name, eq, raw = text.partition("=")
    name = name.strip()
    op = OPERATORS.get(name)  # unknown -> ConfigError listing the known names
    where = f"stress condition {cid!r}: {name}"
    if op.kind == "none":
        if eq:
            raise ConfigError(f"{where} takes no value (write {name})", param="stress")
        return name, None
    if not eq or not raw.strip():
        shown = "FIELD" if op.kind == "field" else "P" if op.kind == "rate" else "F"
        raise ConfigError(f"{where} needs a value ({name}={shown})", param="stress")
    raw = raw.strip()
    if op.kind == "field":
        if raw not in FIELDS:
            raise ConfigError(f"{where}: {unknown_name('field', raw, FIELDS)}", param="stress")
        return name, raw
    try:
        x = float(raw)
    except ValueError:
        raise ConfigError(f"{where}: {raw!r} is not a number", param="stress") from None
    lo_ok = x > 0 if op.kind == "share" else x >= 0
    if not (math.isfinite(x) and lo_ok and x <= 1):
        rng = "0 < F <= 1 (the median share of characters kept)" if op.kind == "share" else "0 <= P <= 1"
        raise ConfigError(f"{where}: {raw} is out of range ({rng})", param="stress")
    return name, x


def parse_conditions(spec: str | Sequence[str]) -> list[Condition]:
    """Parse ``--stress``: comma-separated condition ids (an operator, ``a+b`` combinations, presets)."""
    given = [p.strip() for p in (spec.split(",") if isinstance(spec, str) else spec)]
    parts = [p for p in given if p]
    if not parts:
        raise ConfigError("give at least one stress condition, e.g. location_sparsify=0.3 or combined-mild; "
                          f"operators: {', '.join(OPERATORS.names())}; presets: {', '.join(_PRESETS)}",
                          param="stress")
    if len(parts) < len(given):  # as strict as a condition given twice: never a silent fix
        raise ConfigError(f"{len(given) - len(parts)} empty entry(ies) in {spec if isinstance(spec, str) else ','.join(given)!r} (a comma at an end, "
                          "or two in a row); list each condition once, comma-separated", param="stress")
    out: list[Condition] = []
    for cid in parts:
        if cid == CLEAN:
            raise ConfigError("'clean' (the unstressed records) is always evaluated; list only stress conditions",
                              param="stress")
        if not _SAFE.match(cid):
            raise ConfigError(f"stress condition {cid!r}: use only letters, digits and _ . = + - (the id is a "
                              "file name on every OS)", param="stress")
        if any(c.id == cid for c in out):
            raise ConfigError(f"stress condition {cid!r} is given twice", param="stress")
        steps: list[tuple[str, object]] = []
        for part in cid.split("+"):
            if part in _PRESETS:
                steps += [_parse_step(p, cid) for p in _PRESETS[part].split("+")]
            elif part.partition("=")[0].strip() not in OPERATORS:
                raise ConfigError(unknown_name("stress operator or preset", part.partition("=")[0].strip(),
                                               [*OPERATORS.names(), *_PRESETS], where=f" in {cid!r}"), param="stress")
            else:
                steps.append(_parse_step(part, cid))
        out.append(Condition(cid, tuple(steps)))
    return out


def apply_condition(records: Sequence[AlbumRecord], cond: Condition, seed: int) -> StressResult:
    """The records under ``cond`` (same ids, albums and order), with what the operators did."""
    res = StressResult(list(records))
    for name, value in cond.steps:
        res.records = OPERATORS.get(name).apply(res.records, value, int(seed), res)
    return res
