"""Helpers shared by the dataset loaders (and the album loader of :mod:`snapbench.albums`): the JSONL and
gallery readers and the notes on images (qrels are matched with a data set's ids by
:func:`snapbench.data.qrels.align_qrels`)."""

from __future__ import annotations

from pathlib import Path

from ..core import userfiles as textio
from ..core.errors import InputError
from ..core.targets import MODE_LABELS
from .model import Dataset, GalleryItem

__all__ = [
    "IMAGE_SUFFIXES",
    "image_notes",
    "read_gallery_manifest",
]

#: Image file suffixes a gallery folder is listed with (lower case).
IMAGE_SUFFIXES: tuple[str, ...] = (".jpg", ".jpeg", ".png", ".webp", ".bmp", ".tif", ".tiff", ".gif", ".heic")


def read_gallery_manifest(path: Path) -> list[GalleryItem]:
    """Read a gallery manifest: JSONL or a JSON list of ``{"id", "image", "caption"}``.

    ``image`` is relative to the manifest's folder; an item needs an id and an image or a caption.
    """
    text = textio.read_text(path, what="gallery manifest")
    if text.lstrip().startswith("["):
        data = textio.read_json(path, what="gallery manifest")
        objs = [(f"record #{i + 1}", o) for i, o in enumerate(data)]
    else:
        objs = [(f"line {lineno}", o) for lineno, o in textio.jsonl_lines(text, path, objects=False)]
    items: list[GalleryItem] = []
    seen: set[str] = set()
    for where, o in objs:
        if not isinstance(o, dict) or "id" not in o:
            raise InputError(f"{where}: a gallery item must be an object with an 'id'", path=path)
        gid = str(o["id"])
        image, caption = o.get("image"), o.get("caption", o.get("text"))
        if image is not None and (not isinstance(image, str) or not image.strip()):
            raise InputError(f"{where} (id {gid!r}): 'image' must be a non-empty path string", path=path)
        if caption is not None and not isinstance(caption, str):
            raise InputError(f"{where} (id {gid!r}): 'caption' must be a string", path=path)
        if image is None and not caption:
            raise InputError(f"{where} (id {gid!r}): a gallery item needs an 'image' or a 'caption'", path=path)
        if gid in seen:
            raise InputError(f"{where}: duplicate gallery id {gid!r}", path=path)
        seen.add(gid)
        items.append(GalleryItem(gid, None if image is None else (path.parent / image), caption or None))
    if not items:
        raise InputError("the gallery is empty", path=path)
    return items


def _missing(paths: list[Path | None]) -> int:
    return sum(1 for p in paths if p is None or not p.is_file())


def image_notes(ds: Dataset) -> list[str]:
    """Notes on absent images and on the retrieval modes that can run with what is present."""
    notes = []
    nq, ng = _missing([q.image for q in ds.queries]), _missing([g.image for g in ds.gallery])
    if nq:
        left_out = ("" if nq == len(ds.queries) else
                    ": a run that reads query images leaves those queries out of every mode (all modes compare the same queries)")
        notes.append(f"query images: {nq} of {len(ds.queries)} absent{left_out}")
    if ng:
        some = ("" if ng == len(ds.gallery) else ": the gallery is fixed, so a run of a mode that compares gallery "
                "images refuses it (name them all); --modes T2T, or an encoder of texts only, runs without them")
        notes.append(f"gallery images: {ng} of {len(ds.gallery)} absent{some}")
    modes = ds.runnable_modes
    if nq or ng or len(modes) < len(MODE_LABELS):
        extra = ""
        if "TI" in ds.available_paths and "T→IT" not in modes:
            extra = "; question→image (T→I, path TI) can run"
        notes.append(
            "retrieval modes that can run: " + (", ".join(modes) if modes else "none") + extra
            + (f" (not: {', '.join(m for m in MODE_LABELS.values() if m not in modes)})" if len(modes) < len(MODE_LABELS) else "")
        )
    return notes
