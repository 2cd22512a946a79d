"""Stage 7, report: the run folder's final run.json, its HTML report, and the :class:`RunResult`.

:func:`finish_run` closes a run that was computed; :func:`reused_run` reads back one that the folder
held complete already (same fingerprint, same evaluation settings: see :mod:`.resume`).  Both write
``traffic.json`` when the run is given a diagnose folder (``--traffic``), then the HTML report.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from ...core.targets import TargetPlan
from ...core.userfiles import read_json
from ...store.folders import RunDir
from .measured import run_target_outcome
from .options import RunOptions, RunResult
from .queries import QueryEmbeddings
from .resume import RunState, save_run_json

__all__ = ["Evaluated", "finish_run", "reused_run"]


@dataclass
class Evaluated:
    """What the score + evaluate stage hands over: the modes evaluated (after the shared-space check),
    a note about modes it had to skip, and the report of each target."""

    modes: TargetPlan
    note: str | None
    reports: dict[str, Path]


def _build_html(out: Path, say: Callable[[str], None]) -> Path | None:
    """The run's report.  report.html is its last file, so it exists only once a report was finished:
    an older one goes first, and a run read back without it (the report stage was interrupted, or
    the run was made with ``--no-report``) gets its report then."""
    from ...render import build_report

    RunDir(out).report_html.unlink(missing_ok=True)
    rep = build_report(out)
    for topic, lines in rep.notes.items():
        for line in lines:
            say(f"report ({topic}): {line}")
    html = RunDir(out).report_html
    return html if html.exists() else None


def _write_traffic(state: RunState, options: RunOptions, say: Callable[[str], None]) -> bool:
    """``--traffic``: DIR/traffic.json from the run's reports (whether just computed or read back)."""
    if options.traffic is None:
        return False
    from ..traffic import write_traffic

    say(f"traffic: {write_traffic(state.dir.root, options.traffic)}")
    return True


def _write_headline(state: RunState) -> None:
    """DIR/headline.json: the numbers the command prints, written once from the finished reports.  A
    run read back keeps its file (its reports did not change: the folder stays untouched)."""
    from ...render.aggregate import write_headline

    write_headline(state.dir.root)


def finish_run(state: RunState, dataset: Any, queries: QueryEmbeddings, evaluated: Evaluated, options: RunOptions,
               say: Callable[[str], None], t0: float) -> RunResult:
    """Mark the run complete in run.json (final modes, notes, queries evaluated), build the HTML report."""
    notes = list(state.meta.get("notes", []))
    if evaluated.note:
        notes.append(evaluated.note)
    if queries.dropped:
        notes.append(f"{len(queries.dropped)} of {len(dataset.queries)} queries dropped from every state (dropped_queries.json)")
    state.meta.update({"modes": list(evaluated.modes.targets), "notes": notes, "status": "complete",
                       "n_queries_evaluated": int(queries.keep.size)})
    outcome = None
    if options.severity_target is not None:  # recorded only with a target: other run.json files are unchanged
        outcome = run_target_outcome(queries.measured)
        state.meta["severity_target_outcome"] = outcome.to_json()
    # headline.json before run.json says "complete": a run killed in between is redone, not read back
    # without it (a complete folder is never written to again); so is stability_vs_loss where no report
    # computes it (with a report it is recorded after, from the report's stability.json: reused_run
    # finishes a run stopped while its report was written)
    if not options.report:
        _record_stability(state, built=False)
    _write_headline(state)
    save_run_json(state)
    _write_traffic(state, options, say)
    html = _build_html(state.dir.root, say) if options.report else None
    if options.report and _record_stability(state, built=True):
        save_run_json(state)
    return RunResult(state.dir.root, list(evaluated.modes.targets), list(state.meta["conditions"]), int(queries.keep.size),
                     len(dataset.gallery), queries.dropped, notes, evaluated.reports, html, time.perf_counter() - t0,
                     dict(queries.timings), target_outcome=outcome)


def _record_stability(state: RunState, *, built: bool) -> bool:
    """run.json's ``stability_vs_loss``: whether the label-free measures track the hit@1 loss, per mode
    (:func:`snapbench.render.stability.stability_vs_loss`, computed from the per-query tables).  The
    report wrote it as stability.json when it was built; without a report it is computed here.  False
    when the run has nothing to record (no labels, too few conditions)."""
    path = RunDir(state.dir.root).stability
    if built:
        body = read_json(path, what="stability") if path.is_file() else None
    else:
        from ...render.stability import stability_vs_loss
        from ...store.rundir import load_run_dir

        body = stability_vs_loss(load_run_dir(state.dir.root))
    if body is None:
        return False
    state.meta["stability_vs_loss"] = body
    return True


def reused_run(state: RunState, dataset: Any, options: RunOptions, say: Callable[[str], None], t0: float) -> RunResult:
    """The :class:`RunResult` of a folder that holds this run complete already.  Its reports are read
    back; ``--traffic`` is honoured all the same (traffic.json written, the HTML report rebuilt), and
    an unfinished HTML report (no report.html) is written, and with it run.json's missing
    ``stability_vs_loss`` (the last thing :func:`finish_run` records)."""
    from ...core.records import TargetOutcome

    meta, rundir = state.meta, state.dir
    dropped = read_json(rundir.dropped_queries, what="dropped queries") if rundir.dropped_queries.is_file() else {}
    traffic = _write_traffic(state, options, say)
    if options.report and not rundir.report_html.is_file():
        say("the report was not finished (no report.html): writing it")
        _build_html(rundir.root, say)
    elif traffic and options.report:
        _build_html(rundir.root, say)
    # a run stopped after run.json said "complete" (while its report was written) records
    # stability_vs_loss now, so that run.json does not depend on whether the run was interrupted
    if "stability_vs_loss" not in meta and _record_stability(state, built=options.report):
        save_run_json(state)
    html = rundir.report_html if rundir.report_html.is_file() else None
    return RunResult(rundir.root, list(meta.get("modes", [])), list(meta.get("conditions", [])),
                     int(meta.get("n_queries_evaluated", 0)), len(dataset.gallery), dict(dropped), list(meta.get("notes", [])),
                     {t: rundir.report(t) for t in rundir.targets()}, html, time.perf_counter() - t0, {}, reused=True,
                     target_outcome=TargetOutcome.from_json(meta.get("severity_target_outcome")))
