"""The output folder of ``snapbench stress``: every file name it holds, and its writers.

::

    DIR/run.json                      kind "stress", the fingerprint (resume)
    DIR/records/<condition>.jsonl     the gallery as the encoder saw it (clean included)
    DIR/vectors/queries.npy           query text vectors
    DIR/vectors/clean.npy             clean record text vectors
    DIR/vectors/<condition>.npy       vectors of the records whose text the condition changed
    DIR/vectors/<condition>.rows.npy  their row numbers (int64)
    DIR/per_query.csv                 mode,query_id,condition,metric,value
    DIR/stress.json                   the paired deltas per condition x group
    DIR/report.html
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..atomic import save_npy_atomic, write_text_atomic
from ..conditions import condition_to_filename
from ..jsonable import write_json
from .arrays import load_npy
from .names import RUN_CONFIG

__all__ = ["StressDir"]


@dataclass(frozen=True)
class StressDir:
    """Paths of one ``snapbench stress`` output folder (condition ids are safe file names already)."""

    root: Path

    def __init__(self, root: str | os.PathLike) -> None:
        object.__setattr__(self, "root", Path(root))

    @property
    def run_json(self) -> Path:
        return self.root / RUN_CONFIG

    def records(self, condition: str) -> Path:
        return self.root / "records" / f"{condition_to_filename(condition)}.jsonl"

    def vectors(self, name: str) -> Path:
        return self.root / "vectors" / f"{condition_to_filename(name)}.npy"

    def vector_rows(self, condition: str) -> Path:
        return self.root / "vectors" / f"{condition_to_filename(condition)}.rows.npy"

    @property
    def per_query(self) -> Path:
        return self.root / "per_query.csv"

    @property
    def stress_json(self) -> Path:
        return self.root / "stress.json"

    @property
    def report_html(self) -> Path:
        return self.root / "report.html"

    # ---------------------------------------------------------------- writers / readers
    def write_records(self, condition: str, rows: Iterable[Mapping[str, Any]]) -> Path:
        """One JSON object per line, keys in the given order, atomically (the same rows give the same bytes)."""
        path = self.records(condition)
        text = "".join(json.dumps(dict(r), ensure_ascii=False, allow_nan=False) + "\n" for r in rows)
        write_text_atomic(path, text)
        return path

    def remove_other_records(self, conditions: Iterable[str]) -> list[str]:
        """Delete ``records/*.jsonl`` of conditions not in ``conditions`` (an earlier run's, now absent from
        per_query.csv and stress.json); returns their names."""
        keep = {self.records(c).name for c in conditions}
        gone = []
        for p in sorted((self.root / "records").glob("*.jsonl")):
            if p.name not in keep:
                p.unlink()
                gone.append(p.stem)
        return gone

    def write_summary(self, summary: Mapping[str, Any]) -> Path:
        """``stress.json``, strict JSON, atomically."""
        write_json(self.stress_json, dict(summary))
        return self.stress_json

    def write_report(self, page: str) -> Path:
        """``report.html`` (a page rendered by :mod:`snapbench.report.stress_page`), atomically."""
        write_text_atomic(self.report_html, page)
        return self.report_html

    def save_vectors(self, name: str, array: np.ndarray, rows: np.ndarray | None = None) -> None:
        """Vectors first, then their rows: a run killed in between leaves no rows file, so it is redone."""
        save_npy_atomic(self.vectors(name), np.ascontiguousarray(array, dtype=np.float32))
        if rows is not None:
            save_npy_atomic(self.vector_rows(name), np.asarray(rows, dtype=np.int64))

    def load_vectors(self, name: str, *, with_rows: bool = False) -> tuple[np.ndarray, np.ndarray | None] | None:
        """Saved vectors (and rows), or ``None`` when they are not (all) there."""
        v = self.vectors(name)
        r = self.vector_rows(name)
        if not v.is_file() or (with_rows and not r.is_file()):
            return None
        arr = load_npy(v, what="vectors")
        rows = load_npy(r, what="vector rows").astype(np.int64) if with_rows else None
        return np.asarray(arr, dtype=np.float32), rows
