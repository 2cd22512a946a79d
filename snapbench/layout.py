"""The file contracts between the stages: every name, and one reader (and writer) per stage output.

Data flows load -> corrupt -> encode -> score -> fuse -> evaluate; each stage writes a folder the next
one reads.  Their names and formats live here, once, so that a producer and its consumers can never
disagree (one truncated-line rule, one id-list reader, one TREC float format, both path-score layouts
accepted by every reader).

``snapbench corrupt`` OUT (:func:`read_manifest`, :func:`read_skips`, :func:`read_run_config`)::

    OUT/run.json          seed, conditions, resolved severity grid, snapbench version (one JSON object)
    OUT/manifest.jsonl    one JSON object per output (at least ``id`` and ``condition``); appended
                          during the run, so a kill can cut the last line: an unparseable *last*
                          line is dropped (that output is simply redone), an unparseable line
                          elsewhere is an error
    OUT/skips.jsonl       one JSON object per skipped (query, condition); same last-line rule
    OUT/images/<condition file name>/<id>.png

``snapbench encode`` OUT::

    OUT/query_ids.txt, OUT/gallery_ids.txt                       (:func:`read_ids` / :func:`write_ids`)
    OUT/embeddings/gallery.{image,text}.npy                      (N x d)
    OUT/embeddings/<condition file name>.{image,text}.npy        (Q x d)     (:func:`find_embeddings`)
    OUT/paths/<condition file name>.{II,TT,IT,TI}.npy            (Q x N)     (:func:`find_path_scores`)

PATHS_DIR: the four similarity paths of each condition, either flat -- ``<cond>.II.npy`` ... -- or as
four sub-folders ``II/<cond>.npy`` ... (handy when each path came from one scoring run).  Both layouts
are read the same everywhere (``snapbench evaluate --mode``, ``snapbench moor --paths-dir``); one
condition in both layouts is an error.  Id lists come from the folder itself or, failing that,
from ``II/``.

SCORES_DIR (``snapbench moor`` writes it, ``snapbench evaluate`` reads it): one ``<cond>.npy`` (Q x N)
or one TREC run ``<cond>.run`` / ``<cond>.trec`` per condition, plus ``query_ids.txt`` and
``gallery_ids.txt``.  A condition's file name is its id with "/" as "__".

TREC (:func:`write_trec_run`, :func:`read_trec_run`, :func:`read_qrels_file`, :func:`write_qrels`):
run lines ``qid Q0 docid rank score tag`` -- scores written with ``repr(float(score))`` (the shortest
text that reads back to the same float64, so a float32 score round-trips exactly too); qrels lines
``qid 0 docid rel``.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from . import modes
from .atomic import atomic_path, write_text_atomic
from .errors import InputError, OutputError

__all__ = [
    "EMBEDDINGS_DIR",
    "GALLERY_IDS",
    "GALLERY_STEM",
    "MANIFEST",
    "MODALITIES",
    "PATHS_DIR",
    "PATH_NAMES",
    "DROPPED_QUERIES",
    "QUERY_IDS",
    "RUN_CONFIG",
    "RUN_SUFFIXES",
    "SKIPS",
    "TrecLine",
    "embedding_file",
    "find_embeddings",
    "find_ids",
    "find_path_scores",
    "iter_trec_run",
    "path_score_file",
    "read_ids",
    "read_jsonl_records",
    "read_manifest",
    "read_qrels_file",
    "read_run_config",
    "read_skips",
    "read_trec_run",
    "write_ids",
    "write_qrels",
    "write_trec_run",
]

QUERY_IDS = "query_ids.txt"
GALLERY_IDS = "gallery_ids.txt"
MANIFEST = "manifest.jsonl"
SKIPS = "skips.jsonl"
RUN_CONFIG = "run.json"
EMBEDDINGS_DIR = "embeddings"  # encode's OUT/embeddings, run's DIR/embeddings
PATHS_DIR = "paths"  # encode's OUT/paths
DROPPED_QUERIES = "dropped_queries.json"  # encode's and run's queries left out of every state
#: The four similarity paths of a dual encoder, in this order everywhere (weights, files, reports).
PATH_NAMES: tuple[str, str, str, str] = modes.PATHS  # snapbench.modes: the one table of paths and modes
RUN_SUFFIXES = (".run", ".trec")
GALLERY_STEM = "gallery"
MODALITIES = ("image", "text")


# ------------------------------------------------------------------------------------------ id lists
def read_ids(path: str | os.PathLike, what: str = "ids") -> list[str]:
    """One id per line (surrounding whitespace stripped, trailing empty lines ignored).

    :class:`~snapbench.errors.InputError` for a missing file, no ids, an empty line between ids or a
    duplicate id (with both line numbers).
    """
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{what} file not found", path=p)
    lines = p.read_text(encoding="utf-8").splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    ids = [ln.strip() for ln in lines]
    if not ids:
        raise InputError(f"no {what} (empty file)", path=p)
    seen: dict[str, int] = {}
    for i, x in enumerate(ids, 1):
        if not x:
            raise InputError(f"line {i} is empty (one id per line)", path=p)
        if x in seen:
            raise InputError(f"duplicate id {x!r} on lines {seen[x]} and {i}", path=p)
        seen[x] = i
    return ids


def write_ids(path: str | os.PathLike, ids: Sequence[str]) -> None:
    """One id per line, written atomically; ids must be non-empty and free of line breaks."""
    for i in ids:
        s = str(i)
        if not s.strip() or "\n" in s or "\r" in s:
            raise OutputError(f"id {s!r} cannot be written one per line", path=path)
    write_text_atomic(path, "".join(f"{i}\n" for i in ids))


def find_ids(name: str, *dirs: str | os.PathLike | None) -> Path | None:
    """The first ``<dir>/<name>`` or ``<dir>/II/<name>`` that exists (``None`` if none does)."""
    for d in dirs:
        if d is None:
            continue
        for cand in (Path(d) / name, Path(d) / "II" / name):
            if cand.is_file():
                return cand
    return None


# ------------------------------------------------------------------------------------------ JSONL
def read_jsonl_records(path: str | os.PathLike, *, required: Sequence[str] = (), what: str = "record") -> list[dict[str, Any]]:
    """Objects of a JSONL file written line by line (manifest, skips).

    The rule every consumer shares: an unparseable (or non-object, or lacking ``required`` keys)
    **last** line is dropped -- a kill mid-write cuts only the line being appended; such a line
    anywhere else is an :class:`~snapbench.errors.InputError` naming the line.  A missing file gives
    ``[]``.
    """
    p = Path(path)
    if not p.exists():
        return []
    parts = p.read_bytes().split(b"\n")
    last = max((i for i, part in enumerate(parts) if part.strip()), default=-1)
    out: list[dict[str, Any]] = []
    for i, part in enumerate(parts):
        if not part.strip():
            continue
        try:
            obj = json.loads(part.decode("utf-8"))
            if not isinstance(obj, dict) or any(k not in obj for k in required):
                raise ValueError(f"not a {what}")
        except (ValueError, UnicodeDecodeError) as exc:
            if i == last:
                break  # cut by a kill mid-write
            raise InputError(f"line {i + 1} is not a valid {what} ({exc})", path=p) from None
        out.append(obj)
    return out


def read_manifest(corrupt_dir: str | os.PathLike, *, must_exist: bool = True) -> list[dict[str, Any]]:
    """The records of ``corrupt_dir/manifest.jsonl`` (each has ``id`` and ``condition``)."""
    p = Path(corrupt_dir) / MANIFEST
    if must_exist and not p.is_file():
        raise InputError(f"no {MANIFEST} (is this the output folder of 'snapbench corrupt'?)", path=corrupt_dir)
    return read_jsonl_records(p, required=("id", "condition"), what="manifest record")


def read_skips(corrupt_dir: str | os.PathLike) -> list[dict[str, Any]]:
    """The records of ``corrupt_dir/skips.jsonl`` (``[]`` when there is none)."""
    return read_jsonl_records(Path(corrupt_dir) / SKIPS, required=("id",), what="skip record")


def read_run_config(corrupt_dir: str | os.PathLike) -> dict[str, Any] | None:
    """``corrupt_dir/run.json`` as a dict (``None`` when absent; malformed -> InputError)."""
    p = Path(corrupt_dir) / RUN_CONFIG
    if not p.exists():
        return None
    try:
        cfg = json.loads(p.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"not valid JSON ({exc})", path=p) from None
    if not isinstance(cfg, dict):
        raise InputError("must hold a JSON object", path=p)
    return cfg


# ------------------------------------------------------------------------------------------ embeddings
def embedding_file(emb_dir: str | os.PathLike, stem: str, modality: str) -> Path:
    """``<emb_dir>/<stem>.<modality>.npy`` (stem = condition file name, or ``gallery``)."""
    if modality not in MODALITIES:
        raise ValueError(f"modality must be one of {MODALITIES}, got {modality!r}")
    return Path(emb_dir) / f"{stem}.{modality}.npy"


def find_embeddings(emb_dir: str | os.PathLike) -> tuple[tuple[Path, Path], dict[str, tuple[Path, Path]]]:
    """``((gallery image, gallery text), {condition file stem: (query image, query text)})``.

    InputError when the folder or the gallery files are missing, no query embeddings exist, or a
    condition has one modality only.
    """
    d = Path(emb_dir)
    if not d.is_dir():
        raise InputError("not a directory (expected an embeddings folder)", path=d)
    gallery = (embedding_file(d, GALLERY_STEM, "image"), embedding_file(d, GALLERY_STEM, "text"))
    missing = [g.name for g in gallery if not g.is_file()]
    if missing:
        raise InputError(f"lacks {', '.join(missing)} (the gallery embeddings)", path=d)
    found: dict[str, dict[str, Path]] = {}
    for f in sorted(d.glob("*.npy")):
        cond, _, modality = f.name[: -len(".npy")].rpartition(".")
        if cond and cond != GALLERY_STEM and modality in MODALITIES:
            found.setdefault(cond, {})[modality] = f
    if not found:
        raise InputError("holds no query embeddings (<condition>.image.npy / .text.npy)", path=d)
    conds: dict[str, tuple[Path, Path]] = {}
    for cond, files in found.items():
        lacking = [m for m in MODALITIES if m not in files]
        if lacking:
            raise InputError(f"condition {cond!r} lacks {cond}.{lacking[0]}.npy", path=d)
        conds[cond] = (files["image"], files["text"])
    return gallery, conds


# ------------------------------------------------------------------------------------------ path scores
def path_score_file(paths_dir: str | os.PathLike, stem: str, path: str) -> Path:
    """Where encode writes path ``path`` of condition ``stem``: ``<dir>/<stem>.<path>.npy``."""
    if path not in PATH_NAMES:
        raise ValueError(f"path must be one of {PATH_NAMES}, got {path!r}")
    return Path(paths_dir) / f"{stem}.{path}.npy"


def find_path_scores(paths_dir: str | os.PathLike, *, complete: bool = False) -> dict[str, dict[str, Path]]:
    """``{condition file stem: {path name: file}}`` from both PATHS_DIR layouts (flat
    ``<stem>.II.npy`` and sub-folder ``II/<stem>.npy``).

    A condition present in both layouts is an error.  ``complete=True`` also requires all four paths
    of every condition (what fusion needs); evaluate's retrieval modes need only some.
    """
    d = Path(paths_dir)
    found: dict[str, dict[str, Path]] = {}
    origin: dict[str, str] = {}
    for f in sorted(d.glob("*.npy")):
        stem, _, name = f.name[: -len(".npy")].rpartition(".")
        if stem and name in PATH_NAMES:
            found.setdefault(stem, {})[name] = f
            origin[stem] = "flat"
    for name in PATH_NAMES:
        sub = d / name
        if not sub.is_dir():
            continue
        for f in sorted(sub.glob("*.npy")):
            stem = f.name[: -len(".npy")]
            if origin.get(stem) == "flat":
                raise InputError(f"condition {stem!r} appears both as flat files and in {name}/", path=d)
            found.setdefault(stem, {})[name] = f
            origin[stem] = "sub"
    if complete:
        for stem, paths in found.items():
            lacking = [p for p in PATH_NAMES if p not in paths]
            if lacking:
                raise InputError(f"condition {stem!r} lacks the {', '.join(lacking)} path file(s)", path=d)
    return found


# ------------------------------------------------------------------------------------------ TREC
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
    with open(p, encoding="utf-8") as fh:
        for i, line in enumerate(fh, 1):
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

    ``indices``/``scores`` are Q x k, best first (a :class:`~snapbench.ranking.TopK`'s fields);
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
    p = Path(path)
    try:
        with atomic_path(p) as tmp, open(tmp, "w", encoding="utf-8") as fh:
            for qi, q in enumerate(query_ids):
                rank = 0
                for j, s in zip(idx[qi].tolist(), sc[qi].tolist()):
                    if j < 0:
                        continue
                    rank += 1
                    fh.write(f"{q} Q0 {gallery_ids[j]} {rank} {float(s)!r} {tag}\n")
    except OSError as e:
        raise OutputError(f"cannot write ({e.strerror or e})", path=p) from None


def read_qrels_file(path: str | os.PathLike) -> dict[str, dict[str, float]]:
    """Raw qrels, TREC (``qid 0 docid rel``) or JSON (``{qid: [docid, ...]}`` / ``{qid: {docid: grade}}``):
    query id -> {gallery id: grade} (grades as given; an empty JSON list = a zero-GT query)."""
    p = Path(path)
    if not p.is_file():
        raise InputError("qrels file not found", path=p)
    text = p.read_text(encoding="utf-8")
    if p.suffix.lower() == ".json" or text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise InputError(f"not valid JSON ({e})", path=p) from None
        if not isinstance(data, dict):
            raise InputError("JSON qrels must be an object {query_id: [gallery_id, ...]}", path=p)
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
