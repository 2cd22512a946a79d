"""Dataset loaders for the data people have: one :class:`Dataset` from any supported layout.

Formats (:data:`FORMATS`), detected from the path and the content (``format=`` forces one):

* ``snapbench-json`` — the authors' ``snap_bench.json`` (+ ``bench_images/``), see
  :mod:`snapbench.data.snapbench_json`;
* ``hf-imagefolder`` — a Hugging Face ImageFolder copy, ids prefixed ``hf-``, see
  :mod:`snapbench.data.hf_imagefolder`;
* ``photobench`` — one PhotoBench album folder (+ a ground-truth file), see
  :mod:`snapbench.data.photobench`;
* ``jsonl`` — the generic query manifest + gallery JSONL + qrels, see :mod:`snapbench.data.jsonl`.

The formats are one table, :data:`LOADERS` (:class:`snapbench.core.registry.Table`): name ->
:class:`DatasetFormat` (its loader and the options it takes).  An unknown format is an error listing
the known ones; a new format is ``LOADERS.register(name, DatasetFormat(load, options))``.

:func:`snapbench.store.jsonl.export_jsonl` writes any loaded dataset as the generic triple.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import ConfigError, InputError, arg
from ..core.registry import Table
from .hf_imagefolder import METADATA_NAMES, find_metadata, load_hf_imagefolder
from .jsonl import MANIFEST_NAMES, load_jsonl
from .model import Dataset, GalleryItem
from .photobench import (
    is_album,
    load_faiss_embeddings,
    load_photobench,
    photobench_albums,
)
from .snapbench_json import find_snapbench_json, load_snapbench_json

__all__ = [
    "LOADERS",
    "DatasetFormat",
    "FORMATS",
    "Dataset",
    "GalleryItem",
    "detect_format",
    "load_dataset",
    "load_faiss_embeddings",
    "photobench_albums",
]

_SNIFF_BYTES = 1 << 16


def _sniff(path: Path) -> str:
    # the first bytes only, decoded leniently: detection must not fail on a character cut in two
    # (the loader then reads the whole file through snapbench.core.userfiles)
    try:
        with open(path, "rb") as fh:
            return fh.read(_SNIFF_BYTES).decode("utf-8-sig", errors="replace")
    except OSError as exc:
        raise InputError(f"cannot read ({exc.strerror})", path=path) from None


@dataclass(frozen=True)
class DatasetFormat:
    """One dataset format: ``load(path, **options)`` -> :class:`Dataset`, and the options it takes
    (among ``images``, ``qrels``, ``gallery``, ``language``; others given are an error)."""

    load: Callable[..., Dataset]
    options: frozenset[str] = frozenset()


#: Dataset formats: name -> :class:`DatasetFormat`, in the order :data:`FORMATS` lists them.
LOADERS: Table[DatasetFormat] = Table("dataset format", param="dataset_format")
LOADERS.register("snapbench-json", DatasetFormat(load_snapbench_json, frozenset({"images"})))
LOADERS.register("hf-imagefolder", DatasetFormat(load_hf_imagefolder))
LOADERS.register("photobench", DatasetFormat(load_photobench, frozenset({"qrels", "gallery", "language"})))
LOADERS.register("jsonl", DatasetFormat(load_jsonl, frozenset({"qrels", "gallery"})))

#: Formats :func:`load_dataset` reads (``format=`` takes one of these): the names of :data:`LOADERS`.
FORMATS: tuple[str, ...] = tuple(LOADERS.names())


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
        if find_snapbench_json(p) is not None:
            return "snapbench-json"
        if any((p / n).is_file() for n in MANIFEST_NAMES):
            return "jsonl"
        if find_metadata(p):
            return "hf-imagefolder"
        listing = ", ".join(sorted(c.name for c in p.iterdir())[:12]) or "nothing"
        raise InputError(
            f"cannot tell the dataset format of this folder (found: {listing}); expected snap_bench.json, a PhotoBench "
            f"album (query.json), ImageFolder metadata.jsonl/csv or queries.jsonl; or set {arg('dataset_format')} to one of "
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
    apply to the format raise :class:`~snapbench.core.errors.ConfigError`; malformed files raise
    :class:`~snapbench.core.errors.InputError` naming the file, the record and the problem.
    """
    p = Path(path)
    if format is not None:
        LOADERS.canonical(format)  # an unknown format is an error listing the known ones
    if not p.exists():
        raise InputError("dataset path not found", path=p)
    fmt = format or detect_format(p)
    entry = LOADERS.get(fmt)
    given: dict[str, Any] = {"images": images, "qrels": qrels, "gallery": gallery,
                             "language": None if language == "en" else language}
    extra = [k for k, v in given.items() if v is not None and k not in entry.options]
    if extra:
        raise ConfigError(f"{', '.join(arg(k) for k in extra)} does not apply to the {fmt} format ({p})", param=extra[0])
    kwargs = {k: (Path(v) if k != "language" else v) for k, v in given.items() if v is not None}
    return entry.load(p, **kwargs)
