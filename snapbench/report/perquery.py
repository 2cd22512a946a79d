"""Per-query values: the long CSV ``query_id,condition,metric,value`` of one mode, and the combined
table of a run (``mode,query_id,condition,metric,value``) as CSV and, with pyarrow, Parquet.

Values are written with ``repr(float)`` so they read back bit-identical; an undefined value (a query
a metric does not cover, NaN) is an empty cell.  Long format, because conditions and metrics differ
between runs and a long table needs no schema to be agreed on.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from ..atomic import atomic_path, write_text_atomic
from ..errors import InputError

__all__ = ["PER_QUERY_COLUMNS", "per_query_rows", "read_per_query", "write_combined_per_query", "write_per_query"]

PER_QUERY_COLUMNS: tuple[str, ...] = ("query_id", "condition", "metric", "value")
PARQUET_HINT = "pip install 'snapbench[report]'"


def _cell(v: float) -> str:
    v = float(v)
    return "" if math.isnan(v) else repr(v)


def write_per_query(
    path: str | Path,
    query_ids: Sequence[str],
    values: Mapping[str, Mapping[str, np.ndarray]],
) -> None:
    """Write ``values[condition][metric]`` (one value per query, in ``query_ids`` order) as the long
    CSV ``query_id,condition,metric,value``, atomically.  Raises :class:`InputError` when an array
    does not have one value per query."""
    qids = [str(q) for q in query_ids]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(PER_QUERY_COLUMNS)
    for cond, per_metric in values.items():
        for metric, arr in per_metric.items():
            a = np.asarray(arr, dtype=np.float64).reshape(-1)
            if a.shape[0] != len(qids):
                raise InputError(
                    f"per-query values of {cond!r}/{metric!r} have {a.shape[0]} entries for {len(qids)} query ids",
                    path=path)
            for q, v in zip(qids, a):
                w.writerow((q, cond, metric, _cell(v)))
    write_text_atomic(path, buf.getvalue())


def read_per_query(path: str | Path) -> tuple[list[str], dict[str, dict[str, np.ndarray]]]:
    """Read a file written by :func:`write_per_query`: ``(query_ids, {condition: {metric: values}})``.

    Query ids keep their first-appearance order; a (query, condition, metric) absent from the file is
    NaN.  Raises :class:`InputError` naming the file and line on a malformed row."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"unreadable per-query table ({e})", path=p) from None
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if header is None or tuple(h.strip() for h in header) != PER_QUERY_COLUMNS:
        raise InputError(f"per-query table must start with the header {','.join(PER_QUERY_COLUMNS)}", path=p)
    qindex: dict[str, int] = {}
    cells: dict[tuple[str, str], dict[int, float]] = {}
    for lineno, row in enumerate(reader, start=2):
        if not row:
            continue
        if len(row) != 4:
            raise InputError(f"line {lineno}: expected 4 columns, got {len(row)}", path=p)
        q, cond, metric, raw = row
        try:
            v = float(raw) if raw.strip() else math.nan
        except ValueError:
            raise InputError(f"line {lineno}: value {raw!r} is not a number", path=p) from None
        i = qindex.setdefault(q, len(qindex))
        cells.setdefault((cond, metric), {})[i] = v
    n = len(qindex)
    out: dict[str, dict[str, np.ndarray]] = {}
    for (cond, metric), by_q in cells.items():
        a = np.full(n, np.nan)
        for i, v in by_q.items():
            a[i] = v
        out.setdefault(cond, {})[metric] = a
    return list(qindex), out


def per_query_rows(per_query: Mapping[str, tuple[list[str], Mapping[str, Mapping[str, np.ndarray]]]]):
    """Yield ``(mode, query_id, condition, metric, value)`` for every stored value."""
    for mode, (qids, values) in per_query.items():
        for cond, per_metric in values.items():
            for metric, arr in per_metric.items():
                for q, v in zip(qids, np.asarray(arr, dtype=np.float64)):
                    yield mode, q, cond, metric, float(v)


def write_combined_per_query(
    per_query: Mapping[str, tuple[list[str], Mapping[str, Mapping[str, np.ndarray]]]],
    csv_path: str | Path,
    parquet_path: str | Path | None = None,
) -> tuple[int, str | None]:
    """All modes in one long table with a ``mode`` column: CSV always, Parquet when pyarrow is
    installed.  Returns ``(number of rows, note)``: the note says why no Parquet was written."""
    rows = list(per_query_rows(per_query))
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(("mode",) + PER_QUERY_COLUMNS)
    for mode, q, cond, metric, v in rows:
        w.writerow((mode, q, cond, metric, _cell(v)))
    write_text_atomic(csv_path, buf.getvalue())
    if parquet_path is None:
        return len(rows), None
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return len(rows), f"pyarrow is not installed, so no Parquet copy was written ({PARQUET_HINT})"
    cols = list(zip(*rows)) if rows else [(), (), (), (), ()]
    table = pa.table({
        "mode": pa.array(cols[0], pa.string()),
        "query_id": pa.array(cols[1], pa.string()),
        "condition": pa.array(cols[2], pa.string()),
        "metric": pa.array(cols[3], pa.string()),
        "value": pa.array(cols[4], pa.float64()),
    })
    with atomic_path(parquet_path) as tmp:
        pq.write_table(table, tmp)
    return len(rows), None
