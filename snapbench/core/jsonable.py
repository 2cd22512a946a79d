"""Plain JSON values from what operators, transforms and reports hold (numpy scalars and arrays,
tuples, non-finite floats): the one converter every writer of JSON uses.

Decisions: a non-finite float becomes ``null`` (an undefined value; the files are strict JSON,
written with ``allow_nan=False``); an array with more than ``max_array_items`` entries becomes
``{"array": {"shape", "dtype"}}`` (a noise map recorded as parameters would be megabytes); an
object of any other type becomes its ``repr``.

:func:`dumps` and :func:`write_json` are the one way snapbench writes JSON (strict: ``allow_nan=False``,
UTF-8 text kept as it is); every file writer calls them instead of ``json.dumps``.
"""

from __future__ import annotations

import json
import math
from typing import Any, Mapping

import numpy as np

__all__ = ["to_json", "dumps"]


def to_json(obj: Any, *, max_array_items: int | None = None) -> Any:
    """``obj`` as dicts, lists, str, int, float, bool and None only (see the module docstring)."""
    if isinstance(obj, Mapping):
        return {str(k): to_json(v, max_array_items=max_array_items) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_json(v, max_array_items=max_array_items) for v in obj]
    if isinstance(obj, np.ndarray):
        if max_array_items is not None and obj.size > max_array_items:
            return {"array": {"shape": list(obj.shape), "dtype": str(obj.dtype)}}
        return to_json(obj.tolist(), max_array_items=max_array_items)
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if obj is None or isinstance(obj, (bool, int, str)):
        return obj
    return repr(obj)


def dumps(obj: Any, *, indent: int | None = 2, max_array_items: int | None = None) -> str:
    """Strict JSON text of ``obj`` through :func:`to_json` (no trailing newline)."""
    return json.dumps(to_json(obj, max_array_items=max_array_items), indent=indent, ensure_ascii=False, allow_nan=False)


