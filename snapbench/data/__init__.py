"""Dataset loaders for the data people have: one :class:`Dataset` from any supported layout.

Formats (:data:`FORMATS`), detected from the path and the content (``format=`` forces one):

* ``snapbench-json`` — the authors' ``snap_bench.json`` (+ ``bench_images/``), see
  :mod:`snapbench.data.snapbench_json`;
* ``hf-imagefolder`` — a Hugging Face ImageFolder copy, ids prefixed ``hf-``, see
  :mod:`snapbench.data.hf_imagefolder`;
* ``photobench`` — one PhotoBench album folder (+ a ground-truth file), see
  :mod:`snapbench.data.photobench`;
* ``jsonl`` — the generic query manifest + gallery JSONL + qrels, see :mod:`snapbench.data.jsonl`.

:func:`export_jsonl` writes any loaded dataset as the generic triple.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import ConfigError, InputError
from .export import export_jsonl
from .hf_imagefolder import METADATA_NAMES, find_metadata, load_hf_imagefolder
from .jsonl import MANIFEST_NAMES, load_jsonl
from .model import FORMATS, MODE_PATHS, PATHS, Dataset, GalleryItem, ReleasedVariants
from .photobench import (
    is_album,
    load_faiss_embeddings,
    load_photobench,
    photobench_albums,
)
from .snapbench_json import load_snapbench_json

__all__ = [
    "FORMATS",
    "MODE_PATHS",
    "PATHS",
    "Dataset",
    "GalleryItem",
    "ReleasedVariants",
    "detect_format",
    "export_jsonl",
    "load_dataset",
    "load_faiss_embeddings",
    "photobench_albums",
]

SNAPBENCH_JSON_NAME = "snap_bench.json"
_SNIFF_BYTES = 1 << 16


def _sniff(path: Path) -> str:
    try:
        with open(path, "rb") as fh:
            return fh.read(_SNIFF_BYTES).decode("utf-8-sig", errors="replace")
    except OSError as exc:
        raise InputError(f"cannot read ({exc.strerror})", path=path) from None


def _snapbench_json_in(folder: Path) -> Path | None:
    for cand in (folder / SNAPBENCH_JSON_NAME, folder / "benchmark" / SNAPBENCH_JSON_NAME):
        if cand.is_file():
            return cand
    return None


def detect_format(path: str | os.PathLike) -> str:
    """The format of ``path`` (one of :data:`FORMATS`), from names and content.

    Files: ``metadata.jsonl``/``metadata.csv`` -> hf-imagefolder; a JSON list whose records have
    ``query_id`` and one of ``query_image_local``/``text_perturbations``/``gallery`` ->
    snapbench-json; a JSON list of ``query_en``/``query_cn`` records -> photobench; any other JSON/JSONL -> jsonl.
    Folders: ``query.json`` (or album folders holding one) -> photobench; ``snap_bench.json``
    (also under ``benchmark/``) -> snapbench-json; ``queries.jsonl`` -> jsonl; ImageFolder
    metadata (up to two levels down) -> hf-imagefolder.
    """
    p = Path(path)
    if p.is_file():
        if p.name in METADATA_NAMES:
            return "hf-imagefolder"
        head = _sniff(p).lstrip()
        if head.startswith("[") and '"query_id"' in head and any(
            f'"{k}"' in head for k in ("query_image_local", "text_perturbations", "gallery")
        ):
            return "snapbench-json"
        if head.startswith("[") and ('"query_en"' in head or '"query_cn"' in head):
            return "photobench"
        return "jsonl"
    if p.is_dir():
        if is_album(p) or photobench_albums(p):
            return "photobench"
        if _snapbench_json_in(p) is not None:
            return "snapbench-json"
        if any((p / n).is_file() for n in MANIFEST_NAMES):
            return "jsonl"
        if find_metadata(p):
            return "hf-imagefolder"
        listing = ", ".join(sorted(c.name for c in p.iterdir())[:12]) or "nothing"
        raise InputError(
            f"cannot tell the dataset format of this folder (found: {listing}); expected snap_bench.json, a PhotoBench "
            f"album (query.json), ImageFolder metadata.jsonl/csv or queries.jsonl; or pass format= one of "
            f"{', '.join(FORMATS)}", path=p
        )
    raise InputError("dataset path not found", path=p)


def load_dataset(
    path: str | os.PathLike,
    *,
    format: str | None = None,
    images: str | os.PathLike | None = None,
    qrels: str | os.PathLike | None = None,
    gallery: str | os.PathLike | None = None,
    language: str = "en",
) -> Dataset:
    """Load a benchmark from ``path`` in any of :data:`FORMATS` (auto-detected unless ``format``).

    ``images``: the ``bench_images`` folder of the SnapBench release when it is not next to
    ``snap_bench.json`` (snapbench-json only).  ``qrels``: a qrels file (jsonl) or the ground-truth
    file (photobench).  ``gallery``: the gallery manifest (jsonl) or a ``{file name: caption}`` JSON
    (photobench).  ``language``: ``"en"`` or ``"cn"`` question text (photobench).  Options that do not
    apply to the format raise :class:`~snapbench.errors.ConfigError`; malformed files raise
    :class:`~snapbench.errors.InputError` naming the file, the record and the problem.
    """
    p = Path(path)
    if format is not None and format not in FORMATS:
        raise ConfigError(f"unknown dataset format {format!r} (known: {', '.join(FORMATS)})")
    if not p.exists():
        raise InputError("dataset path not found", path=p)
    fmt = format or detect_format(p)
    given = {"images": images, "qrels": qrels, "gallery": gallery}
    allowed = {"snapbench-json": {"images"}, "hf-imagefolder": set(), "photobench": {"qrels", "gallery"},
               "jsonl": {"qrels", "gallery"}}[fmt]
    extra = [k for k, v in given.items() if v is not None and k not in allowed]
    if extra:
        raise ConfigError(f"{', '.join(extra)} does not apply to the {fmt} format ({p})")
    if language != "en" and fmt != "photobench":
        raise ConfigError(f"language applies to the photobench format only ({p} is {fmt})")
    if fmt == "snapbench-json":
        if p.is_dir():
            found = _snapbench_json_in(p)
            if found is None:
                raise InputError(f"no {SNAPBENCH_JSON_NAME} here or under benchmark/", path=p)
            p = found
        return load_snapbench_json(p, images=None if images is None else Path(images))
    if fmt == "hf-imagefolder":
        return load_hf_imagefolder(p)
    if fmt == "photobench":
        return load_photobench(p, qrels=None if qrels is None else Path(qrels),
                               captions=None if gallery is None else Path(gallery), language=language)
    return load_jsonl(p, gallery=None if gallery is None else Path(gallery), qrels=None if qrels is None else Path(qrels))
