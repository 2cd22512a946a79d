"""Relevance labels and query tags aligned with a SCORES_DIR's query and gallery ids (the decisions
on unknown and missing judged ids are :func:`align_qrels`)."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from ..core.errors import EvaluationInputError, InputError, arg
from ..core.userfiles import read_json_or_text
from ..core.validate import choice, examples
from ..evaluate.labels import Labels

__all__ = ["read_qrels_file", "align_qrels", "load_qrels", "load_tags", "query_groups"]


def load_qrels(
    path: str | Path,
    query_ids: Sequence[str],
    gallery_ids: Sequence[str],
    *,
    unknown_items: str = "error",
    dropped: list[str] | None = None,
    id_lists: tuple[str, str] = ("query_ids", "gallery_ids"),
) -> tuple[Labels, list[str]]:
    """Read qrels (TREC or JSON) into :class:`Labels` aligned with ``query_ids`` x ``gallery_ids``.

    Returns ``(labels, warnings)``.  The rules (grades, unknown and missing ids) are
    :func:`align_qrels`'s.  ``unknown_items``: ``"error"`` (default) or ``"drop"``.
    Qrels queries that have no scores (e.g. queries ``snapbench encode`` skipped under some
    condition) are left out with a warning, never silently, and appended to ``dropped`` when given.
    ``id_lists`` names where the two id lists come from (:attr:`snapbench.store.scores.ScoresDir.id_lists`).
    """
    p = Path(path)
    aligned, notes, left_out = align_qrels(read_qrels_file(p), query_ids, gallery_ids, path=p,
                                           unknown_queries="drop", unknown_items=unknown_items,
                                           items_param="unknown_items", id_lists=id_lists)
    if dropped is not None:
        dropped.extend(left_out)
    gpos = {g: j for j, g in enumerate(gallery_ids)}
    gold = [{gpos[d]: r for d, r in aligned[q].items()} for q in query_ids]
    return Labels.from_lists(gold, len(gallery_ids)), notes


# ------------------------------------------------------------------------------ tags
def load_tags(path: str | Path, query_ids: Sequence[str], *, notes: list[str] | None = None) -> dict[str, list[str]]:
    """Query tags: query id -> list of tags (``"tag"`` or ``"field=value"``).

    JSON: ``{qid: ["tag", ...]}``, ``{qid: "tag"}`` or ``{qid: {"field": "value"}}``.
    TSV: ``qid<TAB>tag<TAB>tag...``; a first line starting with ``query_id`` is a header naming the
    fields of the following columns (cells become ``field=value``).  ``#`` lines are comments.
    Tagged query ids without scores are left out with a note in ``notes`` (an error when none of
    them has scores); queries without tags belong to no group.
    """
    p = Path(path)
    data, text = read_json_or_text(p, what="tags", shape="{query_id: [tag, ...]}")
    out: dict[str, list[str]] = {}
    if data is not None:
        for q, v in data.items():
            if isinstance(v, str):
                out[str(q)] = [v]
            elif isinstance(v, list) and all(isinstance(t, str) for t in v):
                out[str(q)] = list(v)
            elif isinstance(v, dict):
                out[str(q)] = [f"{k}={val}" for k, val in v.items()]
            else:
                raise EvaluationInputError(f"{p}: query {q!r}: tags must be a string, a list of strings or an object")
    else:
        header: list[str] | None = None
        for i, line in enumerate(text.splitlines(), 1):
            if not line.strip() or line.startswith("#"):
                continue
            cells = [c.strip() for c in line.rstrip("\n").split("\t")]
            if header is None and i == 1 and cells[0].lower() in ("query_id", "qid", "id"):
                header = cells
                continue
            q, rest = cells[0], [c for c in cells[1:]]
            if header is not None:
                tags = [f"{header[j + 1]}={c}" for j, c in enumerate(rest) if c and j + 1 < len(header)]
            else:
                tags = [c for c in rest if c]
            if q in out:
                raise EvaluationInputError(f"{p}:{i}: query {q!r} listed twice")
            out[q] = tags
    known = set(query_ids)
    unknown = [q for q in out if q not in known]
    if unknown:
        if len(unknown) == len(out):
            raise EvaluationInputError(f"{p}: none of its {len(out)} query id(s) is in query_ids: {examples(unknown)}")
        if notes is not None:
            notes.append(f"{p}: {len(unknown)} tagged query id(s) have no scores and are left out: {examples(unknown)}")
        for q in unknown:
            del out[q]
    return out


def query_groups(
    tags: Mapping[str, Sequence[str]],
    query_ids: Sequence[str],
    group_by: str | None = None,
    *,
    source: str | Path | None = None,
) -> dict[str, np.ndarray]:
    """Group name -> query row indices.  Without ``group_by`` every distinct tag is a group (a query
    may be in several); with ``group_by=FIELD`` the groups are the values of ``FIELD=value`` tags.
    ``source`` (the tags file) is named in the error when no query carries a ``FIELD=`` tag."""
    rows: dict[str, list[int]] = {}
    for i, q in enumerate(query_ids):
        for t in tags.get(q, ()):
            if group_by is None:
                name = t
            else:
                field, sep, value = t.partition("=")
                if not sep or field != group_by:
                    continue
                name = value
            rows.setdefault(name, []).append(i)
    if group_by is not None and not rows:
        fields = sorted({t.partition("=")[0] for ts in tags.values() for t in ts if "=" in t})
        where = f"{source}: " if source is not None else ""
        listed = ", ".join(fields[:10]) + (f", ... ({len(fields)} fields)" if len(fields) > 10 else "")
        have = f"; its FIELD=value tags use {listed}" if fields else "; it has no FIELD=value tags"
        raise EvaluationInputError(f"{where}no query has a tag '{group_by}=...' (check {arg('group_by')}){have}")
    return {k: np.asarray(v, dtype=np.int64) for k, v in sorted(rows.items())}


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
