"""Reader for PhotoBench album folders, and FAISS gallery indexes as embeddings.

An album folder (``album<N>/``) holds ``query.json`` (a list of ``{"query_cn", "query_en",
"Location", "Time", "Person", "Object", "Concept", "Genre", "Source"}``) and ``images/`` (the
photos, plus ``metadata/metadata.json``, ``faceid/``, ``embeddings/<model>/`` and
``captions/<lang>/<model>/``).

Decisions:

* One album is one dataset (each album is its own gallery; the paper averages over albums).
  Pointing at a folder of albums raises an error listing them (:func:`photobench_albums`).
* Query ids are ``<album>_q<index>`` (``album1_q0000``; index = 0-based position in query.json).
  Questions are ``query_en`` (``language="en"``) or ``query_cn`` (``language="cn"``).  Tags:
  ``source`` (V, M, F, VM, VF, MF, VMF, for grouping), ``album``, and the six dimension tags in
  lower case (``location``, ``time``, ``person``, ``object``, ``concept``, ``genre``: null, "fact"
  or "cognitive").  Queries have no image: only question-side retrieval can run.
* Gallery: the image files directly in ``images/`` and the file names in
  ``images/metadata/metadata.json`` (union, sorted by name); gallery id = the file name (the same
  names FAISS ``metadata.json`` uses).  Captions come from a ``{file name: caption}`` JSON file
  (the ``gallery`` argument, as :func:`snapbench.data.load_dataset` names it) and are ``None`` otherwise.
* Ground truth (not in the public copy) comes from a file (the ``qrels`` argument), JSON:
  ``{key: [file name, ...]}`` where key is the 0-based query index, the query id, or the query
  text (English or Chinese), or a JSON list aligned with query.json (element i = the file names of
  query i).  An empty list is a zero-GT query (kept: it counts in the reject metrics).  Every
  query must be covered; unknown file names and unknown keys are errors.  Without the file the
  dataset has no ground truth (``Dataset.qrels == {}``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from ..core.errors import InputError
from ..core.install_hint import import_extra
from ..core.records import QueryRecord
from ..core.userfiles import read_json
from ..core.validate import choice, examples
from .common import IMAGE_SUFFIXES, image_notes
from .model import Dataset, GalleryItem

__all__ = [
    "SOURCES",
    "album_photos",
    "album_sort_key",
    "albums_without_queries",
    "album_queries",
    "is_album",
    "load_faiss_embeddings",
    "load_photobench",
    "photobench_albums",
]

SOURCES: tuple[str, ...] = ("V", "M", "F", "VM", "VF", "MF", "VMF")
_DIMENSIONS: tuple[str, ...] = ("Location", "Time", "Person", "Object", "Concept", "Genre")
_LANG_FIELD = {"en": "query_en", "cn": "query_cn"}


def check_language(language: str) -> str:
    """``language`` if PhotoBench has questions in it (``en``, ``cn``): the one check of ``run``'s
    loader, ``stress``'s and their options; a :class:`~snapbench.core.errors.ConfigError` otherwise."""
    return choice(language, _LANG_FIELD, "language", what="language")


def is_album(path: Path, query_file: str = "query.json") -> bool:
    return (Path(path) / query_file).is_file()


def album_sort_key(name: str) -> tuple:
    """The one order of album names wherever they are listed: natural, numbers as numbers
    (``album2`` before ``album10``)."""
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name))


def photobench_albums(root: Path, *, query_file: str = "query.json") -> list[Path]:
    """The album folders (holding ``query_file``: ``query.json``, or a Hugging Face copy's
    ``validation.json`` / ``test.json``) directly inside ``root``, in natural order (:func:`album_sort_key`)."""
    return sorted((p for p in Path(root).iterdir() if p.is_dir() and is_album(p, query_file)),
                  key=lambda p: album_sort_key(p.name))


def albums_without_queries(root: Path, *, query_file: str = "query.json") -> list[Path]:
    """The folders directly inside ``root`` that hold an album's ``images/`` but not ``query_file``: an
    album without queries, which :func:`photobench_albums` leaves out (its callers say so)."""
    return sorted((p for p in Path(root).iterdir() if p.is_dir() and not is_album(p, query_file)
                   and (p / "images").is_dir()), key=lambda p: album_sort_key(p.name))


def album_queries(album: Path, language: str, *, qfile: str = "query.json") -> tuple[list[QueryRecord], list[dict]]:
    """The queries of an album's ``qfile`` (ids, questions and tags as the module docstring says), with
    the file's records as read (:mod:`snapbench.albums.load` takes their ``ground_truth``)."""
    qpath = album / qfile
    data = read_json(qpath, what="PhotoBench query file")
    if not isinstance(data, list) or not data:
        raise InputError("expected a non-empty JSON list of queries", path=qpath)
    field = _LANG_FIELD[language]
    out = []
    for i, rec in enumerate(data):
        where = f"query #{i} (0-based)"
        if not isinstance(rec, dict):
            raise InputError(f"{where}: must be a JSON object, got {type(rec).__name__}", path=qpath)
        text = rec.get(field)
        if not isinstance(text, str) or not text.strip():
            raise InputError(f"{where}: missing or empty {field!r} (language {language!r})", path=qpath)
        src = rec.get("Source")
        if src is not None:
            if not isinstance(src, str) or src.strip().upper() not in SOURCES:
                raise InputError(f"{where}: 'Source' must be one of {', '.join(SOURCES)}, got {src!r}", path=qpath)
            src = src.strip().upper()
        tags: dict[str, Any] = {"album": album.name, "source": src}
        for dim in _DIMENSIONS:
            tags[dim.lower()] = rec.get(dim)
        other = _LANG_FIELD["cn" if language == "en" else "en"]
        if isinstance(rec.get(other), str):
            tags[other] = rec[other]
        for k, v in rec.items():
            if k not in (*_LANG_FIELD.values(), "Source", *_DIMENSIONS) and isinstance(v, (str, int, float, bool)):
                tags[k] = v
        out.append(QueryRecord(f"{album.name}_q{i:04d}", None, text, None, tags))
    return out, data


def album_photos(album: Path, images: Path) -> tuple[set[str], dict[str, Any], Path]:
    """The photos of ``album`` whose folder is ``images``: the image files directly in it and the file
    names in its ``metadata/metadata.json``; with that metadata (``{}`` when absent) and its path."""
    names: set[str] = set()
    if images.is_dir():
        names.update(p.name for p in images.iterdir() if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)
    meta_path = images / "metadata" / "metadata.json"
    meta: dict[str, Any] = {}
    if meta_path.is_file():
        meta = read_json(meta_path, what="PhotoBench metadata")
        if not isinstance(meta, dict):
            raise InputError("expected a JSON object {file name: {latitude, longitude, time}}", path=meta_path)
        names.update(str(k) for k in meta)
    if not names:
        raise InputError(f"no photos: neither image files in {images} nor {meta_path}", path=album)
    return names, meta, meta_path


def _gallery(album: Path, captions: Path | None) -> tuple[list[GalleryItem], list[str]]:
    images = album / "images"
    names, _, _ = album_photos(album, images)
    notes: list[str] = []
    caps: dict[str, str] = {}
    if captions is not None:
        data = read_json(Path(captions), what="captions file")
        if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
            raise InputError("expected a JSON object {file name: caption}", path=captions)
        unknown = sorted(set(data) - names)
        if unknown:
            raise InputError(f"{len(unknown)} file name(s) are not photos of {album.name}: {examples(unknown)}", path=captions)
        caps = data
        if len(caps) < len(names):
            notes.append(f"{captions}: {len(names) - len(caps)} of {len(names)} photos have no caption")
    return [GalleryItem(n, images / n, caps.get(n) or None) for n in sorted(names)], notes


def _ground_truth(path: Path, queries: list[QueryRecord], gallery_ids: set[str], language: str) -> dict[str, dict[str, float]]:
    data = read_json(path, what="ground-truth file")
    assigned: dict[int, list] = {}
    if isinstance(data, list):
        if len(data) != len(queries):
            raise InputError(f"a JSON list must have one entry per query ({len(queries)}), got {len(data)}", path=path)
        assigned = dict(enumerate(data))
    elif isinstance(data, dict):
        index: dict[str, int] = {}
        for i, q in enumerate(queries):
            index[str(i)] = index[q.id] = index[q.question or ""] = i
            other = q.tags.get("query_cn" if language == "en" else "query_en")
            if isinstance(other, str):
                index.setdefault(other, i)
        for key, files in data.items():
            i = index.get(str(key).strip())
            if i is None:
                raise InputError(f"key {key!r} is neither a query index, a query id nor a query text of this album", path=path)
            if i in assigned:
                raise InputError(f"query #{i} ({queries[i].id}) is given twice (key {key!r})", path=path)
            assigned[i] = files
    else:
        raise InputError("expected a JSON object {query index|id|text: [file name, ...]} or a list", path=path)
    missing = [queries[i].id for i in range(len(queries)) if i not in assigned]
    if missing:
        raise InputError(
            f"{len(missing)} query(ies) have no entry (use an empty list for a zero-GT query): {examples(missing)}", path=path
        )
    qrels: dict[str, dict[str, float]] = {}
    for i, files in sorted(assigned.items()):
        qid = queries[i].id
        if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
            raise InputError(f"query #{i} ({qid}): expected a list of file names, got {files!r}", path=path)
        names = [Path(f).name for f in files]
        unknown = [f for f in names if f not in gallery_ids]
        if unknown:
            raise InputError(f"query #{i} ({qid}): {len(unknown)} file name(s) not in the album: {examples(unknown)}", path=path)
        qrels[qid] = {n: 1.0 for n in names}
    return qrels


def load_photobench(
    path: Path, *, qrels: Path | None = None, gallery: Path | None = None, language: str = "en"
) -> Dataset:
    """Load one PhotoBench album (see the module docstring for every decision)."""
    path = Path(path)
    check_language(language)
    if path.is_file() and path.name == "query.json":
        path = path.parent
    if not is_album(path):
        albums = photobench_albums(path) if path.is_dir() else []
        if albums:
            raise InputError(
                f"holds {len(albums)} PhotoBench albums ({', '.join(a.name for a in albums)}); each album is its own "
                f"gallery: load one album folder at a time (e.g. {albums[0]}); 'snapbench stress' reads a folder of albums, "
                "each query searching its own album", path=path
            )
        raise InputError("not a PhotoBench album folder (no query.json)", path=path)
    queries, _ = album_queries(path, language)
    items, notes = _gallery(path, gallery)
    gt: dict[str, dict[str, float]] = {}
    if qrels is not None:
        gt = _ground_truth(Path(qrels), queries, {g.id for g in items}, language)
        zero = [q for q, v in gt.items() if not v]
        if zero:
            notes.append(f"{len(zero)} zero-GT query(ies) (kept: they count in the reject metrics)")
    else:
        notes.append(
            f"{path}: no ground truth (the public copy has none): give a ground-truth file as qrels to compute metrics"
        )
    notes.append(
        "PhotoBench queries have no image: text-to-image retrieval (question→photo, path TI"
        + (", and question→caption T→T" if all(g.caption for g in items) else "")
        + "); image query modes (I→I, IT→IT, I→IT) and image corruptions are not applicable"
    )
    ds = Dataset(name=f"photobench-{path.name}", format="photobench", root=path, queries=queries,
                 gallery=items, qrels=gt, released=None, notes=notes)
    if not ds.has_gallery_images:
        ds.notes.extend(n for n in image_notes(ds) if n.startswith("gallery images"))
    return ds


def load_faiss_embeddings(directory: str | Path) -> tuple[list[str], np.ndarray]:
    """Read a PhotoBench gallery index folder (``index.faiss`` + ``metadata.json``) as embeddings.

    Returns ``(ids, array)``: ``ids`` = ``metadata.json["filenames"]`` (the row order, gallery ids
    of :func:`load_photobench`), ``array`` = the stored vectors (N x d float32, via
    ``reconstruct_n``).  Needs FAISS (the ``ann`` extra).  IVF indexes get a direct
    map first; an index that stores no vectors (e.g. product quantisation) is reconstructed
    approximately, as FAISS does.
    """
    directory = Path(directory)
    faiss = import_extra("faiss", "ann", "reading FAISS indexes needs FAISS (faiss-cpu)")
    ipath, mpath = directory / "index.faiss", directory / "metadata.json"
    if not ipath.is_file():
        raise InputError("no index.faiss in this folder", path=directory)
    meta = read_json(mpath, what="FAISS metadata")
    names = meta.get("filenames") if isinstance(meta, dict) else None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise InputError("expected an object with a 'filenames' list of strings", path=mpath)
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise InputError(f"duplicate file names: {examples(dup)}", path=mpath)
    try:
        index = faiss.read_index(str(ipath))
    except RuntimeError as exc:
        raise InputError(f"cannot read the FAISS index ({str(exc).splitlines()[0] if str(exc) else exc})", path=ipath) from None
    if index.ntotal != len(names):
        raise InputError(f"the index holds {index.ntotal} vectors but metadata.json lists {len(names)} file names", path=ipath)
    try:
        ivf = faiss.extract_index_ivf(index)
        ivf.make_direct_map()
    except RuntimeError:
        pass  # not an IVF index
    try:
        arr = index.reconstruct_n(0, index.ntotal)
    except RuntimeError as exc:
        raise InputError(f"the index cannot return its vectors ({str(exc).splitlines()[0]})", path=ipath) from None
    return list(names), np.ascontiguousarray(arr, dtype=np.float32)
