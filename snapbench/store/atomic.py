"""Atomic file output, shared by every layer: a file appears under its final name complete or not at all.

The temporary file lives next to the target (same filesystem, so ``os.replace`` is atomic), is
created exclusively with the mode a plain ``open()`` would give (``0o666 & ~umask``, unlike
``tempfile.mkstemp``'s private 0600), and is removed if the write fails.  Its name
(``.<name>.<random>.tmp``) ends in none of the extensions snapbench reads, so a leftover from a
killed process is never mistaken for an output.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import os
import secrets
import shutil
from pathlib import Path
from typing import Any, Iterator, TextIO

import numpy as np

from ..core.errors import ConfigError, OutputError
from ..core.jsonable import dumps

__all__ = ["atomic_path", "open_text_atomic", "write_bytes_atomic", "write_text_atomic", "save_npy_atomic",
           "prepare_output_dir", "check_output_file", "nearest_existing", "being_written", "lock_output_dir", "owning_output_dirs"]

# folders prepare_output_dir created (outermost first) inside owning_output_dirs; None outside it
_CREATED: contextvars.ContextVar[list[Path] | None] = contextvars.ContextVar("snapbench_created_dirs", default=None)
# output folders locked inside owning_output_dirs (real path -> the descriptor holding the lock); None outside it
_LOCKED: contextvars.ContextVar[dict[str, int] | None] = contextvars.ContextVar("snapbench_locked_dirs", default=None)


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


@contextlib.contextmanager
def open_text_atomic(path: str | os.PathLike, *, newline: str | None = None,
                     encoding: str = "utf-8") -> Iterator[TextIO]:
    """A text file handle (``open(..., "w", newline=newline)``) whose content appears at ``path``
    only when the block succeeds: the one atomic text writer (reports, tables, TREC runs, CSVs).

    Parent folders are created.  An ``OSError`` (raised in the block or by the rename) becomes
    :class:`~snapbench.core.errors.OutputError` naming ``path``, not the temporary file.
    """
    p = Path(path)
    try:
        with atomic_path(p) as tmp, open(tmp, "w", encoding=encoding, newline=newline) as fh:
            yield fh
    except OSError as e:
        raise OutputError(f"cannot write ({e.strerror or e})", path=p) from None


def write_text_atomic(path: str | os.PathLike, text: str, *, encoding: str = "utf-8") -> None:
    """Write ``text`` to ``path`` atomically (an ``OSError`` is the caller's to word)."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding=encoding)


def save_npy_atomic(path: str | os.PathLike, array: np.ndarray) -> None:
    """``np.save`` to ``path`` atomically (the file name is used as given: no ``.npy`` is appended)."""
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        np.save(fh, array, allow_pickle=False)


def prepare_output_dir(path: str | os.PathLike, *subdirs: str) -> Path:
    """Create the output folder ``path`` (and ``subdirs`` inside it), or raise
    :class:`~snapbench.core.errors.OutputError` saying why it cannot hold outputs: it is a file, or it
    cannot be created or written.  Commands call this before any expensive work."""
    out = Path(path)
    for d in (out, *(out / s for s in subdirs)):
        if d.exists() and not d.is_dir():
            raise OutputError("exists and is not a folder (choose a folder for the outputs)", path=d)
        missing = [p for p in (d, *d.parents) if not p.exists()]
        try:
            d.mkdir(parents=True, exist_ok=True)
        except NotADirectoryError:
            parent = next((p for p in d.parents if p.exists() and not p.is_dir()), d)
            raise OutputError("exists and is not a folder (choose a folder for the outputs)", path=parent) from None
        except OSError as exc:
            raise OutputError(f"cannot create the output folder ({exc.strerror or exc})", path=d) from None
        created = _CREATED.get()
        if created is not None:
            created.extend(reversed(missing))  # outermost first
        if not os.access(d, os.W_OK | os.X_OK):
            raise OutputError("the output folder is not writable", path=d)
    return out


def nearest_existing(path: str | os.PathLike) -> Path | None:
    """``path`` itself if it exists, else its nearest existing parent (``None`` when none exists):
    what decides whether a path that may not exist yet can be created."""
    p = Path(path)
    return next((q for q in (p, *p.parents) if q.exists()), None)


# an output *file* checked before the work that produces it (evaluate --out/--table-out, preview --out)
def check_output_file(path: str | os.PathLike, *, param: str) -> Path:
    """Check, before any expensive work, that the file ``path`` can be written later: it is not a
    folder, and its nearest existing parent is a writable folder (missing parents are created when
    the file is written).  :class:`~snapbench.core.errors.OutputError` naming ``path`` and ``param``
    otherwise.  Nothing is created."""
    from ..core.errors import arg

    out = Path(path)
    if out.is_dir():
        raise OutputError(f"is a folder; {arg(param)} names the file to write", path=out, param=param)
    parent = nearest_existing(out.parent)
    if parent is not None:
        if not parent.is_dir():
            raise OutputError(f"cannot be written: {parent} is a file, not a folder", path=out)
        if not os.access(parent, os.W_OK | os.X_OK):
            raise OutputError(f"cannot be written: the folder {parent} is not writable", path=out)
    return out


# a command that fails leaves no empty output folder behind (cli.guarded wraps every command)
def _holds_no_file(folder: Path) -> bool:
    for _root, _dirs, files in os.walk(folder):  # symbolic links to folders are listed as files
        if files:
            return False
    return True


def lock_output_dir(folder: str | os.PathLike) -> None:
    """Hold an exclusive lock on the output folder ``folder`` until the enclosing :func:`owning_output_dirs`
    ends (every command of the CLI runs in one), so that two commands never write into one folder at
    the same time: a folder another process holds is a :class:`~snapbench.core.errors.ConfigError`.

    The lock is an advisory ``flock`` on the folder itself (no lock file among the outputs); the system
    drops it when the process ends, however it ends, so a killed command leaves nothing stale.  Outside
    :func:`owning_output_dirs`, without ``fcntl`` (Windows) or on a file system without locks (some
    network mounts) nothing is locked."""
    held = _LOCKED.get()
    key = os.path.realpath(folder)
    if held is None or key in held:
        return
    try:
        import fcntl
    except ImportError:
        return
    fd = os.open(key, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise ConfigError(f"{folder} is in use by another snapbench command, still running; wait for it to end "
                          "(then rerun this one to resume) or use another output folder") from None
    except OSError:
        os.close(fd)
        return
    held[key] = fd


def being_written(folder: str | os.PathLike) -> bool:
    """Whether another process holds the lock of the output folder ``folder`` (:func:`lock_output_dir`):
    a command still writing it.  A folder this process holds, or one that cannot be asked (no
    ``fcntl``, no locks on the file system, not a folder), is not."""
    key = os.path.realpath(folder)
    if key in (_LOCKED.get() or {}):
        return False
    try:
        import fcntl

        fd = os.open(key, os.O_RDONLY)
    except (ImportError, OSError):
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # closing drops the shared lock taken to ask
    return False


@contextlib.contextmanager
def owning_output_dirs() -> Iterator[None]:
    """The output folders of one command: locked while it runs (:func:`lock_output_dir`, called when a
    folder is claimed), and removed if it fails having written nothing.

    On failure (any exception, Ctrl-C included) the output folders that :func:`prepare_output_dir`
    created inside the block and that still hold no file (only, perhaps, empty folders) are removed.  A
    folder that existed before, or that holds any file, is kept: a failed command leaves the file system
    as it found it unless it wrote something (an interrupted run keeps what it finished, to resume)."""
    created: list[Path] = []
    locked: dict[str, int] = {}
    tokens = _CREATED.set(created), _LOCKED.set(locked)
    try:
        yield
    except BaseException as exc:
        if getattr(exc, "exit_code", getattr(exc, "code", 1)) not in (0, None):  # typer.Exit(0), sys.exit(0)
            for folder in created:  # outermost first: its empty subfolders go with it
                if folder.is_dir() and not folder.is_symlink() and _holds_no_file(folder):
                    shutil.rmtree(folder, ignore_errors=True)
        raise
    finally:
        _CREATED.reset(tokens[0])
        _LOCKED.reset(tokens[1])
        outer, outer_locks = _CREATED.get(), _LOCKED.get()
        if outer is not None:  # an enclosing block removes them too if it fails later
            outer.extend(created)
        for key, fd in locked.items():  # an enclosing block keeps holding them; else they are released
            if outer_locks is not None and key not in outer_locks:
                outer_locks[key] = fd
            else:
                os.close(fd)


def write_json(path: str | os.PathLike, obj: Any, *, indent: int | None = 2, max_array_items: int | None = None) -> None:
    """Write ``obj`` as strict JSON (plus a final newline) to ``path``, atomically."""
    from ..store.atomic import write_text_atomic

    write_text_atomic(path, dumps(obj, indent=indent, max_array_items=max_array_items) + "\n")


def save_png(
    path: str | os.PathLike, image: np.ndarray, *, compression: int | None = None, fsync: bool = False
) -> str:
    """Write ``image`` (HxWx3 uint8 RGB) as a lossless PNG, atomically; return the sha256 (hex) of the bytes written."""
    # OpenCV (through corruptions) is imported when an image is written, not whenever a file is
    from ..corruptions.pixels import PNG_COMPRESSION, encode_png

    data = encode_png(image, compression=PNG_COMPRESSION if compression is None else compression)
    write_bytes_atomic(path, data, fsync=fsync)
    return hashlib.sha256(data).hexdigest()
