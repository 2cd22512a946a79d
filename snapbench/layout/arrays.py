"""Embeddings and path-score files: ``<stem>.<modality>.npy`` and both PATHS_DIR layouts."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import InputError
from .names import GALLERY_STEM, MODALITIES, PATH_NAMES

__all__ = ["embedding_file", "path_score_file", "find_embeddings", "find_path_scores"]


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


