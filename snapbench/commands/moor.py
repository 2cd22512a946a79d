"""`snapbench moor`: MOOR fusion of embeddings or path scores into a SCORES_DIR (or TREC runs)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

import typer

from ..errors import ConfigError

_EPILOG = (
    "Inputs, one of:\n\n"
    "* --q-image --q-text --g-image --g-text: embeddings, .npy or .safetensors (file.safetensors#key; "
    "needs snapbench[safetensors]). A .npy gallery is streamed from disk.\n\n"
    "* --paths-dir DIR: four path score matrices per condition, DIR/<cond>.II.npy .TT.npy .IT.npy .TI.npy "
    "or DIR/II/<cond>.npy ... (each sub-folder a SCORES_DIR), plus query_ids.txt and gallery_ids.txt "
    "(the layout `snapbench encode` writes to OUT/paths). Path scores are fused as given (gates, variance "
    "weights, fusion): whitening needs the embeddings, so --no-whiten, --dtype, --chunk-size and --ann do "
    "not apply; `snapbench encode` writes plain cosine paths, i.e. MOOR without whitening.\n\n"
    "* --embeddings-dir DIR: every condition of an EMBEDDINGS_DIR (DIR/gallery.image.npy, gallery.text.npy, "
    "<cond>.image.npy, <cond>.text.npy: the layout `snapbench encode` writes to OUT/embeddings), fused with "
    "one gallery fit; ids from DIR or its parent.\n\n"
    "Ids: --query-ids/--gallery-ids, else the files found next to the input; else the positions "
    "(q0, q1, ... / g0, g1, ...) are used and written to OUT (a warning says so): qrels must then use "
    "those ids.\n\n"
    "Output: --out OUT is a SCORES_DIR that `snapbench evaluate` reads: OUT/<cond>.npy fused scores (Q x N) "
    "or, with --topk K, OUT/<cond>.trec TREC runs; OUT/query_ids.txt, OUT/gallery_ids.txt; per-query weights "
    "in OUT/moor_weights/<cond>.csv (query_id, w_II, w_TT, w_IT, w_TI, r_TT, r_IT, r_TI, text_share, fallback). "
    "With --ann, OUT/ann_recall.json holds, per condition, the top-K overlap of the approximate top-K with "
    "exact MOOR (key topk_overlap: the share of the exact top-K the ANN search returned) on --ann-check "
    "sampled queries (and which query rows were sampled).\n\n"
    "Example: snapbench moor --q-image qI.npy --q-text qT.npy --g-image gI.npy --g-text gT.npy "
    "--query-ids qids.txt --gallery-ids gids.txt --out fused/"
)

@contextlib.contextmanager
def _conditions_progress() -> Iterator[Callable[[str], None]]:
    """A line printer for each fused condition, with a spinner on stderr while the work runs."""
    from ..console import stderr_console

    console = stderr_console()
    with console.status("moor: fusing"):
        yield typer.echo


def moor(
    out: Path = typer.Option(..., "--out", "-o", help="Output SCORES_DIR (created if missing)."),
    q_image: Path | None = typer.Option(None, "--q-image", help="Query image embeddings (Q x d)."),
    q_text: Path | None = typer.Option(None, "--q-text", help="Query text embeddings (Q x d)."),
    g_image: Path | None = typer.Option(None, "--g-image", help="Gallery image embeddings (N x d)."),
    g_text: Path | None = typer.Option(None, "--g-text", help="Gallery text (caption) embeddings (N x d)."),
    paths_dir: Path | None = typer.Option(None, "--paths-dir", help="Folder of path score matrices (see below)."),
    embeddings_dir: Path | None = typer.Option(None, "--embeddings-dir", help="Folder of per-condition query embeddings + the gallery's (see below); one fit for all conditions."),
    condition: str = typer.Option("clean", "--condition", help="Condition id of the embedding input, e.g. clean or img/motion_blur/s2 (output file stem, '/' as '__')."),
    query_ids: Path | None = typer.Option(None, "--query-ids", help="query_ids.txt (default: from --paths-dir, or --embeddings-dir or its parent; else q0, q1, ...)."),
    gallery_ids: Path | None = typer.Option(None, "--gallery-ids", help="gallery_ids.txt (default: from --paths-dir, or --embeddings-dir or its parent; else g0, g1, ...)."),
    no_whiten: bool = typer.Option(False, "--no-whiten", help="Skip gallery-side whitening (only L2-normalise)."),
    gate: str = typer.Option("bell", "--gate", help="Gate: bell, linear, sigmoid, inverse_bell, pure_r2, none."),
    topk: int | None = typer.Option(None, "--topk", help="Write a top-K TREC run per condition instead of dense scores (evaluate then flags metrics deeper than K)."),
    chunk_size: int = typer.Option(8192, "--chunk-size", help="Gallery rows per chunk (streaming fit and top-k)."),
    ann: bool = typer.Option(False, "--ann", help="With --topk: FAISS HNSW approximate search (needs snapbench[ann])."),
    ann_check: int | None = typer.Option(None, "--ann-check", help="With --ann: queries per condition (sampled, seeded) whose exact top-K measures the ANN top-K overlap (default 256); 0 skips it."),
    dtype: str = typer.Option("float64", "--dtype", help="float64 (exact) or float32 (faster scoring)."),
    weights_format: str = typer.Option("csv", "--weights-format", help="csv (with query ids) or npy (Q x 4)."),
    fusion_eps: float = typer.Option(1e-6, "--fusion-eps", help="Σw below this falls back to s_II."),
) -> None:
    """Apply MOOR (whitening, four paths, Bell gate, variance weights) to embeddings or path scores."""
    from ..fusion.run import DEFAULT_ANN_CHECK, FuseOptions, fuse_directory

    emb = [q_image, q_text, g_image, g_text]
    given = [n for n, v in (("the embedding files", any(e is not None for e in emb)), ("--paths-dir", paths_dir),
                            ("--embeddings-dir", embeddings_dir)) if v]
    if len(given) > 1:
        raise ConfigError(f"give one input: {' or '.join(given)}, not several")
    if not given or (given == ["the embedding files"] and not all(e is not None for e in emb)):
        missing = [n for n, e in zip(("--q-image", "--q-text", "--g-image", "--g-text"), emb) if e is None]
        raise ConfigError(f"missing {', '.join(missing)} (or use --embeddings-dir or --paths-dir)")
    if embeddings_dir is not None and condition != "clean":
        raise ConfigError("--condition names the single condition of --q-image/--q-text; --embeddings-dir takes the names from its files")
    if ann_check is not None and not ann:
        raise ConfigError("--ann-check measures the overlap of --ann with exact MOOR; add --ann (and --topk K)")
    with _conditions_progress() as say:
        summary = fuse_directory(
            out, embeddings_dir=embeddings_dir, paths_dir=paths_dir,
            embeddings=emb if given == ["the embedding files"] else None,
            condition=condition, query_ids=query_ids, gallery_ids=gallery_ids, progress=say,
            options=FuseOptions(whiten=not no_whiten, gate=gate, k=topk, chunk_size=chunk_size, ann=ann,
                                ann_check=DEFAULT_ANN_CHECK if ann_check is None else ann_check, dtype=dtype,
                                weights_format=weights_format, fusion_eps=fusion_eps),
        )
    for fname in summary.default_ids:
        typer.echo(f"warning: no {fname} given or found: wrote positional ids ({fname[0]}0, {fname[0]}1, ...) "
                   f"to {out / fname}; qrels must use them", err=True)
    typer.echo(f"wrote {out}")


moor.__doc__ = (moor.__doc__ or "") + "\n\n" + _EPILOG
