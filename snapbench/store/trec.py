"""TREC run files (``qid Q0 docid rank score tag``) read and written, and qrels written (``qid 0 docid
rel``); qrels are read, and matched with a data set's ids, by :mod:`snapbench.data.qrels`."""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..core.errors import InputError, OutputError
from ..core.userfiles import read_text
from .atomic import open_text_atomic, write_text_atomic

__all__ = ["TrecLine", "iter_trec_run", "read_trec_run", "write_trec_run", "write_qrels",
           ]


@dataclass(frozen=True)
class TrecLine:
    """One run line: its 1-based line number, query id, gallery id and score."""

    line: int
    qid: str
    docid: str
    score: float


def iter_trec_run(path: str | os.PathLike) -> Iterator[TrecLine]:
    """Parse ``qid Q0 docid rank score [tag]`` lines (``#`` comments and blank lines skipped)."""
    p = Path(path)
    for i, line in enumerate(read_text(p, what="TREC run").splitlines(), 1):
        parts = line.split()
        if not parts or parts[0].startswith("#"):
            continue
        if len(parts) not in (5, 6):
            raise InputError(f"line {i}: expected 'qid Q0 docid rank score tag' (6 fields), got {len(parts)}", path=p)
        try:
            score = float(parts[4])
        except ValueError:
            raise InputError(f"line {i}: score {parts[4]!r} is not a number", path=p) from None
        if not math.isfinite(score):
            raise InputError(f"line {i}: score {parts[4]!r} is not finite", path=p)
        yield TrecLine(i, parts[0], parts[2], score)


def read_trec_run(
    path: str | os.PathLike, query_ids: Sequence[str], gallery_ids: Sequence[str]
) -> tuple[np.ndarray, np.ndarray]:
    """A run as ``(indices, scores)`` (Q x L, ``-1`` / ``NaN`` padding), each query's items ordered
    like trec_eval does -- by the score column, not the rank column -- with equal scores in gallery
    order (our tie rule).  Unknown ids and repeated items are InputErrors; a query absent from the
    run has an empty list.  A run without a single result line (an empty file, or only blank and
    ``#`` lines) is an InputError, as trec_eval refuses an empty results file: it is a failed or
    forgotten write far more often than a system that retrieved nothing for every query."""
    p = Path(path)
    qpos = {q: i for i, q in enumerate(query_ids)}
    gpos = {g: j for j, g in enumerate(gallery_ids)}
    per_q: dict[int, tuple[list[int], list[float]]] = {}
    seen: set[tuple[int, int]] = set()
    for ln in iter_trec_run(p):
        if ln.qid not in qpos:
            raise InputError(f"line {ln.line}: query id {ln.qid!r} is not in query_ids", path=p)
        if ln.docid not in gpos:
            raise InputError(f"line {ln.line}: gallery id {ln.docid!r} is not in gallery_ids", path=p)
        key = (qpos[ln.qid], gpos[ln.docid])
        if key in seen:
            raise InputError(f"line {ln.line}: item {ln.docid!r} listed twice for query {ln.qid!r}", path=p)
        seen.add(key)
        cols, scs = per_q.setdefault(key[0], ([], []))
        cols.append(key[1])
        scs.append(ln.score)
    if not seen:
        raise InputError("no result lines (the file is empty or holds only blank or '#' lines); a query that "
                         "retrieved nothing leaves its lines out, but a run without any line is refused, as "
                         "trec_eval refuses it: write the run again or remove the file", path=p)
    depth = max((len(c) for c, _ in per_q.values()), default=0)
    idx = np.full((len(query_ids), depth), -1, dtype=np.int64)
    sc = np.full((len(query_ids), depth), np.nan)
    for qi, (cols, scs) in per_q.items():
        c = np.asarray(cols, dtype=np.int64)
        s = np.asarray(scs, dtype=np.float64)
        order = np.lexsort((c, -s))
        idx[qi, : c.size] = c[order]
        sc[qi, : c.size] = s[order]
    return idx, sc


def _check_trec_ids(ids: Sequence[str], what: str) -> None:
    for i in ids:
        if not str(i) or any(ch.isspace() for ch in str(i)):
            raise OutputError(f"{what} id {i!r} is empty or contains whitespace (not allowed in TREC files)")


def write_trec_run(
    path: str | os.PathLike,
    query_ids: Sequence[str],
    gallery_ids: Sequence[str],
    indices: np.ndarray,
    scores: np.ndarray,
    *,
    tag: str = "snapbench",
) -> None:
    """Write top-k lists as a TREC run (``qid Q0 docid rank score tag``), atomically.

    ``indices``/``scores`` are Q x k, best first (a :class:`~snapbench.core.ranking.TopK`'s fields);
    ``-1`` slots are skipped; ranks are 1-based in our tie order.  Scores: ``repr(float(s))``, which
    reads back to the identical float64 (and float32) value.  Note: trec_eval re-sorts equal scores by
    document id, so for a tie-exact re-check compare on data without ties.
    """
    idx = np.asarray(indices)
    sc = np.asarray(scores)
    if idx.ndim != 2 or idx.shape != sc.shape:
        raise ValueError(f"indices and scores must be two matrices of one shape, got {idx.shape} and {sc.shape}")
    if len(query_ids) != idx.shape[0]:
        raise ValueError(f"query_ids has {len(query_ids)} ids for {idx.shape[0]} result rows")
    _check_trec_ids(query_ids, "query")
    _check_trec_ids(gallery_ids, "gallery")
    if idx.size and idx.max() >= len(gallery_ids):
        raise ValueError(f"gallery_ids has {len(gallery_ids)} ids but results index column {int(idx.max())}")
    with open_text_atomic(path) as fh:
        for qi, q in enumerate(query_ids):
            rank = 0
            for j, s in zip(idx[qi].tolist(), sc[qi].tolist()):
                if j < 0:
                    continue
                rank += 1
                fh.write(f"{q} Q0 {gallery_ids[j]} {rank} {float(s)!r} {tag}\n")


def write_qrels(path: str | os.PathLike, qrels: dict[str, Any]) -> None:
    """Write qrels as TREC lines ``qid 0 docid rel`` (``{qid: [docid, ...]}`` or ``{qid: {docid: grade}}``;
    integer grades are written without a decimal point).  A query with no judgements cannot be
    expressed in TREC qrels and is left out (readers then treat it as zero-GT)."""
    lines = []
    for q, items in qrels.items():
        pairs = items.items() if isinstance(items, dict) else ((d, 1) for d in items)
        for d, rel in pairs:
            r = float(rel)
            lines.append(f"{q} 0 {d} {int(r) if r.is_integer() else repr(r)}\n")
    _check_trec_ids(list(qrels), "query")
    write_text_atomic(path, "".join(lines))
