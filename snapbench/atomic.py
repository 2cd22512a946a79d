"""Atomic file output, shared by every layer: a file appears under its final name complete or not at all.

The temporary file lives next to the target (same filesystem, so ``os.replace`` is atomic), is
created exclusively with the mode a plain ``open()`` would give (``0o666 & ~umask``, unlike
``tempfile.mkstemp``'s private 0600), and is removed if the write fails.  Its name
(``.<name>.<random>.tmp``) ends in none of the extensions snapbench reads, so a leftover from a
killed process is never mistaken for an output.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path
from typing import Iterator

import numpy as np

from .errors import OutputError

__all__ = ["atomic_path", "write_bytes_atomic", "write_text_atomic", "save_npy_atomic", "prepare_output_dir",
           "check_output_file"]


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, *, fsync: bool = False) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; on success it replaces ``path``, on error it is removed.

    Parent folders are created.  ``fsync`` flushes the file to disk before the rename.
    """
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    for _ in range(100):
        tmp = p.with_name(f".{p.name}.{secrets.token_hex(6)}.tmp")
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            break
        except FileExistsError:
            continue
    else:  # pragma: no cover - 100 collisions of 48 random bits
        raise FileExistsError(f"{p}: cannot create a temporary file next to it")
    try:
        yield tmp
        if fsync:
            fd = os.open(tmp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_bytes_atomic(path: str | os.PathLike, data: bytes, *, fsync: bool = False) -> None:
    """Write ``data`` to ``path`` atomically."""
    with atomic_path(path, fsync=fsync) as tmp:
        tmp.write_bytes(data)


def write_text_atomic(path: str | os.PathLike, text: str, *, encoding: str = "utf-8") -> None:
    """Write ``text`` to ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding=encoding)


def save_npy_atomic(path: str | os.PathLike, array: np.ndarray) -> None:
    """``np.save`` to ``path`` atomically (the file name is used as given: no ``.npy`` is appended)."""
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        np.save(fh, array, allow_pickle=False)


def prepare_output_dir(path: str | os.PathLike, *subdirs: str) -> Path:
    """Create the output folder ``path`` (and ``subdirs`` inside it), or raise
    :class:`~snapbench.errors.OutputError` saying why it cannot hold outputs: it is a file, or it
    cannot be created or written.  Commands call this before any expensive work."""
    out = Path(path)
    for d in (out, *(out / s for s in subdirs)):
        if d.exists() and not d.is_dir():
            raise OutputError("exists and is not a folder (choose a folder for the outputs)", path=d)
        try:
            d.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputError(f"cannot create the output folder ({exc.strerror or exc})", path=d) from None
        if not os.access(d, os.W_OK | os.X_OK):
            raise OutputError("the output folder is not writable", path=d)
    return out


# appended: an output *file* checked before the work that produces it (evaluate --out/--table-out, preview --out)
def check_output_file(path: str | os.PathLike, *, param: str) -> Path:
    """Check, before any expensive work, that the file ``path`` can be written later: it is not a
    folder, and its nearest existing parent is a writable folder (missing parents are created when
    the file is written).  :class:`~snapbench.errors.OutputError` naming ``path`` and ``param``
    otherwise.  Nothing is created."""
    from .errors import arg

    out = Path(path)
    if out.is_dir():
        raise OutputError(f"is a folder; {arg(param)} names the file to write", path=out, param=param)
    for parent in (out.parent, *out.parent.parents):
        if parent.exists():
            if not parent.is_dir():
                raise OutputError(f"cannot be written: {parent} is a file, not a folder", path=out)
            if not os.access(parent, os.W_OK | os.X_OK):
                raise OutputError(f"cannot be written: the folder {parent} is not writable", path=out)
            break
    return out
