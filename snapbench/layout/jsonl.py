"""JSONL files written line by line during a run (manifest, skips): one reader with the cut-last-line rule."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..textio import read_bytes
from .names import MANIFEST, SKIPS

__all__ = ["read_jsonl_records", "read_manifest", "read_skips"]


def read_jsonl_records(path: str | os.PathLike, *, required: Sequence[str] = (), what: str = "record") -> list[dict[str, Any]]:
    """Objects of a JSONL file written line by line (manifest, skips).

    The rule every consumer shares: an unparseable (or non-object, or lacking ``required`` keys)
    **last** line is dropped -- a kill mid-write cuts only the line being appended; such a line
    anywhere else is an :class:`~snapbench.errors.InputError` naming the line.  A missing file gives
    ``[]``.
    """
    p = Path(path)
    if not p.exists():
        return []
    parts = read_bytes(p, what=what).split(b"\n")
    last = max((i for i, part in enumerate(parts) if part.strip()), default=-1)
    out: list[dict[str, Any]] = []
    for i, part in enumerate(parts):
        if not part.strip():
            continue
        try:
            obj = json.loads(part.decode("utf-8"))
            if not isinstance(obj, dict) or any(k not in obj for k in required):
                raise ValueError(f"not a {what}")
        except (ValueError, UnicodeDecodeError) as exc:
            if i == last:
                break  # cut by a kill mid-write
            raise InputError(f"line {i + 1} is not a valid {what} ({exc})", path=p) from None
        out.append(obj)
    return out


def read_manifest(corrupt_dir: str | os.PathLike, *, must_exist: bool = True) -> list[dict[str, Any]]:
    """The records of ``corrupt_dir/manifest.jsonl`` (each has ``id`` and ``condition``)."""
    p = Path(corrupt_dir) / MANIFEST
    if must_exist and not p.is_file():
        from .inputs import find_output_folder

        found = find_output_folder(corrupt_dir)
        if found is not None and found.kind != "corrupt":  # another command's folder: say which
            raise InputError(f"{found.describe(Path(corrupt_dir))}, not the output folder of 'snapbench corrupt' "
                             f"(no {MANIFEST})", path=corrupt_dir)
        raise InputError(f"no {MANIFEST} (is this the output folder of 'snapbench corrupt'?)", path=corrupt_dir)
    return read_jsonl_records(p, required=("id", "condition"), what="manifest record")


def read_skips(corrupt_dir: str | os.PathLike) -> list[dict[str, Any]]:
    """The records of ``corrupt_dir/skips.jsonl`` (``[]`` when there is none)."""
    return read_jsonl_records(Path(corrupt_dir) / SKIPS, required=("id",), what="skip record")
