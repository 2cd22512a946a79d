"""Embeddings and path-score files: ``<stem>.<modality>.npy`` and both PATHS_DIR layouts."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..core.errors import InputError
from .names import GALLERY_STEM, MODALITIES, PATH_NAMES

__all__ = ["embedding_file", "path_score_file", "find_embeddings", "find_path_scores", "load_npy"]


def embedding_file(emb_dir: str | os.PathLike, stem: str, modality: str) -> Path:
    """``<emb_dir>/<stem>.<modality>.npy`` (stem = condition file name, or ``gallery``)."""
    if modality not in MODALITIES:
        raise ValueError(f"modality must be one of {MODALITIES}, got {modality!r}")
    return Path(emb_dir) / f"{stem}.{modality}.npy"


def find_embeddings(emb_dir: str | os.PathLike) -> tuple[tuple[Path, Path], dict[str, tuple[Path, Path]]]:
    """``((gallery image, gallery text), {condition file stem: (query image, query text)})``.

    InputError when the folder or the gallery files are missing, no query embeddings exist, or a
    condition has one modality only.
    """
    d = Path(emb_dir)
    if not d.is_dir():
        raise InputError("not a directory (expected an embeddings folder)", path=d)
    gallery = (embedding_file(d, GALLERY_STEM, "image"), embedding_file(d, GALLERY_STEM, "text"))
    missing = [g.name for g in gallery if not g.is_file()]
    if missing:
        raise InputError(f"lacks {', '.join(missing)} (the gallery embeddings)", path=d)
    found: dict[str, dict[str, Path]] = {}
    for f in sorted(d.glob("*.npy")):
        cond, _, modality = f.name[: -len(".npy")].rpartition(".")
        if cond and cond != GALLERY_STEM and modality in MODALITIES:
            found.setdefault(cond, {})[modality] = f
    if not found:
        raise InputError("holds no query embeddings (<condition>.image.npy / .text.npy)", path=d)
    conds: dict[str, tuple[Path, Path]] = {}
    for cond, files in found.items():
        lacking = [m for m in MODALITIES if m not in files]
        if lacking:
            raise InputError(f"condition {cond!r} lacks {cond}.{lacking[0]}.npy", path=d)
        conds[cond] = (files["image"], files["text"])
    return gallery, conds


# ------------------------------------------------------------------------------------------ path scores
def path_score_file(paths_dir: str | os.PathLike, stem: str, path: str) -> Path:
    """Where encode writes path ``path`` of condition ``stem``: ``<dir>/<stem>.<path>.npy``."""
    if path not in PATH_NAMES:
        raise ValueError(f"path must be one of {PATH_NAMES}, got {path!r}")
    return Path(paths_dir) / f"{stem}.{path}.npy"


def find_path_scores(paths_dir: str | os.PathLike, *, complete: bool = False) -> dict[str, dict[str, Path]]:
    """``{condition file stem: {path name: file}}`` from both PATHS_DIR layouts (flat
    ``<stem>.II.npy`` and sub-folder ``II/<stem>.npy``).

    A condition present in both layouts is an error.  ``complete=True`` also requires all four paths
    of every condition (what fusion needs); evaluate's retrieval modes need only some.
    """
    d = Path(paths_dir)
    found: dict[str, dict[str, Path]] = {}
    origin: dict[str, str] = {}
    for f in sorted(d.glob("*.npy")):
        stem, _, name = f.name[: -len(".npy")].rpartition(".")
        if stem and name in PATH_NAMES:
            found.setdefault(stem, {})[name] = f
            origin[stem] = "flat"
    for name in PATH_NAMES:
        sub = d / name
        if not sub.is_dir():
            continue
        for f in sorted(sub.glob("*.npy")):
            stem = f.name[: -len(".npy")]
            if origin.get(stem) == "flat":
                raise InputError(f"condition {stem!r} appears both as flat files and in {name}/", path=d)
            found.setdefault(stem, {})[name] = f
            origin[stem] = "sub"
    if complete:
        for stem, paths in found.items():
            lacking = [p for p in PATH_NAMES if p not in paths]
            if lacking:
                raise InputError(f"condition {stem!r} lacks the {', '.join(lacking)} path file(s)", path=d)
    return found




_NPY_MAGIC = b"\x93NUMPY"


def load_npy(path: str | os.PathLike, *, what: str = "array", mmap: bool = False) -> np.ndarray:
    """A user's ``.npy`` file as a real numeric array (read-only memmap with ``mmap``): the one loader.

    Never unpickles.  :class:`InputError` naming the file for a missing file, a file that is not
    ``.npy`` (e.g. text), an object array, a truncated file or a non-real dtype.
    """
    from ..core.textio import read_bytes

    p = Path(path)
    if not p.is_file():
        read_bytes(p, what=what)  # raises the missing / folder / unreadable error
    try:
        with open(p, "rb") as fh:
            magic = fh.read(len(_NPY_MAGIC))
    except OSError as exc:
        raise InputError(f"cannot read the {what} ({exc.strerror or exc})", path=p) from None
    if magic != _NPY_MAGIC:
        raise InputError(f"not a .npy file (no NumPy header): save the {what} with numpy.save", path=p)
    try:
        arr = np.load(p, mmap_mode="r" if mmap else None, allow_pickle=False)
    except ValueError as exc:
        if "pickle" in str(exc).lower() or "object" in str(exc).lower():
            raise InputError("holds a Python-object array; snapbench never unpickles files -- save a numeric "
                             "array, e.g. np.save(path, x.astype(np.float32))", path=p) from None
        raise InputError(f"cannot load the {what} ({exc})", path=p) from None
    except (OSError, EOFError) as exc:
        raise InputError(f"truncated or unreadable .npy file ({exc})", path=p) from None
    if arr.dtype.kind not in "fiu":
        raise InputError(f"the {what} must be a real numeric array, got dtype {arr.dtype}", path=p)
    return arr
