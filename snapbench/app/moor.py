"""`snapbench moor`: MOOR fusion of embeddings or path scores into a SCORES_DIR (or TREC runs).

Fuse a whole folder: :func:`fuse_directory`, the library entry point behind ``snapbench moor``.

Inputs (exactly one; layouts in :mod:`snapbench.store`):

* ``embeddings_dir`` -- an EMBEDDINGS_DIR (``gallery.{image,text}.npy`` + ``<cond>.{image,text}.npy``,
  what ``snapbench encode`` writes to ``OUT/embeddings``): every condition, one gallery fit;
* ``paths_dir`` -- a PATHS_DIR (``<cond>.II.npy`` ... or ``II/<cond>.npy`` ...): the four path scores
  of each condition are fused as given (gates, variance weights, fusion; whitening needs embeddings);
* ``embeddings`` -- one condition's four embedding files or arrays ``(q_image, q_text, g_image,
  g_text)`` named ``condition``.

Output: ``out_dir`` becomes a SCORES_DIR that ``snapbench evaluate`` reads: ``<cond>.npy`` fused scores
(Q x N) or, with ``k``, ``<cond>.trec`` TREC runs; ``query_ids.txt`` and ``gallery_ids.txt``;
per-query weights in ``moor_weights/<cond>.csv`` (or ``.npy``); with ``ann``, ``ann_recall.json`` holds
per condition the top-k overlap of the approximate search with exact MOOR on a seeded sample of
queries (key ``"topk_overlap"``: the share of the exact top-k the ANN search returned).  Writing a
condition removes what an earlier run into the same folder left for it in the other format (a
``.trec`` beside a new ``.npy``, a ``.npy`` weights file beside a new ``.csv``): one condition, one
file, or ``snapbench evaluate`` would refuse the folder.

Ids rule: ids come from ``query_ids`` / ``gallery_ids`` (a file or a list), else from the input
folder (or its parent, encode's OUT, for an EMBEDDINGS_DIR; or ``II/`` for a PATHS_DIR).  When none is
found, the row/column positions become the ids -- ``q0, q1, ...`` and ``g0, g1, ...`` -- and are
*written* to ``query_ids.txt`` / ``gallery_ids.txt`` like any others, so the output is always a
complete SCORES_DIR that ``snapbench evaluate`` reads with qrels keyed by those ids; the summary's
``default_ids`` lists which lists were invented (and the command says so), because qrels keyed by
real ids will not match them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..core.conditions import condition_to_filename, parse_condition
from ..core.errors import ConfigError, InputError, arg
from ..core.ranking import TopK, topk, topk_overlap
from ..core.seeding import derive_generator
from ..core.userfiles import read_json
from ..core.validate import choice, finite_number, positive_int
from ..fusion.gates import get_gate
from ..fusion.index import MOORIndex
from ..fusion.moor import moor_from_scores
from ..store import (
    GALLERY_IDS,
    QUERY_IDS,
    claim_output_dir,
    find_embeddings,
    find_ids,
    find_path_scores,
    read_ids,
    read_run_json,
    write_ids,
    write_run_json,
    write_trec_run,
)
from ..store.arrays import load_matrix, load_path_scores, write_weights
from ..store.atomic import save_npy_atomic, write_json
from ..store.folders import MoorDir, RunDir, find_output_folder, refuse_unfinished

__all__ = ['FuseOptions', 'FusionSummary', 'ann_topk_overlap', 'fuse_directory']


DEFAULT_ANN_CHECK = 256
_WEIGHTS_FORMATS = ("csv", "npy")
_DTYPES = ("float32", "float64")


@dataclass
class FuseOptions:
    """How to fuse (``snapbench moor`` flags in brackets).

    ``k`` [--topk]: write a top-k TREC run per condition instead of dense scores.  ``ann`` [--ann] (needs
    ``k`` and embeddings): FAISS HNSW search; ``ann_check`` [--ann-check] queries per condition measure
    its top-k overlap with exact MOOR (0 skips it).  ``dtype`` float64 (exact) or float32 (faster);
    ``chunk_size``: gallery rows per streamed chunk; ``fusion_eps``: Σw below it falls back to s_II.
    """

    whiten: bool = True
    gate: str = "bell"
    k: int | None = None
    chunk_size: int = 8192
    ann: bool = False
    ann_check: int = DEFAULT_ANN_CHECK
    dtype: str = "float64"
    weights_format: str = "csv"
    fusion_eps: float = 1e-6

    def check(self, *, dense_input: bool) -> None:
        """Refuse impossible settings before any work (``dense_input``: the input is path scores)."""
        get_gate(self.gate)
        choice(self.weights_format, _WEIGHTS_FORMATS, "weights_format", what="weights format")
        choice(self.dtype, _DTYPES, "dtype", what="dtype")
        positive_int(self.chunk_size, "chunk_size")
        positive_int(self.ann_check, "ann_check", minimum=0)
        if self.k is not None:
            positive_int(self.k, "k")
        if not finite_number(self.fusion_eps, "fusion_eps") >= 0:  # NaN would make every query fall back
            raise ConfigError(f"must be a number >= 0, got {self.fusion_eps!r}", param="fusion_eps")
        if self.ann and self.k is None:
            raise ConfigError(f"needs {arg('k')} (approximate search returns a top-k)", param="ann")
        if self.ann and dense_input:
            raise ConfigError("needs embeddings: path scores are already dense", param="ann")


@dataclass
class FusionSummary:
    """What :func:`fuse_directory` wrote: per condition (file stem) the mean text-path share, the number
    of queries that fell back to s_II and, with ANN, the measured top-k overlap."""

    out_dir: Path
    n_queries: int
    n_gallery: int
    conditions: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: id files written with positional defaults (q0.../g0...) because no ids were given or found
    default_ids: list[str] = field(default_factory=list)

    @property
    def mean_text_share(self) -> float:
        """Mean over conditions of the mean text-path weight share (paper: ~0.065)."""
        return float(np.mean([c["text_share"] for c in self.conditions.values()])) if self.conditions else float("nan")


def _check_stems(names_to_files: dict[str, Any]) -> None:
    # outputs are named <condition>.npy/.trec: a stem that is no condition id would make the whole
    # SCORES_DIR unreadable for `snapbench evaluate`, so refuse before any work
    for stem, files in sorted(names_to_files.items()):
        first = next(iter(files.values())) if isinstance(files, dict) else files[0]
        try:
            canonical = condition_to_filename(parse_condition(stem).id)
        except ValueError as exc:
            raise InputError(f"{exc}; rename or move the file", path=first) from None
        if canonical != stem:  # e.g. s01 for s1: evaluate would read both as one condition
            raise InputError(f"write the condition as {canonical!r}, not {stem!r}", path=first)


class _Ids:
    """Query and gallery ids of the output: given, found next to the input, or positional defaults."""

    def __init__(self, query_ids: Any, gallery_ids: Any, search: list[Path], summary: FusionSummary) -> None:
        self.given = {QUERY_IDS: query_ids, GALLERY_IDS: gallery_ids}
        self.search, self.summary = search, summary
        self.queries: list[str] | None = None
        self.gallery: list[str] | None = None

    def _resolve(self, fname: str, n: int, what: str, have: str) -> list[str]:
        given = self.given[fname]
        param = "query_ids" if fname == QUERY_IDS else "gallery_ids"
        if given is not None and not isinstance(given, (str, os.PathLike)):
            ids, src = [str(x) for x in given], None
        else:
            src = Path(given) if given is not None else find_ids(fname, *self.search)
            if src is None:
                self.summary.default_ids.append(fname)
                return [f"{fname[0]}{i}" for i in range(n)]  # q0, q1, ... / g0, g1, ...
            ids = read_ids(src, what)
        if len(ids) != n:
            raise InputError(f"{len(ids)} {what}, the {have} number {n}", path=src, param=param)
        return ids

    def fix(self, n_queries: int, n_gallery: int, have: str) -> None:
        """Resolve both lists on the first condition (``have``: rows/columns of what)."""
        if self.queries is None:
            self.queries = self._resolve(QUERY_IDS, n_queries, "query ids", f"{have} rows")
            self.gallery = self._resolve(GALLERY_IDS, n_gallery, "gallery ids", f"{have} columns")
            self.summary.n_queries, self.summary.n_gallery = n_queries, n_gallery


class _Output:
    """Writes each condition's fused result into the SCORES_DIR (one file per condition) and its log line."""

    def __init__(self, out: MoorDir, opts: FuseOptions, summary: FusionSummary, say: Callable[[str], None]) -> None:
        self.out, self.opts, self.summary, self.say = out, opts, summary, say
        self.recall_file = out.ann_recall

    def write(self, cond: str, res: Any, ids: _Ids, top: TopK | None, ann_entry: dict | None = None) -> None:
        qids, gids = ids.queries, ids.gallery
        assert qids is not None and gids is not None
        stale = self.out.results(cond)
        if top is not None:
            keep = self.out.trec_run(cond)
            write_trec_run(keep, qids, gids, top.indices, top.scores, tag=f"moor-{self.opts.gate}")
        else:
            keep = self.out.scores(cond)
            save_npy_atomic(keep, res.scores)
        weights = self.out.weights(cond, self.opts.weights_format)
        write_weights(weights, res.weights, res.correlations, res.text_share, res.fallback, qids)
        stale += [self.out.weights(cond, fmt) for fmt in _WEIGHTS_FORMATS]
        for f in stale:
            if f not in (keep, weights):
                f.unlink(missing_ok=True)
        # per condition, so a run that fails later leaves no stale entry for what it rewrote
        self._update_ann_recall(cond, ann_entry)
        self._record(cond, res, ann_entry)

    def _update_ann_recall(self, cond: str, entry: dict | None) -> None:
        """Replace ``cond``'s entry (drop it for exact scores: an old ANN measurement would be stale);
        other conditions (earlier runs into the same folder) are kept."""
        merged: dict = {}
        if self.recall_file.exists():
            try:
                old = read_json(self.recall_file)
                merged = old if isinstance(old, dict) else {}
            except InputError:
                merged = {}
        merged.pop(cond, None)
        if entry is not None:
            merged[cond] = entry
        if merged:
            write_json(self.recall_file, dict(sorted(merged.items())))
        else:
            self.recall_file.unlink(missing_ok=True)

    def _record(self, cond: str, res: Any, extra: dict | None) -> None:
        s = self.summary
        s.conditions[cond] = {"text_share": float(res.text_share.mean()), "fallback": int(res.fallback.sum()),
                              **(extra or {})}
        ov = f", ANN top-{self.opts.k} overlap {extra['topk_overlap']:.4f} on {extra['queries']} queries" if extra else ""
        self.say(f"{cond}: {s.n_queries} queries x {s.n_gallery} gallery, mean text share "
                 f"{res.text_share.mean():.4f}, fallback {int(res.fallback.sum())}{ov}")


def ann_topk_overlap(index: MOORIndex, qI: np.ndarray, qT: np.ndarray, approx: np.ndarray, k: int, n_check: int,
                     cond: str) -> dict:
    """Top-k overlap of the ANN result with exact MOOR (one streaming pass) on a seeded query sample."""
    Q = qI.shape[0]
    rows = np.arange(Q) if n_check >= Q else np.sort(derive_generator("moor-ann-check", 0, cond).choice(Q, n_check, replace=False))
    exact = index.topk(qI[rows], qT[rows], k, ann=False)
    return {"k": k, "queries": int(rows.size), "topk_overlap": topk_overlap(exact.indices, approx[rows], k),
            "measure": "share of the exact MOOR top-k that the approximate search returned", "rows": rows.tolist()}


def _fuse_path_scores(pdir: Path, ids: _Ids, output: _Output, opts: FuseOptions) -> None:
    """Every condition of a PATHS_DIR: gates, variance weights and fusion on the given path scores."""
    if not pdir.is_dir():
        raise InputError("not a directory (expected path score files)", path=pdir)
    conds = find_path_scores(pdir, complete=True)
    if not conds:
        from ..store import find_output_folder

        found = find_output_folder(pdir)
        what = "" if found is None or found.kind == "encode" else (
            f"; it {found.describe(pdir)}, which keeps no path scores: 'snapbench encode' writes them (OUT/paths)")
        raise InputError("holds no path score files (expected <condition>.II.npy ... or II/<condition>.npy ...)"
                         + what, path=pdir)
    _check_stems(conds)
    for cond, files in sorted(conds.items()):
        ps = load_path_scores(files, condition=cond)
        Q, N = ps["II"].shape
        ids.fix(Q, N, "score")
        if (Q, N) != (len(ids.queries or ()), len(ids.gallery or ())):
            raise InputError(f"condition {cond!r}: scores are {Q} x {N}, the ids give "
                             f"{len(ids.queries or ())} x {len(ids.gallery or ())}", path=pdir)
        try:
            res = moor_from_scores(ps["II"], ps["TT"], ps["IT"], ps["TI"], gate=opts.gate, fusion_eps=opts.fusion_eps)
        except ValueError as exc:
            raise InputError(f"condition {cond!r} ({', '.join(str(f) for f in files.values())}): {exc}") from None
        output.write(cond, res, ids, topk(res.scores, opts.k) if opts.k is not None else None)


def _fit_index(g_image: Any, g_text: Any, opts: FuseOptions) -> MOORIndex:
    """The gallery fit: streamed from disk for .npy files, else from the arrays."""
    is_path = all(isinstance(g, (str, os.PathLike)) for g in (g_image, g_text))
    is_npy = is_path and str(g_image).endswith(".npy") and str(g_text).endswith(".npy")
    index = MOORIndex(whiten=opts.whiten, gate=opts.gate, fusion_eps=opts.fusion_eps, dtype=opts.dtype,
                      chunk_size=opts.chunk_size, keep_gallery=None if not is_npy else opts.k is None)
    if is_npy:
        index.fit(str(g_image), str(g_text))
    elif is_path:
        index.fit(load_matrix(g_image, arg("g_image")), load_matrix(g_text, arg("g_text")))
    else:
        index.fit(g_image, g_text)
    if opts.ann:
        index.build_ann("hnsw")
    return index


def _query_pair(cond: str, qi_src: Any, qt_src: Any, index: MOORIndex, from_dir: bool) -> tuple[np.ndarray, np.ndarray]:
    """One condition's query embeddings, checked against each other and the gallery."""
    ni, nt = (f"query image embeddings of {cond}", f"query text embeddings of {cond}") if from_dir else (arg("q_image"), arg("q_text"))
    qI = load_matrix(qi_src, ni) if isinstance(qi_src, (str, os.PathLike)) else np.asarray(qi_src)
    qT = load_matrix(qt_src, nt) if isinstance(qt_src, (str, os.PathLike)) else np.asarray(qt_src)
    fi = f" ({qi_src})" if isinstance(qi_src, (str, os.PathLike)) else ""
    ft = f" ({qt_src})" if isinstance(qt_src, (str, os.PathLike)) else ""
    if qI.shape != qT.shape:
        if qI.ndim != 2 or qT.ndim != 2:
            rule = "each must be a 2-D matrix, one row per query"
        elif qI.shape[0] != qT.shape[0]:
            rule = "the two need the same number of rows: one per query, in the same order"
        else:
            rule = ("the image and text embeddings must share one dimension: MOOR fuses them in one space, "
                    f"the gallery's (dim {index.dim})")
        raise InputError(f"{ni}{fi} has shape {qI.shape}, {nt}{ft} has shape {qT.shape}: {rule}")
    if qI.ndim != 2 or qI.shape[1] != index.dim:
        raise InputError(f"{ni}{fi} has shape {qI.shape}, the gallery has dim {index.dim}: the queries' embeddings "
                         "must have the gallery's dimension (one matrix, one row per query)")
    return qI, qT


def _fuse_embeddings(states: list[tuple[str, tuple[Any, Any]]], gallery: tuple[Any, Any], from_dir: bool, ids: _Ids,
                     output: _Output, opts: FuseOptions) -> None:
    """Every condition's query embeddings against one fitted gallery."""
    index = _fit_index(*gallery, opts)
    buf = None  # one (Q x N) score buffer for every state: each is saved before the next
    for cond, (qi_src, qt_src) in states:
        qI, qT = _query_pair(cond, qi_src, qt_src, index, from_dir)
        ids.fix(qI.shape[0], index.n_gallery, "embedding")
        if qI.shape[0] != len(ids.queries or ()):
            raise InputError(f"condition {cond!r}: {qI.shape[0]} query rows, the ids give {len(ids.queries or ())}")
        if opts.k is not None:
            t = index.topk(qI, qT, opts.k, ann=opts.ann)
            extra = ann_topk_overlap(index, qI, qT, t.indices, opts.k, opts.ann_check, cond) \
                if opts.ann and opts.ann_check > 0 else None
            output.write(cond, t.result, ids, TopK(t.indices, t.scores), extra)
        else:
            if buf is None or buf.shape[0] != qI.shape[0]:
                buf = np.empty((qI.shape[0], index.n_gallery), dtype=index.dtype)
            output.write(cond, index.query(qI, qT, out=buf), ids, None)


def _refuse_run_embeddings(embeddings_dir: Path) -> None:
    """A 'snapbench run' folder's embeddings are refused, with what to do instead, rather than read:
    its layout is not an EMBEDDINGS_DIR (query embeddings in ``queries/``, a gallery that may be
    sharded in ``gallery/``, no id lists beside them, queries dropped under some condition)."""
    found = find_output_folder(embeddings_dir)
    if found is None or found.kind != "run":
        return
    moor = RunDir(found.folder).report("MOOR")
    done = f"the run's MOOR results are in {moor}; " if moor.is_file() else ""
    raise InputError(f"{found.describe(embeddings_dir)}: not an EMBEDDINGS_DIR (a run keeps its embeddings in a "
                     f"layout of its own); {done}to fuse with other settings, 'snapbench encode CORRUPTED --gallery "
                     f"GALLERY --out ENC' writes an EMBEDDINGS_DIR that moor reads: pass {arg('embeddings_dir')} "
                     "ENC/embeddings", path=embeddings_dir)


def fuse_directory(
    out_dir: str | os.PathLike,
    *,
    embeddings_dir: str | os.PathLike | None = None,
    paths_dir: str | os.PathLike | None = None,
    embeddings: Sequence[Any] | None = None,
    condition: str = "clean",
    query_ids: str | os.PathLike | Sequence[str] | None = None,
    gallery_ids: str | os.PathLike | Sequence[str] | None = None,
    options: FuseOptions | None = None,
    progress: Callable[[str], None] | None = None,
    **settings: Any,
) -> FusionSummary:
    """Fuse every condition of one input (see the module docstring) into the SCORES_DIR ``out_dir``.

    ``options`` (or its fields as keywords, e.g. ``k=10, gate="linear"``) say how: see
    :class:`FuseOptions`.  ``progress(line)`` is called after each condition.  Raises
    :class:`~snapbench.core.errors.SnapbenchError` subclasses for bad inputs/options.
    """
    opts = FuseOptions(**{**(options.__dict__ if options is not None else {}), **settings})
    given = [n for n, v in (("embeddings", embeddings), ("paths_dir", paths_dir), ("embeddings_dir", embeddings_dir))
             if v is not None]
    if len(given) != 1:
        raise ConfigError(f"give exactly one input (embeddings, paths_dir or embeddings_dir), got {given or 'none'}")
    if embeddings is not None and len(embeddings) != 4:
        raise ConfigError("must be (q_image, q_text, g_image, g_text)", param="embeddings")
    opts.check(dense_input=paths_dir is not None)
    try:
        # the output must stay a SCORES_DIR that `snapbench evaluate` reads: file stem = condition id
        condition = condition_to_filename(parse_condition(condition).id)
    except ValueError as exc:
        raise ConfigError(str(exc), param="condition") from None
    if embeddings_dir is not None:
        _refuse_run_embeddings(Path(embeddings_dir))
    out = Path(out_dir)
    claim_output_dir(out, "moor")
    summary = FusionSummary(out, 0, 0)
    output = _Output(MoorDir(out), opts, summary, progress or (lambda line: None))
    for folder in (paths_dir, embeddings_dir):
        if folder is not None:
            refuse_unfinished(folder)
    if paths_dir is not None:
        ids = _Ids(query_ids, gallery_ids, [Path(paths_dir)], summary)
        _fuse_path_scores(Path(paths_dir), ids, output, opts)
    elif embeddings_dir is not None:
        edir = Path(embeddings_dir)
        gallery, emb_conds = find_embeddings(edir)
        _check_stems(emb_conds)
        ids = _Ids(query_ids, gallery_ids, [edir, edir.parent], summary)
        _fuse_embeddings(sorted(emb_conds.items()), gallery, True, ids, output, opts)
    else:
        q_image, q_text, g_image, g_text = embeddings  # type: ignore[misc]
        ids = _Ids(query_ids, gallery_ids, [], summary)
        _fuse_embeddings([(condition, (q_image, q_text))], (g_image, g_text), False, ids, output, opts)
    assert ids.queries is not None and ids.gallery is not None
    write_ids(output.out.query_ids, ids.queries)
    write_ids(output.out.gallery_ids, ids.gallery)
    # marks the SCORES_DIR as moor's (evaluate reads only score files and id lists): no other command
    # writes into it, and a later moor run adds its conditions to it
    before = (read_run_json(out, kind="moor") or {}).get("conditions") or []
    write_run_json(out, "moor", {"input": given[0], "options": dict(opts.__dict__),
                                 "conditions": sorted(set(before) | set(summary.conditions))})
    return summary
