"""``snapbench run --limit N``: a quick look at the first N queries before a long run.

The cut is made once, on the loaded dataset, so that everything downstream (corruption, encoding,
evaluation, the report) sees an ordinary, smaller dataset.  It is stated on every output: the
dataset's notes (printed by the run and recorded in run.json's ``notes``, which the report shows
next to the numbers), run.json's ``limit`` and the table printed after the run.
"""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["limit_note", "limit_queries"]


def limit_note(kept: int, total: int, limit: int) -> str:
    """The one sentence that says a run saw only part of its dataset (recorded in run.json, so it
    names the flag as the command line spells it)."""
    return f"only the first {kept} of {total} queries (--limit {limit}): a quick look, not the dataset's result"


def limit_queries(dataset: Any, limit: int | None) -> Any:
    """``dataset`` cut to its first ``limit`` queries (their qrels only), with :func:`limit_note` among
    its notes and :attr:`~snapbench.data.Dataset.limited_from` set; unchanged when ``limit`` is None.
    A limit at or above the number of queries keeps them all and says so too (the user asked for a
    cut and must see that none was needed)."""
    if limit is None:
        return dataset
    total = len(dataset.queries)
    kept = dataset.queries[: int(limit)]
    ids = {q.id for q in kept}
    qrels = {q: rel for q, rel in dataset.qrels.items() if q in ids} if dataset.qrels else dataset.qrels
    note = limit_note(len(kept), total, int(limit))
    return dataclasses.replace(dataset, queries=list(kept), qrels=qrels, notes=[*dataset.notes, note],
                               limited_from=total)
