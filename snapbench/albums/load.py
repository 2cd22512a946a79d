"""Datasets of many albums (users): each query searches only its own album's gallery.

Two layouts:

* **PhotoBench**: a folder of ``album*/`` folders (or one album folder), each with ``query.json``
  (queries, read by :mod:`snapbench.data.photobench`: ids ``<album>_q<4 digits>``, tags ``source``
  etc.), ``images/metadata/metadata.json`` (``{file: {latitude, longitude, time}}``; null
  coordinates and ``""`` times are absent), ``images/faceid/face_info_en.json``
  (``face_id_to_nicknames``, ``image_to_face_ids``; face id ``"1"`` is the owner) and, optionally,
  ``images/captions.json`` / ``images/ocr.json`` (``{file: text}``: the release ships captions only
  as FAISS indexes, so captions and OCR you produced go there).  A query record carrying
  ``ground_truth`` (file names; ``[]`` = a zero-GT query) is the ground truth, as in the release's
  ``samples/`` and the Hugging Face copies' ``validation.json``.  The Hugging Face copies keep the
  query files under ``protected/album*/{validation,test,query}.json``: ``split`` picks one (the photos'
  metadata is read from ``protected/album*/images/`` or, when absent there, ``album*/images/`` next to
  ``protected/``).  Gallery ids are ``<album>/<file name>``.
* **JSONL**: a query manifest (``queries.jsonl``; each query may carry ``album``) and a gallery JSONL
  whose records carry ``id`` and may carry ``album``, ``image``, ``caption``, ``ocr``, ``time`` (ISO
  8601), ``latitude``/``longitude`` and/or ``place``, ``people`` (a list of names; the owner is ``me``),
  with qrels as for ``snapbench run``.  Records and queries without ``album`` form the album ``all``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import InputError, arg
from ..core.records import QueryRecord
from ..core.userfiles import jsonl_lines, read_json, read_text
from ..core.validate import examples, unknown_name
from ..data.jsonl import MANIFEST_NAMES, QRELS_NAMES, gallery_next_to, read_queries, sibling
from ..data.photobench import (
    album_photos,
    album_queries,
    album_sort_key,
    albums_without_queries,
    check_language,
    photobench_albums,
)
from ..data.qrels import align_qrels, read_qrels_file
from .records import OWNER, OWNER_NAMES, AlbumRecord, Face, check_coordinates, parse_time

__all__ = ["AlbumDataset", "load_albums"]

#: The album of JSONL queries and records that name none.
_DEFAULT_ALBUM = "all"
#: The query files of the Hugging Face copies (``protected/album*/<split>.json``).
_SPLITS: tuple[str, ...] = ("validation", "test", "query")


@dataclass
class AlbumDataset:
    """Queries and records of many albums.  ``qrels``: query id -> {record id: grade}; a query with
    ``{}`` is a zero-GT query.  ``albums``: the album names in order."""

    name: str
    format: str
    root: Path
    queries: list[QueryRecord]
    records: list[AlbumRecord]
    qrels: dict[str, dict[str, float]]
    notes: list[str] = field(default_factory=list)

    @property
    def albums(self) -> list[str]:
        seen: dict[str, None] = {}
        for r in self.records:
            seen.setdefault(r.album, None)
        return list(seen)

    def query_album(self, q: QueryRecord) -> str:
        return str(q.tags.get("album") or _DEFAULT_ALBUM)


def _check_own_album(queries: list[QueryRecord], records: list[AlbumRecord], gt: dict[str, dict[str, float]], *,
                     path: Path, no_album: set[str] = frozenset(), gallery: Path | None = None) -> None:
    """The one rule of a qrels file for every layout: each query's relevant records are in its own album
    (each query searches only its album); ``no_album``: JSONL records without an ``album`` field (in the
    album ``all``), named as such."""
    album_of = {r.id: r.album for r in records}
    for q in queries:
        own = str(q.tags.get("album") or _DEFAULT_ALBUM)
        other = [g for g in gt.get(q.id, {}) if album_of[g] != own]
        if not other:
            continue
        lack = [g for g in other if g in no_album]
        head = f"query {q.id!r} (album {own!r}): relevant record(s)"
        if lack:
            rest = [g for g in other if g not in no_album]
            raise InputError(f"{head} without an 'album' field in {gallery}, which therefore are in the album "
                             f"{_DEFAULT_ALBUM!r}: {examples(lack)}"
                             + (f", and from another album: {examples(rest)}" if rest else "")
                             + "; give each gallery record its album (each query searches only its own album)",
                             path=path)
        raise InputError(f"{head} from another album: {examples(other)}; each query searches only its own album",
                         path=path)


# ------------------------------------------------------------------------------ PhotoBench
def _album_dirs(path: Path, split: str | None) -> tuple[list[Path], str, Path | None, list[str]]:
    """(album folders, query file name, folder of the non-protected copy, notes: the album folders
    skipped for want of the query file, never dropped silently)."""
    qfile = f"{split}.json" if split else "query.json"
    if split is not None and split not in _SPLITS:
        raise InputError(unknown_name("split", split, _SPLITS), param="split")
    if (path / qfile).is_file():
        return [path], qfile, None, []
    root = path
    if split is not None and (path / "protected").is_dir():
        root = path / "protected"
    albums = photobench_albums(root, query_file=qfile) if root.is_dir() else []
    if not albums:
        where = f"{qfile} (--split {split})" if split else "query.json"
        raise InputError(f"no PhotoBench album here: no folder holding {where}"
                         + ("" if split or not (path / "protected").is_dir() else
                            f"; the queries are under protected/: choose a split with {arg('split')} "
                            f"({', '.join(_SPLITS)})"), path=path)
    skipped = albums_without_queries(root, query_file=qfile)
    notes = [f"{d}: no {qfile}: album {d.name!r} is skipped (its photos are searched by no query)" for d in skipped]
    return albums, qfile, (path if root != path else None), notes


def _images_dir(album: Path, public: Path | None) -> Path:
    own = album / "images"
    if own.is_dir() or public is None:
        return own
    return public / album.name / "images"


def _text_map(path: Path, names: set[str], what: str) -> dict[str, str]:
    if not path.is_file():
        return {}
    data = read_json(path, what=what)
    if not isinstance(data, dict) or not all(isinstance(v, (str, type(None))) for v in data.values()):
        raise InputError(f"expected a JSON object {{file name: {what}}}", path=path)
    unknown = sorted(set(data) - names)
    if unknown:
        raise InputError(f"{len(unknown)} file name(s) are not photos of this album: {examples(unknown)}", path=path)
    return {k: v for k, v in data.items() if isinstance(v, str) and v.strip()}


def _faces(path: Path, names: set[str]) -> dict[str, tuple[Face, ...]]:
    if not path.is_file():
        return {}
    data = read_json(path, what="PhotoBench face file")
    if not isinstance(data, dict):
        raise InputError("expected an object with 'face_id_to_nicknames' and 'image_to_face_ids'", path=path)
    nick = data.get("face_id_to_nicknames") or {}
    img = data.get("image_to_face_ids") or {}
    if not isinstance(nick, dict) or not isinstance(img, dict):
        raise InputError("'face_id_to_nicknames' and 'image_to_face_ids' must be JSON objects", path=path)
    out: dict[str, tuple[Face, ...]] = {}
    for file, ids in img.items():
        if file not in names:
            raise InputError(f"image_to_face_ids names photo {file!r}, which is not in the album", path=path)
        if not isinstance(ids, list):
            raise InputError(f"photo {file!r}: face ids must be a list, got {ids!r}", path=path)
        faces = []
        for fid in ids:
            fid = str(fid)
            names_of = nick.get(fid)
            if isinstance(names_of, str):
                names_of = [names_of]
            if not names_of or not isinstance(names_of, list) or not all(isinstance(n, str) and n.strip() for n in names_of):
                raise InputError(f"photo {file!r}: face id {fid!r} has no nicknames in face_id_to_nicknames", path=path)
            owner = fid == OWNER
            faces.append(Face(fid, tuple(n.strip() for n in names_of), owner))
        out[file] = tuple(faces)
    return out


def _photobench_album(album: Path, qfile: str, public: Path | None, language: str) -> tuple[list[QueryRecord], list[AlbumRecord], dict[str, dict[str, float]], list[str]]:
    notes: list[str] = []
    queries, raw = album_queries(album, language, qfile=qfile)
    images = _images_dir(album, public)
    names, meta, meta_path = album_photos(album, images)
    if not meta_path.is_file():
        notes.append(f"{album.name}: no {meta_path.relative_to(images.parent)}: every photo of the album has no "
                     "time and no place")
    faces = _faces(images / "faceid" / "face_info_en.json", names)
    caps = _text_map(images / "captions.json", names, "caption")
    ocr = _text_map(images / "ocr.json", names, "OCR text")
    records = []
    for n in sorted(names):
        m = meta.get(n) or {}
        if not isinstance(m, dict):
            raise InputError(f"photo {n!r}: expected {{latitude, longitude, time}}, got {m!r}", path=meta_path)
        where = f"photo {n!r}"
        lat, lon = check_coordinates(m.get("latitude"), m.get("longitude"), where=where, path=meta_path)
        t = m.get("time")
        parse_time(t, where=where, path=meta_path)
        img = images / n
        records.append(AlbumRecord(f"{album.name}/{n}", album.name, img if img.is_file() else None,
                                   caps.get(n), ocr.get(n), t.strip() if isinstance(t, str) and t.strip() else None,
                                   lat, lon, None, faces.get(n, ())))
    qrels: dict[str, dict[str, float]] = {}
    for i, (q, rec) in enumerate(zip(queries, raw)):
        if "ground_truth" not in rec:
            continue
        gt = rec["ground_truth"]
        where = f"query #{i} ({q.id})"
        if not isinstance(gt, list) or not all(isinstance(f, str) for f in gt):
            raise InputError(f"{where}: 'ground_truth' must be a list of file names, got {gt!r}", path=album / qfile)
        files = [Path(f).name for f in gt]
        unknown = [f for f in files if f not in names]
        if unknown:
            raise InputError(f"{where}: ground truth names {len(unknown)} file(s) not in {album.name}: "
                             f"{examples(unknown)}", path=album / qfile)
        count = rec.get("ground_truth_count")
        if count is not None and count != len(set(files)):
            notes.append(f"{album / qfile}: {where}: ground_truth_count is {count!r} but ground_truth lists "
                         f"{len(set(files))} file(s); the list is used")
        qrels[q.id] = {f"{album.name}/{f}": 1.0 for f in files}
    if qrels:
        if len(qrels) < len(queries):
            missing = [q.id for q in queries if q.id not in qrels]
            raise InputError(f"{len(missing)} query(ies) carry no 'ground_truth' while others do (use [] for a "
                             f"zero-GT query): {examples(missing)}", path=album / qfile)
    return queries, records, qrels, notes


def _load_photobench(path: Path, split: str | None, qrels: Path | None, language: str) -> AlbumDataset:
    dirs, qfile, public, notes = _album_dirs(path, split)
    queries: list[QueryRecord] = []
    records: list[AlbumRecord] = []
    gt: dict[str, dict[str, float]] = {}
    for d in dirs:
        q, r, g, n = _photobench_album(d, qfile, public, language)
        queries += q
        records += r
        gt.update(g)
        notes += n
    if qrels is not None:
        if gt:
            raise InputError("the query files carry ground truth already; give no qrels file", param="qrels")
        gt, more, _ = align_qrels(read_qrels_file(qrels), [q.id for q in queries], [r.id for r in records],
                                  path=qrels, id_lists=("the queries", "the album records (<album>/<file>)"))
        notes += more
        _check_own_album(queries, records, gt, path=qrels)
    if gt and len(gt) < len(queries):
        missing = [q.id for q in queries if q.id not in gt]
        raise InputError(f"{len(missing)} query(ies) have no ground truth while the others do: {examples(missing)}",
                         path=path)
    return AlbumDataset(name=path.name, format="photobench", root=path, queries=queries, records=records,
                        qrels=gt, notes=notes)


# ------------------------------------------------------------------------------ JSONL
def _text_field(obj: dict[str, Any], key: str, where: str, path: Path) -> str | None:
    v = obj.get(key)
    if v is None or (isinstance(v, str) and not v.strip()):
        return None
    if not isinstance(v, str):
        raise InputError(f"{where}: {key!r} must be a string, got {v!r}", path=path)
    return v.strip()


def _jsonl_record(i: int, obj: dict[str, Any], path: Path) -> AlbumRecord:
    rid = obj.get("id")
    if not isinstance(rid, (str, int)) or isinstance(rid, bool) or not str(rid).strip():
        raise InputError(f"line {i}: missing or bad 'id' ({rid!r})", path=path)
    rid = str(rid)
    where = f"line {i} (record {rid!r})"
    album = obj.get("album", _DEFAULT_ALBUM)
    if not isinstance(album, (str, int)) or isinstance(album, bool) or not str(album).strip():
        raise InputError(f"{where}: 'album' must be a non-empty string, got {album!r}", path=path)
    lat, lon = check_coordinates(obj.get("latitude"), obj.get("longitude"), where=where, path=path)
    t = _text_field(obj, "time", where, path)
    parse_time(t, where=where, path=path)
    people = obj.get("people") or []
    if not isinstance(people, list) or not all(isinstance(p, str) and p.strip() for p in people):
        raise InputError(f"{where}: 'people' must be a list of names, got {people!r}", path=path)
    faces = tuple(Face(OWNER if p.strip() in OWNER_NAMES else p.strip(), (p.strip(),), p.strip() in OWNER_NAMES)
                  for p in people)
    image = obj.get("image")
    img = (path.parent / image) if isinstance(image, str) and image else None
    return AlbumRecord(rid, str(album), img, _text_field(obj, "caption", where, path),
                       _text_field(obj, "ocr", where, path), t, lat, lon, _text_field(obj, "place", where, path), faces)


def _load_jsonl(path: Path, gallery: Path | None, qrels: Path | None) -> AlbumDataset:
    notes: list[str] = []
    extra: list[str] = []
    path, queries = read_queries(path, on_warning=extra.append)
    notes += [w for w in extra if "'album'" not in w and "'source'" not in w]
    gallery = Path(gallery) if gallery is not None else gallery_next_to(path)
    records = []
    seen: dict[str, int] = {}
    unnamed: list[str] = []  # the records without an 'album' field (placed in the album 'all')
    for i, obj in jsonl_lines(read_text(gallery, what="gallery JSONL"), gallery):
        r = _jsonl_record(i, obj, gallery)
        if r.id in seen:
            raise InputError(f"line {i}: duplicate id {r.id!r} (first on line {seen[r.id]})", path=gallery)
        seen[r.id] = i
        records.append(r)
        if "album" not in obj:
            unnamed.append(r.id)
    if not records:
        raise InputError("the gallery holds no records", path=gallery)
    albums = {r.album for r in records}
    if unnamed and len(unnamed) < len(records):
        notes.append(f"{gallery}: {len(unnamed)} gallery record(s) have no 'album' field and form the album "
                     f"{_DEFAULT_ALBUM!r}, searched by no query of another album: {examples(unnamed)}")
    for q in queries:
        a = str(q.tags.get("album") or _DEFAULT_ALBUM)
        if a not in albums:
            why = "" if q.tags.get("album") else f" (the query has no 'album' field: it is in the album {a!r})"
            raise InputError(f"query {q.id!r}: album {a!r} has no gallery records{why} (albums: "
                             f"{', '.join(sorted(albums, key=album_sort_key))})", path=path)
        q.tags["album"] = a
    qrels = qrels or sibling(path.parent, QRELS_NAMES)
    gt: dict[str, dict[str, float]] = {}
    if qrels is not None:
        gt, more, _ = align_qrels(read_qrels_file(qrels), [q.id for q in queries], [r.id for r in records],
                                  path=qrels, id_lists=("the query set", "the gallery"))
        notes += more
        _check_own_album(queries, records, gt, path=qrels, no_album=set(unnamed), gallery=gallery)
    return AlbumDataset(name=path.stem, format="jsonl", root=path.parent, queries=queries, records=records,
                        qrels=gt, notes=notes)


def load_albums(path: str | Path, *, split: str | None = None, gallery: Path | None = None,
                qrels: Path | None = None, language: str = "en") -> AlbumDataset:
    """Load a dataset of albums (see the module docstring): a PhotoBench folder (of ``album*/`` folders,
    one album folder, or a Hugging Face copy with ``split``), or a JSONL query manifest / folder."""
    path = Path(path)
    check_language(language)
    if not path.exists():
        raise InputError("no such file or folder", path=path)
    jsonl = path.is_file() or (path.is_dir() and sibling(path, MANIFEST_NAMES) is not None)
    if path.is_file() and path.name == "query.json":
        path, jsonl = path.parent, False
    if jsonl:
        if split is not None:
            raise InputError(f"{arg('split')} picks the query file of a PhotoBench copy; this is a JSONL dataset",
                             param="split")
        if language != "en":
            raise InputError(f"{arg('language')} picks the language of a PhotoBench copy's queries (query_en or "
                             "query_cn); this is a JSONL dataset, whose queries carry one text each", param="language")
        ds = _load_jsonl(path, gallery, qrels)
    else:
        if gallery is not None:
            raise InputError(f"{arg('gallery')} is for JSONL datasets; a PhotoBench album lists its own photos",
                             param="gallery")
        ds = _load_photobench(path, split, qrels, language)
    if not ds.qrels:
        raise InputError("no ground truth: the stress suite measures paired deltas of ranking metrics, which need "
                         f"it: give {arg('qrels')} (JSON or TREC; PhotoBench ids <album>_qNNNN and <album>/<file>), or, "
                         "for PhotoBench, query files that carry 'ground_truth' (the release's samples/, the Hugging "
                         "Face validation.json)", path=path)
    return ds

