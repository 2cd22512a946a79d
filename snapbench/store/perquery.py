"""Per-query values: the long CSV ``query_id,condition,metric,value`` of one mode, and the combined
table of a run (``mode,query_id,condition,metric,value``) as CSV and, with pyarrow, Parquet.

Values are written with ``repr(float)`` so they read back bit-identical; an undefined value (a query
a metric does not cover, NaN) is an empty cell.  Long format, because conditions and metrics differ
between runs and a long table needs no schema to be agreed on.

Reading: a run's table has about a million rows per target (72 conditions x 13 metrics x 1,145
queries).  With pyarrow installed (the ``report`` extra) :func:`read_per_query` parses it with
pyarrow's CSV reader into integer codes and scatters the values into one array (~0.1 s per million
rows, ~10x the csv module); a table pyarrow cannot read as strictly as this module (a malformed
row, a value Python reads but pyarrow does not, a repeated cell) is read by the csv module, which
names the file and line of a malformed row.  Both give the same result.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from ..core.errors import InputError
from ..core.install_hint import install_hint
from ..core.userfiles import decode, read_bytes
from .atomic import atomic_path, write_text_atomic

__all__ = ["read_per_query", "write_combined_per_query", "write_per_query"]

_PER_QUERY_COLUMNS: tuple[str, ...] = ("query_id", "condition", "metric", "value")


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
    w.writerow(_PER_QUERY_COLUMNS)
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

    Query ids keep their first-appearance order, conditions too, and each condition's metrics the
    order of their first row; a (query, condition, metric) absent from the file is NaN, a repeated
    one takes its last row.  Raises :class:`InputError` naming the file (and the line, for a
    malformed row)."""
    p = Path(path)
    data = read_bytes(p, what="per-query table")
    text = decode(data, p)  # checks the bytes (a bad one is named by line and column) for either reader
    end = text.find("\n")
    header = next(csv.reader([text if end < 0 else text[:end]]), None)
    if header is None or tuple(h.strip() for h in header) != _PER_QUERY_COLUMNS:
        raise InputError(f"per-query table must start with the header {','.join(_PER_QUERY_COLUMNS)}", path=p)
    fast = _read_arrow(data)
    if fast is not None:
        return fast
    reader = csv.reader(io.StringIO(text))
    next(reader)
    return _read_rows(reader, p)


def _read_rows(reader, p: Path) -> tuple[list[str], dict[str, dict[str, np.ndarray]]]:
    """The csv-module reader (after the header): row by row, every malformed row named by its line."""
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


def _read_arrow(data: bytes) -> tuple[list[str], dict[str, dict[str, np.ndarray]]] | None:
    """The table through pyarrow's CSV reader, or ``None`` (no pyarrow, or anything it does not read
    exactly as :func:`_read_rows` would: then that reader decides)."""
    try:
        import pyarrow as pa
        import pyarrow.csv as pacsv
    except ImportError:
        return None
    codes = pa.dictionary(pa.int32(), pa.string())
    types = {"query_id": codes, "condition": codes, "metric": codes, "value": pa.float64()}
    try:
        table = pacsv.read_csv(
            pa.BufferReader(data[3:] if data.startswith(b"\xef\xbb\xbf") else data),
            read_options=pacsv.ReadOptions(column_names=list(_PER_QUERY_COLUMNS), skip_rows=1, use_threads=True),
            # only an empty cell is undefined ("nan" parses as NaN; "N/A" must fail, as float() does)
            convert_options=pacsv.ConvertOptions(column_types=types, null_values=[""], strings_can_be_null=False,
                                                 quoted_strings_can_be_null=False),
        ).unify_dictionaries()
    except (pa.ArrowException, ValueError):
        return None
    cols = [table.column(c).combine_chunks() for c in _PER_QUERY_COLUMNS[:3]]
    if any(c.null_count for c in cols):
        return None
    return _scatter([c.indices.to_numpy() for c in cols], [c.dictionary.to_pylist() for c in cols],
                    table.column("value").to_numpy(zero_copy_only=False))


def _first_order(idx: np.ndarray, n: int) -> np.ndarray:
    """Codes 0..n-1 ordered by their first row in ``idx`` (codes that never occur left out)."""
    first = np.full(n, idx.size, dtype=np.int64)
    np.minimum.at(first, idx, np.arange(idx.size, dtype=np.int64))
    seen = np.flatnonzero(first < idx.size)
    return seen[np.argsort(first[seen], kind="stable")]


def _scatter(idx: list[np.ndarray], names: list[list[str]], values: np.ndarray):
    """``(query_ids, {condition: {metric: values}})`` from the rows' codes, in first-appearance order;
    ``None`` when a (query, condition, metric) repeats (the row reader then keeps the last one)."""
    qi, ci, mi = (np.asarray(i, dtype=np.int64) for i in idx)
    nq, nc, nm = (len(n) for n in names)
    cell = (ci * nm + mi) * nq + qi
    if cell.size and np.bincount(cell, minlength=nc * nm * nq).max() > 1:
        return None
    q_order = _first_order(qi, nq)
    q_pos = np.empty(nq, dtype=np.int64)
    q_pos[q_order] = np.arange(q_order.size)
    block = np.full((nc * nm, q_order.size), np.nan)
    block[ci * nm + mi, q_pos[qi]] = values
    out: dict[str, dict[str, np.ndarray]] = {}
    for pair in _first_order(ci * nm + mi, nc * nm):
        out.setdefault(names[1][pair // nm], {})[names[2][pair % nm]] = block[pair]
    return [names[0][q] for q in q_order], out


def _per_query_rows(per_query: Mapping[str, tuple[list[str], Mapping[str, Mapping[str, np.ndarray]]]]):
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
    rows = list(_per_query_rows(per_query))
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(("mode",) + _PER_QUERY_COLUMNS)
    for mode, q, cond, metric, v in rows:
        w.writerow((mode, q, cond, metric, _cell(v)))
    write_text_atomic(csv_path, buf.getvalue())
    if parquet_path is None:
        return len(rows), None
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return len(rows), f"pyarrow is not installed, so no Parquet copy was written ({install_hint('report')})"
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
