"""`snapbench demo`: `snapbench run` + the report on the bundled photos, with the built-in toy encoder."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from .stages.options import RunOptions

_DEFAULT = RunOptions()  # the flags' defaults are run's

DEFAULT_DATA = Path(__file__).resolve().parents[1] / "assets" / "demo"  # package data: snapbench/assets/demo
DEMO_NAME = "snapbench demo"


def holds_a_demo(out: Path) -> bool:
    """Whether ``out`` holds the output of an earlier ``snapbench demo`` (which the demo may replace).

    run.json says so (``"command": "demo"``); a demo of a snapbench that did not record it is known by
    its dataset name, which only the demo gives, and the toy encoder.  Anything else is someone's run."""
    from ..store import read_run_json, run_json_kind

    cfg = read_run_json(out)
    if cfg is None or run_json_kind(cfg) != "run":
        return False
    if "command" in cfg:
        return cfg["command"] == "demo"
    return cfg.get("encoder") == "toy" and str(cfg.get("dataset", "")).startswith(f"{DEMO_NAME} (")


def demo(
    out: Path = typer.Option(Path("demo_out"), "--out", help="Output folder (reports per mode, MOOR, report.html)."),
    data: Optional[Path] = typer.Option(
        None, "--data", help="Dataset to use instead of the bundled one (a folder with queries.jsonl, gallery.jsonl, qrels.json)."
    ),
    seed: int = typer.Option(_DEFAULT.seed, "--seed", help="Seed of the corruptions and the bootstrap."),
    workers: int = typer.Option(_DEFAULT.workers, "--workers", help="Processes that corrupt queries while the encoder runs."),
    resamples: int = typer.Option(_DEFAULT.resamples, "--resamples", help="Bootstrap resamples."),
    no_progress: bool = typer.Option(False, "--no-progress", help="Do not show progress bars."),
    force: bool = typer.Option(
        False, "--force", help="Replace OUT even when it holds a run that is not a demo's (a demo's own earlier output "
                               "is always replaced)."),
) -> None:
    """The whole paired evaluation on the bundled demo set: snapbench run + snapbench report with the toy encoder.

    12 queries x 72 conditions (54 states + 18 joint) x five retrieval modes, MOOR and two fixed-fusion
    baselines, bootstrap CIs, additivity, then OUT/report.html. The toy encoder is not a retrieval model:
    the numbers show the pipeline, not a model.  OUT may hold an earlier demo (it is replaced); any
    other run there is refused as 'snapbench run' refuses it, unless --force.
    """
    import dataclasses

    from rich.table import Table

    from ..core.conditions import parse_condition
    from ..core.validate import positive_int
    from ..data import load_dataset
    from ..render.console import stderr_console, stdout_console
    from ..render.terminal import read_report
    from ..store import claim_output_dir
    from .stages import run_benchmark

    positive_int(workers, "workers")
    positive_int(resamples, "resamples", minimum=100)
    # before anything is printed or computed: another command's folder is refused, naming demo (it writes a run)
    claim_output_dir(out, "run", command="demo")
    replace = force or holds_a_demo(out)
    console = stderr_console()
    ds = load_dataset(data or DEFAULT_DATA)
    if data is None:
        ds = dataclasses.replace(ds, name=DEMO_NAME)  # not the manifest's file name
    console.rule(f"snapbench run: {len(ds.queries)} queries, {len(ds.gallery)} gallery items, toy encoder")
    result = run_benchmark(
        ds, "toy", out,
        RunOptions(seed=seed, workers=workers, resamples=resamples, use_cache=False, force=replace, progress=not no_progress,
                   command="demo"),
        log=lambda msg: console.print(msg, markup=False, highlight=False),
    )

    table = Table(title="demo: mean hit@1 (SnapBench R@1, %) by condition kind; δ = super-additivity gap; drag vs I→I")
    for col in ("mode", "clean", "img (45)", "txt (8)", "joint (18)", "mean δ", "drag"):
        table.add_column(col, justify="right")

    def pct(v: float | None) -> str:
        return "—" if v is None else f"{100 * v + 0.0:.1f}"  # + 0.0: no "-0.0"

    for name, path in result.reports.items():
        rep = read_report(path)
        by_kind: dict[str, list[float]] = {}
        for cid, vals in rep.conditions.items():
            if vals.get("hit@1") is not None:
                by_kind.setdefault(parse_condition(cid).kind, []).append(vals["hit@1"])
        add = (rep.additivity_summary.mean or {}).get("hit@1")
        table.add_row(
            name,
            *(pct(sum(by_kind[k]) / len(by_kind[k])) if by_kind.get(k) else "—" for k in ("clean", "image", "text", "joint")),
            pct(add.delta if add else None),
            pct(rep.coarse_text_drag.value if rep.coarse_text_drag else None),
        )
    stdout_console().print(table)
    typer.echo(f"{result.n_queries} queries x {len(result.conditions)} conditions in {result.elapsed_s:.1f} s -> {out}")
    if result.html is not None:
        typer.echo(f"report: {result.html}")
