"""`snapbench evaluate` and `snapbench additivity`: paired robustness reports from score files."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from ..defaults import (
    DEFAULT_CI,
    DEFAULT_CLIFF_RATIO,
    DEFAULT_CLIFF_TOL,
    DEFAULT_KS,
    DEFAULT_RBO_DEPTH,
    DEFAULT_RBO_P,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
)
from ..errors import ConfigError, InputError, arg


def _config(k, metrics, resamples, permutations, ci, seed, include_zero_gt, set_threshold, stability_metric,
            cliff_tol, cliff_ratio, workers, rbo_p=None, rbo_depth=None, labelled=True):
    """The evaluation settings; every value is checked there (errors name the flag)."""
    from ..evaluate.config import EvaluationConfig

    kw = {} if workers is None else {"workers": workers}
    kw.update({name: v for name, v in (("rbo_p", rbo_p), ("rbo_depth", rbo_depth)) if v is not None})
    return EvaluationConfig(
        ks=k, metrics=metrics, resamples=resamples, permutations=permutations, ci=ci, seed=seed,
        include_zero_gt=include_zero_gt, set_threshold=set_threshold, stability_metric=stability_metric,
        curve_tol=cliff_tol, curve_ratio=cliff_ratio, labelled=labelled, **kw,
    )


def _check_chosen_metrics(evaluated: list[str], primary: str, stability_metric: str) -> None:
    """An explicitly chosen --primary / --stability-metric must be evaluated (defaults adapt)."""
    from ..evaluate.metrics import is_binary_metric
    from ..validate import hint_and_known

    if primary != "hit@1" and primary not in evaluated:
        raise ConfigError(f"{primary!r} is not among the evaluated metrics{hint_and_known(primary, evaluated)}",
                          param="primary")
    if stability_metric != "hit@1":
        if not is_binary_metric(stability_metric):
            raise ConfigError(f"must be a hit@k metric, got {stability_metric!r}", param="stability_metric")
        if stability_metric not in evaluated:
            raise ConfigError(f"{stability_metric!r} is not among the evaluated metrics"
                              f"{hint_and_known(stability_metric, evaluated)} (add it to {arg('metrics')} or {arg('ks')})",
                              param="stability_metric")


def _nothing_measured(report) -> bool:
    """No value at all, or labels given and no labelled value (the stability measures alone say nothing
    about the labels that were meant to be measured)."""
    from ..evaluate.stability import is_stability_metric

    labelled = report.meta.get("labelled", True) is not False
    return not any(v is not None for vals in report.conditions.values() for m, v in vals.items()
                   if not (labelled and is_stability_metric(m)))


def evaluate(
    scores_dir: Path = typer.Argument(
        ..., help="Folder with one <condition>.npy score matrix per condition (Q x N; 'clean.npy', "
        "'img__motion_blur__s2.npy', 'joint__compression+char_add__s3.npy', ...) plus query_ids.txt and "
        "gallery_ids.txt; or one <condition>.run/.trec TREC run per condition."
    ),
    qrels: Path | None = typer.Option(
        None, "--qrels", help="Relevance labels: TREC qrels ('qid 0 docid rel') or JSON {query_id: [gallery_id, ...]} "
        "(empty list = zero-GT query) or {query_id: {gallery_id: grade}}. Without it only the label-free "
        "stability measures are computed (overlap@k, rbo, flip@1: how far each condition's ranking moved from clean's)."
    ),
    out: Path | None = typer.Option(None, "--out", help="Write the JSON report here."),
    seed: int = typer.Option(DEFAULT_SEED, "--seed", help="Seed of the bootstrap resamples and permutations."),
    k: str = typer.Option(",".join(map(str, DEFAULT_KS)), "--k", help="Cut-offs for hit/recall/ndcg given without @k."),
    metrics: str | None = typer.Option(
        None, "--metrics", help="Comma list: hit, recall, ndcg (optionally @k), mrr, mrr@k, set_precision, set_recall, "
        "set_f1, reject_precision, reject_recall, reject_f1, or 'set'/'reject'. Default: hit,recall,ndcg,mrr "
        "(+ set and reject metrics when --set-threshold is given)."
    ),
    resamples: int = typer.Option(DEFAULT_RESAMPLES, "--resamples", help="Bootstrap resamples of the queries (paired, shared by all conditions)."),
    permutations: int | None = typer.Option(None, "--permutations", help="Permutations for the non-hit metrics' test (default = --resamples)."),
    ci: float = typer.Option(DEFAULT_CI, "--ci", help="Confidence level of the percentile bootstrap intervals."),
    tags: Path | None = typer.Option(None, "--tags", help="Query tags: JSON {query_id: [tag, ...] | {field: value}} or TSV 'qid<TAB>tag...'. Adds per-group results."),
    group_by: str | None = typer.Option(None, "--group-by", help="With --tags: group by the values of this field (tags 'field=value'); default: one group per tag."),
    include_zero_gt: bool = typer.Option(False, "--include-zero-gt", help="Score zero-GT queries as 0 in ranking metrics instead of excluding them."),
    set_threshold: float | None = typer.Option(None, "--set-threshold", help="Answer set = items scoring >= this; enables set and reject metrics (empty set = rejection). "
        "With TREC runs, -inf takes each run's list as the answer."),
    mode: str | None = typer.Option(None, "--mode", help="Compose a retrieval mode from per-path files <cond>.II/.TT/.IT/.TI.npy (or II/<cond>.npy ...): I2I, T2T, IT2IT, I2IT, T2IT (any case). "
        "The report records it as its target (meta.mode; MOOR for a 'snapbench moor' folder), which compare reads."),
    conditions: str | None = typer.Option(None, "--conditions", help="Only these condition ids (comma list); clean is always included."),
    allow_unknown_items: bool = typer.Option(False, "--allow-unknown-items", help="Drop (with a warning) qrels gallery ids that are not in gallery_ids.txt instead of failing."),
    table_out: Path | None = typer.Option(None, "--table-out", help="Also write a table: .csv (long, complete) or .md (readable)."),
    export_run: Path | None = typer.Option(None, "--export-run", help="Write each condition's top-k as a TREC run DIR/<condition>.run to re-check with trec_eval/ranx "
        "(they re-break equal scores their own way)."),
    export_depth: int | None = typer.Option(None, "--export-depth", help="Depth of exported runs (default: largest k)."),
    primary: str = typer.Option("hit@1", "--primary", help="Metric whose Δ, CI and p the printed table shows."),
    stability_metric: str = typer.Option("hit@1", "--stability-metric", help="hit@k metric for the stability classes (stably correct / drag / persistently wrong / boost)."),
    cliff_tol: float = typer.Option(DEFAULT_CLIFF_TOL, "--cliff-tol", help="Severity-curve rule: drops <= this (metric units) count as no drop."),
    cliff_ratio: float = typer.Option(DEFAULT_CLIFF_RATIO, "--cliff-ratio", help="Severity-curve rule: 'cliff' when the last step's drop exceeds ratio x the earlier drop."),
    workers: int | None = typer.Option(None, "--workers", help="Threads for row blocks (default: min(4, CPUs))."),
    rbo_p: float = typer.Option(DEFAULT_RBO_P, "--rbo-p", help="Persistence p of the label-free rbo (RBO_ext), in (0, 1)."),
    rbo_depth: int = typer.Option(DEFAULT_RBO_DEPTH, "--rbo-depth", help="Depth d the label-free rbo (RBO_ext) is extrapolated from."),
    per_query: bool = typer.Option(False, "--per-query", help="Also store every query's value of every condition and metric "
        "in the JSON report (key per_query), for comparing runs query by query."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Do not print the tables."),
) -> None:
    """Paired evaluation of every condition against clean: metrics, ΔR@k with bootstrap CIs and
    Holm-corrected p-values, severity curves, stability classes, additivity of joint conditions, and
    the label-free stability measures (overlap@k, rbo, flip@1) -- the only ones without --qrels.

    Exit status: 0 when something was measured, 1 when nothing was (no query has a relevant item:
    every value is null; the report is still written), 2 for an error."""
    from ..atomic import check_output_file
    from ..evaluate.runner import evaluate_directory
    from ..evaluate.terminal import check_table_path, print_report, write_report, write_table

    # outputs first: a wrong --out or --table-out must not cost a whole evaluation
    if out is not None:
        check_output_file(out, param="out")
    if table_out is not None:
        check_table_path(table_out)
    cfg = _config(k, metrics, resamples, permutations, ci, seed, include_zero_gt, set_threshold,
                  stability_metric, cliff_tol, cliff_ratio, workers, rbo_p, rbo_depth, labelled=qrels is not None)
    if qrels is None and primary == "hit@1":
        primary = "overlap@10" if "overlap@10" in cfg.metric_list() else cfg.metric_list()[0]  # no labels: no hit@1
    _check_chosen_metrics(cfg.metric_list(), primary, stability_metric)
    conds = [c.strip() for c in conditions.split(",") if c.strip()] if conditions else None
    report = evaluate_directory(
        scores_dir, qrels, cfg, mode=mode, conditions=conds, tags=tags, group_by=group_by,
        unknown_items="drop" if allow_unknown_items else "error", export_run=export_run,
        export_depth=export_depth, per_query=per_query,
    )
    for w in report.warnings or []:
        typer.echo(f"warning: {w}", err=True)
    if out is not None:
        write_report(report, out)
    if table_out is not None:
        write_table(report, table_out, primary=primary)
    if not quiet:
        print_report(report, primary=primary)
    if out is not None and not quiet:
        typer.echo(f"report written to {out}", err=True)
    if _nothing_measured(report):
        raise typer.Exit(1)


def additivity(
    source: Path = typer.Argument(..., help="A report written by 'snapbench evaluate --out' or 'snapbench run' (RUN/IT2IT/report.json, one per mode), or a SCORES_DIR (then --qrels is needed)."),
    qrels: Path | None = typer.Option(None, "--qrels", help="Relevance labels, when SOURCE is a SCORES_DIR."),
    metric: str = typer.Option("hit@1", "--metric", help="Metric of the table (SnapBench's R@1 = hit@1)."),
    seed: int = typer.Option(DEFAULT_SEED, "--seed", help="Bootstrap seed (SCORES_DIR only)."),
    resamples: int | None = typer.Option(None, "--resamples", help=f"Bootstrap resamples (SCORES_DIR only; default {DEFAULT_RESAMPLES})."),
    ci: float | None = typer.Option(None, "--ci", help=f"CI level (SCORES_DIR only; default {DEFAULT_CI})."),
    mode: str | None = typer.Option(None, "--mode", help="Retrieval mode from per-path files (see 'evaluate --help')."),
    out: Path | None = typer.Option(None, "--out", help="Write the (additivity-only) JSON report (SCORES_DIR only)."),
) -> None:
    """Print the additivity table: Exp = Δ_I + Δ_T, Obs, δ = Obs − Exp with CI per joint pair x
    severity, then the means per pair, per severity and overall (drops = clean − corrupted)."""
    from ..evaluate.terminal import print_additivity, read_report, write_report
    from ..validate import hint_and_known

    if not source.exists():
        raise InputError("no such file or folder (give a report written by 'snapbench evaluate --out' "
                         "or a SCORES_DIR)", path=source)
    if source.is_file():
        given = [f for f, v in (("--resamples", resamples), ("--ci", ci), ("--qrels", qrels), ("--mode", mode),
                                ("--out", out)) if v is not None]
        if seed != DEFAULT_SEED:
            given.insert(0, "--seed")
        if given:
            verb = "applies" if len(given) == 1 else "apply"
            raise ConfigError(f"{', '.join(given)} {verb} only when recomputing from a SCORES_DIR; {source} is a "
                              "finished report (its CIs were computed with its own settings)")
        report = read_report(source)
        if metric not in report.metrics:
            raise InputError(f"metric {metric!r} is not in the report {source}{hint_and_known(metric, report.metrics)}",
                             param="metric")
    else:
        _refuse_a_run_folder(source)
        if qrels is None:
            raise ConfigError("a SCORES_DIR needs --qrels", path=source)
        report = _additivity_report(source, qrels, metric, seed, resamples, ci, mode)
        for w in report.warnings or []:
            typer.echo(f"warning: {w}", err=True)
        if out is not None:
            write_report(report, out)
    print_additivity(report, metric=metric)
    sys.stdout.flush()


def _additivity_report(source: Path, qrels: Path, metric: str, seed: int, resamples: int | None, ci: float | None,
                       mode: str | None):
    """Evaluate only the joint conditions and the parts of them that have score files: a missing part
    is then named as what it is (no score file), never as "not selected"."""
    from ..conditions import parse_condition
    from ..evaluate.config import EvaluationConfig
    from ..evaluate.io import ScoresDir
    from ..evaluate.runner import evaluate_directory

    given = {name: v for name, v in (("resamples", resamples), ("ci", ci)) if v is not None}
    try:
        cfg = EvaluationConfig(metrics=metric, permutations=0, seed=seed, **given)  # the rest: evaluate's defaults
    except ConfigError as exc:  # the metric list is additivity's one --metric
        if exc.param != "metrics":
            raise
        raise ConfigError(exc.problem, path=exc.path, param="metric") from None
    sd = ScoresDir(source, mode=mode, qrels=qrels)
    joints = [parse_condition(c) for c in sd.conditions if parse_condition(c).kind == "joint"]
    parts = {p.id for j in joints for p in (j.image_part, j.text_part) if p is not None}
    need = [c for c in sd.conditions if c in parts or parse_condition(c).kind == "joint"]
    return evaluate_directory(source, qrels, cfg, mode=mode, conditions=need or ["clean"])


def _refuse_a_run_folder(source: Path) -> None:
    """A folder 'snapbench run' wrote holds finished reports, one per mode: name them instead of asking
    for the --qrels of a SCORES_DIR it is not."""
    from ..layout import RunDir, output_kind

    if output_kind(source) != "run":
        return  # the SCORES_DIR reader says what is wrong (and what another command's folder is)
    rd = RunDir(source)
    reports = [rd.report(t).relative_to(source).as_posix() for t in rd.targets()]
    if not reports:
        raise InputError("is a 'snapbench run' folder without reports (finish the run first), not a SCORES_DIR",
                         path=source)
    first = next((r for r in reports if r.endswith("IT2IT/report.json")), reports[0])
    more = f" and {len(reports) - 8} more" if len(reports) > 8 else ""
    raise InputError(f"is a 'snapbench run' folder, not a SCORES_DIR: give one of its reports, e.g. {source / first} "
                     f"(it has {', '.join(reports[:8])}{more})", path=source)
