"""Relevance labels and query tags aligned with a SCORES_DIR's query and gallery ids (the decisions
on unknown and missing judged ids are :func:`snapbench.store.align_qrels`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from ..core.errors import arg
from ..core.textio import read_json_or_text
from ..core.validate import examples
from ..store import align_qrels, read_qrels_file
from .files import EvaluationInputError
from .labels import Labels

__all__ = ["load_qrels", "load_tags", "query_groups"]


def load_qrels(
    path: str | Path,
    query_ids: Sequence[str],
    gallery_ids: Sequence[str],
    *,
    unknown_items: str = "error",
    dropped: list[str] | None = None,
) -> tuple[Labels, list[str]]:
    """Read qrels (TREC or JSON) into :class:`Labels` aligned with ``query_ids`` x ``gallery_ids``.

    Returns ``(labels, warnings)``.  The rules (grades, unknown and missing ids) are
    :func:`snapbench.store.align_qrels`'s.  ``unknown_items``: ``"error"`` (default) or ``"drop"``.
    Qrels queries that have no scores (e.g. queries ``snapbench encode`` skipped under some
    condition) are left out with a warning, never silently, and appended to ``dropped`` when given.
    """
    p = Path(path)
    aligned, notes, left_out = align_qrels(read_qrels_file(p), query_ids, gallery_ids, path=p,
                                           unknown_queries="drop", unknown_items=unknown_items,
                                           items_param="unknown_items")
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
