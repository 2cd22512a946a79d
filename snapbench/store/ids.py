"""Id lists: one id per line (``query_ids.txt``, ``gallery_ids.txt``)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from ..core.errors import InputError, OutputError
from ..core.userfiles import read_text
from .atomic import write_text_atomic

__all__ = ["read_ids", "write_ids", "find_ids"]


def read_ids(path: str | os.PathLike, what: str = "ids") -> list[str]:
    """One id per line (surrounding whitespace stripped, trailing empty lines ignored).

    :class:`~snapbench.core.errors.InputError` for a missing file, no ids, an empty line between ids or a
    duplicate id (with both line numbers).
    """
    p = Path(path)
    lines = read_text(p, what=f"{what} file").splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    ids = [ln.strip() for ln in lines]
    if not ids:
        raise InputError(f"no {what} (empty file)", path=p)
    seen: dict[str, int] = {}
    for i, x in enumerate(ids, 1):
        if not x:
            raise InputError(f"line {i} is empty (one id per line)", path=p)
        if x in seen:
            raise InputError(f"duplicate id {x!r} on lines {seen[x]} and {i}", path=p)
        seen[x] = i
    return ids


def write_ids(path: str | os.PathLike, ids: Sequence[str]) -> None:
    """One id per line, written atomically; ids must be non-empty and free of line breaks."""
    for i in ids:
        s = str(i)
        if not s.strip() or "\n" in s or "\r" in s:
            raise OutputError(f"id {s!r} cannot be written one per line", path=path)
    write_text_atomic(path, "".join(f"{i}\n" for i in ids))


def find_ids(name: str, *dirs: str | os.PathLike | None) -> Path | None:
    """The first ``<dir>/<name>`` or ``<dir>/II/<name>`` that exists (``None`` if none does)."""
    for d in dirs:
        if d is None:
            continue
        for cand in (Path(d) / name, Path(d) / "II" / name):
            if cand.is_file():
                return cand
    return None


