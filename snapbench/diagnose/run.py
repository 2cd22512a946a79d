"""The engine of ``snapbench diagnose``: queries in, ``diagnose.csv``, ``summary.json`` and
``diagnose.html`` out (all written atomically).

``diagnose.csv`` is long: one row per (query, detector) that applies -- ``query_id, side, detector,
score, flag`` with ``flag`` 1/0 and an empty score where it is undefined.  An unreadable image is a
skip (listed in summary.json and the page) and the run goes on; its question is still diagnosed.
"""

from __future__ import annotations

import csv
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.defaults import DEFAULT_CI
from ..core.jsonable import write_json
from ..core.validate import positive_int
from ..render.diagnose_page import render_diagnose_html
from ..render.progress import ProgressDisplay
from ..store import claim_output_dir, write_run_json
from ..store.atomic import open_text_atomic, removing_empty_output_dirs, write_text_atomic
from .checks import run_checks
from .detect import QueryResult, diagnose_record
from .queries import QuerySet, load_queries
from .summary import summarize
from .text import Vocabulary
from .thresholds import DETECTORS, Thresholds, load_thresholds

__all__ = ["CSV_NAME", "HTML_NAME", "SUMMARY_NAME", "DiagnoseResult", "run_diagnose", "write_csv"]

CSV_NAME = "diagnose.csv"
SUMMARY_NAME = "summary.json"
HTML_NAME = "diagnose.html"
CSV_COLUMNS = ("query_id", "side", "detector", "score", "flag")


@dataclass
class DiagnoseResult:
    """What a run wrote and found: the output folder, the summary.json body, per-query results."""

    out_dir: Path
    summary: dict[str, Any]
    results: list[QueryResult]
    elapsed_s: float


def _read_words(path: str | os.PathLike | None) -> list[str]:
    if path is None:
        return []
    from ..core.textio import read_text

    return read_text(path, what="word list").split()


def _csv_rows(results: Iterable[QueryResult]) -> Iterable[tuple[str, str, str, str, int]]:
    for r in results:
        for side, scores in (("image", r.image_scores), ("text", r.text_scores)):
            for d, s in (scores or {}).items():
                yield r.id, side, d, "" if s != s else f"{s:.6g}", int(r.flags.get(d, False))


def write_csv(path: str | os.PathLike, results: Iterable[QueryResult]) -> None:
    """Write the long-format ``diagnose.csv`` atomically."""
    with open_text_atomic(path, newline="") as fh:
        w = csv.writer(fh)
        w.writerow(CSV_COLUMNS)
        w.writerows(_csv_rows(results))


def _diagnose_all(qs: QuerySet, th: Thresholds, vocab: Vocabulary | None, progress: bool) -> list[QueryResult]:
    results = []
    with ProgressDisplay(progress) as bar:
        task = bar.add("diagnose", len(qs.queries))
        for rec in qs.queries:
            results.append(diagnose_record(rec, th, vocab))
            bar.advance(task)
    return results


def run_diagnose(
    queries: str | os.PathLike | QuerySet,
    out: str | os.PathLike,
    *,
    questions: str | os.PathLike | None = None,
    format: str | None = None,
    thresholds: str | os.PathLike | Thresholds | None = None,
    words: str | os.PathLike | None = None,
    examples: int = 8,
    level: float = DEFAULT_CI,
    progress: bool = False,
    log: Callable[[str], None] | None = None,
) -> DiagnoseResult:
    """Diagnose every query of ``queries`` (a path for :func:`~snapbench.diagnose.queries.load_queries`,
    or a loaded :class:`QuerySet`) into ``out``.

    ``thresholds``: a TOML/JSON file (or a loaded table) replacing shipped thresholds; ``words``: a
    file of extra known words for the oov detector (whitespace-separated); ``examples``: flagged
    examples per detector in the page; ``level``: CI level.  ``log`` receives notes about the input.
    """
    t0 = time.perf_counter()
    positive_int(examples, "examples", minimum=0)
    th = thresholds if isinstance(thresholds, dict) else load_thresholds(thresholds)
    extra = _read_words(words)
    qs = queries if isinstance(queries, QuerySet) else load_queries(queries, questions=questions, format=format)
    # every file is written at the end: a run stopped early (an error, Ctrl-C) leaves no folder it created
    with removing_empty_output_dirs():
        out_dir = Path(out)
        claim_output_dir(out_dir, "diagnose")
        summary, results = _diagnose_into(out_dir, qs, th, extra, examples, level, progress, log)
    return DiagnoseResult(out_dir, summary, results, time.perf_counter() - t0)


def _diagnose_into(out_dir: Path, qs: QuerySet, th: Thresholds, extra: list[str], examples: int, level: float,
                   progress: bool, log: Callable[[str], None] | None) -> tuple[dict[str, Any], list[QueryResult]]:
    for note in qs.notes:
        if log is not None:
            log(note)
    vocab = Vocabulary(th["oov"]["min_count"], extra) if any(q.question is not None for q in qs.queries) else None
    results = _diagnose_all(qs, th, vocab, progress)
    summary = summarize(results, th, level=level)
    summary["checks"] = run_checks(results, th)
    summary["skips"] = [{"query_id": r.id, "side": "image", "reason": r.image_skip} for r in results if r.image_skip]
    summary["inputs"] = {"path": str(qs.path), "kind": qs.kind, "notes": qs.notes,
                         "sides": [s for s, n in (("image", summary["n_images"]), ("text", summary["n_questions"])) if n]}
    summary["thresholds"] = th
    summary["detectors"] = {d: {"side": det.side, "flagged": det.flagged} for d, det in DETECTORS.items()}
    write_csv(out_dir / CSV_NAME, results)
    write_json(out_dir / SUMMARY_NAME, summary)
    page = render_diagnose_html(summary, results, examples=examples, source=f"{qs.path} ({qs.kind})")
    write_text_atomic(out_dir / HTML_NAME, page)
    # run.json marks the folder as diagnose's, so no other command writes into it (and this one into no other's)
    write_run_json(out_dir, "diagnose", {"inputs": summary["inputs"], "n_queries": len(results)})
    return summary, results
