"""Reading embeddings and path-score matrices, writing fused scores and per-query weights.

Formats
-------
* ``.npy`` — read with ``np.load(allow_pickle=False)`` (never unpickled); ``mmap=True`` maps it.
* ``.safetensors`` — ``pip install snapbench[safetensors]``; a file with one tensor is read as is, a
  file with several needs a key: ``embeddings.safetensors#image`` (otherwise the error lists the keys).

SCORES_DIR (what ``snapbench evaluate`` reads): one ``<condition>.npy`` per condition (condition id with
"/" as "__", e.g. ``clean.npy``, ``img__motion_blur__s2.npy``), plus ``query_ids.txt`` and
``gallery_ids.txt`` (one id per line; row and column order).

PATHS_DIR (what ``snapbench moor --paths-dir`` reads): the four path matrices of each condition,
either flat — ``<condition>.II.npy``, ``<condition>.TT.npy``, ``<condition>.IT.npy``,
``<condition>.TI.npy`` — or as four sub-folders ``II/ TT/ IT/ TI/`` that are each a SCORES_DIR
(``II/<condition>.npy`` ...; handy when each path was written by one scoring run).  ``query_ids.txt`` /
``gallery_ids.txt`` are taken from the folder itself or, failing that, from ``II/``.  Mixing both
layouts for one condition is an error.

EMBEDDINGS_DIR (what ``snapbench moor --embeddings-dir`` reads; ``snapbench encode`` writes it to
``OUT/embeddings``): ``gallery.image.npy`` and ``gallery.text.npy`` (N x d) plus ``<condition>.image.npy``
and ``<condition>.text.npy`` (Q x d) per condition; ``query_ids.txt`` / ``gallery_ids.txt`` are taken
from the folder itself or, failing that, from its parent (encode's OUT).

Per-query MOOR weights are written *outside* the condition files (``moor_weights/<condition>.csv`` or
``.npy``) so that the SCORES_DIR stays readable by ``snapbench evaluate``.  Every output file is written
atomically (temporary file + ``os.replace``), so an interrupted run leaves no truncated file.
"""

from __future__ import annotations

import contextlib
import csv
import os
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..atomic import atomic_path, save_npy_atomic

from ._validate import check_finite

__all__ = [
    "atomic_output",
    "save_npy",
    "load_matrix",
    "read_ids",
    "write_ids",
    "find_path_conditions",
    "find_embedding_conditions",
    "load_path_scores",
    "write_weights",
    "PATH_NAMES",
]

PATH_NAMES = ("II", "TT", "IT", "TI")


def atomic_output(path: str | os.PathLike) -> "contextlib.AbstractContextManager[Path]":
    """Yield a temporary path next to ``path`` that replaces it on success (see :mod:`snapbench.atomic`)."""
    return atomic_path(path)


def save_npy(path: str | os.PathLike, array: np.ndarray) -> None:
    """``np.save`` to ``path`` atomically (see :mod:`snapbench.atomic`)."""
    save_npy_atomic(path, array)


def _safetensors_load(path: Path, key: str | None, name: str) -> np.ndarray:
    try:
        from safetensors.numpy import load_file  # type: ignore
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(f"{name}: reading {path} needs safetensors: pip install snapbench[safetensors]") from exc
    try:
        tensors = load_file(str(path))
    except Exception as exc:
        raise ValueError(f"{name}: cannot read {path} as safetensors ({exc})") from exc
    if key is None:
        if len(tensors) != 1:
            raise ValueError(
                f"{name}: {path} holds {len(tensors)} tensors ({', '.join(sorted(tensors))}); "
                f"name one as {path}#KEY"
            )
        return next(iter(tensors.values()))
    if key not in tensors:
        raise ValueError(f"{name}: {path} has no tensor {key!r}; it holds {', '.join(sorted(tensors))}")
    return tensors[key]


def load_matrix(
    path: str | os.PathLike,
    name: str = "array",
    *,
    mmap: bool = False,
    ndim: int | None = 2,
    check: bool = True,
) -> np.ndarray:
    """Load a numeric matrix from ``.npy`` or ``.safetensors[#key]``; errors name ``name`` and the file.

    ``check=True`` verifies the shape (``ndim``), non-emptiness and finiteness (skip it for a huge
    memmap whose rows are checked chunk by chunk later).
    """
    spec = str(path)
    key = None
    if ".safetensors#" in spec:
        spec, key = spec.split("#", 1)
    p = Path(spec)
    if not p.exists():
        raise ValueError(f"{name}: file not found: {p}")
    if p.suffix == ".safetensors":
        arr = _safetensors_load(p, key, name)
    elif p.suffix == ".npy":
        try:
            arr = np.load(p, mmap_mode="r" if mmap else None, allow_pickle=False)
        except ValueError as exc:
            raise ValueError(f"{name}: cannot read {p} as a numeric .npy array ({exc})") from exc
        except Exception as exc:
            raise ValueError(f"{name}: cannot read {p} ({exc})") from exc
    else:
        raise ValueError(f"{name}: {p} must be a .npy or .safetensors file")
    if not isinstance(arr, np.ndarray) or arr.dtype == object or not np.issubdtype(arr.dtype, np.number):
        raise ValueError(f"{name}: {p} does not hold a numeric array (dtype {getattr(arr, 'dtype', '?')})")
    if np.issubdtype(arr.dtype, np.complexfloating):
        raise ValueError(f"{name}: {p} holds complex values")
    if check:
        if ndim is not None and arr.ndim != ndim:
            raise ValueError(f"{name}: {p} has shape {arr.shape}, expected {ndim} dimensions")
        if arr.size == 0:
            raise ValueError(f"{name}: {p} is empty (shape {arr.shape})")
        try:
            check_finite(arr, f"{name} ({p})")
        except ValueError as exc:
            raise ValueError(str(exc)) from None
    return arr


def read_ids(path: str | os.PathLike, name: str = "ids") -> list[str]:
    """One id per line (blank trailing lines ignored); duplicates and empty ids are errors."""
    p = Path(path)
    if not p.exists():
        raise ValueError(f"{name}: file not found: {p}")
    lines = p.read_text(encoding="utf-8").splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    ids = [ln.strip() for ln in lines]
    for i, x in enumerate(ids):
        if not x:
            raise ValueError(f"{name}: {p} line {i + 1} is empty")
    seen: set[str] = set()
    for i, x in enumerate(ids):
        if x in seen:
            raise ValueError(f"{name}: {p} repeats id {x!r} (line {i + 1})")
        seen.add(x)
    return ids


def write_ids(path: str | os.PathLike, ids: Sequence[str]) -> None:
    """One id per line, written atomically."""
    with atomic_output(path) as tmp:
        tmp.write_text("".join(f"{i}\n" for i in ids), encoding="utf-8")


def find_path_conditions(paths_dir: str | os.PathLike) -> dict[str, dict[str, Path]]:
    """Map condition name -> {path name -> file} for a PATHS_DIR (layout in the module docstring)."""
    d = Path(paths_dir)
    if not d.is_dir():
        raise ValueError(f"--paths-dir: {d} is not a directory")
    found: dict[str, dict[str, Path]] = {}
    origin: dict[str, str] = {}
    for f in sorted(d.glob("*.npy")):
        stem = f.name[: -len(".npy")]
        cond, _, path_name = stem.rpartition(".")
        if cond and path_name in PATH_NAMES:
            found.setdefault(cond, {})[path_name] = f
            origin[cond] = "flat"
    for path_name in PATH_NAMES:
        sub = d / path_name
        if not sub.is_dir():
            continue
        for f in sorted(sub.glob("*.npy")):
            cond = f.name[: -len(".npy")]
            if origin.get(cond) == "flat":
                raise ValueError(f"--paths-dir: condition {cond!r} appears both as flat files and in {path_name}/")
            found.setdefault(cond, {})[path_name] = f
            origin[cond] = "sub"
    if not found:
        raise ValueError(
            f"--paths-dir: {d} holds no path score files (expected <condition>.II.npy ... or II/<condition>.npy ...)"
        )
    for cond, paths in found.items():
        missing = [p for p in PATH_NAMES if p not in paths]
        if missing:
            raise ValueError(f"--paths-dir: condition {cond!r} lacks the {', '.join(missing)} path file(s) in {d}")
    return found


def find_embedding_conditions(emb_dir: str | os.PathLike) -> tuple[tuple[Path, Path], dict[str, tuple[Path, Path]]]:
    """``((gallery image, gallery text), {condition name -> (query image, query text)})`` for an
    EMBEDDINGS_DIR (layout in the module docstring)."""
    d = Path(emb_dir)
    if not d.is_dir():
        raise ValueError(f"--embeddings-dir: {d} is not a directory")
    gallery = (d / "gallery.image.npy", d / "gallery.text.npy")
    missing = [g.name for g in gallery if not g.is_file()]
    if missing:
        raise ValueError(f"--embeddings-dir: {d} lacks {', '.join(missing)} (the gallery embeddings)")
    found: dict[str, dict[str, Path]] = {}
    for f in sorted(d.glob("*.npy")):
        cond, _, modality = f.name[: -len(".npy")].rpartition(".")
        if cond and cond != "gallery" and modality in ("image", "text"):
            found.setdefault(cond, {})[modality] = f
    if not found:
        raise ValueError(f"--embeddings-dir: {d} holds no query embeddings (<condition>.image.npy / .text.npy)")
    conds: dict[str, tuple[Path, Path]] = {}
    for cond, files in found.items():
        lacking = [m for m in ("image", "text") if m not in files]
        if lacking:
            raise ValueError(f"--embeddings-dir: condition {cond!r} lacks {cond}.{lacking[0]}.npy in {d}")
        conds[cond] = (files["image"], files["text"])
    return gallery, conds


def load_path_scores(files: dict[str, Path], *, condition: str = "") -> dict[str, np.ndarray]:
    """Load the four path matrices of one condition; they must share one (Q, N) shape."""
    out: dict[str, np.ndarray] = {}
    for p in PATH_NAMES:
        out[p] = load_matrix(files[p], f"s_{p} of {condition}" if condition else f"s_{p}")
    shapes = {p: a.shape for p, a in out.items()}
    if len(set(shapes.values())) != 1:
        desc = ", ".join(f"{files[p].name} {s}" for p, s in shapes.items())
        raise ValueError(f"path score matrices of {condition or 'the condition'} differ in shape: {desc}")
    return out


def write_weights(
    path: str | os.PathLike,
    weights: np.ndarray,
    correlations: np.ndarray,
    text_share: np.ndarray,
    fallback: np.ndarray,
    query_ids: Sequence[str] | None = None,
) -> None:
    """Per-query weights: ``.csv`` (query_id, w_II, w_TT, w_IT, w_TI, r_TT, r_IT, r_TI, text_share,
    fallback) or ``.npy`` (Q x 4 weights only, row order = query order)."""
    p = Path(path)
    w = np.asarray(weights)
    if p.suffix == ".npy":
        save_npy(p, w)
        return
    if p.suffix != ".csv":
        raise ValueError(f"weights file {p} must end in .csv or .npy")
    qids: Sequence[Any] = query_ids if query_ids is not None else [str(i) for i in range(w.shape[0])]
    if len(qids) != w.shape[0]:
        raise ValueError(f"{len(qids)} query ids for {w.shape[0]} weight rows")
    with atomic_output(p) as tmp, open(tmp, "w", newline="", encoding="utf-8") as f:
        wr = csv.writer(f)
        wr.writerow(["query_id", "w_II", "w_TT", "w_IT", "w_TI", "r_TT", "r_IT", "r_TI", "text_share", "fallback"])
        for i, q in enumerate(qids):
            wr.writerow(
                [q]
                + [repr(float(x)) for x in w[i]]
                + [repr(float(x)) for x in correlations[i]]
                + [repr(float(text_share[i])), int(bool(fallback[i]))]
            )
