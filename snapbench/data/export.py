"""Write a loaded :class:`Dataset` as the generic JSONL triple the other commands read."""

from __future__ import annotations

import os
from pathlib import Path

from ..core.errors import OutputError
from ..core.jsonable import dumps, write_json
from ..store.atomic import write_text_atomic
from .model import Dataset

__all__ = ["export_jsonl"]


def _rel(p: Path | None, base: Path) -> str | None:
    if p is None:
        return None
    try:
        return Path(os.path.relpath(Path(p).resolve(), base.resolve())).as_posix()
    except ValueError:  # another drive on Windows
        return str(Path(p).resolve())


def _line(obj: dict) -> str:
    return dumps(obj, indent=None) + "\n"


def export_jsonl(dataset: Dataset, out_dir: str | os.PathLike) -> dict[str, Path]:
    """Write ``queries.jsonl``, ``gallery.jsonl`` and ``qrels.json`` (plus ``released_texts.jsonl``
    when the dataset ships perturbed questions) into ``out_dir``; returns the written paths by name.

    Image paths are written relative to ``out_dir`` (the manifests resolve them against their own
    folder), so the files keep pointing at the original images.  qrels: ``{query id: [gallery
    id, ...]}`` when every grade is 1, else ``{query id: {gallery id: grade}}``; every query is
    listed (``[]`` = zero-GT).  No qrels file is written for a dataset without ground truth.
    Absent fields (no image, no caption) are left out of the line: the gallery reader of
    ``snapbench encode`` needs a caption and an image for every item.
    """
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise OutputError("exists and is not a folder", path=out)
    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    lines = []
    for q in dataset.queries:
        obj = {"id": q.id}
        if q.image is not None:
            obj["image"] = _rel(q.image, out)
        if q.question is not None:
            obj["question"] = q.question
        if q.entity is not None:
            obj["entity"] = q.entity
        if q.tags:
            obj["tags"] = q.tags
        lines.append(_line(obj))
    write_text_atomic(out / "queries.jsonl", "".join(lines))
    written["queries"] = out / "queries.jsonl"
    lines = []
    for g in dataset.gallery:
        obj = {"id": g.id}
        if g.image is not None:
            obj["image"] = _rel(g.image, out)
        if g.caption is not None:
            obj["caption"] = g.caption
        lines.append(_line(obj))
    write_text_atomic(out / "gallery.jsonl", "".join(lines))
    written["gallery"] = out / "gallery.jsonl"
    if dataset.has_ground_truth:
        binary = all(r == 1.0 for g in dataset.qrels.values() for r in g.values())
        qrels = {
            q.id: (list(dataset.qrels.get(q.id, {})) if binary else dict(dataset.qrels.get(q.id, {})))
            for q in dataset.queries
        }
        write_json(out / "qrels.json", qrels, indent=1)
        written["qrels"] = out / "qrels.json"
    if dataset.released is not None and dataset.released.texts:
        lines = [
            _line({"id": qid, "operator": op, "question": text})
            for qid, ops in dataset.released.texts.items() for op, text in ops.items()
        ]
        write_text_atomic(out / "released_texts.jsonl", "".join(lines))
        written["released_texts"] = out / "released_texts.jsonl"
    return written
