"""`snapbench evaluate` and `snapbench additivity`: paired robustness reports from score files.

From a SCORES_DIR (or TREC runs) and qrels to the typed report -- the code path of ``snapbench evaluate``.

Memory: conditions are processed one at a time, each in row blocks read from its memmap; only small
per-query vectors (one per metric) are kept per condition.  The statistics are in
:mod:`.summarize`, one condition's ranking in :mod:`.condition`, the settings in :mod:`.config`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import typer

from ..core.conditions import parse_condition
from ..core.defaults import DEFAULT_CI, DEFAULT_CLIFF_RATIO, DEFAULT_CLIFF_TOL, DEFAULT_KS, DEFAULT_RESAMPLES, DEFAULT_SEED
from ..core.errors import ConfigError, EvaluationInputError, InputError, arg
from ..core.records import DepthLimit, PerQuery, Report
from ..core.validate import LIST_MAX, positive_int, unknown_name
from ..data.qrels import load_qrels, load_tags, query_groups
from ..evaluate.condition import ConditionEval, depth_limited_metrics, evaluate_matrix, evaluate_ranking, per_query_values
from ..evaluate.config import EvaluationConfig
from ..evaluate.drag import DRAG_METRIC, coarse_text_drag_ci
from ..evaluate.metrics import Labels, ranking_depth
from ..evaluate.summarize import evaluate_conditions
from ..store import output_kind
from ..store.scores import ComposedScores, ScoresDir, write_run

__all__ = ['ConditionEval', 'EvaluationConfig', 'evaluate_conditions', 'evaluate_directory', 'evaluate_matrix', 'evaluate_ranking', 'depth_limited_metrics', 'nothing_measured']

def _config(k, metrics, resamples, permutations, ci, seed, include_zero_gt, set_threshold, stability_metric,
            cliff_tol, cliff_ratio, workers):
    """The evaluation settings; every value is checked there (errors name the flag)."""
    from ..evaluate.config import EvaluationConfig

    kw = {} if workers is None else {"workers": workers}
    return EvaluationConfig(
        ks=k, metrics=metrics, resamples=resamples, permutations=permutations, ci=ci, seed=seed,
        include_zero_gt=include_zero_gt, set_threshold=set_threshold, stability_metric=stability_metric,
        curve_tol=cliff_tol, curve_ratio=cliff_ratio, **kw,
    )


def _check_chosen_metrics(evaluated: list[str], primary: str, stability_metric: str) -> None:
    """An explicitly chosen --primary / --stability-metric must be evaluated (defaults adapt)."""
    from ..core.validate import hint_and_known
    from ..evaluate.metrics import is_binary_metric

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
    return not any(v is not None for vals in report.conditions.values() for v in vals.values())


def evaluate(
    scores_dir: Path = typer.Argument(
        ..., help="Folder with one <condition>.npy score matrix per condition (Q x N; 'clean.npy', "
        "'img__motion_blur__s2.npy', 'joint__compression+char_add__s3.npy', ...) plus query_ids.txt and "
        "gallery_ids.txt; or one <condition>.run/.trec TREC run per condition."
    ),
    qrels: Path = typer.Option(
        ..., "--qrels", help="Relevance labels: TREC qrels ('qid 0 docid rel') or JSON {query_id: [gallery_id, ...]} "
        "(empty list = zero-GT query) or {query_id: {gallery_id: grade}}."
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
    per_query: bool = typer.Option(False, "--per-query", help="Also store every query's value of every condition and metric "
        "in the JSON report (key per_query), for comparing runs query by query."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Do not print the tables."),
) -> None:
    """Paired evaluation of every condition against clean: metrics, ΔR@k with bootstrap CIs and
    Holm-corrected p-values, severity curves, stability classes, additivity of joint conditions.

    Exit status: 0 when something was measured, 1 when nothing was (no query has a relevant item:
    every value is null; the report is still written), 2 for an error."""
    from ..render.terminal import check_table_path, print_report, write_report, write_table
    from ..store.atomic import check_output_file
    from .evaluate import evaluate_directory

    # outputs first: a wrong --out or --table-out must not cost a whole evaluation
    if out is not None:
        check_output_file(out, param="out")
    if table_out is not None:
        check_table_path(table_out)
    cfg = _config(k, metrics, resamples, permutations, ci, seed, include_zero_gt, set_threshold,
                  stability_metric, cliff_tol, cliff_ratio, workers)
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
    from ..core.validate import hint_and_known
    from ..render.terminal import print_additivity, read_report, write_report

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
    from ..core.conditions import parse_condition
    from ..evaluate.config import EvaluationConfig
    from ..store.scores import ScoresDir
    from .evaluate import evaluate_directory

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
    from ..store import RunDir, output_kind

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


def evaluate_directory(
    scores_dir: str | Path,
    qrels: str | Path,
    config: EvaluationConfig | None = None,
    *,
    mode: str | None = None,
    conditions: Sequence[str] | None = None,
    tags: str | Path | None = None,
    group_by: str | None = None,
    unknown_items: str = "error",
    export_run: str | Path | None = None,
    export_depth: int | None = None,
    per_query: bool = False,
    progress: Callable[[str], None] | None = None,
) -> Report:
    """Evaluate a SCORES_DIR (see :mod:`snapbench.store.scores`) against ``qrels``: the typed report.

    ``conditions`` restricts the evaluation to these ids (clean is always added).  With
    ``export_run`` the top ``export_depth`` (default: the largest k) of every condition is written
    to ``DIR/<condition file name>.run``.  ``per_query`` adds every query's value of every condition
    and metric (:attr:`Report.per_query`).  ``report.warnings`` lists what was accepted with a doubt.
    """
    cfg = config or EvaluationConfig()
    metrics = cfg.metric_list()
    if export_depth is not None:
        positive_int(export_depth, "export_depth")  # not 0 (the default) or -1 (one less than the default)
    sd = ScoresDir(scores_dir, mode=mode, qrels=qrels)
    if sd.kind == "npy":
        sd.scores("clean")  # a wrong id list shows up as a shape mismatch, not as unknown qrels ids
    dropped: list[str] = []
    labels, notes = load_qrels(qrels, sd.query_ids, sd.gallery_ids, unknown_items=unknown_items, dropped=dropped)
    notes = list(sd.warnings) + notes
    conds = _selected(sd, conditions)
    depth = 0
    if export_run is not None:
        depth = export_depth or ranking_depth(metrics)
        try:
            Path(export_run).mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise EvaluationInputError(f"cannot create the run folder ({e.strerror or e})", path=export_run) from None
    evals, limited = _evaluate_each(sd, conds, labels, metrics, cfg, depth, export_run, progress)
    groups = None
    if tags is not None:
        groups = query_groups(load_tags(tags, sd.query_ids, notes=notes), sd.query_ids, group_by, source=tags)
    elif group_by is not None:
        raise EvaluationInputError(f"{arg('group_by')} needs {arg('tags')} (a tags file)", param="group_by")
    report = evaluate_conditions(evals, labels, cfg, groups=groups)
    report.coarse_text_drag = _coarse_text_drag(sd, labels, evals["clean"], cfg)
    report.meta.scores_dir = str(sd.path)
    report.meta.qrels = str(qrels)
    report.meta.input_format = sd.kind
    report.meta.mode = scores_target(sd)
    report.meta.qrels_without_scores = dropped
    report.meta.depth_limited_metrics = sorted({m for d in limited.values() for m in d.metrics})
    report.n_qrels_without_scores = len(dropped)
    if limited:
        report.depth_limited = limited
        notes += _depth_notes(sd, limited)
    for j in list(report.additivity_skipped or {}):
        reason = sd.why_missing(j, set(evals))
        report.additivity_skipped[j] = reason  # type: ignore[index]
        notes.append(f"{j}: no additivity: {reason}")
    why = nothing_measured(report, labels, qrels)
    if why:
        notes.append(why)
    report.warnings = notes
    if per_query:
        report.per_query = PerQuery.from_arrays(sd.query_ids, per_query_values(evals, metrics))
    return report


def scores_target(sd: ScoresDir) -> str | None:
    """Which retrieval target the evaluated scores are, when the SCORES_DIR says so (``meta.mode``):
    the id of ``mode`` (``IT2IT``, as ``snapbench run`` writes it), ``MOOR`` for a folder ``snapbench
    moor`` wrote (its run.json kind), else ``None`` (score files of unknown origin: a comparison names
    their target itself)."""
    if sd.mode:
        return sd.mode  # ScoresDir holds the canonical id (modes.normalize_mode)
    # a run.json that is not snapbench's (or unreadable) is no statement about the scores
    return "MOOR" if output_kind(sd.path) == "moor" else None


def _selected(sd: ScoresDir, conditions: Sequence[str] | None) -> list[str]:
    """The SCORES_DIR's conditions, or the requested ones (clean always first)."""
    conds = list(sd.conditions)
    if conditions is None:
        return conds
    want = []
    for c in conditions:
        try:
            cid = parse_condition(c).id
        except ValueError as e:
            raise EvaluationInputError(str(e), param="conditions") from None
        if cid not in conds:
            # the folder's conditions are the known ones: one misspelt or absent id, named with the close ones
            raise EvaluationInputError(unknown_name("condition", cid, conds, n=LIST_MAX, where=f" in {sd.path}"),
                                       param="conditions")
        want.append(cid)
    return ["clean"] + [c for c in conds if c in want and c != "clean"]


def _evaluate_each(sd: ScoresDir, conds: list[str], labels: Labels, metrics: list[str], cfg: EvaluationConfig,
                   depth: int, export_run: str | Path | None,
                   progress: Callable[[str], None] | None) -> tuple[dict[str, ConditionEval], dict[str, DepthLimit]]:
    """Per-query results of every condition (one at a time) and the runs too shallow for a metric."""
    evals: dict[str, ConditionEval] = {}
    limited: dict[str, DepthLimit] = {}
    pool = ThreadPoolExecutor(max_workers=cfg.workers) if cfg.workers > 1 else None
    try:
        for c in conds:
            if progress:
                progress(c)
            if sd.kind == "npy":
                ev = evaluate_matrix(sd.scores(c), labels, metrics, name=sd.describe(c), query_ids=sd.query_ids,
                                     set_threshold=cfg.set_threshold, include_zero_gt=cfg.include_zero_gt,
                                     export_depth=depth, block_rows=cfg.block_rows, executor=pool)
            else:
                run = sd.run(c)
                ev = evaluate_ranking(run, labels, metrics, set_threshold=cfg.set_threshold,
                                      include_zero_gt=cfg.include_zero_gt, export_depth=depth)
                shallow = depth_limited_metrics(metrics, run.idx.shape[1], labels.n_items)
                if shallow:
                    limited[c] = DepthLimit(int(run.idx.shape[1]), shallow)
            if export_run is not None:
                write_run(Path(export_run) / f"{sd.filename(c)}.run", sd.query_ids, sd.gallery_ids,
                          ev.topk_idx, ev.topk_scores)
                ev.topk_idx = ev.topk_scores = None  # keep only per-query vectors in memory
            evals[c] = ev
    finally:
        if pool is not None:
            pool.shutdown()
    return evals, limited


def _depth_notes(sd: ScoresDir, limited: dict[str, DepthLimit]) -> list[str]:
    """One warning per (depth, metrics) group, not one per condition (a top-10 export limits them all)."""
    by_depth: dict[tuple[int, tuple[str, ...]], list[str]] = {}
    for c, d in limited.items():
        by_depth.setdefault((d.depth, tuple(d.metrics)), []).append(c)
    notes = []
    for (depth, ms), conds in by_depth.items():
        which = sd.describe(conds[0]) if len(conds) == 1 else f"{len(conds)} conditions ({conds[0]}, ...)"
        notes.append(f"{which}: the runs list at most {depth} items per query, so {', '.join(ms)} are depth-limited "
                     f"(lower bounds: positives below rank {depth} count as not retrieved)")
    return notes


def nothing_measured(report: Report, labels: Labels, qrels: str | Path | None = None) -> str | None:
    """A warning when no query has a relevant item: ranking metrics then measure nothing (``None``
    when at least one query has a positive)."""
    if labels.n_queries == 0 or int(labels.n_pos.sum()) > 0:
        return None
    where = f" in {qrels}" if qrels is not None else ""
    anything = any(v is not None for vals in report.conditions.values() for v in vals.values())
    what = ("ranking metrics are undefined (null), so nothing was measured" if not anything else
            "ranking metrics measure nothing (only answer-set and reject metrics are defined)")
    if report.meta.zero_gt.startswith("included"):
        what = "ranking metrics are 0 for every query by definition, so nothing was measured"
    return (f"none of the {labels.n_queries} queries has a relevant item{where}: {what}; "
            "are the qrels and query_ids.txt from the same data set?")


def _coarse_text_drag(sd: ScoresDir, labels: Labels, clean_eval: ConditionEval, cfg: EvaluationConfig):
    """hit@1(joint) − hit@1(I→I) on clean, when clean.II.npy exists (joint = the evaluated clean
    scores without a mode, or IT→IT composed from clean.II + clean.TT with one)."""
    if sd.kind != "npy":
        return None
    s_ii = sd.path_scores("clean", "II")
    if s_ii is None:
        return None
    common = dict(name=str(sd.path / "clean.II.npy"), query_ids=sd.query_ids, block_rows=cfg.block_rows,
                  workers=cfg.workers, include_zero_gt=cfg.include_zero_gt)
    img = evaluate_matrix(s_ii, labels, [DRAG_METRIC], **common).stats[DRAG_METRIC]
    if sd.mode is None:
        joint_src = "clean.npy (as given)"
        joint = clean_eval.stats.get(DRAG_METRIC)
        if joint is None:
            joint = evaluate_matrix(sd.scores("clean"), labels, [DRAG_METRIC], **common).stats[DRAG_METRIC]
    else:
        s_tt = sd.path_scores("clean", "TT")
        if s_tt is None:
            return None
        joint_src = "IT→IT = (clean.II + clean.TT) / 2"
        joint = evaluate_matrix(ComposedScores("IT2IT", {"II": s_ii, "TT": s_tt}), labels, [DRAG_METRIC],
                                **common).stats[DRAG_METRIC]
    return coarse_text_drag_ci(joint, img, labels, cfg, joint_label=joint_src)
