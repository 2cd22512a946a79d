"""The generic triple: query manifest (as ``snapbench corrupt`` reads it) + gallery JSONL + qrels.

``load_jsonl(manifest, gallery=..., qrels=...)``.  When ``gallery``/``qrels`` are not given, files
next to the manifest are used if present (``gallery.jsonl``/``gallery.json`` and
``qrels.json``/``qrels.txt``/``qrels.trec``, noted); a gallery is required, qrels are not (without
them the dataset has no ground truth).  ``path`` may also be a folder holding ``queries.jsonl``.
Queries missing from the qrels count as zero-GT queries (noted), as in ``snapbench evaluate``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..core.errors import InputError, SnapbenchError, arg
from ..core.records import QueryRecord
from ..corruptions import load_manifest
from .common import image_notes, read_gallery_manifest
from .model import Dataset
from .qrels import align_qrels, read_qrels_file

__all__ = ["MANIFEST_NAMES", "QRELS_NAMES", "gallery_next_to", "load_jsonl", "read_queries", "sibling"]

MANIFEST_NAMES: tuple[str, ...] = ("queries.jsonl", "queries.json", "manifest.jsonl")
GALLERY_NAMES: tuple[str, ...] = ("gallery.jsonl", "gallery.json")
QRELS_NAMES: tuple[str, ...] = ("qrels.json", "qrels.txt", "qrels.trec")


def sibling(folder: Path, names: tuple[str, ...]) -> Path | None:
    """The first of ``names`` that is a file in ``folder`` (``None`` when none is)."""
    return next((folder / n for n in names if (folder / n).is_file()), None)


def read_queries(path: Path, *, on_warning: Callable[[str], None] | None = None) -> tuple[Path, list[QueryRecord]]:
    """The query manifest (``path``, or the one of :data:`MANIFEST_NAMES` in the folder ``path``) and its
    queries (:func:`snapbench.corruptions.load_manifest`, ``on_warning`` passed on)."""
    path = Path(path)
    if path.is_dir():
        found = sibling(path, MANIFEST_NAMES)
        if found is None:
            raise InputError(f"no query manifest ({', '.join(MANIFEST_NAMES)}) in this folder", path=path)
        path = found
    try:
        return path, load_manifest(path, on_warning=on_warning)
    except SnapbenchError:
        raise
    except ValueError as exc:  # the manifest reader's own error type: same message, our family
        raise InputError(str(exc)) from None


def gallery_next_to(manifest: Path) -> Path:
    """The gallery file next to the query ``manifest`` (one of :data:`GALLERY_NAMES`); an InputError saying
    how to give one when there is none."""
    found = sibling(manifest.parent, GALLERY_NAMES)
    if found is None:
        raise InputError(
            f"no gallery: give one with {arg('gallery')} (or put one of {', '.join(GALLERY_NAMES)} next to it)",
            path=manifest, param="gallery",
        )
    return found


def load_jsonl(path: Path, *, gallery: Path | None = None, qrels: Path | None = None) -> Dataset:
    """Load the generic JSONL triple (see the module docstring)."""
    notes: list[str] = []
    path, queries = read_queries(path)
    if gallery is None:
        gallery = gallery_next_to(path)
        notes.append(f"gallery: using {gallery} (found next to the query manifest)")
    if qrels is None:
        qrels = sibling(path.parent, QRELS_NAMES)
        if qrels is not None:
            notes.append(f"qrels: using {qrels} (found next to the query manifest)")
    items = read_gallery_manifest(Path(gallery))
    gt: dict[str, dict[str, float]] = {}
    if qrels is not None:
        gt, more, _ = align_qrels(read_qrels_file(qrels), [q.id for q in queries], [g.id for g in items],
                                  path=qrels, id_lists=("the query set", "the gallery"))
        notes += more
    else:
        notes.append(f"{path}: no qrels (relevance labels): the labelled metrics (hit@k, ndcg@k, ...) need them; "
                     "the label-free measures overlap@k, rbo, flip@1 are reported")
    ds = Dataset(name=path.stem, format="jsonl", root=path.parent, queries=queries, gallery=items,
                 qrels=gt, released=None, notes=notes)
    ds.notes.extend(image_notes(ds))
    return ds
