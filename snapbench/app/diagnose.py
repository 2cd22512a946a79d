"""`snapbench diagnose`: signal-level issues of real queries (images and questions), and their mix.

The engine of ``snapbench diagnose``: queries in, ``diagnose.csv``, ``summary.json`` and
``diagnose.html`` out (all written atomically).

``diagnose.csv`` is long: one row per (query, detector) that applies -- ``query_id, side, detector,
score, flag`` with ``flag`` 1/0 and an empty score where it is undefined.  An unreadable image is a
skip (listed in summary.json and the page) and the run goes on; its question is still diagnosed.

What ``snapbench diagnose`` reads: any query set snapbench reads, a folder of images, or questions.

:func:`load_queries` turns QUERIES into :class:`~snapbench.corruptions.QueryRecord` objects (an image
path, a question, an entity -- each may be missing):

* a dataset in any format of :func:`snapbench.data.load_dataset` (``snap_bench.json``, a Hugging
  Face ImageFolder copy, a PhotoBench album, a JSONL/JSON query manifest as ``snapbench corrupt``
  reads it -- a manifest needs no gallery here);
* the output folder of ``snapbench corrupt`` (or its ``manifest.jsonl``): every variant is a query
  with id ``<id>@<condition>`` and tags ``source_id`` and ``condition``, the entity taken from the
  record's text parameters;
* a folder of images (searched recursively; ids are the paths relative to the folder), with
  ``questions=`` an optional JSONL or CSV file of ``image`` (path relative to the folder) and
  ``question`` fields (``entity`` and ``id`` optional); images it does not list have no question;
* a text file (``.txt``) of questions, one per line (ids ``line-<n>``), for questions without images.
"""

from __future__ import annotations

import csv
import io
import json
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.defaults import DEFAULT_CI
from ..core.errors import ConfigError, InputError, arg
from ..core.records import QueryRecord
from ..core.userfiles import jsonl_lines, read_lines, read_text
from ..core.validate import choice, positive_int
from ..corruptions import load_manifest
from ..data import FORMATS, detect_format, load_dataset
from ..data.common import IMAGE_SUFFIXES
from ..data.jsonl import MANIFEST_NAMES
from ..diagnose.checks import run_checks
from ..diagnose.detect import QueryResult, diagnose_record
from ..diagnose.summary import summarize
from ..diagnose.text import Vocabulary
from ..diagnose.thresholds import DETECTORS, Thresholds, load_thresholds
from ..render.diagnose_page import render_diagnose_html
from ..render.progress import ProgressDisplay
from ..store import MANIFEST, RUN_CONFIG, claim_output_dir, write_run_json
from ..store.atomic import open_text_atomic, owning_output_dirs, write_json, write_text_atomic
from ..store.folders import DIAGNOSE_CSV, DIAGNOSE_HTML, DIAGNOSE_SUMMARY
from ..store.jsonl import read_manifest

__all__ = ['CSV_NAME', 'HTML_NAME', 'SUMMARY_NAME', 'DiagnoseResult', 'run_diagnose', 'QuerySet', 'load_queries']


CSV_NAME, SUMMARY_NAME, HTML_NAME = DIAGNOSE_CSV, DIAGNOSE_SUMMARY, DIAGNOSE_HTML  # store.folders spells them
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
    from ..core.userfiles import read_text

    return read_text(path, what="word list").split()


def _csv_rows(results: Iterable[QueryResult]) -> Iterable[tuple[str, str, str, str, int]]:
    for r in results:
        for side, scores in (("image", r.image_scores), ("text", r.text_scores)):
            for d, s in (scores or {}).items():
                yield r.id, side, d, "" if s != s else f"{s:.6g}", int(r.flags.get(d, False))


def _write_csv(path: str | os.PathLike, results: Iterable[QueryResult]) -> None:
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
    """Diagnose every query of ``queries`` (a path for :func:`~snapbench.app.diagnose.load_queries`,
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
    with owning_output_dirs():
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
    _write_csv(out_dir / CSV_NAME, results)
    write_json(out_dir / SUMMARY_NAME, summary)
    page = render_diagnose_html(summary, results, examples=examples, source=f"{qs.path} ({qs.kind})")
    write_text_atomic(out_dir / HTML_NAME, page)
    # run.json marks the folder as diagnose's, so no other command writes into it (and this one into no other's)
    write_run_json(out_dir, "diagnose", {"inputs": summary["inputs"], "n_queries": len(results)})
    return summary, results


#: What ``format=`` accepts: the dataset formats plus the three inputs diagnose adds.
_INPUT_KINDS: tuple[str, ...] = (*FORMATS, "corrupt-output", "image-folder", "questions")


@dataclass
class QuerySet:
    """The queries to diagnose, what kind of input they came from and notes for the user."""

    queries: list[QueryRecord]
    kind: str
    path: Path
    notes: list[str] = field(default_factory=list)


def _is_corrupt_output(p: Path) -> bool:
    if p.is_dir():
        return (p / MANIFEST).is_file() and (p / RUN_CONFIG).is_file()
    if p.name != MANIFEST:
        return False
    try:
        with open(p, encoding="utf-8") as fh:
            first = json.loads(fh.readline() or "null")
    except (OSError, ValueError):
        return False
    return isinstance(first, dict) and "condition" in first and "id" in first


def _corrupt_output(p: Path) -> list[QueryRecord]:
    folder = p if p.is_dir() else p.parent
    records = read_manifest(folder)
    entity: dict[str, str] = {}
    for r in records:
        e = (r.get("text_params") or {}).get("entity") if isinstance(r.get("text_params"), dict) else None
        if isinstance(e, str) and e:
            entity.setdefault(str(r["id"]), e)
    out = []
    for r in records:
        rid, cond = str(r["id"]), str(r["condition"])
        path = r.get("path")
        question = r.get("question") if isinstance(r.get("question"), str) else None
        out.append(QueryRecord(f"{rid}@{cond}", folder / path if isinstance(path, str) else None, question,
                               entity.get(rid), {"source_id": rid, "condition": cond}))
    if not out:
        raise InputError(f"{MANIFEST} holds no outputs", path=folder)
    return out


def _image_files(folder: Path) -> list[Path]:
    files = [f for f in folder.rglob("*") if f.is_file() and f.suffix.lower() in IMAGE_SUFFIXES
             and not any(part.startswith(".") for part in f.relative_to(folder).parts)]
    return sorted(files, key=lambda f: f.relative_to(folder).as_posix())


def _question_rows(path: Path) -> list[tuple[str, dict]]:
    text = read_text(path, what="questions file")
    if path.suffix.lower() == ".csv":
        return [(f"line {i}", row) for i, row in enumerate(csv.DictReader(io.StringIO(text)), 2)]
    return [(f"line {i}", obj) for i, obj in jsonl_lines(text, path)]


def _check_some_question(path: Path, rows: list[tuple[str, dict]]) -> None:
    """A questions file that gives no question is a mistake (an empty export, a header only), not an
    images-only run: that is asked for by giving no questions file."""
    if any(isinstance(row.get("question"), str) and row["question"].strip() for _, row in rows):
        return
    what = ("holds no rows (an empty file or a header only)" if not rows
            else f"gives no question: none of its {len(rows)} rows has a non-empty 'question'")
    raise InputError(f"{what}; give one row per image with 'image' and 'question', or leave out "
                     f"{arg('questions')} to diagnose the images alone", path=path, param="questions")


def _image_folder(folder: Path, questions: Path | None) -> list[QueryRecord]:
    files = _image_files(folder)
    by_rel: dict[str, QueryRecord] = {
        f.relative_to(folder).as_posix(): QueryRecord(f.relative_to(folder).as_posix(), f, None) for f in files}
    if questions is not None:
        rows = _question_rows(questions)
        for where, row in rows:
            if not isinstance(row.get("image"), str) or not row["image"].strip():
                raise InputError(f"{where}: needs an 'image' field (path relative to {folder})", path=questions)
            q, e = row.get("question") or None, row.get("entity") or None
            if (q is not None and not isinstance(q, str)) or (e is not None and not isinstance(e, str)):
                raise InputError(f"{where}: 'question' and 'entity' must be strings", path=questions)
            rel = Path(row["image"]).as_posix()
            qid = str(row.get("id") or rel)
            by_rel[rel] = QueryRecord(qid, folder / rel, q, e)
        _check_some_question(questions, rows)
    if not by_rel:
        raise InputError(f"no image files ({', '.join(IMAGE_SUFFIXES)}) in this folder", path=folder)
    out = list(by_rel.values())
    seen: set[str] = set()
    for r in out:
        if r.id in seen:
            raise InputError(f"duplicate query id {r.id!r}", path=questions or folder)
        seen.add(r.id)
    return out


def _questions_txt(path: Path) -> list[QueryRecord]:
    lines = read_lines(path, what="questions file")
    out = [QueryRecord(f"line-{i}", None, line.strip()) for i, line in enumerate(lines, 1) if line.strip()]
    if not out:
        raise InputError("no questions in this file (one question per line)", path=path)
    return out


def _kind(p: Path) -> str:
    if _is_corrupt_output(p):
        return "corrupt-output"
    if p.is_file() and p.suffix.lower() == ".txt":
        return "questions"
    if p.is_dir():
        try:
            return detect_format(p)
        except InputError:
            if _image_files(p):
                return "image-folder"
            raise
    return detect_format(p)


def load_queries(path: str | os.PathLike, *, questions: str | os.PathLike | None = None,
                 format: str | None = None) -> QuerySet:
    """The queries of ``path`` (see the module docstring); ``format`` forces one of :data:`_INPUT_KINDS`.

    Raises :class:`~snapbench.core.errors.InputError` naming the file for unreadable or malformed input
    and :class:`~snapbench.core.errors.ConfigError` for options that do not fit it.
    """
    p = Path(path)
    if format is not None:
        choice(format, _INPUT_KINDS, "format", what="input format")
    if not p.exists():
        raise InputError("not found", path=p)
    from ..store import refuse_output_folder

    # a run folder holds images (the report's figures) that are not queries; corrupt's output is a query set
    refuse_output_folder(p, "a query set", accept=("corrupt",))
    kind = format or _kind(p)
    if questions is not None and kind != "image-folder":
        raise ConfigError(f"{arg('questions')} applies to a folder of images only ({p} is read as {kind}, "
                          "which carries its own questions)", param="questions")
    notes: list[str] = []
    if kind == "corrupt-output":
        queries = _corrupt_output(p)
    elif kind == "image-folder":
        if not p.is_dir():
            raise InputError("an image folder must be a folder", path=p)
        queries = _image_folder(p, None if questions is None else Path(questions))
    elif kind == "questions":
        queries = _questions_txt(p)
    elif kind == "jsonl":
        if p.is_dir():
            found = next((p / n for n in MANIFEST_NAMES if (p / n).is_file()), None)
            if found is None:
                raise InputError(f"no query manifest ({', '.join(MANIFEST_NAMES)}) in this folder", path=p)
            p = found
        queries = load_manifest(p, on_warning=notes.append)
    else:
        ds = load_dataset(p, format=kind)
        queries, notes = list(ds.queries), list(ds.notes)
    return QuerySet(queries, kind, Path(path), notes)
