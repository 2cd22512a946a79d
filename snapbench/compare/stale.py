"""Which files of a compare folder the previous compare wrote, so that a new compare into the folder
leaves none of them behind that it does not write itself (other targets, metrics or formats, or an
interrupted compare).

The folder is compare's own (run.json ``kind: "compare"``), but only the files compare itself wrote
are removed, never a file it does not name.  run.json records them:

* ``files`` -- the folder's compare files (relative paths), with ``status: "complete"`` once written;
* while a compare writes (``status: "writing"``), ``files`` holds the previous compare's files and
  every file this one may write (:func:`possible_files`), so a compare interrupted half-way is
  cleaned up by the next one too.

A run.json of an older snapbench (no ``files``) names its targets and metrics: the files a compare of
those writes in any format are taken as its files.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from ..render.compare_figures import FIGURES
from ..store import CompareDir
from .jsonfile import RECORD_TYPES

__all__ = ["possible_files", "previous_files", "relative_names", "remove_stale"]

_TABLE_SUFFIXES = ("", "_delta", "_ranking", "_pairs")


def possible_files(out: CompareDir, targets: Sequence[str], metrics: Sequence[str]) -> set[Path]:
    """Every file a compare of ``targets`` x ``metrics`` can write in ``out``, in any format."""
    files = {out.compare_json, out.findings, out.html, out.run_json}
    files |= {out.record_file(name, ext) for name in RECORD_TYPES for ext in ("csv", "parquet")}
    for t in targets:
        for m in metrics:
            stem = CompareDir.stem(t, m)
            files |= {out.table(stem + s, ext) for s in _TABLE_SUFFIXES for ext in ("md", "tex")}
            files |= {out.figure(f"{stem}_{f}", ext) for f in FIGURES for ext in ("png", "pdf")}
    return files


def _inside(out: CompareDir, name: Any) -> Path | None:
    """``out/name`` for a relative path that stays inside the folder (a hand-edited run.json must
    not make compare remove a file elsewhere)."""
    if not isinstance(name, str) or not name:
        return None
    rel = PurePosixPath(name)
    if rel.is_absolute() or ".." in rel.parts:
        return None
    return out.root.joinpath(*rel.parts)


def previous_files(out: CompareDir, run_json: Mapping[str, Any] | None) -> set[Path]:
    """The files the compare that wrote ``run_json`` (the folder's parsed run.json) left in ``out``."""
    if run_json is None:
        return set()
    names = run_json.get("files")
    if isinstance(names, list):
        return {p for p in (_inside(out, n) for n in names) if p is not None}
    targets, metrics = run_json.get("targets"), run_json.get("metrics")
    if isinstance(targets, list) and isinstance(metrics, list):
        return possible_files(out, [str(t) for t in targets], [str(m) for m in metrics])
    return set()


def relative_names(out: CompareDir, files: Iterable[Path]) -> list[str]:
    """``files`` as sorted paths relative to the folder, ``/``-separated (run.json ``files``)."""
    return sorted({p.relative_to(out.root).as_posix() for p in files})


def remove_stale(out: CompareDir, candidates: Iterable[Path], written: Iterable[Path]) -> list[Path]:
    """Remove the ``candidates`` not ``written`` (files only) and compare's sub-folders left empty;
    return the files removed."""
    keep = set(written)
    removed = []
    for p in sorted(set(candidates) - keep):
        if p.is_file() or p.is_symlink():
            p.unlink()
            removed.append(p)
    for d in (out.tables, out.records, out.figures):
        if d.is_dir() and not any(d.iterdir()):
            d.rmdir()
    return removed
