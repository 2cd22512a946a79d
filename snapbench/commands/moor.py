"""`snapbench moor`: MOOR fusion of embeddings or path scores into a SCORES_DIR (or TREC runs)."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Callable, Iterator, Optional

import numpy as np
import typer

_EPILOG = (
    "Inputs, one of:\n\n"
    "* --q-image --q-text --g-image --g-text: embeddings, .npy or .safetensors (file.safetensors#key; "
    "needs snapbench\\[safetensors]). A .npy gallery is streamed from disk.\n\n"
    "* --paths-dir DIR: four path score matrices per condition, DIR/<cond>.II.npy .TT.npy .IT.npy .TI.npy "
    "or DIR/II/<cond>.npy ... (each sub-folder a SCORES_DIR), plus query_ids.txt and gallery_ids.txt "
    "(the layout `snapbench encode` writes to OUT/paths). Path scores are fused as given (gates, variance "
    "weights, fusion): whitening needs the embeddings, so --no-whiten, --dtype, --chunk-size and --ann do "
    "not apply; `snapbench encode` writes plain cosine paths, i.e. MOOR without whitening.\n\n"
    "* --embeddings-dir DIR: every condition of an EMBEDDINGS_DIR (DIR/gallery.image.npy, gallery.text.npy, "
    "<cond>.image.npy, <cond>.text.npy: the layout `snapbench encode` writes to OUT/embeddings), fused with "
    "one gallery fit; ids from DIR or its parent.\n\n"
    "Output: --out OUT is a SCORES_DIR that `snapbench evaluate` reads: OUT/<cond>.npy fused scores (Q x N) "
    "or, with --topk K, OUT/<cond>.trec TREC runs; OUT/query_ids.txt, OUT/gallery_ids.txt; per-query weights "
    "in OUT/moor_weights/<cond>.csv (query_id, w_II, w_TT, w_IT, w_TI, r_TT, r_IT, r_TI, text_share, fallback). "
    "With --ann, OUT/ann_recall.json holds, per condition, recall@K of the approximate top-K against exact "
    "MOOR on --ann-check sampled queries (and which query rows were sampled).\n\n"
    "Example: snapbench moor --q-image qI.npy --q-text qT.npy --g-image gI.npy --g-text gT.npy --out fused/"
)


def _fail(msg: str) -> None:
    typer.echo(f"error: {msg}", err=True)
    raise typer.Exit(code=2)


@contextlib.contextmanager
def _conditions_progress(n: int) -> Iterator[tuple[Callable[[], None], Callable[[str], None]]]:
    """``(advance, say)`` for a loop over ``n`` conditions: a rich progress bar on stderr when there
    are several, plain lines on stdout either way."""
    if n <= 1:
        yield (lambda: None), typer.echo
        return
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("moor", total=n)
        yield (lambda: bar.advance(task)), typer.echo


def _ann_recall(index, qI: np.ndarray, qT: np.ndarray, approx: np.ndarray, k: int, n_check: int, cond: str) -> dict:
    """recall@k of the ANN top-k against exact MOOR (one streaming pass) on a seeded sample of queries."""
    from ..fusion import recall_at_k
    from ..seeding import derive_generator

    Q = qI.shape[0]
    rows = np.arange(Q) if n_check >= Q else np.sort(derive_generator("moor-ann-check", 0, cond).choice(Q, n_check, replace=False))
    exact = index.topk(qI[rows], qT[rows], k, ann=False)
    return {"k": k, "queries": int(rows.size), "recall": recall_at_k(exact.indices, approx[rows], k),
            "rows": rows.tolist()}


def _update_ann_recall(path: Path, conditions: list[str], recalls: dict[str, dict]) -> None:
    """Merge this run's recall entries into ``path``: conditions fused now without a recall measurement
    lose their old entry (no stale numbers next to new scores); others (earlier runs into the same
    --out, e.g. one --condition at a time) are kept."""
    from ..atomic import write_text_atomic

    merged: dict = {}
    if path.exists():
        try:
            old = json.loads(path.read_text(encoding="utf-8"))
            merged = old if isinstance(old, dict) else {}
        except (OSError, ValueError):
            merged = {}
    for cond in conditions:
        merged.pop(cond, None)
    merged.update(recalls)
    if merged:
        write_text_atomic(path, json.dumps(dict(sorted(merged.items())), indent=2))
    elif path.exists():
        path.unlink()


def moor(
    out: Path = typer.Option(..., "--out", "-o", help="Output SCORES_DIR (created if missing)."),
    q_image: Optional[Path] = typer.Option(None, "--q-image", help="Query image embeddings (Q x d)."),
    q_text: Optional[Path] = typer.Option(None, "--q-text", help="Query text embeddings (Q x d)."),
    g_image: Optional[Path] = typer.Option(None, "--g-image", help="Gallery image embeddings (N x d)."),
    g_text: Optional[Path] = typer.Option(None, "--g-text", help="Gallery text (caption) embeddings (N x d)."),
    paths_dir: Optional[Path] = typer.Option(None, "--paths-dir", help="Folder of path score matrices (see below)."),
    embeddings_dir: Optional[Path] = typer.Option(None, "--embeddings-dir", help="Folder of per-condition query embeddings + the gallery's (see below); one fit for all conditions."),
    condition: str = typer.Option("clean", "--condition", help="Condition id of the embedding input, e.g. clean or img/motion_blur/s2 (output file stem, '/' as '__')."),
    query_ids: Optional[Path] = typer.Option(None, "--query-ids", help="query_ids.txt (default: from --paths-dir, or --embeddings-dir or its parent; else q0, q1, ...)."),
    gallery_ids: Optional[Path] = typer.Option(None, "--gallery-ids", help="gallery_ids.txt (default: from --paths-dir, or --embeddings-dir or its parent; else g0, g1, ...)."),
    no_whiten: bool = typer.Option(False, "--no-whiten", help="Skip gallery-side whitening (only L2-normalise)."),
    gate: str = typer.Option("bell", "--gate", help="Gate: bell, linear, sigmoid, inverse_bell, pure_r2, none."),
    topk: Optional[int] = typer.Option(None, "--topk", min=1, help="Write a top-K TREC run per condition instead of dense scores."),
    chunk_size: int = typer.Option(8192, "--chunk-size", min=1, help="Gallery rows per chunk (streaming fit and top-k)."),
    ann: bool = typer.Option(False, "--ann", help="With --topk: FAISS HNSW approximate search (pip install snapbench\\[ann])."),
    ann_check: Optional[int] = typer.Option(None, "--ann-check", min=0, help="With --ann: queries per condition (sampled, seeded) whose exact top-K measures the ANN recall@K (default 256); 0 skips it."),
    dtype: str = typer.Option("float64", "--dtype", help="float64 (exact) or float32 (faster scoring)."),
    weights_format: str = typer.Option("csv", "--weights-format", help="csv (with query ids) or npy (Q x 4)."),
    fusion_eps: float = typer.Option(1e-6, "--fusion-eps", help="Σw below this falls back to s_II."),
) -> None:
    """Apply MOOR (whitening, four paths, Bell gate, variance weights) to embeddings or path scores."""

    from ..fusion import MOORIndex, moor_from_scores, write_trec_run
    from ..fusion.gates import get_gate
    from ..fusion.io import find_embedding_conditions, find_path_conditions, load_matrix, load_path_scores, read_ids, save_npy, write_ids, write_weights
    from ..fusion.search import TopK
    from ..fusion.search import topk as dense_topk

    emb = [q_image, q_text, g_image, g_text]
    given = [n for n, v in (("the embedding files", any(e is not None for e in emb)), ("--paths-dir", paths_dir),
                            ("--embeddings-dir", embeddings_dir)) if v]
    if len(given) > 1:
        _fail(f"give one input: {' or '.join(given)}, not several")
    if not given or (given == ["the embedding files"] and not all(e is not None for e in emb)):
        missing = [n for n, e in zip(("--q-image", "--q-text", "--g-image", "--g-text"), emb) if e is None]
        _fail(f"missing {', '.join(missing)} (or use --embeddings-dir or --paths-dir)")
    if embeddings_dir is not None and condition != "clean":
        _fail("--condition names the single condition of --q-image/--q-text; --embeddings-dir takes the names from its files")
    if ann and topk is None:
        _fail("--ann needs --topk K")
    if ann_check is not None and not ann:
        _fail("--ann-check measures the recall of --ann; add --ann (and --topk K)")
    if ann_check is None:
        ann_check = 256
    if weights_format not in ("csv", "npy"):
        _fail(f"--weights-format must be csv or npy, got {weights_format!r}")
    if dtype not in ("float32", "float64"):
        _fail(f"--dtype must be float32 or float64, got {dtype!r}")
    try:
        get_gate(gate)
    except ValueError as exc:
        _fail(f"--gate: {exc}")
    from ..conditions import condition_to_filename, parse_condition

    try:
        # the output must stay a SCORES_DIR that `snapbench evaluate` reads: file stem = condition id
        condition = condition_to_filename(parse_condition(condition).id)
    except ValueError as exc:
        _fail(f"--condition: {exc}")

    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        _fail(f"{out}: cannot create the output folder --out ({exc.strerror or exc})")

    def ids_or_default(path: Optional[Path], fallback_dirs: list[Path], fname: str, n: int, prefix: str, what: str) -> list[str]:
        src = path
        if src is None:
            src = next((c for d in fallback_dirs for c in (d / fname, d / "II" / fname) if c.exists()), None)
        if src is None:
            return [f"{prefix}{i}" for i in range(n)]
        ids = read_ids(src, what)
        if len(ids) != n:
            if paths_dir is not None:
                have = f"the scores have {n} {'rows' if prefix == 'q' else 'columns'}"
            else:
                have = f"the embeddings hold {n} {'queries' if prefix == 'q' else 'gallery items'}"
            raise ValueError(f"{what}: {src} has {len(ids)} ids, {have}")
        return ids

    def write_result(cond: str, res, qids: list[str], gids: list[str], top=None) -> None:
        if top is not None:
            write_trec_run(out / f"{cond}.trec", top, qids, gids, run_name=f"moor-{gate}")
        else:
            save_npy(out / f"{cond}.npy", res.scores)
        (out / "moor_weights").mkdir(exist_ok=True)
        wpath = out / "moor_weights" / f"{cond}.{weights_format}"
        write_weights(wpath, res.weights, res.correlations, res.text_share, res.fallback, qids)

    def check_condition_names(names_to_files: dict) -> None:
        # outputs are named <condition>.npy/.trec: a stem that is no condition id would make the whole
        # SCORES_DIR unreadable for `snapbench evaluate`, so refuse before any work
        for stem, files in sorted(names_to_files.items()):
            first = next(iter(files.values())) if isinstance(files, dict) else files[0]
            try:
                canonical = condition_to_filename(parse_condition(stem).id)
            except ValueError as exc:
                raise ValueError(f"{first}: {exc}; rename or move the file") from None
            if canonical != stem:  # e.g. s01 for s1: evaluate would read both as one condition
                raise ValueError(f"{first}: write the condition as {canonical!r}, not {stem!r}")

    recall_file = out / "ann_recall.json"
    try:
        if paths_dir is not None:
            conds = find_path_conditions(paths_dir)
            check_condition_names(conds)
            qids = gids = None
            with _conditions_progress(len(conds)) as (advance, say):
                for cond, files in sorted(conds.items()):
                    ps = load_path_scores(files, condition=cond)
                    Q, N = ps["II"].shape
                    if qids is None:
                        qids = ids_or_default(query_ids, [paths_dir], "query_ids.txt", Q, "q", "query ids")
                        gids = ids_or_default(gallery_ids, [paths_dir], "gallery_ids.txt", N, "g", "gallery ids")
                    if (Q, N) != (len(qids), len(gids)):
                        raise ValueError(f"condition {cond!r}: scores are {Q} x {N}, ids give {len(qids)} x {len(gids)}")
                    try:
                        res = moor_from_scores(ps["II"], ps["TT"], ps["IT"], ps["TI"], gate=gate, fusion_eps=fusion_eps)
                    except ValueError as exc:
                        raise ValueError(f"condition {cond!r} ({', '.join(str(f) for f in files.values())}): {exc}") from None
                    top = dense_topk(res.scores, topk) if topk is not None else None
                    write_result(cond, res, qids, gids, top)
                    _update_ann_recall(recall_file, [cond], {})  # exact scores now: an old ANN recall is stale
                    say(f"{cond}: {Q} queries x {N} gallery, mean text share {res.text_share.mean():.4f}, "
                        f"fallback {int(res.fallback.sum())}")
                    advance()
        else:
            if embeddings_dir is not None:
                (g_image, g_text), emb_conds = find_embedding_conditions(embeddings_dir)
                check_condition_names(emb_conds)
                states = sorted(emb_conds.items())
                id_dirs = [embeddings_dir, embeddings_dir.parent]
            else:
                assert q_image and q_text and g_image and g_text
                states = [(condition, (q_image, q_text))]
                id_dirs = []
            is_npy = g_image.suffix == ".npy" and g_text.suffix == ".npy"
            index = MOORIndex(
                whiten=not no_whiten, gate=gate, fusion_eps=fusion_eps, dtype=dtype, chunk_size=chunk_size,
                keep_gallery=None if not is_npy else topk is None,
            )
            if is_npy:
                index.fit(str(g_image), str(g_text))  # streamed from disk
            else:
                index.fit(load_matrix(g_image, "--g-image"), load_matrix(g_text, "--g-text"))
            if ann:
                index.build_ann("hnsw")
            qids = gids = None
            recalls: dict[str, dict] = {}
            buf = None  # one (Q x N) score buffer for every state: each is saved before the next
            with _conditions_progress(len(states)) as (advance, say):
                for cond, (qi_path, qt_path) in states:
                    ni, nt = ("--q-image", "--q-text") if embeddings_dir is None else (f"query image embeddings of {cond}", f"query text embeddings of {cond}")
                    qI, qT = load_matrix(qi_path, ni), load_matrix(qt_path, nt)
                    if qI.shape != qT.shape:
                        raise ValueError(f"{ni} {qi_path} has shape {qI.shape}, {nt} {qt_path} has shape {qT.shape}")
                    if qI.shape[1] != index.dim:
                        raise ValueError(f"queries ({qi_path}, {qt_path}) have dim {qI.shape[1]}, the gallery ({g_image}) has dim {index.dim}")
                    if qids is None:
                        qids = ids_or_default(query_ids, id_dirs, "query_ids.txt", qI.shape[0], "q", "query ids")
                        gids = ids_or_default(gallery_ids, id_dirs, "gallery_ids.txt", index.n_gallery, "g", "gallery ids")
                    if qI.shape[0] != len(qids):
                        raise ValueError(f"condition {cond!r}: {qi_path} has {qI.shape[0]} queries, the ids give {len(qids)}")
                    if topk is not None:
                        t = index.topk(qI, qT, topk, ann=ann)
                        write_result(cond, t.result, qids, gids, TopK(t.indices, t.scores))
                        res = t.result
                        if ann and ann_check > 0:
                            recalls[cond] = _ann_recall(index, qI, qT, t.indices, topk, ann_check, cond)
                    else:
                        if buf is None or buf.shape[0] != qI.shape[0]:
                            buf = np.empty((qI.shape[0], index.n_gallery), dtype=index.dtype)
                        res = index.query(qI, qT, out=buf)
                        write_result(cond, res, qids, gids)
                    # per condition, so a run that fails later leaves no stale entry for what it rewrote
                    _update_ann_recall(recall_file, [cond], {cond: recalls[cond]} if cond in recalls else {})
                    extra = f", ANN recall@{topk} {recalls[cond]['recall']:.4f} on {recalls[cond]['queries']} queries" if cond in recalls else ""
                    say(f"{cond}: {len(qids)} queries x {len(gids)} gallery, mean text share "
                        f"{res.text_share.mean():.4f}, fallback {int(res.fallback.sum())}{extra}")
                    advance()
        write_ids(out / "query_ids.txt", qids)
        write_ids(out / "gallery_ids.txt", gids)
    except (ValueError, ImportError) as exc:
        _fail(str(exc))
    typer.echo(f"wrote {out}")


moor.__doc__ = (moor.__doc__ or "") + "\n\n" + _EPILOG
