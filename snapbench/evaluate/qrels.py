"""Relevance labels and query tags aligned with a SCORES_DIR's query and gallery ids (the decisions
on unknown and missing ids are in :mod:`snapbench.evaluate.io`)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from ..errors import arg
from ..layout import read_qrels_file
from ..textio import read_text
from ..validate import choice, examples
from .files import EvaluationInputError
from .labels import Labels

__all__ = ["load_qrels", "load_tags", "query_groups"]


def _read_json_object_or_text(path: Path, what: str, shape: str) -> tuple[dict | None, str]:
    """Read a file that is either a JSON object (``.json`` or text starting with "{") or a text
    format: returns (the object, text) for JSON, (None, text) otherwise."""
    if not path.is_file():
        raise EvaluationInputError(f"{what} file not found", path=path)
    text = read_text(path, what=f"{what} file")
    if not (path.suffix.lower() == ".json" or text.lstrip().startswith("{")):
        return None, text
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise EvaluationInputError(f"not valid JSON: {e.msg} at line {e.lineno}, column {e.colno}", path=path) from None
    if not isinstance(data, dict):
        raise EvaluationInputError(f"{path}: JSON {what} must be an object {shape}")
    return data, text


def load_qrels(
    path: str | Path,
    query_ids: Sequence[str],
    gallery_ids: Sequence[str],
    *,
    unknown_items: str = "error",
    dropped: list[str] | None = None,
) -> tuple[Labels, list[str]]:
    """Read qrels (TREC or JSON) into :class:`Labels` aligned with ``query_ids`` x ``gallery_ids``.

    Returns ``(labels, warnings)``.  See the module docstring for the decisions on unknown and
    missing ids.  ``unknown_items``: ``"error"`` (default) or ``"drop"``.  Qrels queries that have no
    scores are left out (with a warning) and appended to ``dropped`` when given.
    """
    choice(unknown_items, ("error", "drop"), "unknown_items")
    p = Path(path)
    raw = read_qrels_file(p)
    qpos = {q: i for i, q in enumerate(query_ids)}
    gpos = {g: j for j, g in enumerate(gallery_ids)}
    unknown_q = [q for q in raw if q not in qpos]
    notes: list[str] = []
    if unknown_q:
        if len(unknown_q) == len(raw):  # nothing matches: the wrong id list, not a few dropped queries
            raise EvaluationInputError(
                f"{p}: none of its {len(raw)} query id(s) is in query_ids ({examples(unknown_q)}); "
                "are query_ids.txt and the qrels from the same data set?"
            )
        # e.g. `snapbench encode` drops the queries skipped under some condition: their judgements
        # have no scores to rank; they are left out, counted and listed, never silently
        notes.append(
            f"{p}: {len(unknown_q)} judged query id(s) have no scores and are left out: {examples(unknown_q)}"
        )
        if dropped is not None:
            dropped.extend(unknown_q)
    unknown_d = sorted({d for g in raw.values() for d, r in g.items() if d not in gpos})
    if unknown_d:
        msg = f"{p}: {len(unknown_d)} gallery id(s) not in gallery_ids: {examples(unknown_d)}"
        if unknown_items == "error":
            raise EvaluationInputError(msg + f" (set {arg('unknown_items')} to drop them with a warning)")
        notes.append(msg + "; dropped")
    missing = [q for q in query_ids if q not in raw]
    if missing:
        notes.append(
            f"{p}: {len(missing)} query id(s) have no judgements and are treated as zero-GT: {examples(missing)}"
        )
    gold: list[dict[int, float]] = []
    for q in query_ids:
        g = raw.get(q, {})
        gold.append({gpos[d]: r for d, r in g.items() if d in gpos})
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
    data, text = _read_json_object_or_text(p, "tags", "{query_id: [tag, ...]}")
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
