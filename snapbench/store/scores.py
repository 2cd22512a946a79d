"""What evaluation reads: score directories, qrels, query tags (file names, id lists, TREC parsing and
writing are the shared :mod:`snapbench.store`).

SCORES_DIR layouts
------------------
* ``.npy``: one Q x N score matrix per condition, file name = condition id with "/" -> "__"
  (``clean.npy``, ``img__motion_blur__s2.npy``, ``joint__compression+char_add__s3.npy``), plus
  ``query_ids.txt`` and ``gallery_ids.txt`` (one id per line: row and column order).  Files are
  opened with ``np.load(allow_pickle=False, mmap_mode="r")`` and read in row blocks.  Integer
  matrices are accepted; bool, complex, string and object arrays are not.  Per-path files
  ``<condition>.II.npy`` / ``.TT`` / ``.IT`` / ``.TI`` (or ``II/<condition>.npy`` ...) are used by
  retrieval modes: a mode's matrix is their weighted sum (:func:`snapbench.core.targets.compose`),
  composed one row block at a time.  Other ``.npy`` files in sub-folders (``img/low_light/s1.npy``)
  are not read; a warning names them with the documented name (:func:`_stray_warning`).  Operator names in file names are checked against the built-in
  ones (:func:`_check_operator_names`): a case/underscore variant is an error with a did-you-mean, a
  name far from all of them is a user operator (warning).
* TREC runs: one ``<condition>.run`` or ``<condition>.trec`` per condition, lines
  ``qid Q0 docid rank score [tag]``.  Like trec_eval, the order comes from the score column (not the
  rank column); equal scores follow the gallery order.  ``query_ids.txt`` / ``gallery_ids.txt``
  are optional here: without them the ids are the sorted union of those in the runs, and the qrels
  are matched with them by the rules below (a judged query no run lists is left out; a judged item
  no run lists is an unknown gallery id -- give ``gallery_ids.txt`` when it is a real item that no
  run retrieved).  A query absent from a run retrieved nothing (an empty answer); a run without a
  single result line is an error (as in trec_eval).

QRELS
-----
TREC qrels (``qid 0 docid rel``; rel > 0 = positive, graded when any rel > 1), or JSON
``{query_id: [gallery_id, ...]}`` (an empty list = zero-GT query) or
``{query_id: {gallery_id: grade}}``.  Decisions:

* a judged query id that is not in ``query_ids`` (a query without scores, e.g. dropped by
  ``snapbench encode``): left out with a warning and reported (``n_qrels_without_scores``); when no
  judged query has scores at all, an error (the id lists do not belong together);
* a gallery id that is not in ``gallery_ids``: error by default (such a positive can never be
  retrieved and would silently lower recall); ``unknown_items="drop"`` drops it with a warning;
* a query in ``query_ids`` that the qrels do not mention: zero-GT, with a warning (TREC qrels
  cannot spell out an empty judgement list, so this is the only consistent reading).

Every problem raises :class:`EvaluationInputError` naming the file and what is wrong.

This module gathers the readers of score matrices, TREC runs and the folder (:class:`ScoresDir`);
qrels, tags and groups are read by :mod:`snapbench.data.qrels`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from ..core.conditions import IMAGE_OPERATORS, TEXT_OPERATORS, condition_sort_key, condition_to_filename, parse_condition
from ..core.errors import EvaluationInputError, arg
from ..core.targets import MODES, compose, normalize_mode
from ..core.userfiles import load_npy
from ..core.validate import did_you_mean, suggestion
from ..evaluate.condition import RunRanking
from . import (
    GALLERY_IDS,
    PATH_NAMES,
    QUERY_IDS,
    RUN_SUFFIXES,
    EncodeDir,
    find_ids,
    find_path_scores,
    iter_trec_run,
    output_kind,
    read_ids,
    read_trec_run,
    write_trec_run,
)
from .folders import refuse_unfinished

__all__ = ['ComposedScores', 'ScoresDir', 'read_run', 'write_run']

def _load_score_matrix(path: Path) -> np.ndarray:
    """A ``.npy`` score matrix as a read-only memmap (:func:`~snapbench.core.userfiles.load_npy`'s checks),
    2-d."""
    arr = load_npy(path, what="scores", mmap=True, error=EvaluationInputError)
    if arr.ndim != 2:
        raise EvaluationInputError(f"scores must be 2-d (queries x gallery), got shape {arr.shape}", path=path)
    return arr


def read_run(path: str | Path, query_ids: Sequence[str], gallery_ids: Sequence[str]) -> RunRanking:
    """Read a TREC run into a :class:`RunRanking` (order: score desc, then gallery order); see
    :func:`snapbench.store.read_trec_run`."""
    idx, sc = read_trec_run(path, query_ids, gallery_ids)
    return RunRanking(idx, sc)


def write_run(
    path: str | Path,
    query_ids: Sequence[str],
    gallery_ids: Sequence[str],
    idx: np.ndarray,
    scores: np.ndarray,
    tag: str = "snapbench",
) -> None:
    """Write a TREC run of the given top-k lists (``-1`` slots skipped); see
    :func:`snapbench.store.write_trec_run` (one float format for every run snapbench writes)."""
    write_trec_run(path, query_ids, gallery_ids, idx, scores, tag=tag)


class ComposedScores:
    """A retrieval mode's matrix composed from path memmaps one row block at a time."""

    def __init__(self, mode: str, paths: Mapping[str, np.ndarray]):
        self.mode = mode
        self.paths = dict(paths)
        first = next(iter(self.paths.values()))
        self.shape = first.shape
        self.ndim = 2
        self.dtype = np.result_type(*[a.dtype for a in self.paths.values()], np.float32)

    def __getitem__(self, key):
        return compose(self.mode, {p: np.asarray(a[key]) for p, a in self.paths.items()})


def _operator_key(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch.isalnum())


_KNOWN_OPERATORS = {"image": IMAGE_OPERATORS, "text": TEXT_OPERATORS}


def _check_operator_names(cid: str, source: str | Path) -> str | None:
    """Check the operator names of condition ``cid`` (read from ``source``) against the built-in ones
    of :mod:`snapbench.core.conditions`.

    A case/underscore/hyphen variant of a known name (``lowlight``, ``Mosaic``, ``motion-blur``) is
    an :class:`EvaluationInputError` with a did-you-mean: it would otherwise become a row of its own
    next to the real one.  A name far from every known one is accepted (users register their own
    operators) and the returned warning says so, with close matches if any.  ``None`` when all
    names are known.
    """
    c = parse_condition(cid)
    unknown = []
    for kind, name in (("image", c.image_operator), ("text", c.text_operator)):
        if name is None or name in _KNOWN_OPERATORS[kind]:
            continue
        known = _KNOWN_OPERATORS[kind]
        variant = [k for k in known if _operator_key(k) == _operator_key(name)]
        if variant:
            raise EvaluationInputError(
                f"{source}: unknown {kind} operator {name!r} in condition {cid!r}{suggestion(variant[:1])}; "
                f"operator names are case- and underscore-sensitive: rename the file"
            )
        unknown.append(f"{kind} operator {name!r}{did_you_mean(name, known)}")
    if not unknown:
        return None
    return (
        f"{source}: condition {cid!r} uses {' and '.join(unknown)}, not a built-in operator; "
        "evaluated as a user-defined operator"
    )


#: what to give instead of the output folder of another command (the kind its run.json names, read
#: through :func:`snapbench.store.output_kind`); ``{path}`` is the folder given
_INSTEAD: dict[str, str] = {
    "encode": "it holds the output of 'snapbench encode': give its per-path scores, {paths}",
    "corrupt": "it holds the output of 'snapbench corrupt' (corrupted queries, not scores): encode it first "
               "(snapbench encode {path} --gallery GALLERY -e ENCODER --out ENC), then give ENC/paths",
    "run": "it holds the output of 'snapbench run', which evaluated its targets already (<MODE>/report.json): "
           "see them with 'snapbench report {path}'",
}


def _no_score_files(path: Path) -> str:
    """The error for a folder without score files; for another command's output folder, what to give."""
    msg = f"{path}: no score files (expected <condition>.npy such as clean.npy, or <condition>.run)"
    kind = output_kind(path)
    if kind is None:
        return msg
    how = _INSTEAD.get(kind, "it holds the output of 'snapbench {kind}', not score files")
    return f"{msg}; {how.format(path=path, paths=EncodeDir(path).paths, kind=kind)}"


def _stray_npy(path: Path) -> list[Path]:
    """``.npy`` files in sub-folders that are no SCORES_DIR layout (only ``II/``, ``TT/``, ``IT/``,
    ``TI/`` hold score files), relative to ``path``: evaluation does not read them."""
    out = []
    for f in sorted(path.rglob("*.npy")):
        rel = f.relative_to(path)
        if len(rel.parts) == 1 or (len(rel.parts) == 2 and rel.parts[0] in PATH_NAMES):
            continue
        out.append(rel)
    return out


def _stray_warning(path: Path, stray: list[Path], shown: int = 5) -> str:
    """The warning naming ignored ``.npy`` files and, where the path reads as a condition id
    (``img/low_light/s1.npy``), the file name the layout documents (``img__low_light__s1.npy``)."""
    items = []
    for rel in stray[:shown]:
        flat = "__".join(rel.with_suffix("").parts)
        try:
            name = condition_to_filename(parse_condition(flat).id) + ".npy"
        except ValueError:
            name = None
        items.append(f"{rel.as_posix()}" + (f" (as {name} in {path})" if name else ""))
    more = f" and {len(stray) - shown} more" if len(stray) > shown else ""
    return (f"{len(stray)} .npy file(s) in sub-folders of {path} were ignored: {', '.join(items)}{more}; score files "
            "are <condition>.npy in the folder itself, the condition id's '/' written '__' (sub-folders: only "
            f"{'/, '.join(PATH_NAMES)}/ for per-path files)")


class ScoresDir:
    """A SCORES_DIR: discovers conditions and opens their scores one at a time.

    ``kind`` is ``"npy"`` or ``"trec"``.  With ``mode`` (one of :data:`~snapbench.core.targets.MODES`,
    any case) the conditions are those with all the mode's path files, in either PATHS_DIR layout
    (``<cond>.II.npy`` or ``II/<cond>.npy``; see :mod:`snapbench.store`).  ``warnings`` lists what
    was accepted with a doubt (operator names that are not built in).  :attr:`conditions` are in
    the order of a default run (:func:`snapbench.core.conditions.condition_sort_key`).
    :attr:`id_lists` names where :attr:`query_ids` and :attr:`gallery_ids` come from, for the
    qrels messages (:func:`snapbench.data.qrels.align_qrels`).
    """

    def __init__(self, path: str | Path, *, mode: str | None = None):
        self.path = Path(path)
        refuse_unfinished(self.path)
        if not self.path.is_dir():
            raise EvaluationInputError(f"{self.path}: not a directory")
        self.mode = normalize_mode(mode) if mode is not None else None
        self._need = tuple(MODES[self.mode]) if self.mode is not None else ()  # the mode's path files
        self.warnings: list[str] = []
        self.id_lists = ("query_ids", "gallery_ids")
        npy = sorted(self.path.glob("*.npy"))
        path_files = find_path_scores(self.path)
        runs = sorted(f for f in self.path.iterdir() if f.suffix in RUN_SUFFIXES)
        if (npy or path_files) and runs:
            raise EvaluationInputError(f"{self.path}: holds both .npy score files and TREC runs; use one kind")
        if not npy and not runs and not path_files:
            raise EvaluationInputError(_no_score_files(self.path))
        self.kind = "npy" if (npy or path_files) else "trec"
        self._files: dict[str, Path] = {}
        self._paths: dict[str, dict[str, Path]] = {}
        if self.kind == "npy":
            for stem, files in path_files.items():
                first = next(iter(files.values()))
                self._paths[self._cid(stem, first)] = files
            for f in npy:
                stem = f.name[: -len(".npy")]
                _, dot, suffix = stem.rpartition(".")
                if dot and suffix in PATH_NAMES:
                    continue  # a path file, listed above
                self._add(self._files, self._cid(stem, f), f)
            qf = find_ids(QUERY_IDS, self.path)
            gf = find_ids(GALLERY_IDS, self.path)
            if qf is None or gf is None:
                raise EvaluationInputError(
                    f"{self.path}: needs query_ids.txt and gallery_ids.txt (one id per line, row and column order)"
                )
            self.query_ids = read_ids(qf, "query ids")
            self.gallery_ids = read_ids(gf, "gallery ids")
            stray = _stray_npy(self.path)
            if stray:
                self.warnings.append(_stray_warning(self.path, stray))
        else:
            for f in runs:
                self._add(self._files, self._cid(f.stem, f), f)
            self.query_ids, self.gallery_ids = self._run_ids()
        if self.mode is not None:
            if self.kind != "npy":
                raise EvaluationInputError(f"{arg('mode')} needs .npy path files (<cond>.II.npy ...), not TREC runs",
                                           path=self.path)
            need = self._need
            self.conditions = sorted(
                (c for c, ps in self._paths.items() if all(p in ps for p in need)), key=condition_sort_key
            )
            if not self.conditions:
                raise EvaluationInputError(
                    f"{self.path}: mode {self.mode} needs files <condition>.{'.npy, <condition>.'.join(need)}.npy "
                    f"(or {'/, '.join(need)}/ sub-folders of <condition>.npy); none found"
                )
        else:
            self.conditions = sorted(self._files, key=condition_sort_key)
            if not self.conditions:
                raise EvaluationInputError(
                    f"{self.path}: only per-path files (<cond>.II.npy ...) found; choose a retrieval mode ({arg('mode')})"
                )
        if "clean" not in self.conditions:
            raise EvaluationInputError(
                f"{self.path}: no clean condition (clean.npy / clean.run"
                + (f" / clean.<path>.npy for mode {self.mode}" if self.mode else "")
                + "); paired results are against clean"
            )

    @staticmethod
    def _add(files: dict, key: str, f: Path) -> None:
        # e.g. img__compression__s1.npy and img__compression__s01.npy name one condition: never pick one silently
        if key in files:
            raise EvaluationInputError(f"{files[key]} and {f} both hold condition {key!r}; keep one")
        files[key] = f

    def _cid(self, stem: str, f: Path) -> str:
        try:
            cid = parse_condition(stem).id
        except ValueError as e:
            raise EvaluationInputError(f"{f}: file name is not a condition id ({e})") from None
        warning = _check_operator_names(cid, f)
        if warning is not None:
            self.warnings.append(warning)
        return cid

    def _run_ids(self) -> tuple[list[str], list[str]]:
        """The id files' ids, or, for a missing file, the sorted ids the runs list (never the qrels':
        a judged id no run lists then meets the qrels rules instead of becoming a query or an item)."""
        qf, gf = self.path / QUERY_IDS, self.path / GALLERY_IDS
        q = read_ids(qf, "query ids") if qf.is_file() else None
        g = read_ids(gf, "gallery ids") if gf.is_file() else None
        if q is not None and g is not None:
            return q, g
        qs: set[str] = set()
        gs: set[str] = set()
        for f in self._files.values():
            for ln in iter_trec_run(f):
                qs.add(ln.qid)
                gs.add(ln.docid)
        self.id_lists = (
            "query_ids" if q is not None else f"the ids of the runs (no {QUERY_IDS})",
            "gallery_ids" if g is not None else
            f"the ids of the runs (no {GALLERY_IDS}; give one listing the whole gallery if a judged item "
            "is one that no run retrieved)",
        )
        return (q if q is not None else sorted(qs)), (g if g is not None else sorted(gs))

    def file(self, cid: str) -> Path:
        """The file (or, in a mode, the first path file) that holds condition ``cid``."""
        if self.mode is not None:
            return self._paths[cid][self._need[0]]
        return self._files[cid]

    def describe(self, cid: str) -> str:
        if self.mode is not None:
            return " + ".join(str(self._paths[cid][p]) for p in self._need)
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
            arr = _load_score_matrix(f)
            self._check_shape(arr, f)
            return arr
        mats = {}
        for p in self._need:
            f = self._paths[cid][p]
            arr = _load_score_matrix(f)
            self._check_shape(arr, f)
            mats[p] = arr
        return ComposedScores(self.mode, mats)

    def path_file(self, cid: str, path: str) -> Path | None:
        """The file of one similarity path of ``cid`` (in either layout; ``None`` when absent)."""
        return self._paths.get(cid, {}).get(path)

    def path_scores(self, cid: str, path: str):
        """One similarity path's memmap (``None`` when the file is absent)."""
        f = self.path_file(cid, path)
        if f is None:
            return None
        arr = _load_score_matrix(f)
        self._check_shape(arr, f)
        return arr

    def run(self, cid: str) -> RunRanking:
        return read_run(self._files[cid], self.query_ids, self.gallery_ids)

    def why_missing(self, joint: str, evaluated: set[str]) -> str:
        """Why ``joint`` has no additivity: per missing part, the file that would hold it -- or, when
        the file is there, that the part was not among the evaluated (selected) conditions."""
        c = parse_condition(joint)
        reasons = []
        for part in ("clean", c.image_part.id, c.text_part.id):  # type: ignore[union-attr]
            if part in evaluated:
                continue
            if part in self.conditions:
                reasons.append(f"{part} is not among the selected conditions (its file is there)")
                continue
            stem = self.filename(part)
            if self.kind == "trec":
                files = [f"{stem}.run"]
            elif self.mode is not None:
                files = [f"{stem}.{path}.npy" for path in self._need]
            else:
                files = [f"{stem}.npy"]
            reasons.append(f"{part} has no score file ({' / '.join(files)} not in {self.path})")
        return "; ".join(reasons)

    @staticmethod
    def filename(cid: str) -> str:
        return condition_to_filename(cid)
