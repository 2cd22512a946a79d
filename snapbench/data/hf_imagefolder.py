"""Reader for a Hugging Face ImageFolder copy of a query/gallery benchmark.

ImageFolder convention: a folder of images plus a ``metadata.jsonl`` or ``metadata.csv`` whose
``file_name`` column names each image relative to the metadata file's folder; every other column
is a feature.  Expected layout (split folders such as ``train/`` or ``test/`` may sit above)::

    ROOT/query/metadata.jsonl     file_name, query_id, query_text, query_entity, domain, gt,
                                  hard_negative (or gallery = {"gt": [...], "hard_negative": [...]})
    ROOT/gallery/metadata.jsonl   file_name, gallery_id (or id), caption

A table is a query table when its folder is ``query``/``queries`` or it has a ``query_text`` /
``question`` column (or a ``role`` column equal to ``query``), a gallery table when its folder is
``gallery``/``corpus`` or it has a ``caption`` column and no question (or ``role`` = ``gallery``).
Column aliases: id ``query_id``|``id``; question ``query_text``|``question``; entity
``query_entity``|``entity``; gallery id ``gallery_id``|``id`` (default: ``file_name`` without its
suffix).  ``gt``/``hard_negative`` entries are gallery ids, gallery file names, or objects
``{"local": file, "caption": ...}`` as in snap_bench.json (in CSV, a JSON-encoded cell).  Without a
gallery table, the gallery is built from those objects as for snap_bench.json (images in the ``gallery`` folder
beside the ``query`` folder, else ``ROOT/gallery/``).  Other columns become query tags (``split`` = the split folder, if any).

Ids: every query and gallery id is prefixed ``hf-`` and the dataset format is ``hf-imagefolder``:
this copy's ids are its own id space, so its scores and qrels can never be paired by accident with
a run on snap_bench.json.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from ..core.errors import InputError
from ..core.records import QueryRecord
from ..core.userfiles import jsonl_lines, read_text
from ..core.validate import examples
from .common import image_notes
from .model import Dataset, GalleryItem

__all__ = ["METADATA_NAMES", "find_metadata", "load_hf_imagefolder"]

_ID_PREFIX = "hf-"
METADATA_NAMES: tuple[str, ...] = ("metadata.jsonl", "metadata.csv")
_QUERY_DIRS = {"query", "queries"}
_GALLERY_DIRS = {"gallery", "corpus", "candidates"}
_QID = ("query_id", "id")
_QTEXT = ("query_text", "question")
_QENT = ("query_entity", "entity")
_GID = ("gallery_id", "id")
_CAPTION = ("caption", "text")


def find_metadata(root: Path, depth: int = 2) -> list[Path]:
    """``metadata.jsonl``/``metadata.csv`` files in ``root`` and up to ``depth`` folders below."""
    found: list[Path] = []
    level = [Path(root)]
    for _ in range(depth + 1):
        nxt = []
        for d in level:
            found += [d / n for n in METADATA_NAMES if (d / n).is_file()]
            nxt += sorted(p for p in d.iterdir() if p.is_dir() and not p.name.startswith("."))
        level = nxt
    return found


def _cell(v: Any) -> Any:
    if isinstance(v, str) and v.strip()[:1] in ("[", "{"):
        try:
            return json.loads(v)
        except json.JSONDecodeError:
            return v
    return None if v == "" else v


def _read_table(path: Path) -> list[dict[str, Any]]:
    text = read_text(path, what="metadata table")
    if path.suffix == ".csv":
        rows = [{k: _cell(v) for k, v in row.items() if k is not None} for row in csv.DictReader(text.splitlines())]
    else:
        rows = [obj for _, obj in jsonl_lines(text, path)]
    if not rows:
        raise InputError("the metadata table is empty", path=path)
    for i, row in enumerate(rows):
        if not isinstance(row.get("file_name"), str) or not row["file_name"].strip():
            raise InputError(f"row {i + 1}: no 'file_name' (ImageFolder metadata needs one per row)", path=path)
    return rows


def _first(row: dict, names: tuple[str, ...]) -> Any:
    return next((row[n] for n in names if row.get(n) is not None), None)


def _kind(path: Path, root: Path, row: dict) -> str | None:
    role = str(row.get("role") or "").lower()
    if role in ("query", "gallery"):
        return role
    parts = {p.lower() for p in path.parent.relative_to(root).parts}
    if parts & _QUERY_DIRS:
        return "query"
    if parts & _GALLERY_DIRS:
        return "gallery"
    if _first(row, _QTEXT) is not None:
        return "query"
    if _first(row, _CAPTION) is not None:
        return "gallery"
    return None


def _layout_error(root: Path, tables: dict[Path, list[dict]], problem: str) -> InputError:
    found = "; ".join(
        f"{p.relative_to(root)} ({len(rows)} rows, columns: {', '.join(sorted({k for r in rows for k in r})[:12])})"
        for p, rows in tables.items()
    ) or "no metadata.jsonl/metadata.csv (top level: " + ", ".join(sorted(p.name for p in root.iterdir())[:12]) + ")"
    return InputError(
        f"{problem}. Expected ImageFolder tables query/metadata.jsonl (file_name, query_id, query_text, gt, ...) "
        f"and gallery/metadata.jsonl (file_name, gallery_id, caption), or query rows carrying the snap_bench.json "
        f"'gallery' objects. Found: {found}", path=root
    )


class _Refs:
    """How a query row's gt / hard_negative entries find their gallery items: through the gallery
    table's keys, or (no gallery table) by building the gallery from their ``{local, caption}`` objects."""

    def __init__(self, root: Path, tables: dict[Path, list[dict[str, Any]]], build: bool) -> None:
        self.root, self.tables, self.build = root, tables, build
        self.lookup: dict[Any, str] = {}
        self.ambiguous: set[Any] = set()
        self.built: dict[tuple[str, str], str] = {}

    def add_key(self, key: Any, gid: str) -> None:
        if key in self.lookup and self.lookup[key] != gid:
            self.ambiguous.add(key)
        self.lookup.setdefault(key, gid)

    def gid(self, ref: Any, part: str, p: Path, row: str, where: str) -> str:
        """The gallery id of one entry; ``row`` is ``"row N"``, ``where`` the row with its query id."""
        if isinstance(ref, dict):
            local, cap = ref.get("local", ref.get("file_name")), ref.get("caption") or ""
            if not isinstance(local, str):
                raise InputError(f"{where}: {part} item {ref!r} has no 'local' file", path=p)
            gid = (self.built.setdefault((local, cap), f"{_ID_PREFIX}{len(self.built)}") if self.build
                   else self.lookup.get((Path(local).name, cap)) or self.lookup.get(local))
        else:
            if self.build:
                raise _layout_error(self.root, self.tables, f"{p}: {row}: {part} entry {ref!r} names a "
                                    "gallery item but there is no gallery table")
            gid = self.lookup.get(str(ref)) or self.lookup.get(_ID_PREFIX + str(ref))
            if str(ref) in self.ambiguous:
                raise InputError(f"{where}: {part} entry {ref!r} matches several gallery items", path=p)
        if gid is None:
            raise InputError(f"{where}: {part} entry {ref!r} is not in the gallery", path=p)
        return gid


def _gallery_rows(grows: list[tuple[Path, int, dict]], refs: _Refs) -> list[GalleryItem]:
    gallery: list[GalleryItem] = []
    gids: set[str] = set()
    for p, i, row in grows:
        raw = _first(row, _GID)
        gid = _ID_PREFIX + str(raw if raw is not None else Path(row["file_name"]).with_suffix("").as_posix())
        if gid in gids:
            raise InputError(f"row {i + 1}: duplicate gallery id {gid!r}", path=p)
        cap = _first(row, _CAPTION)
        gids.add(gid)
        gallery.append(GalleryItem(gid, p.parent / row["file_name"], None if cap is None else str(cap)))
        refs.add_key(gid, gid)
        if raw is not None:
            refs.add_key(str(raw), gid)
        refs.add_key(row["file_name"], gid)
        refs.add_key(Path(row["file_name"]).name, gid)
        refs.add_key((Path(row["file_name"]).name, cap or ""), gid)
    return gallery


def _query_row(p: Path, i: int, row: dict, root: Path, refs: _Refs, seen: dict[str, str]) -> tuple[QueryRecord, dict[str, float]]:
    """One query row -> its record and its positives (gallery id -> 1.0)."""
    where = f"row {i + 1}"
    raw_id = _first(row, _QID)
    if raw_id is None:
        raise InputError(f"{where}: no query id (expected one of {', '.join(_QID)})", path=p)
    qid = _ID_PREFIX + str(raw_id)
    if qid in seen:
        raise InputError(f"{where}: duplicate query id {str(raw_id)!r} (first in {seen[qid]})", path=p)
    seen[qid] = f"{p} {where}"
    question = _first(row, _QTEXT)
    if not isinstance(question, str):
        raise InputError(f"{where} (id {str(raw_id)!r}): no question (expected one of {', '.join(_QTEXT)})", path=p)
    entity = _first(row, _QENT)
    # nested columns may be JSON-encoded strings (CSV cells, or datasets stored them as text)
    gal = _cell(row.get("gallery"))
    gal = gal if isinstance(gal, dict) else {}
    pos: dict[str, float] = {}
    for part in ("gt", "hard_negative"):
        items = _cell(row.get(part, gal.get(part))) or []
        if not isinstance(items, list):
            raise InputError(f"{where} (id {str(raw_id)!r}): {part!r} must be a list, got {items!r}", path=p)
        for ref in items:
            gid = refs.gid(ref, part, p, where, f"{where} (id {str(raw_id)!r})")
            if part == "gt":
                pos[gid] = 1.0
    used = {"file_name", "gallery", "gt", "hard_negative", "role", *_QID, *_QTEXT, *_QENT}
    tags = {k: v for k, v in row.items() if k not in used and not isinstance(v, (list, dict))}
    split = [s for s in p.parent.relative_to(root).parts if s.lower() not in _QUERY_DIRS]
    if split:
        tags["split"] = "/".join(split)
    return QueryRecord(qid, p.parent / row["file_name"], question, None if entity is None else str(entity), tags), pos


def _built_gallery(refs: _Refs, gal_root: Path, qrels: dict[str, dict[str, float]]) -> tuple[list[GalleryItem], dict]:
    """The gallery built from the records' objects; ids as in snap_bench.json: the file stem, or stem#k
    when the stem has several captions."""
    by_stem: dict[str, list[tuple[str, str]]] = {}
    for key in refs.built:
        by_stem.setdefault(Path(key[0]).stem, []).append(key)
    rename = {}
    for stem, keys in by_stem.items():
        for k, key in enumerate(keys, 1):
            rename[refs.built[key]] = _ID_PREFIX + (stem if len(keys) == 1 else f"{stem}#{k}")
    gallery = [GalleryItem(rename[g], gal_root / key[0], key[1] or None) for key, g in refs.built.items()]
    return gallery, {q: {rename[g]: r for g, r in pos.items()} for q, pos in qrels.items()}


def load_hf_imagefolder(root: Path) -> Dataset:
    """Load an ImageFolder copy (see the module docstring for the expected layout)."""
    root = Path(root)
    if root.is_file() and root.name in METADATA_NAMES:
        root = root.parent
    if not root.is_dir():
        raise InputError("ImageFolder root folder not found", path=root)
    tables = {p: _read_table(p) for p in find_metadata(root)}
    qrows: list[tuple[Path, int, dict]] = []
    grows: list[tuple[Path, int, dict]] = []
    for p, rows in tables.items():
        for i, row in enumerate(rows):
            kind = _kind(p, root, row)
            if kind is None:
                raise _layout_error(root, tables, f"{p}: row {i + 1} is neither a query nor a gallery row")
            (qrows if kind == "query" else grows).append((p, i, row))
    if not qrows:
        raise _layout_error(root, tables, "no query table")
    refs = _Refs(root, tables, build=not grows)
    gallery = _gallery_rows(grows, refs)
    queries: list[QueryRecord] = []
    qrels: dict[str, dict[str, float]] = {}
    seen: dict[str, str] = {}
    for p, i, row in qrows:
        rec, pos = _query_row(p, i, row, root, refs, seen)
        queries.append(rec)
        qrels[rec.id] = pos
    notes: list[str] = []
    if refs.build:
        # next to the (first) query table's folder, else ROOT/gallery (kept as the expected place if absent)
        qdir = qrows[0][0].parent
        cands = [qdir.parent / "gallery", root / "gallery"] if qdir.name.lower() in _QUERY_DIRS else [root / "gallery"]
        gallery, qrels = _built_gallery(refs, next((d for d in cands if d.is_dir()), root / "gallery"), qrels)
        notes.append(f"{root}: no gallery table; gallery built from the query rows' gt/hard_negative objects")
    if not gallery:
        raise _layout_error(root, tables, "no gallery items")
    zero = [q for q, v in qrels.items() if not v]
    if zero:
        notes.append(f"{len(zero)} zero-GT query(ies) (no gt entries): {examples(zero)}")
    notes.append("ids carry the 'hf-' prefix: this ImageFolder copy is its own id space (not that of snap_bench.json)")
    ds = Dataset(name=f"{root.name}-hf", format="hf-imagefolder", root=root, queries=queries, gallery=gallery,
                 qrels=qrels, released=None, notes=notes)
    ds.notes.extend(image_notes(ds))
    return ds
