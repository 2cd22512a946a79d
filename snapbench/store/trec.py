"""TREC run and qrels files (``qid Q0 docid rank score tag``, ``qid 0 docid rel``) and JSON qrels, and
the one rule that matches qrels with a data set's ids (:func:`align_qrels`)."""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..core.errors import InputError, OutputError, arg
from ..core.textio import read_json_or_text, read_text
from ..core.validate import choice, examples
from .atomic import open_text_atomic, write_text_atomic

__all__ = ["TrecLine", "iter_trec_run", "read_trec_run", "write_trec_run", "read_qrels_file", "write_qrels",
           "align_qrels"]


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
    run has an empty list."""
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


def read_qrels_file(path: str | os.PathLike) -> dict[str, dict[str, float]]:
    """Raw qrels, TREC (``qid 0 docid rel``) or JSON (``{qid: [docid, ...]}`` / ``{qid: {docid: grade}}``):
    query id -> {gallery id: grade} (grades as given; an empty JSON list = a zero-GT query)."""
    p = Path(path)
    data, text = read_json_or_text(p, what="qrels", shape="{query_id: [gallery_id, ...]}")
    if data is not None:
        out: dict[str, dict[str, float]] = {}
        for q, v in data.items():
            if isinstance(v, list):
                if not all(isinstance(x, (str, int)) and not isinstance(x, bool) for x in v):
                    raise InputError(f"query {q!r}: list must hold gallery ids (strings)", path=p)
                ids = [str(x) for x in v]
                if len(set(ids)) != len(ids):
                    raise InputError(f"query {q!r}: duplicate gallery id in list", path=p)
                out[str(q)] = {x: 1.0 for x in ids}
            elif isinstance(v, dict):
                g: dict[str, float] = {}
                for d, grade in v.items():
                    if isinstance(grade, bool) or not isinstance(grade, (int, float)) or not math.isfinite(grade):
                        raise InputError(f"query {q!r}, item {d!r}: grade must be a finite number", path=p)
                    g[str(d)] = float(grade)
                out[str(q)] = g
            else:
                raise InputError(
                    f"query {q!r}: expected a list of gallery ids or an object {{gallery_id: grade}}", path=p
                )
        return out
    out = {}
    for i, line in enumerate(text.splitlines(), 1):
        parts = line.split()
        if not parts or parts[0].startswith("#"):
            continue
        if len(parts) != 4:
            raise InputError(f"line {i}: expected 'qid 0 docid rel' (4 fields), got {len(parts)}", path=p)
        q, _, d, rel = parts
        try:
            grade = float(rel)
        except ValueError:
            raise InputError(f"line {i}: relevance {rel!r} is not a number", path=p) from None
        if not math.isfinite(grade):
            raise InputError(f"line {i}: relevance {rel!r} is not finite", path=p)
        qd = out.setdefault(q, {})
        if d in qd:
            raise InputError(f"line {i}: duplicate judgement for query {q!r}, item {d!r}", path=p)
        qd[d] = grade
    if not out:
        raise InputError("no judgements found", path=p)
    return out


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


def align_qrels(
    raw: Mapping[str, Mapping[str, float]],
    query_ids: Sequence[str],
    gallery_ids: Sequence[str],
    *,
    path: str | os.PathLike,
    unknown_queries: str = "error",
    unknown_items: str = "error",
    items_param: str | None = None,
    id_lists: tuple[str, str] = ("query_ids", "gallery_ids"),
) -> tuple[dict[str, dict[str, float]], list[str], list[str]]:
    """Match qrels (:func:`read_qrels_file` of ``path``) with the ids of a data set or a SCORES_DIR:
    the one place these rules live (``snapbench.data`` and ``snapbench.evaluate`` both call it).

    * **Grades**: an item is relevant when its grade is > 0 (the grade kept); a grade <= 0 is a
      judged non-relevant item and left out, as in trec_eval / ir_measures / ranx (grade 0 = not
      relevant; they also need a grade >= 1 by default, so a fractional grade is where they differ).
    * A judged **query id not in** ``query_ids``: an error (``unknown_queries="error"``), or
      (``"drop"``, a query that was not scored, e.g. one ``snapbench encode`` skipped) left out with
      a note and returned in the third item -- still an error when no judged query matches (the
      wrong id list).
    * A judged **gallery id not in** ``gallery_ids``: an error (naming ``items_param``, the option
      that drops them, when given; without it, saying to fix the qrels or the gallery) or
      (``unknown_items="drop"``) dropped with a note.
    * A query of ``query_ids`` the qrels do not mention: a zero-GT query, with a note.

    ``id_lists`` names the two id lists in the messages.  Returns ``(qrels, notes, left_out)``:
    every id of ``query_ids`` in order -> {gallery id: grade > 0}; the notes; the judged query ids
    left out.
    """
    choice(unknown_queries, ("error", "drop"), "unknown_queries")
    choice(unknown_items, ("error", "drop"), "unknown_items")
    qnames, gnames = id_lists
    qset, gset = set(query_ids), set(gallery_ids)
    notes: list[str] = []
    left_out = [q for q in raw if q not in qset]
    if left_out and (unknown_queries == "error" or len(left_out) == len(raw)):
        if unknown_queries == "drop":  # nothing matches: the wrong id list, not a few unscored queries
            raise InputError(f"none of its {len(raw)} query id(s) is in {qnames} ({examples(left_out)}); "
                             f"are {qnames} and the qrels from the same data set?", path=path)
        raise InputError(f"{len(left_out)} query id(s) are not in {qnames}: {examples(left_out)}", path=path)
    if left_out:
        notes.append(f"{path}: {len(left_out)} judged query id(s) have no scores and are left out: "
                     f"{examples(left_out)}")
    unknown_g = sorted({d for g in raw.values() for d in g if d not in gset})
    if unknown_g:
        msg = f"{len(unknown_g)} gallery id(s) are not in {gnames}: {examples(unknown_g)}"
        if unknown_items == "error":
            # a data set's loader has no option to drop them (only evaluate, on score files, has one)
            what = (f" (set {arg(items_param)} to drop them with a warning)" if items_param else
                    f"; fix the qrels or {gnames} (a data set's qrels judge only its gallery items; only "
                    "'snapbench evaluate --allow-unknown-items' drops unknown ones, from score files)")
            raise InputError(msg + what, path=path)
        notes.append(f"{path}: {msg}; dropped")
    missing = [q for q in query_ids if q not in raw]
    if missing:
        notes.append(f"{path}: {len(missing)} query id(s) have no judgements and are treated as zero-GT: "
                     f"{examples(missing)}")
    aligned = {q: {d: float(r) for d, r in raw.get(q, {}).items() if d in gset and r > 0} for q in query_ids}
    return aligned, notes, left_out
