"""Reading score directories, TREC runs, qrels and query tags; writing TREC runs.

SCORES_DIR layouts
------------------
* ``.npy``: one Q x N score matrix per condition, file name = condition id with "/" -> "__"
  (``clean.npy``, ``img__motion_blur__s2.npy``, ``joint__compression+char_add__s3.npy``), plus
  ``query_ids.txt`` and ``gallery_ids.txt`` (one id per line: row and column order).  Files are
  opened with ``np.load(allow_pickle=False, mmap_mode="r")`` and read in row blocks.  Integer
  matrices are accepted; bool, complex, string and object arrays are not.  Per-path files
  ``<condition>.II.npy`` / ``.TT`` / ``.IT`` / ``.TI`` are used by ``--mode`` (see ``modes``).
* TREC runs: one ``<condition>.run`` or ``<condition>.trec`` per condition, lines
  ``qid Q0 docid rank score [tag]``.  Like trec_eval, the order comes from the score column (not the
  rank column); equal scores follow the gallery order.  ``query_ids.txt`` / ``gallery_ids.txt``
  are optional here: without them the ids are the sorted union of those in the runs and qrels.
  A query absent from a run retrieved nothing (an empty answer).

QRELS
-----
TREC qrels (``qid 0 docid rel``; rel > 0 = positive, graded when any rel > 1), or JSON
``{query_id: [gallery_id, ...]}`` (an empty list = zero-GT query) or
``{query_id: {gallery_id: grade}}``.  Decisions:

* a query id that is not in ``query_ids``: error;
* a gallery id that is not in ``gallery_ids``: error by default (such a positive can never be
  retrieved and would silently lower recall); ``unknown_items="drop"`` drops it with a warning;
* a query in ``query_ids`` that the qrels do not mention: zero-GT, with a warning (TREC qrels
  cannot spell out an empty judgement list, so this is the only consistent reading).

Every problem raises :class:`EvaluationInputError` naming the file and what is wrong.
"""

from __future__ import annotations

import json
import math
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Mapping, Sequence

import numpy as np

from ..atomic import atomic_path
from ..conditions import IMAGE_OPERATORS, TEXT_OPERATORS, condition_to_filename, parse_condition
from .metrics import Labels
from .modes import MODES, PATHS, mode_paths

__all__ = [
    "EvaluationInputError",
    "read_ids",
    "load_qrels",
    "load_tags",
    "query_groups",
    "load_score_matrix",
    "condition_sort_key",
    "RunRanking",
    "read_run",
    "write_run",
    "atomic_writer",
    "ScoresDir",
]

RUN_SUFFIXES = (".run", ".trec")
_NPY_MAGIC = b"\x93NUMPY"


class EvaluationInputError(ValueError):
    """Bad evaluation input (file, id, shape or value); the message names the file and the problem."""


def _examples(items: Sequence[str], n: int = 5) -> str:
    items = list(items)
    more = f" (and {len(items) - n} more)" if len(items) > n else ""
    return ", ".join(repr(x) for x in items[:n]) + more


# ------------------------------------------------------------------------------ ids
def read_ids(path: str | Path, what: str = "ids") -> list[str]:
    """One id per line (surrounding whitespace stripped, trailing empty lines ignored).

    Errors: missing file, no ids, an empty line between ids, duplicate ids (with line numbers).
    """
    p = Path(path)
    if not p.is_file():
        raise EvaluationInputError(f"{p}: {what} file not found")
    lines = p.read_text(encoding="utf-8").splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    ids = [ln.strip() for ln in lines]
    if not ids:
        raise EvaluationInputError(f"{p}: no {what} (empty file)")
    seen: dict[str, int] = {}
    for i, x in enumerate(ids, 1):
        if not x:
            raise EvaluationInputError(f"{p}: line {i} is empty (one {what[:-1] if what.endswith('s') else what} per line)")
        if x in seen:
            raise EvaluationInputError(f"{p}: duplicate id {x!r} on lines {seen[x]} and {i}")
        seen[x] = i
    return ids


# ------------------------------------------------------------------------------ qrels
def _read_json_object_or_text(path: Path, what: str, shape: str) -> tuple[dict | None, str]:
    """Read a file that is either a JSON object (``.json`` or text starting with "{") or a text
    format: returns (the object, text) for JSON, (None, text) otherwise."""
    if not path.is_file():
        raise EvaluationInputError(f"{path}: {what} file not found")
    text = path.read_text(encoding="utf-8")
    if not (path.suffix.lower() == ".json" or text.lstrip().startswith("{")):
        return None, text
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise EvaluationInputError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(data, dict):
        raise EvaluationInputError(f"{path}: JSON {what} must be an object {shape}")
    return data, text


def _parse_qrels(path: Path) -> dict[str, dict[str, float]]:
    """Raw qrels: query id -> {gallery id: grade} (grades as given, zero/negative kept)."""
    data, text = _read_json_object_or_text(path, "qrels", "{query_id: [gallery_id, ...]}")
    if data is not None:
        out: dict[str, dict[str, float]] = {}
        for q, v in data.items():
            if isinstance(v, list):
                if not all(isinstance(x, (str, int)) and not isinstance(x, bool) for x in v):
                    raise EvaluationInputError(f"{path}: query {q!r}: list must hold gallery ids (strings)")
                ids = [str(x) for x in v]
                if len(set(ids)) != len(ids):
                    raise EvaluationInputError(f"{path}: query {q!r}: duplicate gallery id in list")
                out[str(q)] = {x: 1.0 for x in ids}
            elif isinstance(v, dict):
                g: dict[str, float] = {}
                for d, grade in v.items():
                    if isinstance(grade, bool) or not isinstance(grade, (int, float)) or not math.isfinite(grade):
                        raise EvaluationInputError(f"{path}: query {q!r}, item {d!r}: grade must be a finite number")
                    g[str(d)] = float(grade)
                out[str(q)] = g
            else:
                raise EvaluationInputError(
                    f"{path}: query {q!r}: expected a list of gallery ids or an object {{gallery_id: grade}}"
                )
        return out
    out = {}
    for i, line in enumerate(text.splitlines(), 1):
        parts = line.split()
        if not parts or parts[0].startswith("#"):
            continue
        if len(parts) != 4:
            raise EvaluationInputError(f"{path}:{i}: expected 'qid 0 docid rel' (4 fields), got {len(parts)}")
        q, _, d, rel = parts
        try:
            grade = float(rel)
        except ValueError:
            raise EvaluationInputError(f"{path}:{i}: relevance {rel!r} is not a number") from None
        if not math.isfinite(grade):
            raise EvaluationInputError(f"{path}:{i}: relevance {rel!r} is not finite")
        qd = out.setdefault(q, {})
        if d in qd:
            raise EvaluationInputError(f"{path}:{i}: duplicate judgement for query {q!r}, item {d!r}")
        qd[d] = grade
    if not out:
        raise EvaluationInputError(f"{path}: no judgements found")
    return out


def load_qrels(
    path: str | Path,
    query_ids: Sequence[str],
    gallery_ids: Sequence[str],
    *,
    unknown_items: str = "error",
) -> tuple[Labels, list[str]]:
    """Read qrels (TREC or JSON) into :class:`Labels` aligned with ``query_ids`` x ``gallery_ids``.

    Returns ``(labels, warnings)``.  See the module docstring for the decisions on unknown and
    missing ids.  ``unknown_items``: ``"error"`` (default) or ``"drop"``.
    """
    if unknown_items not in ("error", "drop"):
        raise ValueError("unknown_items must be 'error' or 'drop'")
    p = Path(path)
    raw = _parse_qrels(p)
    qpos = {q: i for i, q in enumerate(query_ids)}
    gpos = {g: j for j, g in enumerate(gallery_ids)}
    unknown_q = [q for q in raw if q not in qpos]
    if unknown_q:
        raise EvaluationInputError(
            f"{p}: {len(unknown_q)} query id(s) not in query_ids: {_examples(unknown_q)}"
        )
    notes: list[str] = []
    unknown_d = sorted({d for g in raw.values() for d, r in g.items() if d not in gpos})
    if unknown_d:
        msg = f"{p}: {len(unknown_d)} gallery id(s) not in gallery_ids: {_examples(unknown_d)}"
        if unknown_items == "error":
            raise EvaluationInputError(msg + " (pass --allow-unknown-items to drop them)")
        notes.append(msg + "; dropped")
    missing = [q for q in query_ids if q not in raw]
    if missing:
        notes.append(
            f"{p}: {len(missing)} query id(s) have no judgements and are treated as zero-GT: {_examples(missing)}"
        )
    gold: list[dict[int, float]] = []
    for q in query_ids:
        g = raw.get(q, {})
        gold.append({gpos[d]: r for d, r in g.items() if d in gpos})
    return Labels.from_lists(gold, len(gallery_ids)), notes


# ------------------------------------------------------------------------------ tags
def load_tags(path: str | Path, query_ids: Sequence[str]) -> dict[str, list[str]]:
    """Query tags: query id -> list of tags (``"tag"`` or ``"field=value"``).

    JSON: ``{qid: ["tag", ...]}``, ``{qid: "tag"}`` or ``{qid: {"field": "value"}}``.
    TSV: ``qid<TAB>tag<TAB>tag...``; a first line starting with ``query_id`` is a header naming the
    fields of the following columns (cells become ``field=value``).  ``#`` lines are comments.
    Unknown query ids are an error; queries without tags belong to no group.
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
        raise EvaluationInputError(f"{p}: {len(unknown)} query id(s) not in query_ids: {_examples(unknown)}")
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
        raise EvaluationInputError(f"{where}no query has a tag '{group_by}=...' (check --group-by){have}")
    return {k: np.asarray(v, dtype=np.int64) for k, v in sorted(rows.items())}


# ------------------------------------------------------------------------------ score files
def load_score_matrix(path: str | Path) -> np.ndarray:
    """Open a ``.npy`` score matrix as a read-only memmap, with clear errors for non-numeric data."""
    p = Path(path)
    try:
        with open(p, "rb") as fh:
            magic = fh.read(6)
    except OSError as e:
        raise EvaluationInputError(f"{p}: cannot read ({e.strerror})") from None
    if magic != _NPY_MAGIC:
        raise EvaluationInputError(f"{p}: not a .npy file (bad header); save scores with numpy.save")
    try:
        arr = np.load(p, mmap_mode="r", allow_pickle=False)
    except ValueError as e:
        if "object" in str(e).lower() or "pickle" in str(e).lower():
            raise EvaluationInputError(
                f"{p}: holds a Python-object array; snapbench never unpickles files -- save a numeric "
                "array, e.g. np.save(path, scores.astype(np.float32))"
            ) from None
        raise EvaluationInputError(f"{p}: cannot load ({e})") from None
    except (OSError, EOFError) as e:
        raise EvaluationInputError(f"{p}: truncated or unreadable .npy file ({e})") from None
    if arr.dtype.kind not in "fiu":
        raise EvaluationInputError(f"{p}: scores must be a real numeric array, got dtype {arr.dtype}")
    if arr.ndim != 2:
        raise EvaluationInputError(f"{p}: scores must be 2-d (queries x gallery), got shape {arr.shape}")
    return arr


def condition_sort_key(cid: str) -> tuple:
    """clean, image (paper operator order, severity), text (paper order), joint, by name."""
    c = parse_condition(cid)
    rank = {"clean": 0, "image": 1, "text": 2, "joint": 3}[c.kind]
    io = IMAGE_OPERATORS.index(c.image_operator) if c.image_operator in IMAGE_OPERATORS else len(IMAGE_OPERATORS)
    to = TEXT_OPERATORS.index(c.text_operator) if c.text_operator in TEXT_OPERATORS else len(TEXT_OPERATORS)
    return (rank, io, c.image_operator or "", to, c.text_operator or "", c.severity or 0)


class _ComposedScores:
    """A retrieval mode's matrix composed from path memmaps one row block at a time."""

    def __init__(self, mode: str, paths: Mapping[str, np.ndarray]):
        self.mode = mode
        self.paths = dict(paths)
        first = next(iter(self.paths.values()))
        self.shape = first.shape
        self.ndim = 2
        self.dtype = np.result_type(*[a.dtype for a in self.paths.values()], np.float32)

    def __getitem__(self, key):
        from .modes import mode_scores

        return mode_scores(self.mode, {p: np.asarray(a[key]) for p, a in self.paths.items()})


@dataclass
class RunRanking:
    """A condition read from a TREC run: per query the retrieved items in our order.

    ``idx`` (Q, L) gallery column indices (``-1`` padding), ``scores`` (Q, L) (NaN padding).
    """

    idx: np.ndarray
    scores: np.ndarray


def _iter_run(path: Path) -> Iterator[tuple[int, str, str, float]]:
    with open(path, encoding="utf-8") as fh:
        for i, line in enumerate(fh, 1):
            parts = line.split()
            if not parts or parts[0].startswith("#"):
                continue
            if len(parts) not in (5, 6):
                raise EvaluationInputError(
                    f"{path}:{i}: expected 'qid Q0 docid rank score tag' (6 fields), got {len(parts)}"
                )
            try:
                score = float(parts[4])
            except ValueError:
                raise EvaluationInputError(f"{path}:{i}: score {parts[4]!r} is not a number") from None
            if not math.isfinite(score):
                raise EvaluationInputError(f"{path}:{i}: score {parts[4]!r} is not finite")
            yield i, parts[0], parts[2], score


def read_run(path: str | Path, query_ids: Sequence[str], gallery_ids: Sequence[str]) -> RunRanking:
    """Read a TREC run into a :class:`RunRanking` (order: score desc, then gallery order)."""
    p = Path(path)
    qpos = {q: i for i, q in enumerate(query_ids)}
    gpos = {g: j for j, g in enumerate(gallery_ids)}
    per_q: dict[int, tuple[list[int], list[float]]] = {}
    seen: set[tuple[int, int]] = set()
    for i, q, d, s in _iter_run(p):
        if q not in qpos:
            raise EvaluationInputError(f"{p}:{i}: query id {q!r} is not in query_ids")
        if d not in gpos:
            raise EvaluationInputError(f"{p}:{i}: gallery id {d!r} is not in gallery_ids")
        key = (qpos[q], gpos[d])
        if key in seen:
            raise EvaluationInputError(f"{p}:{i}: item {d!r} listed twice for query {q!r}")
        seen.add(key)
        cols, scs = per_q.setdefault(qpos[q], ([], []))
        cols.append(gpos[d])
        scs.append(s)
    depth = max((len(c) for c, _ in per_q.values()), default=0)
    idx = np.full((len(query_ids), depth), -1, dtype=np.int64)
    sc = np.full((len(query_ids), depth), np.nan)
    for qi, (cols, scs) in per_q.items():
        c = np.asarray(cols, dtype=np.int64)
        s = np.asarray(scs, dtype=np.float64)
        order = np.lexsort((c, -s))
        idx[qi, : c.size] = c[order]
        sc[qi, : c.size] = s[order]
    return RunRanking(idx, sc)


@contextmanager
def atomic_writer(path: str | Path, *, newline: str | None = None) -> Iterator:
    """A text file handle whose content appears at ``path`` only when the block succeeds.

    Parent folders are created; the text goes to a temporary file in the same folder that replaces
    ``path`` with ``os.replace`` (so an interrupted run never leaves a half-written report, table or
    run).  An ``OSError`` becomes :class:`EvaluationInputError` naming the file.
    """
    p = Path(path)
    try:
        with atomic_path(p) as tmp, open(tmp, "w", encoding="utf-8", newline=newline) as fh:
            yield fh
    except OSError as e:
        raise EvaluationInputError(f"{p}: cannot write ({e.strerror or e})") from None

def write_run(
    path: str | Path,
    query_ids: Sequence[str],
    gallery_ids: Sequence[str],
    idx: np.ndarray,
    scores: np.ndarray,
    tag: str = "snapbench",
) -> None:
    """Write a TREC run (``qid Q0 docid rank score tag``) of the given top-k lists; ``-1`` slots are
    skipped.  Scores are written with full precision; note that trec_eval re-sorts equal scores
    by document id, so for a tie-exact re-check compare on data without ties.  Written atomically."""
    with atomic_writer(path) as fh:
        for qi, q in enumerate(query_ids):
            rank = 0
            for j, s in zip(idx[qi], scores[qi]):
                if j < 0:
                    continue
                rank += 1
                fh.write(f"{q} Q0 {gallery_ids[j]} {rank} {float(s)!r} {tag}\n")


# ------------------------------------------------------------------------------ directory
class ScoresDir:
    """A SCORES_DIR: discovers conditions and opens their scores one at a time.

    ``kind`` is ``"npy"`` or ``"trec"``.  With ``mode`` (one of :data:`~snapbench.evaluate.modes.MODES`)
    the conditions are those with all the mode's path files ``<cond>.<PATH>.npy``.
    """

    def __init__(self, path: str | Path, *, mode: str | None = None, qrels: str | Path | None = None):
        self.path = Path(path)
        if not self.path.is_dir():
            raise EvaluationInputError(f"{self.path}: not a directory")
        self.mode = mode
        if mode is not None and mode not in MODES:
            raise EvaluationInputError(f"unknown --mode {mode!r}; choose one of {', '.join(MODES)}")
        npy = sorted(self.path.glob("*.npy"))
        runs = sorted(f for f in self.path.iterdir() if f.suffix in RUN_SUFFIXES)
        if npy and runs:
            raise EvaluationInputError(f"{self.path}: holds both .npy score files and TREC runs; use one kind")
        if not npy and not runs:
            raise EvaluationInputError(
                f"{self.path}: no score files (expected <condition>.npy such as clean.npy, or <condition>.run)"
            )
        self.kind = "npy" if npy else "trec"
        self._files: dict[str, Path] = {}
        self._paths: dict[str, dict[str, Path]] = {}
        if self.kind == "npy":
            for f in npy:
                stem = f.name[: -len(".npy")]
                base, dot, suffix = stem.rpartition(".")
                if dot and suffix in PATHS:
                    self._add(self._paths.setdefault(self._cid(base, f), {}), suffix, f)
                else:
                    self._add(self._files, self._cid(stem, f), f)
            qf, gf = self.path / "query_ids.txt", self.path / "gallery_ids.txt"
            if not qf.is_file() or not gf.is_file():
                raise EvaluationInputError(
                    f"{self.path}: needs query_ids.txt and gallery_ids.txt (one id per line, row and column order)"
                )
            self.query_ids = read_ids(qf, "query ids")
            self.gallery_ids = read_ids(gf, "gallery ids")
        else:
            for f in runs:
                self._add(self._files, self._cid(f.stem, f), f)
            self.query_ids, self.gallery_ids = self._run_ids(qrels)
        if mode is not None:
            if self.kind != "npy":
                raise EvaluationInputError("--mode needs .npy path files (<cond>.II.npy ...), not TREC runs")
            need = mode_paths(mode)
            self.conditions = sorted(
                (c for c, ps in self._paths.items() if all(p in ps for p in need)), key=condition_sort_key
            )
            if not self.conditions:
                raise EvaluationInputError(
                    f"{self.path}: --mode {mode} needs files <condition>.{'.npy, <condition>.'.join(need)}.npy; none found"
                )
        else:
            self.conditions = sorted(self._files, key=condition_sort_key)
            if not self.conditions:
                raise EvaluationInputError(
                    f"{self.path}: only per-path files (<cond>.II.npy ...) found; choose a retrieval mode with --mode"
                )
        if "clean" not in self.conditions:
            raise EvaluationInputError(
                f"{self.path}: no clean condition (clean.npy / clean.run"
                + (f" / clean.<path>.npy for mode {mode}" if mode else "")
                + "); paired results are against clean"
            )

    @staticmethod
    def _add(files: dict, key: str, f: Path) -> None:
        # e.g. img__compression__s1.npy and img__compression__s01.npy name one condition: never pick one silently
        if key in files:
            raise EvaluationInputError(f"{files[key]} and {f} both hold condition {key!r}; keep one")
        files[key] = f

    @staticmethod
    def _cid(stem: str, f: Path) -> str:
        try:
            return parse_condition(stem).id
        except ValueError as e:
            raise EvaluationInputError(f"{f}: file name is not a condition id ({e})") from None

    def _run_ids(self, qrels: str | Path | None) -> tuple[list[str], list[str]]:
        qf, gf = self.path / "query_ids.txt", self.path / "gallery_ids.txt"
        q = read_ids(qf, "query ids") if qf.is_file() else None
        g = read_ids(gf, "gallery ids") if gf.is_file() else None
        if q is not None and g is not None:
            return q, g
        qs: set[str] = set()
        gs: set[str] = set()
        for f in self._files.values():
            for _, qq, dd, _ in _iter_run(f):
                qs.add(qq)
                gs.add(dd)
        if qrels is not None:
            for qq, items in _parse_qrels(Path(qrels)).items():
                qs.add(qq)
                gs.update(items)
        return (q if q is not None else sorted(qs)), (g if g is not None else sorted(gs))

    def file(self, cid: str) -> Path:
        """The file (or, in a mode, the first path file) that holds condition ``cid``."""
        if self.mode is not None:
            return self._paths[cid][mode_paths(self.mode)[0]]
        return self._files[cid]

    def describe(self, cid: str) -> str:
        if self.mode is not None:
            return " + ".join(str(self._paths[cid][p]) for p in mode_paths(self.mode))
        return str(self._files[cid])

    def _check_shape(self, arr: np.ndarray, f: Path) -> None:
        q, n = len(self.query_ids), len(self.gallery_ids)
        if arr.shape[0] != q:
            raise EvaluationInputError(f"{f}: {arr.shape[0]} rows but query_ids.txt lists {q} queries")
        if arr.shape[1] != n:
            raise EvaluationInputError(f"{f}: {arr.shape[1]} columns but gallery_ids.txt lists {n} gallery items")
        if n == 0:
            raise EvaluationInputError(f"{f}: empty gallery")

    def scores(self, cid: str):
        """The Q x N scores of ``cid``: a read-only memmap (or a lazily composed mode matrix)."""
        if self.kind != "npy":
            raise EvaluationInputError(f"{self.path}: TREC runs have no score matrix; use run()")
        if self.mode is None:
            f = self._files[cid]
            arr = load_score_matrix(f)
            self._check_shape(arr, f)
            return arr
        mats = {}
        for p in mode_paths(self.mode):
            f = self._paths[cid][p]
            arr = load_score_matrix(f)
            self._check_shape(arr, f)
            mats[p] = arr
        return _ComposedScores(self.mode, mats)

    def path_scores(self, cid: str, path: str):
        """One similarity path's memmap (``None`` when the file is absent)."""
        f = self._paths.get(cid, {}).get(path)
        if f is None:
            return None
        arr = load_score_matrix(f)
        self._check_shape(arr, f)
        return arr

    def run(self, cid: str) -> RunRanking:
        return read_run(self._files[cid], self.query_ids, self.gallery_ids)

    @staticmethod
    def filename(cid: str) -> str:
        return condition_to_filename(cid)
