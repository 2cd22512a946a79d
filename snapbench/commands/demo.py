"""`snapbench demo`: the whole flow on the bundled photos, with the built-in toy encoder."""

from __future__ import annotations

import json
import os
from pathlib import Path

import typer

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "assets" / "demo"


def demo(
    out: Path = typer.Option(Path("demo_out"), "--out", help="Output folder."),
    data: Path | None = typer.Option(None, "--data", help="Folder with queries.jsonl, gallery.jsonl, qrels.json (default: the bundled assets/demo)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the corruptions and the bootstrap."),
    workers: int = typer.Option(1, "--workers", min=1, help="Worker processes for the corruption step."),
    resamples: int = typer.Option(10000, "--resamples", min=100, help="Bootstrap resamples."),
) -> None:
    """Corrupt -> encode -> score -> fuse (fixed joint vs MOOR) -> evaluate, on the bundled demo set.

    Writes corrupted/ (PNG variants + manifest), encoded/ (embeddings, path scores), moor/ (fused
    scores + weights) and two reports (report_joint.json, report_moor.json) under --out, and prints
    a summary. The toy encoder is not a retrieval model: the numbers show the pipeline, not a model.
    """
    import numpy as np
    from rich.console import Console
    from rich.table import Table

    from ..atomic import write_text_atomic
    from ..conditions import parse_condition
    from ..corruptions.pipeline import run_corruption
    from ..encode import encode_corrupted
    from ..errors import InputError, OutputError
    from ..evaluate import EvaluationConfig, evaluate_directory, write_report
    from ..fusion import fuse_directory
    from ..layout import EMBEDDINGS, PATHS
    from ..models import get_encoder

    console = Console()
    data = data or DEFAULT_DATA
    need = [data / n for n in ("queries.jsonl", "gallery.jsonl", "qrels.json")]
    if not all(p.is_file() for p in need):
        raise InputError("lacks queries.jsonl/gallery.jsonl/qrels.json (pass --data)", path=data)
    if out.exists() and not out.is_dir():
        raise OutputError("--out names a file, not a folder", path=out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot create the output folder ({exc.strerror or exc})", path=out) from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise OutputError("the output folder is not writable", path=out)

    console.rule("1/4 corrupt: clean + 45 image + 8 text + 18 joint conditions")
    summary = run_corruption(need[0], out / "corrupted", seed=seed, joint=True, workers=workers, force=True)
    console.print(f"written {summary.written}, reused {summary.reused}, skipped {summary.skipped}")

    console.rule("2/4 encode (toy encoder) and score the four paths")
    enc = encode_corrupted(out / "corrupted", need[1], get_encoder("toy"), out / "encoded")
    console.print(f"{enc.n_queries} queries x {len(enc.conditions)} conditions vs {enc.n_gallery} gallery items")

    console.rule("3/4 fuse: MOOR, gallery fitted once")
    moor_dir = out / "moor"
    fused = fuse_directory(moor_dir, embeddings_dir=out / "encoded" / EMBEDDINGS)
    console.print(f"mean text-path weight share {fused.mean_text_share:.3f} (paper: ~0.065)")

    console.rule("4/4 evaluate: paired ΔR@k with bootstrap CIs, additivity")
    cfg = EvaluationConfig(seed=seed, resamples=resamples)
    reports = {
        "Joint α=0.5": evaluate_directory(out / "encoded" / PATHS, need[2], cfg, mode="IT2IT"),
        "MOOR": evaluate_directory(moor_dir, need[2], cfg),
    }
    write_report(reports["Joint α=0.5"], out / "report_joint.json")
    write_report(reports["MOOR"], out / "report_moor.json")

    table = Table(title="demo: mean hit@1 (SnapBench R@1, %) by condition kind; δ = super-additivity gap; drag = coarse-text drag")
    for col in ("fusion", "clean", "img (45)", "txt (8)", "joint (18)", "mean δ", "drag"):
        table.add_column(col, justify="right")
    for name, rep in reports.items():
        by_kind: dict[str, list[float]] = {}
        for cid, vals in rep["conditions"].items():
            by_kind.setdefault(parse_condition(cid).kind, []).append(vals["hit@1"])
        add = rep.get("additivity_summary", {}).get("mean", {}).get("hit@1", {})
        drag = rep.get("coarse_text_drag") or {}
        fmt = lambda v: "—" if v is None else f"{100 * v:.1f}"
        table.add_row(
            name,
            *(fmt(float(np.mean(by_kind[k]))) if by_kind.get(k) else "—" for k in ("clean", "image", "text", "joint")),
            fmt(add.get("delta") if isinstance(add, dict) else None),
            fmt(drag.get("value")),
        )
    console.print(table)
    console.print(
        f"reports: {out / 'report_joint.json'}, {out / 'report_moor.json'}; "
        f"tables: snapbench evaluate {out / 'moor'} --qrels {need[2]}"
    )
    write_text_atomic(out / "summary.json", json.dumps({k: {"n_queries": r["n_queries"], "n_excluded_zero_gt": r["n_excluded_zero_gt"]} for k, r in reports.items()}, indent=2))
