"""The per-query table reader: pyarrow's CSV reader (when installed) and the csv-module row reader
give the same result on every table, tricky ones included; malformed tables are named by file and
line whichever reader runs first."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest

from snapbench.core.errors import InputError
from snapbench.store.perquery import _read_arrow, _read_rows, read_per_query, write_per_query

pytest.importorskip("pyarrow")


def _by_rows(path):
    """The csv-module reader alone: a second code path, row by row."""
    reader = csv.reader(io.StringIO(path.read_bytes().decode("utf-8-sig")))
    next(reader)
    return _read_rows(reader, path)


def _same(a, b) -> None:
    (qa, va), (qb, vb) = a, b
    assert qa == qb
    assert list(va) == list(vb)
    for c in va:
        assert list(va[c]) == list(vb[c])
        for m in va[c]:
            assert va[c][m].dtype == np.float64
            np.testing.assert_array_equal(va[c][m], vb[c][m])  # NaN == NaN here, bits otherwise


def test_round_trip_is_bit_identical(tmp_path):
    rng = np.random.default_rng(0)
    qids = [f"q{i}" for i in range(50)]
    vals = {c: {m: np.where(rng.random(50) < 0.1, np.nan, rng.random(50)) for m in ("hit@1", "ndcg@5", "mrr")}
            for c in ("clean", "img/compression/s1", "txt/char_add")}
    p = tmp_path / "pq.csv"
    write_per_query(p, qids, vals)
    got_q, got = read_per_query(p)
    assert got_q == qids
    for c in vals:
        for m in vals[c]:
            np.testing.assert_array_equal(got[c][m], vals[c][m])
    _same((got_q, got), _by_rows(p))


TRICKY = (
    "query_id,condition,metric,value\r\n"
    '"q,1",clean,hit@1,1.0\r\n'          # a quoted id with a comma
    "q2,clean,hit@1,\r\n"                # undefined
    "\r\n"                               # a blank line
    "q3,txt/char_add,mrr,0.25\r\n"       # a condition whose first metric is mrr
    "q2,clean,mrr,nan\r\n"               # 'nan' as text: NaN for both
    "NULL,clean,hit@1,0\r\n"             # an id that is a null marker for some readers
    "q2,txt/char_add,hit@1,1e-3\r\n"
    "q4,clean,hit@1, 0.5\r\n"            # a value with a space: float() reads it
)


@pytest.mark.parametrize("bom", [False, True])
def test_tricky_table_reads_the_same_both_ways(tmp_path, bom):
    p = tmp_path / "pq.csv"
    p.write_bytes((b"\xef\xbb\xbf" if bom else b"") + TRICKY.encode())
    assert _read_arrow(p.read_bytes()) is not None  # the fast reader takes this table (no fallback)
    got = read_per_query(p)
    _same(got, _by_rows(p))
    qids, vals = got
    assert qids == ["q,1", "q2", "q3", "NULL", "q4"]
    assert list(vals) == ["clean", "txt/char_add"]
    assert list(vals["clean"]) == ["hit@1", "mrr"] and list(vals["txt/char_add"]) == ["mrr", "hit@1"]
    np.testing.assert_array_equal(vals["clean"]["hit@1"], [1.0, np.nan, np.nan, 0.0, 0.5])
    np.testing.assert_array_equal(vals["txt/char_add"]["hit@1"], [np.nan, 1e-3, np.nan, np.nan, np.nan])


def test_repeated_cell_keeps_the_last_row(tmp_path):
    p = tmp_path / "pq.csv"
    p.write_text("query_id,condition,metric,value\nq1,clean,hit@1,0.0\nq2,clean,hit@1,1.0\nq1,clean,hit@1,1.0\n")
    qids, vals = read_per_query(p)
    assert qids == ["q1", "q2"] and vals["clean"]["hit@1"].tolist() == [1.0, 1.0]


@pytest.mark.parametrize("body, where", [
    ("q1,clean,hit@1,1.0\nq2,clean,hit@1\n", "line 3: expected 4 columns"),
    ("q1,clean,hit@1,1.0\nq2,clean,hit@1,N/A\n", "line 3: value 'N/A' is not a number"),
])
def test_malformed_rows_are_named_by_line(tmp_path, body, where):
    p = tmp_path / "pq.csv"
    p.write_text("query_id,condition,metric,value\n" + body)
    with pytest.raises(InputError, match=where) as e:
        read_per_query(p)
    assert str(p) in str(e.value)


def test_bad_header_and_bad_bytes(tmp_path):
    p = tmp_path / "pq.csv"
    p.write_text("id,condition,metric,value\nq1,clean,hit@1,1.0\n")
    with pytest.raises(InputError, match="must start with the header"):
        read_per_query(p)
    p.write_bytes(b"query_id,condition,metric,value\nq\xff,clean,hit@1,1.0\n")
    with pytest.raises(InputError, match="not UTF-8 text: byte 0xff at line 2, column 2"):
        read_per_query(p)
    with pytest.raises(InputError, match="not found"):
        read_per_query(tmp_path / "absent.csv")
