"""Fuse a whole folder: :func:`fuse_directory`, the library entry point behind ``snapbench moor``.

Inputs (exactly one; layouts in :mod:`snapbench.layout`):

* ``embeddings_dir`` -- an EMBEDDINGS_DIR (``gallery.{image,text}.npy`` + ``<cond>.{image,text}.npy``,
  what ``snapbench encode`` writes to ``OUT/embeddings``): every condition, one gallery fit;
* ``paths_dir`` -- a PATHS_DIR (``<cond>.II.npy`` ... or ``II/<cond>.npy`` ...): the four path scores
  of each condition are fused as given (gates, variance weights, fusion; whitening needs embeddings);
* ``embeddings`` -- one condition's four embedding files or arrays ``(q_image, q_text, g_image,
  g_text)`` named ``condition``.

Output: ``out_dir`` becomes a SCORES_DIR that ``snapbench evaluate`` reads: ``<cond>.npy`` fused scores
(Q x N) or, with ``topk``, ``<cond>.trec`` TREC runs; ``query_ids.txt`` and ``gallery_ids.txt``;
per-query weights in ``moor_weights/<cond>.csv`` (or ``.npy``); with ``ann``, ``ann_recall.json`` holds
per condition the top-k overlap of the approximate search with exact MOOR on a seeded sample of
queries (key ``"topk_overlap"``: the share of the exact top-k the ANN search returned).

Ids rule: ids come from ``query_ids`` / ``gallery_ids`` (a file or a list), else from the input
folder (or its parent, encode's OUT, for an EMBEDDINGS_DIR; or ``II/`` for a PATHS_DIR).  When none is
found, the row/column positions become the ids -- ``q0, q1, ...`` and ``g0, g1, ...`` -- and are
*written* to ``query_ids.txt`` / ``gallery_ids.txt`` like any others, so the output is always a
complete SCORES_DIR that ``snapbench evaluate`` reads with qrels keyed by those ids; the summary's
``default_ids`` lists which lists were invented (and the command says so), because qrels keyed by
real ids will not match them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..atomic import write_text_atomic
from ..conditions import condition_to_filename, parse_condition
from ..errors import ConfigError, InputError, OutputError
from ..layout import (
    GALLERY_IDS,
    QUERY_IDS,
    find_embeddings,
    find_ids,
    find_path_scores,
    read_ids,
    write_ids,
    write_trec_run,
)
from ..ranking import TopK, topk, topk_overlap
from ..seeding import derive_generator
from .gates import get_gate
from .index import MOORIndex
from .io import load_matrix, load_path_scores, save_npy, write_weights
from .moor import moor_from_scores

__all__ = ["ANN_RECALL_FILE", "WEIGHTS_DIR", "FusionSummary", "ann_topk_overlap", "fuse_directory"]

ANN_RECALL_FILE = "ann_recall.json"
WEIGHTS_DIR = "moor_weights"
DEFAULT_ANN_CHECK = 256


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
            raise InputError(f"{first}: {exc}; rename or move the file") from None
        if canonical != stem:  # e.g. s01 for s1: evaluate would read both as one condition
            raise InputError(f"{first}: write the condition as {canonical!r}, not {stem!r}")


def _ids(given: str | os.PathLike | Sequence[str] | None, search: list[Path], fname: str, n: int, what: str,
         param: str, have: str, defaults: list[str]) -> list[str]:
    if given is not None and not isinstance(given, (str, os.PathLike)):
        ids = [str(x) for x in given]
        src: Any = param
    else:
        src = Path(given) if given is not None else find_ids(fname, *search)
        if src is None:
            defaults.append(fname)
            return [f"{fname[0]}{i}" for i in range(n)]  # q0, q1, ... / g0, g1, ...
        ids = read_ids(src, what)
    if len(ids) != n:
        raise InputError(f"{what}: {src} has {len(ids)} ids, the {have} number {n}")
    return ids


def _update_ann_recall(path: Path, cond: str, entry: dict | None) -> None:
    """Replace ``cond``'s entry in ``path`` (drop it when ``entry`` is None: exact scores now, an old
    ANN measurement would be stale); other conditions (earlier runs into the same folder) are kept."""
    merged: dict = {}
    if path.exists():
        try:
            old = json.loads(path.read_text(encoding="utf-8"))
            merged = old if isinstance(old, dict) else {}
        except (OSError, ValueError):
            merged = {}
    merged.pop(cond, None)
    if entry is not None:
        merged[cond] = entry
    if merged:
        write_text_atomic(path, json.dumps(dict(sorted(merged.items())), indent=2))
    elif path.exists():
        path.unlink()


def ann_topk_overlap(index: MOORIndex, qI: np.ndarray, qT: np.ndarray, approx: np.ndarray, k: int, n_check: int,
                 cond: str) -> dict:
    """Top-k overlap of the ANN result with exact MOOR (one streaming pass) on a seeded query sample."""
    Q = qI.shape[0]
    rows = np.arange(Q) if n_check >= Q else np.sort(derive_generator("moor-ann-check", 0, cond).choice(Q, n_check, replace=False))
    exact = index.topk(qI[rows], qT[rows], k, ann=False)
    return {"k": k, "queries": int(rows.size), "topk_overlap": topk_overlap(exact.indices, approx[rows], k),
            "measure": "share of the exact MOOR top-k that the approximate search returned", "rows": rows.tolist()}


def fuse_directory(
    out_dir: str | os.PathLike,
    *,
    embeddings_dir: str | os.PathLike | None = None,
    paths_dir: str | os.PathLike | None = None,
    embeddings: Sequence[Any] | None = None,
    condition: str = "clean",
    query_ids: str | os.PathLike | Sequence[str] | None = None,
    gallery_ids: str | os.PathLike | Sequence[str] | None = None,
    whiten: bool = True,
    gate: str = "bell",
    k: int | None = None,
    chunk_size: int = 8192,
    ann: bool = False,
    ann_check: int = DEFAULT_ANN_CHECK,
    dtype: str = "float64",
    weights_format: str = "csv",
    fusion_eps: float = 1e-6,
    progress: Callable[[str], None] | None = None,
) -> FusionSummary:
    """Fuse every condition of one input (see the module docstring) into the SCORES_DIR ``out_dir``.

    ``k``: write a top-k TREC run per condition instead of dense scores.  ``ann`` (needs ``k`` and
    ``embeddings``/``embeddings_dir``): FAISS HNSW search; ``ann_check`` queries per condition measure
    its top-k overlap with exact MOOR (0 skips it).  ``progress(line)`` is called after each
    condition.  Raises :class:`~snapbench.errors.SnapbenchError` subclasses for bad inputs/options.
    """
    given = [n for n, v in (("embeddings", embeddings), ("paths_dir", paths_dir), ("embeddings_dir", embeddings_dir))
             if v is not None]
    if len(given) != 1:
        raise ConfigError(f"give exactly one input (embeddings, paths_dir or embeddings_dir), got {given or 'none'}")
    if embeddings is not None and len(embeddings) != 4:
        raise ConfigError("embeddings must be (q_image, q_text, g_image, g_text)")
    if ann and k is None:
        raise ConfigError("ann needs k (approximate search returns a top-k)")
    if ann and paths_dir is not None:
        raise ConfigError("ann needs embeddings: path scores are already dense")
    if ann_check < 0:
        raise ConfigError(f"ann_check must be >= 0, got {ann_check}")
    if k is not None and k < 1:
        raise ConfigError(f"k must be >= 1, got {k}")
    if weights_format not in ("csv", "npy"):
        raise ConfigError(f"weights_format must be csv or npy, got {weights_format!r}")
    if dtype not in ("float32", "float64"):
        raise ConfigError(f"dtype must be float32 or float64, got {dtype!r}")
    try:
        get_gate(gate)
    except ValueError as exc:
        raise ConfigError(f"gate: {exc}") from None
    try:
        # the output must stay a SCORES_DIR that `snapbench evaluate` reads: file stem = condition id
        condition = condition_to_filename(parse_condition(condition).id)
    except ValueError as exc:
        raise ConfigError(f"condition: {exc}") from None
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot create the output folder ({exc.strerror or exc})", path=out) from None
    say = progress or (lambda line: None)
    recall_file = out / ANN_RECALL_FILE

    def write_result(cond: str, res, qids: list[str], gids: list[str], top: TopK | None) -> None:
        if top is not None:
            write_trec_run(out / f"{cond}.trec", qids, gids, top.indices, top.scores, tag=f"moor-{gate}")
        else:
            save_npy(out / f"{cond}.npy", res.scores)
        (out / WEIGHTS_DIR).mkdir(exist_ok=True)
        write_weights(out / WEIGHTS_DIR / f"{cond}.{weights_format}", res.weights, res.correlations,
                      res.text_share, res.fallback, qids)

    def record(cond: str, res, extra: dict | None = None) -> None:
        summary.conditions[cond] = {"text_share": float(res.text_share.mean()), "fallback": int(res.fallback.sum()),
                                    **(extra or {})}
        ov = f", ANN top-{k} overlap {extra['topk_overlap']:.4f} on {extra['queries']} queries" if extra else ""
        say(f"{cond}: {summary.n_queries} queries x {summary.n_gallery} gallery, mean text share "
            f"{res.text_share.mean():.4f}, fallback {int(res.fallback.sum())}{ov}")

    qids: list[str] | None = None
    gids: list[str] | None = None
    summary = FusionSummary(out, 0, 0)
    if paths_dir is not None:
        pdir = Path(paths_dir)
        if not pdir.is_dir():
            raise InputError("not a directory (expected path score files)", path=pdir)
        conds = find_path_scores(pdir, complete=True)
        if not conds:
            raise InputError("holds no path score files (expected <condition>.II.npy ... or II/<condition>.npy ...)",
                             path=pdir)
        _check_stems(conds)
        for cond, files in sorted(conds.items()):
            ps = load_path_scores(files, condition=cond)
            Q, N = ps["II"].shape
            if qids is None:
                qids = _ids(query_ids, [pdir], QUERY_IDS, Q, "query ids", "query_ids", "score rows",
                           summary.default_ids)
                gids = _ids(gallery_ids, [pdir], GALLERY_IDS, N, "gallery ids", "gallery_ids", "score columns",
                           summary.default_ids)
                summary.n_queries, summary.n_gallery = Q, N
            if (Q, N) != (len(qids), len(gids)):
                raise InputError(f"condition {cond!r}: scores are {Q} x {N}, the ids give {len(qids)} x {len(gids)}")
            try:
                res = moor_from_scores(ps["II"], ps["TT"], ps["IT"], ps["TI"], gate=gate, fusion_eps=fusion_eps)
            except ValueError as exc:
                raise InputError(f"condition {cond!r} ({', '.join(str(f) for f in files.values())}): {exc}") from None
            write_result(cond, res, qids, gids, topk(res.scores, k) if k is not None else None)
            _update_ann_recall(recall_file, cond, None)  # exact scores now: an old ANN measurement is stale
            record(cond, res)
    else:
        if embeddings_dir is not None:
            edir = Path(embeddings_dir)
            (g_image, g_text), emb_conds = find_embeddings(edir)
            _check_stems(emb_conds)
            states = sorted(emb_conds.items())
            id_dirs = [edir, edir.parent]
        else:
            q_image, q_text, g_image, g_text = embeddings  # type: ignore[misc]
            states = [(condition, (q_image, q_text))]
            id_dirs = []
        is_path = all(isinstance(g, (str, os.PathLike)) for g in (g_image, g_text))
        is_npy = is_path and str(g_image).endswith(".npy") and str(g_text).endswith(".npy")
        index = MOORIndex(whiten=whiten, gate=gate, fusion_eps=fusion_eps, dtype=dtype, chunk_size=chunk_size,
                          keep_gallery=None if not is_npy else k is None)
        if is_npy:
            index.fit(str(g_image), str(g_text))  # streamed from disk
        elif is_path:
            index.fit(load_matrix(g_image, "g_image"), load_matrix(g_text, "g_text"))
        else:
            index.fit(g_image, g_text)
        if ann:
            index.build_ann("hnsw")
        buf = None  # one (Q x N) score buffer for every state: each is saved before the next
        for cond, (qi_src, qt_src) in states:
            ni, nt = ("q_image", "q_text") if embeddings_dir is None else (f"query image embeddings of {cond}",
                                                                         f"query text embeddings of {cond}")
            qI = load_matrix(qi_src, ni) if isinstance(qi_src, (str, os.PathLike)) else np.asarray(qi_src)
            qT = load_matrix(qt_src, nt) if isinstance(qt_src, (str, os.PathLike)) else np.asarray(qt_src)
            fi = f" ({qi_src})" if isinstance(qi_src, (str, os.PathLike)) else ""
            ft = f" ({qt_src})" if isinstance(qt_src, (str, os.PathLike)) else ""
            if qI.shape != qT.shape:
                raise InputError(f"{ni}{fi} has shape {qI.shape}, {nt}{ft} has shape {qT.shape}")
            if qI.ndim != 2 or qI.shape[1] != index.dim:
                raise InputError(f"{ni}{fi} has shape {qI.shape}, the gallery has dim {index.dim}")
            if qids is None:
                qids = _ids(query_ids, id_dirs, QUERY_IDS, qI.shape[0], "query ids", "query_ids", "query rows",
                           summary.default_ids)
                gids = _ids(gallery_ids, id_dirs, GALLERY_IDS, index.n_gallery, "gallery ids", "gallery_ids",
                            "gallery rows", summary.default_ids)
                summary.n_queries, summary.n_gallery = len(qids), len(gids)
            if qI.shape[0] != len(qids):
                raise InputError(f"condition {cond!r}: {ni} has {qI.shape[0]} queries, the ids give {len(qids)}")
            extra = None
            if k is not None:
                t = index.topk(qI, qT, k, ann=ann)
                res = t.result
                write_result(cond, res, qids, gids, TopK(t.indices, t.scores))
                if ann and ann_check > 0:
                    extra = ann_topk_overlap(index, qI, qT, t.indices, k, ann_check, cond)
            else:
                if buf is None or buf.shape[0] != qI.shape[0]:
                    buf = np.empty((qI.shape[0], index.n_gallery), dtype=index.dtype)
                res = index.query(qI, qT, out=buf)
                write_result(cond, res, qids, gids, None)
            # per condition, so a run that fails later leaves no stale entry for what it rewrote
            _update_ann_recall(recall_file, cond, extra)
            record(cond, res, extra)
    assert qids is not None and gids is not None
    write_ids(out / QUERY_IDS, qids)
    write_ids(out / GALLERY_IDS, gids)
    return summary
