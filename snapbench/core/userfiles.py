"""Reading users' text files: the one place bytes become text, so bad bytes name the file.

Every reader of a user file (manifests, qrels, id lists, grids, tags, reports, TREC runs) goes
through :func:`read_text` / :func:`read_json` / :func:`decode`.  Decisions: files are UTF-8 (a
UTF-8 byte-order mark is accepted and dropped); anything else is an
:class:`~snapbench.core.errors.InputError` naming the file, the line and the column of the first bad
byte, instead of a ``UnicodeDecodeError`` traceback.  A missing file, a folder where a file is
expected and an unreadable file are ``InputError`` s too.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from .errors import InputError

_NPY_MAGIC = b"\x93NUMPY"

__all__ = ["decode", "read_bytes", "read_text", "read_json", "read_json_or_text", "read_lines"]


def read_bytes(path: str | os.PathLike, *, what: str = "file") -> bytes:
    """The bytes of ``path``; :class:`InputError` when it is missing, a folder or unreadable."""
    p = Path(path)
    try:
        return p.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{what} not found", path=p) from None
    except IsADirectoryError:
        raise InputError(f"is a folder, not a {what}", path=p) from None
    except OSError as exc:
        raise InputError(f"cannot read the {what} ({exc.strerror or exc})", path=p) from None


def decode(data: bytes, path: str | os.PathLike) -> str:
    """``data`` as UTF-8 text (BOM dropped); :class:`InputError` naming ``path`` and the first bad byte."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        # utf-8-sig reports positions after the BOM it dropped
        start = exc.start + (3 if data.startswith(b"\xef\xbb\xbf") else 0)
        line = data.count(b"\n", 0, start) + 1
        column = start - (data.rfind(b"\n", 0, start) + 1) + 1
        raise InputError(
            f"not UTF-8 text: byte 0x{data[start]:02x} at line {line}, column {column} cannot be decoded "
            "(save the file as UTF-8)", path=path) from None


def read_text(path: str | os.PathLike, *, what: str = "file") -> str:
    """The text of a user file (see the module docstring for the rules)."""
    return decode(read_bytes(path, what=what), path)


def read_lines(path: str | os.PathLike, *, what: str = "file") -> list[str]:
    """The lines of a user text file, without line endings."""
    return read_text(path, what=what).splitlines()


def read_json(path: str | os.PathLike, *, what: str = "JSON file") -> Any:
    """The parsed JSON of a user file; :class:`InputError` with the line and column of a syntax error.

    Non-standard ``NaN`` / ``Infinity`` tokens are refused: a value snapbench reads is finite or null.
    """
    return _parse_json(read_text(path, what=what), path)


def _no_constants(token: str) -> Any:
    raise ValueError(f"{token} is not valid JSON (use null for an undefined value)")


def _parse_json(text: str, path: str | os.PathLike) -> Any:
    try:
        return json.loads(text, parse_constant=_no_constants)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}", path=path) from None
    except ValueError as exc:
        raise InputError(f"not valid JSON: {exc}", path=path) from None


def jsonl_lines(text: str, path: str | os.PathLike, *, objects: bool = True,
                error: type[InputError] = InputError) -> list[tuple[int, Any]]:
    """``(line number, value)`` of every non-blank line of the JSONL ``text`` read from ``path``: the
    reader of a user's JSONL (query manifests, galleries, ImageFolder tables, album galleries, ``diagnose``
    questions files).  A line that
    is not JSON (the rules of :func:`read_json`) or, with ``objects``, not a JSON object is an ``error``
    naming the file and the line."""
    out = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line, parse_constant=_no_constants)
        except json.JSONDecodeError as exc:
            raise error(f"line {lineno}: invalid JSON ({exc.msg} at column {exc.colno})", path=path) from None
        except ValueError as exc:
            raise error(f"line {lineno}: invalid JSON ({exc})", path=path) from None
        if objects and not isinstance(obj, dict):
            raise error(f"line {lineno}: expected a JSON object", path=path)
        out.append((lineno, obj))
    return out


def read_json_or_text(path: str | os.PathLike, *, what: str, shape: str) -> tuple[dict | None, str]:
    """A file that is either a JSON object or a text format (qrels: JSON or TREC lines; tags: JSON
    or TSV): ``(object, text)`` when it is JSON, ``(None, text)`` otherwise.

    It is JSON when its name ends in ``.json`` or its text starts with ``{``; then it must parse
    (the rules of :func:`read_json`) and be an object, else an :class:`InputError` saying
    "JSON ``what`` must be an object ``shape``".
    """
    p = Path(path)
    text = read_text(p, what=f"{what} file")
    if not (p.suffix.lower() == ".json" or text.lstrip().startswith("{")):
        return None, text
    data = _parse_json(text, p)
    if not isinstance(data, dict):
        raise InputError(f"JSON {what} must be an object {shape}", path=p)
    return data, text


def load_npy(path: str | os.PathLike, *, what: str = "array", mmap: bool = False,
             error: type[InputError] = InputError) -> np.ndarray:
    """A user's ``.npy`` file as a real numeric array (read-only memmap with ``mmap``): the loader of every
    ``.npy`` input (embeddings, vectors, arrays, ``evaluate``'s score matrices).

    Never unpickles.  An ``error`` naming the file for a missing file, a file that is not
    ``.npy`` (e.g. text), an object array, a truncated file or a non-real dtype.
    """
    p = Path(path)
    if not p.is_file():
        try:
            read_bytes(p, what=what)  # raises the missing / folder / unreadable error
        except InputError as exc:
            raise error(exc.problem, path=p) from None
    try:
        with open(p, "rb") as fh:
            magic = fh.read(len(_NPY_MAGIC))
    except OSError as exc:
        raise error(f"cannot read the {what} ({exc.strerror or exc})", path=p) from None
    if magic != _NPY_MAGIC:
        raise error(f"not a .npy file (no NumPy header): save the {what} with numpy.save", path=p)
    try:
        arr = np.load(p, mmap_mode="r" if mmap else None, allow_pickle=False)
    except ValueError as exc:
        if "pickle" in str(exc).lower() or "object" in str(exc).lower():
            raise error("holds a Python-object array; snapbench never unpickles files -- save a numeric "
                        "array, e.g. np.save(path, x.astype(np.float32))", path=p) from None
        raise error(f"cannot load the {what} ({exc})", path=p) from None
    except (OSError, EOFError) as exc:
        raise error(f"truncated or unreadable .npy file ({exc})", path=p) from None
    if arr.dtype.kind not in "fiu":
        raise error(f"the {what} must be a real numeric array, got dtype {arr.dtype}", path=p)
    return arr
