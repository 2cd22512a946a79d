"""JSONL files written line by line during a run (manifest, skips): one reader with the cut-last-line rule.

(The resume log of ``snapbench run``, ``embeddings/queries/blocks.jsonl``, has its own reader in
:mod:`snapbench.app.stages.resume`: appended to across resumes, a cut line can sit anywhere in it.)

Write a loaded :class:`Dataset` as the generic JSONL triple the other commands read, under the names
:func:`snapbench.data.jsonl.load_jsonl` looks for first.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..core.errors import InputError, OutputError
from ..core.jsonable import dumps
from ..core.userfiles import read_bytes
from ..data.jsonl import GALLERY_NAMES, MANIFEST_NAMES, QRELS_NAMES
from ..data.model import Dataset
from .atomic import write_json, write_text_atomic
from .folders import MANIFEST, SKIPS

__all__ = ['read_jsonl_records', 'read_manifest', 'read_skips', 'export_jsonl']

def read_jsonl_records(path: str | os.PathLike, *, required: Sequence[str] = (), what: str = "record") -> list[dict[str, Any]]:
    """Objects of a JSONL file written line by line (manifest, skips).

    The rule every consumer shares: an unparseable (or non-object, or lacking ``required`` keys)
    **last** line is dropped -- a kill mid-write cuts only the line being appended; such a line
    anywhere else is an :class:`~snapbench.core.errors.InputError` naming the line.  A missing file gives
    ``[]``.
    """
    p = Path(path)
    if not p.exists():
        return []
    parts = read_bytes(p, what=what).split(b"\n")
    last = max((i for i, part in enumerate(parts) if part.strip()), default=-1)
    out: list[dict[str, Any]] = []
    for i, part in enumerate(parts):
        if not part.strip():
            continue
        try:
            obj = json.loads(part.decode("utf-8"))
            if not isinstance(obj, dict) or any(k not in obj for k in required):
                raise ValueError(f"not a {what}")
        except (ValueError, UnicodeDecodeError) as exc:
            if i == last:
                break  # cut by a kill mid-write
            raise InputError(f"line {i + 1} is not a valid {what} ({exc})", path=p) from None
        out.append(obj)
    return out


def read_manifest(corrupt_dir: str | os.PathLike, *, must_exist: bool = True) -> list[dict[str, Any]]:
    """The records of ``corrupt_dir/manifest.jsonl`` (each has ``id`` and ``condition``)."""
    p = Path(corrupt_dir) / MANIFEST
    if must_exist and not p.is_file():
        from .folders import find_output_folder

        found = find_output_folder(corrupt_dir)
        if found is not None and found.kind != "corrupt":  # another command's folder: say which
            raise InputError(f"{found.describe(Path(corrupt_dir))}, not the output folder of 'snapbench corrupt' "
                             f"(no {MANIFEST})", path=corrupt_dir)
        raise InputError(f"no {MANIFEST} (is this the output folder of 'snapbench corrupt'?)", path=corrupt_dir)
    return read_jsonl_records(p, required=("id", "condition"), what="manifest record")


def read_skips(corrupt_dir: str | os.PathLike) -> list[dict[str, Any]]:
    """The records of ``corrupt_dir/skips.jsonl`` (``[]`` when there is none)."""
    return read_jsonl_records(Path(corrupt_dir) / SKIPS, required=("id",), what="skip record")


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
    write_text_atomic(out / MANIFEST_NAMES[0], "".join(lines))
    written["queries"] = out / MANIFEST_NAMES[0]
    lines = []
    for g in dataset.gallery:
        obj = {"id": g.id}
        if g.image is not None:
            obj["image"] = _rel(g.image, out)
        if g.caption is not None:
            obj["caption"] = g.caption
        lines.append(_line(obj))
    write_text_atomic(out / GALLERY_NAMES[0], "".join(lines))
    written["gallery"] = out / GALLERY_NAMES[0]
    if dataset.has_ground_truth:
        binary = all(r == 1.0 for g in dataset.qrels.values() for r in g.values())
        qrels = {
            q.id: (list(dataset.qrels.get(q.id, {})) if binary else dict(dataset.qrels.get(q.id, {})))
            for q in dataset.queries
        }
        write_json(out / QRELS_NAMES[0], qrels, indent=1)
        written["qrels"] = out / QRELS_NAMES[0]
    if dataset.released is not None and dataset.released.texts:
        lines = [
            _line({"id": qid, "operator": op, "question": text})
            for qid, ops in dataset.released.texts.items() for op, text in ops.items()
        ]
        write_text_atomic(out / "released_texts.jsonl", "".join(lines))
        written["released_texts"] = out / "released_texts.jsonl"
    return written
