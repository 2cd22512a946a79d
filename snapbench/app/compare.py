"""`snapbench compare RUN_DIR... --out DIR`: which model is more robust, by how much, and is the difference real.

The settings of ``snapbench compare`` and how its defaults follow from the runs.

* **targets** (``modes``): default every retrieval mode and ``MOOR`` all runs have; a fusion
  baseline (``fusion/<name>``) only when asked for.  An asked target a run lacks is an error naming it.
* **metrics**: default the runs' ``hit@k`` (SnapBench's R@k) -- the paper's numbers and the cheapest
  to compare (exact tests, exact float32 sums: ~1 s per target and metric for 10 models at the
  release's scale, against ~1.4 s for other metrics); ``all`` = every metric the runs share; names
  and families as ``evaluate --metrics`` takes them (``hit`` expands over the runs' cut-offs).
* **metric** (tables' headline, figures, findings): ``hit@1`` when compared, else ``overlap@10`` (runs
  without labels), else the first metric.
* **resamples**, **ci**: default the runs' own (then every per-model CI equals the run's report);
  when the runs differ, 10,000 and 0.95.  **seed**: default the runs' (the same in every run).

``compare_runs``: from run folders (or evaluate report files) to the comparison report in one folder.

Steps: open the models (:func:`snapbench.store.compare.open_sources`), pick targets, metrics and settings (the settings above),
refuse set-ups that differ (the set-up check below), read each target's per-query values (only the metrics
compared), compute every record (:func:`~snapbench.compare.compare_models`) and write the
outputs (:func:`_write_outputs`).  The output folder's run.json (``kind: "compare"``) records the inputs and
settings and the files written (a new compare into the folder removes those of the previous one it
does not write again: :func:`snapbench.store.folders.remove_stale`); a folder another command wrote is refused.

Writing the comparison report into its folder (names: :class:`snapbench.store.CompareDir`).

Always ``compare.json`` and ``findings.json``; per the formats asked (those of ``snapbench
report``): ``md``/``tex`` tables of every (target, metric), ``csv``/``parquet`` of every record
list, ``png``/``pdf`` figures of every target for the headline metric (matplotlib: without it a
note replaces them), ``html`` the self-contained page (:func:`snapbench.render.compare.render_page`).

Which conditions each target is compared on: the same plan, read on different sides of the query.

A run evaluates the conditions it planned (``--conditions``, joint or not, the severity grid, the
released variants) on the sides of the query its modes read: a text-only encoder evaluates no image
or joint condition (``snapbench run`` leaves them out, and records their ids in run.json
``conditions_left_out``).  Such a run is the same experiment as an image+text run of the same plan:
the models are compared on the conditions every one of them has, and the others are named (a
warning and a note).  Runs whose plans really differ (other ``--conditions``, ``--no-joint``, other
released variants) are refused.

Per model and target: C = the target's conditions (its report).  Its plan P is known for

* every kind of condition (clean, image, text, joint) when run.json records ``conditions_left_out``:
  P = C + the conditions left out;
* otherwise (an image+text run, an evaluate report file) for the kinds
  its modes can read -- image when one of its targets reads the query image, text likewise, joint
  when both -- and the kinds C holds: P = C there.

The plan of each kind is that of the first model that knows the kind; every other model that knows
the kind must hold the same conditions of it.  Kinds no model evaluated are not compared: they add
no number to the comparison (two text-only runs, of generated and of released variants, plan other
image conditions and compare the same text ones).

Whether runs can be compared: the same queries, gallery, qrels, conditions, seed and metric settings.

Everything a model's numbers depend on besides the model itself must be the same in every run, or a
difference between two models could be a difference of set-ups.  Compared, each model against the
first:

* **seed** -- run.json ``seed`` and every report's ``meta.seed`` (it drew the variants and the
  bootstrap);
* **queries** -- the reports' number of queries and, per target, the query ids of the per-query
  tables (which name examples of the queries one run lacks);
* **gallery** -- ``fingerprint.dataset_gallery_sha256`` and the reports' ``meta.n_gallery``;
* **qrels** -- the queries without a relevant item (where a ranking metric is undefined), the
  reports' ``meta.n_zero_gt`` and ``meta.graded_labels``;
* **conditions** -- each target's planned conditions (the conditions section above: a run that reads one side of
  the query only, such as a text-only encoder's, is compared with the others on the conditions every
  run has, with a warning naming the rest) and, between two runs that generated their variants, the
  severity grid (``fingerprint.grid``) and the severity target (``fingerprint.severity_target``,
  absent when the levels are the grid's knob values): with another target ``img/blur/s2`` is another
  corruption;
* **metric settings** -- the reports' zero-GT rule, set threshold and tie rule.

Not compared: the **variant source** (``--variants released`` vs ``generated`` of the same model is
the release's confound check), the encoder, and settings that change no number of the comparison
(block and batch sizes, resamples of the runs' own reports).  Every difference found is named in one
:class:`~snapbench.core.errors.ConfigError`, with the two models and their paths (no parameter: the
message is about the runs, which it names).
"""

from __future__ import annotations

import csv
import io
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from .._version import __version__
from ..compare import CompareConfig, compare_models
from ..compare.inputs import ModelValues, set_diff
from ..compare.stats import CORRECTION_NAMES
from ..core.conditions import KIND_SIDES, KINDS, parse_condition
from ..core.errors import ConfigError, InputError, arg
from ..core.install_hint import install_hint
from ..core.jsonable import dumps
from ..core.targets import FUSION_PREFIX, TARGET_ORDER, primary_target, target_sides
from ..core.validate import choice, hint_and_known
from ..evaluate.metrics import metric_family, metric_k, parse_metrics
from ..evaluate.paired import DEFAULT_CI, DEFAULT_RESAMPLES
from ..evaluate.stability import whole_gallery_notes
from ..render import FORMATS
from ..render.compare import (
    CompareResult,
    MetricView,
    Settings,
    Written,
    compare_findings,
    delta_table,
    pairs_table,
    ranking_table,
    value_table,
)
from ..render.figures import check_dpi
from ..render.htmlpage import HtmlFigure
from ..store import CompareDir, claim_output_dir, write_run_json
from ..store.atomic import atomic_path, write_bytes_atomic, write_text_atomic
from ..store.compare import (
    RECORD_TYPES,
    ModelSource,
    PerQueryArrays,
    open_sources,
    possible_files,
    previous_files,
    relative_names,
    write_compare_json,
)
from ..store.folders import remove_stale

__all__ = ['CompareOptions', 'compare_runs', 'ordered_targets']


@dataclass
class CompareOptions:
    """What ``snapbench compare`` was asked for (``None`` = the default the module docstring gives)."""

    names: Sequence[str] | None = None
    reference: str | None = None
    correction: str = "holm"
    modes: Sequence[str] | None = None
    metrics: Sequence[str] | str | None = None
    metric: str | None = None
    resamples: int | None = None
    seed: int | None = None
    ci: float | None = None
    formats: Sequence[str] = FORMATS
    dpi: int = 120

    def check(self) -> None:
        """Refuse a bad setting before any file is read (the statistics' settings by their own check)."""
        CompareConfig(resamples=DEFAULT_RESAMPLES if self.resamples is None else self.resamples,
                      ci=DEFAULT_CI if self.ci is None else self.ci, correction=self.correction).check()
        for f in self.formats:
            choice(f, FORMATS, "formats", what="format")
        check_dpi(self.dpi)


def _shared(values: Sequence[list[str]]) -> list[str]:
    common = set(values[0]).intersection(*map(set, values[1:]))
    return [v for v in values[0] if v in common]


def _name_targets(sources: Sequence[ModelSource], asked: Sequence[str] | None) -> None:
    """Evaluate reports that record no target stand for the one target ``asked`` names; without it,
    they are compared with each other only (as :data:`UNNAMED`)."""
    unnamed = [s for s in sources if not s.target_named]
    if not unnamed or (asked is None and len(unnamed) == len(sources)):
        return
    asked = list(dict.fromkeys(asked or []))
    if len(asked) == 1:
        for s in unnamed:
            s.name_target(asked[0])
        return
    which = ", ".join(s.label for s in unnamed)
    what = ("is an evaluate report that does not record which target its scores are" if len(unnamed) == 1 else
            "are evaluate reports that do not record which target their scores are")
    raise ConfigError(f"{which} {what} (score files evaluated without a mode; those of a 'snapbench moor' folder "
                      f"are recorded as MOOR); name the one target to compare with {arg('modes')}, e.g. "
                      f"{arg('modes')} MOOR or {arg('modes')} IT2IT", param="modes")


def _targets(sources: Sequence[ModelSource], asked: Sequence[str] | None, notes: list[str]) -> list[str]:
    _name_targets(sources, asked)
    if asked is not None:
        for t in asked:
            lacking = [s for s in sources if t not in s.targets]
            if lacking:
                raise ConfigError(f"{t!r} is not a target of {', '.join(s.label for s in lacking)} (the targets of "
                                  f"{lacking[0].name!r}: {', '.join(lacking[0].targets)})", param="modes")
        return list(dict.fromkeys(asked))
    shared = _shared([s.targets for s in sources])
    order = {t: i for i, t in enumerate(TARGET_ORDER)}
    targets = sorted((t for t in shared if not t.startswith(FUSION_PREFIX)), key=lambda t: order.get(t, len(order)))
    left = sorted({t for s in sources for t in s.targets} - set(targets))
    if left:
        notes.append("targets not compared (not in every run, or a fusion baseline, compared only when asked for): "
                     + ", ".join(left))
    if not targets:
        raise ConfigError("the runs share no mode; name the targets to compare (e.g. fusion/<name>)", param="modes")
    return targets


def _metrics(sources: Sequence[ModelSource], targets: Sequence[str], asked, notes: list[str]) -> list[str]:
    reports = [(s, t, s.report(t)) for s in sources for t in targets]
    shared = _shared([r.metrics for _, _, r in reports])
    if asked is None or asked == "all" or list(asked) == ["all"]:
        hits = [m for m in shared if m.startswith("hit@")]
        chosen = shared if asked is not None or not hits else hits
        if len(chosen) < len(shared):
            notes.append(f"metrics compared: {', '.join(chosen)} (the default, R@k); asking for 'all' metrics compares "
                         f"every metric the runs share ({', '.join(shared)})")
        if not chosen:
            raise ConfigError("the runs share no metric", param="metrics")
        return chosen
    ks = sorted({k for _, _, r in reports for k in r.meta.ks})
    wanted = parse_metrics(asked if isinstance(asked, str) else list(asked), ks)
    for m in wanted:
        lacking: dict[str, list[str]] = {}
        for src, t, r in reports:
            if m not in r.metrics:
                lacking.setdefault(src.label, []).append(t)
        if not lacking:
            continue
        if len(lacking) == len(sources) and all(len(ts) == len(targets) for ts in lacking.values()):
            where = "is in none of the runs' reports"
        else:
            where = "is not in the report of " + ", ".join(f"{label} ({', '.join(ts)})" for label, ts in lacking.items())
        # what can be asked for instead: the metrics every compared report has
        raise ConfigError(f"metric {m!r} {where}{hint_and_known(m, shared)}", param="metrics")
    return wanted


def _runs_value(sources, targets, get, default, what: str, notes: list[str]):
    vals = {get(s.report(t)) for s in sources for t in targets}
    if len(vals) == 1:
        return vals.pop()
    notes.append(f"the runs used different {what} ({', '.join(map(str, sorted(vals)))}); the comparison uses "
                 f"{default}, so its per-model CIs differ from some runs' reports")
    return default


def _resolve_settings(sources: Sequence[ModelSource], options: CompareOptions) -> Settings:
    """The targets, metrics and statistics settings of the comparison (see the module docstring)."""
    notes: list[str] = []
    targets = _targets(sources, options.modes, notes)
    metrics = _metrics(sources, targets, options.metrics, notes)
    metric = options.metric or next((m for m in ("hit@1", "overlap@10") if m in metrics), metrics[0])
    if metric not in metrics:
        raise ConfigError(f"{metric!r} is not among the metrics compared{hint_and_known(metric, metrics)} (add it to "
                          f"{arg('metrics')})", param="metric")
    resamples = options.resamples or _runs_value(sources, targets, lambda r: r.meta.resamples, DEFAULT_RESAMPLES,
                                                 "numbers of resamples", notes)
    ci = options.ci or _runs_value(sources, targets, lambda r: r.meta.ci_level, DEFAULT_CI, "CI levels", notes)
    seed = options.seed
    if seed is None:
        seed = int(sources[0].run.get("seed", sources[0].report(targets[0]).meta.seed))
    # the runs share one gallery (checked): an overlap@k over all of it cannot move, for any model
    notes += whole_gallery_notes(sources[0].report(targets[0]).meta.n_gallery,
                                 [metric_k(m) for m in metrics if m.startswith("overlap@")])
    return Settings(targets, metrics, metric, int(resamples), int(seed), float(ci), notes)


def _model_values(sources: Sequence[ModelSource], targets: Sequence[str], metrics: Sequence[str],
                 say: Callable[[str], None] = lambda _m: None,
                 conditions: Mapping[str, Sequence[str]] | None = None) -> list[ModelValues]:
    """Each model's per-query values of ``targets`` x ``metrics`` (checked: the same queries and
    qrels in every run), of the ``conditions`` of each target when given (default: all)."""
    values: list[dict[str, Any]] = [{} for _ in sources]
    qids: list[list[str]] = [[] for _ in sources]
    for t in targets:
        say(f"reading per-query values of {t}")
        tables = [s.per_query(t) for s in sources]
        _check_queries(sources, t, tables, metrics)
        for i, (q, v) in enumerate(tables):
            rows = _rows_in(qids[i] or q, q, sources[i], t, targets[0])
            qids[i] = qids[i] or q
            keep = v.keys() if conditions is None else set(conditions[t])
            # copies: a table's arrays are views of one block of every metric, which must not stay alive
            values[i][t] = {c: {m: per[m].copy() if rows is None else per[m][rows] for m in metrics if m in per}
                            for c, per in v.items() if c in keep}
        del tables
    return [ModelValues.from_values(s.name, q, v) for s, q, v in zip(sources, qids, values)]


def _rows_in(order: list[str], qids: list[str], source: ModelSource, target: str, first: str):
    """Rows of ``qids`` in ``order`` (``None``: the same order): the targets of one run evaluate the
    same queries (a query dropped from one state is dropped from all)."""
    if qids == order:
        return None
    if set(qids) != set(order):
        raise InputError(f"its per-query tables of {first} and {target} hold different queries", path=source.path)
    pos = {q: i for i, q in enumerate(qids)}
    return np.array([pos[q] for q in order], dtype=np.int64)


def _run_json(sources: Sequence[ModelSource], st: Settings, options: CompareOptions, reference: str) -> dict[str, Any]:
    settings = {k: v for k, v in st.to_json().items() if k != "metric"}
    return {"snapbench_version": __version__,
            "inputs": [{k: s.to_json()[k] for k in ("name", "path", "kind")} for s in sources],
            "reference": reference, "correction": options.correction, **settings}


def _limit_notes(sources: Sequence[ModelSource]) -> list[str]:
    """Runs made with ``run --limit`` saw part of their dataset: the comparison says so (compare.json's
    notes, the page, the terminal), as the runs themselves do."""
    limited = [(s, s.run["limit"]) for s in sources if isinstance(getattr(s, "run", None), dict)
               and isinstance(s.run.get("limit"), dict)]
    if not limited:
        return []
    lim = limited[0][1]
    return [f"{', '.join(s.name for s, _ in limited)}: the first {lim.get('queries')} of {lim.get('of')} queries "
            f"only (run --limit): a quick look, not the dataset's result"]


def _unfinished_notes(sources: Sequence[ModelSource]) -> list[str]:
    """Runs that stopped before they wrote every report: compared on what they wrote, with a warning
    (terminal, compare.json's notes, the page) that says so and how to finish them."""
    return [s.unfinished for s in sources if s.unfinished]


def compare_runs(
    paths: Sequence[str | os.PathLike],
    out: str | os.PathLike,
    options: CompareOptions | None = None,
    *,
    progress: Callable[[str], None] | None = None,
) -> CompareResult:
    """Compare the models of ``paths`` (run folders, several-encoder run folders, evaluate report
    files with per-query values) and write the comparison report into ``out``.

    Raises :class:`~snapbench.core.errors.ConfigError` naming every difference when the runs' queries,
    gallery, qrels, planned conditions, seed or metric settings differ (the variant source may
    differ), and :class:`~snapbench.core.errors.InputError` for a path that is no run or has no per-query
    values.  A run that left conditions out because its modes read one side of the query only (a
    text-only encoder) is compared on the conditions every run has; ``warnings`` name the rest."""

    opts = options or CompareOptions()
    opts.check()
    say = progress or (lambda _m: None)
    t0 = time.perf_counter()
    outdir = Path(out)
    before = claim_output_dir(outdir, "compare")  # a folder another command wrote is refused before any work
    sources = open_sources(paths, opts.names)
    st = _resolve_settings(sources, opts)
    compared, warnings = _check_setups(sources, st.targets)
    warnings = _unfinished_notes(sources) + warnings
    models = _model_values(sources, st.targets, st.metrics, say, compared)
    t_read = time.perf_counter()
    cfg = CompareConfig(resamples=st.resamples, ci=st.ci, seed=st.seed, correction=opts.correction,
                        reference=opts.reference)
    comparison = compare_models(models, cfg, progress=lambda mode, metric: say(f"statistics: {mode}, {metric}"))
    t_stats = time.perf_counter()
    # the warnings (conditions left out for some models) are notes of compare.json and the page too
    res = CompareResult(Path(outdir), sources, st, comparison, notes=list(st.notes) + _limit_notes(sources) + warnings,
                        warnings=warnings)
    say("writing the report")
    cdir, body = CompareDir(outdir), _run_json(sources, st, opts, comparison.meta["reference"])
    # first on record: the files the folder may hold once this compare stops, finished or not
    candidates = previous_files(cdir, before) | possible_files(cdir, st.targets, st.metrics)
    write_run_json(outdir, "compare", {**body, "status": "writing", "files": relative_names(cdir, candidates)})
    _write_outputs(res, opts)
    res.files.append(cdir.run_json)
    res.removed = remove_stale(candidates, res.files, empty_dirs=(cdir.tables, cdir.records, cdir.figures))
    write_run_json(outdir, "compare", {**body, "status": "complete", "files": relative_names(cdir, res.files)})
    t_end = time.perf_counter()
    res.timings = {"read_s": t_read - t0, "statistics_s": t_stats - t_read, "write_s": t_end - t_stats,
                   "total_s": t_end - t0}
    return res


def ordered_targets(targets: Sequence[str]) -> list[str]:
    """``targets`` with the primary one first (:func:`snapbench.core.targets.primary_target`)."""
    first = primary_target(targets)
    return [first] + [t for t in targets if t != first]


def _cell(v: Any) -> Any:
    return "" if isinstance(v, float) and math.isnan(v) else repr(v) if isinstance(v, float) else v


def _write_records(rec: dict[str, Any], out: CompareDir, fmts: set[str], files: list[Path], notes: list[str]) -> None:
    """One CSV (and Parquet with pyarrow) per record list: every per-model and per-pair number."""
    pa = pq = None
    if "parquet" in fmts:
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            notes.append(f"pyarrow is not installed, so no Parquet copies were written ({install_hint('report')})")
    for name, rtype in RECORD_TYPES.items():
        cols = [f.name for f in fields(rtype)]
        if "csv" in fmts:
            buf = io.StringIO()
            w = csv.writer(buf, lineterminator="\n")
            w.writerow(cols)
            w.writerows([_cell(r[c]) for c in cols] for r in rec[name])
            write_text_atomic(out.record_file(name, "csv"), buf.getvalue())
            files.append(out.record_file(name, "csv"))
        if pa is not None:
            types = {"float": pa.float64(), "int": pa.int64(), "str": pa.string()}
            schema = pa.schema([(f.name, types[str(f.type)]) for f in fields(rtype)])
            table = pa.table({c: [r[c] for r in rec[name]] for c in cols}, schema=schema)
            with atomic_path(out.record_file(name, "parquet")) as tmp:
                pq.write_table(table, tmp)
            files.append(out.record_file(name, "parquet"))


def _write_tables(views: dict, res: CompareResult, out: CompareDir, fmts: set[str], files: list[Path],
                  written: Written, opts: CompareOptions) -> None:
    reference = res.comparison.meta.get("reference", "")
    for (t, m), v in views.items():
        stem = CompareDir.stem(t, m)
        tables = [value_table(v, stem), delta_table(v, stem), ranking_table(v, stem, reference),
                  pairs_table(v, stem, CORRECTION_NAMES[opts.correction])]
        for tab in tables:
            for ext, render in (("md", tab.to_markdown), ("tex", tab.to_latex)):
                if ext in fmts:
                    write_text_atomic(out.table(tab.name, ext), render())
                    files.append(out.table(tab.name, ext))
        if m == res.settings.metric:
            written.tables[t] = tables


def _write_figures(views: dict, res: CompareResult, out: CompareDir, fmts: set[str], files: list[Path],
                   written: Written, notes: list[str], dpi: int) -> None:
    if not fmts & {"png", "pdf", "html"}:
        return
    try:
        from ..render.compare import FIGURES
        from ..render.figures import fig_to_bytes, require_matplotlib

        require_matplotlib()
    except ConfigError as e:
        notes.append(f"no figures: {e}")
        return
    for t in res.settings.targets:
        v = views[(t, res.settings.metric)]
        figs = written.figures.setdefault(t, [])
        for name, (make, caption) in FIGURES.items():
            fig = make(v)
            if fig is None:
                continue
            stem = f"{CompareDir.stem(t, v.metric)}_{name}"
            png = fig_to_bytes(fig, "png", dpi)
            if fmts & {"png", "html"}:
                write_bytes_atomic(out.figure(stem, "png"), png)
                files.append(out.figure(stem, "png"))
            if "pdf" in fmts:
                write_bytes_atomic(out.figure(stem, "pdf"), fig_to_bytes(fig, "pdf", dpi))
                files.append(out.figure(stem, "pdf"))
            figs.append(HtmlFigure(stem, caption(v) if callable(caption) else caption, png))


def _write_outputs(res: CompareResult, opts: CompareOptions) -> Written:
    """Write every output of ``res`` into ``res.out`` (appending to ``res.files`` and ``res.notes``)."""
    from ..render.compare import render_page

    out, fmts, st = CompareDir(res.out), set(opts.formats), res.settings
    views = MetricView.all_of(res.comparison, st.ci, opts.correction)
    written = Written()
    rec = res.comparison.records()
    _write_records(rec, out, fmts, res.files, res.notes)
    _write_tables(views, res, out, fmts, res.files, written, opts)
    _write_figures(views, res, out, fmts, res.files, written, res.notes, opts.dpi)
    primary = [views[(t, st.metric)] for t in ordered_targets(st.targets)]
    written.findings = compare_findings(primary, res.sources, res.comparison.meta.get("reference", ""),
                                        CORRECTION_NAMES[opts.correction])
    write_text_atomic(out.findings, dumps([{"id": f.id, "text": f.text, "values": f.values}
                                           for f in written.findings]) + "\n")
    res.files.append(out.findings)
    write_compare_json(out.compare_json, res.comparison, [s.to_json() for s in res.sources], st.to_json(), res.notes,
                       rec)
    res.files.append(out.compare_json)
    if "html" in fmts:
        write_text_atomic(out.html, render_page(res, written, ordered_targets(st.targets)))
        res.files.append(out.html)
    return written


def _kind(cid: str) -> str:
    return parse_condition(cid).kind


@dataclass
class _Plan:
    source: ModelSource
    conditions: list[str]
    planned: dict[str, set[str]]  # kind -> planned ids of that kind, for the kinds known
    sides: frozenset[str]


def _plan(source: ModelSource, target: str) -> _Plan:
    conds = list(source.report(target).conditions)
    sides = frozenset().union(*map(target_sides, source.targets))  # the sides of the query the targets read
    left = source.run.get("conditions_left_out")
    if isinstance(left, list):
        ids, known = conds + [str(c) for c in left], set(KINDS)
    else:
        ids, known = conds, {k for k in KINDS if KIND_SIDES[k] <= sides} | {_kind(c) for c in conds}
    planned: dict[str, set[str]] = {k: set() for k in known}
    for c in ids:
        if _kind(c) in planned:
            planned[_kind(c)].add(c)
    return _Plan(source, conds, planned, sides)


def _plan_diffs(target: str, plans: list[_Plan]) -> list[str]:
    """'conditions of T2T: B lacks ...' for every model whose plan differs from the plan of a kind's
    first model (grouped per pair of models)."""
    # a kind no model evaluated adds no number to the comparison: plans of it may differ (two
    # text-only runs, one of generated and one of released variants, plan other image conditions)
    evaluated = {_kind(c) for p in plans for c in p.conditions}
    owner: dict[str, _Plan] = {}
    for p in plans:
        for k in p.planned.keys() & evaluated:
            owner.setdefault(k, p)
    out = []
    for p in plans:
        by_owner: dict[int, list[str]] = {}
        for k in p.planned.keys() & evaluated:
            if owner[k] is not p and owner[k].planned[k] != p.planned[k]:
                by_owner.setdefault(id(owner[k]), []).append(k)
        for o in (q for q in plans if id(q) in by_owner):
            kinds = by_owner[id(o)]
            a = sorted(c for k in kinds for c in o.planned[k])
            b = sorted(c for k in kinds for c in p.planned[k])
            out.append(f"conditions of {target}: {set_diff('conditions', o.source.label, a, p.source.label, b)}")
    return out


def _names(sources: Sequence[ModelSource]) -> str:
    return ", ".join(repr(s.name) for s in sources)


def _warning(target: str, common: list[str], plans: list[_Plan], left: dict[str, list[str]]) -> str:
    """'T2T: compared on the 9 conditions every model has; ...' naming what was left out, for whom and why."""
    groups: dict[tuple[str, ...], list[ModelSource]] = {}
    for p in plans:
        if left.get(p.source.name):
            groups.setdefault(tuple(left[p.source.name]), []).append(p.source)
    parts = []
    for ids, who in groups.items():
        kinds = "/".join(k for k in KINDS if any(_kind(c) == k for c in ids))
        parts.append(f"{len(ids)} {kinds} condition(s) of {_names(who)} (e.g. {', '.join(ids[:3])})")
    lacking = [p for p in plans if not left.get(p.source.name)]
    why = []
    for p in lacking:
        unread = sorted({"image", "text"} - p.sides)
        why.append(f"{p.source.name!r} evaluated none of them" + (
            f" (no mode of its run reads the query {' or the query '.join(unread)})" if unread else ""))
    counts = [f"{sum(_kind(c) == k for c in common)} {k}" for k in KINDS[1:] if any(_kind(c) == k for c in common)]
    return (f"{target}: compared on the {len(common)} conditions every model has (clean, {', '.join(counts)}); "
            f"left out: {'; '.join(parts)} -- {'; '.join(why)}")


def _compared_conditions(sources: Sequence[ModelSource], target: str) -> tuple[list[str], str | None, list[str]]:
    """The conditions of ``target`` every model has (the first model's order, clean first), a warning
    naming those left out (or ``None``), and the differences of the models' condition plans (texts
    for the refusal; empty when the plans agree)."""
    plans = [_plan(s, target) for s in sources]
    diffs = _plan_diffs(target, plans)
    shared = set(plans[0].conditions).intersection(*(p.conditions for p in plans[1:]))
    common = [c for c in plans[0].conditions if c in shared]
    left = {p.source.name: [c for c in p.conditions if c not in shared] for p in plans}
    left = {n: ids for n, ids in left.items() if ids}
    if diffs:
        return common, None, diffs
    if len(common) < 2:
        return common, None, [f"conditions of {target}: no corrupted condition is in every run ("
                              + "; ".join(f"{p.source.label} has {len(p.conditions) - 1}" for p in plans) + ")"]
    return common, _warning(target, common, plans, left) if left else None, []


_ADVICE = ("compare runs of the same queries, gallery, qrels, conditions, seed and metric settings "
           "(only the variant source may differ)")


def _short(v: Any) -> str:
    """A value for a message: a long string (a hash) cut inside its quotes, other JSON cut with '…'."""
    if isinstance(v, str):
        return repr(v if len(v) <= 24 else v[:16] + "…")
    text = dumps(v, indent=None)
    return text if len(text) <= 60 else text[:57] + "…"


def _value_diff(what: str, a: ModelSource, va: Any, b: ModelSource, vb: Any) -> str | None:
    if va == vb:
        return None
    return f"{what}: {a.label} has {_short(va)}, {b.label} has {_short(vb)}"


def _fail(diffs: list[str]) -> None:
    if diffs:
        raise ConfigError("the runs cannot be compared, they differ in their " + "; ".join(diffs) + f" -- {_ADVICE}")


def _seed(s: ModelSource, targets: Sequence[str]) -> Any:
    return s.run["seed"] if "seed" in s.run else s.report(targets[0]).meta.seed


def _run_diffs(a: ModelSource, b: ModelSource, targets: Sequence[str], example: str | None = None) -> list[str]:
    """What differs between the set-ups of ``a`` and ``b``; ``example``: a corrupted condition with a
    severity that the runs compare (a message's example of an id whose corruption differs), if any."""
    out = [_value_diff("seed", a, _seed(a, targets), b, _seed(b, targets))]
    fa, fb = a.run.get("fingerprint"), b.run.get("fingerprint")
    if isinstance(fa, dict) and isinstance(fb, dict):
        # the queries are compared by their ids in the per-query tables (check_queries), which names examples
        out.append(_value_diff("gallery (hash of the data set's gallery ids)", a, fa.get("dataset_gallery_sha256"),
                               b, fb.get("dataset_gallery_sha256")))
        if a.variants in (None, "generated") and b.variants in (None, "generated"):
            if fa.get("grid") != fb.get("grid"):
                out.append(f"conditions: {a.label} and {b.label} generated their variants with different severity grids")
            if fa.get("severity_target") != fb.get("severity_target"):
                such = f", such as {example}," if example else ""
                out.append(f"conditions: {a.label} generated its variants {_strengths(fa)}, {b.label} "
                           f"{_strengths(fb)} (one condition id{such} names a different corruption in each)")
    return [d for d in out if d]


def _strengths(fingerprint: dict[str, Any]) -> str:
    """How a run set its severities: a measured severity target (run.json ``fingerprint.severity_target``,
    absent for the grid's own knob values)."""
    target = fingerprint.get("severity_target")
    if target is None:
        return "with the grid's knob values (no severity target)"
    return f"with the severity target {target}"


_REPORT_FIELDS: tuple[tuple[str, str, Callable[[Any], Any]], ...] = (
    ("queries", "number of queries evaluated", lambda r: r.n_queries),
    ("seed", "seed", lambda r: r.meta.seed),
    ("gallery", "gallery size", lambda r: r.meta.n_gallery),
    ("qrels", "number of queries without a relevant item", lambda r: r.meta.n_zero_gt),
    ("qrels", "graded labels", lambda r: r.meta.graded_labels),
    ("metric settings", "zero-GT rule", lambda r: r.meta.zero_gt),
    ("metric settings", "set threshold", lambda r: r.meta.set_threshold),
    ("metric settings", "tie rule", lambda r: r.meta.tie_rule),
)


def _report_diffs(a: ModelSource, b: ModelSource, targets: Sequence[str], known: set[str]) -> list[str]:
    """Differences of the reports of ``targets``: each field once (with the targets it differs in),
    none already named in ``known`` (a seed that differs in run.json differs in every report)."""
    out = []
    for what, field, get in _REPORT_FIELDS:
        if what in known:
            continue
        differ = [(t, get(a.report(t)), get(b.report(t))) for t in targets]
        differ = [x for x in differ if x[1] != x[2]]
        if differ:
            t, va, vb = differ[0]
            where = ", ".join(x[0] for x in differ)
            out.append(f"{what} ({field} in {where}): {a.label} has {_short(va)}, {b.label} has {_short(vb)}")
    return out


def _check_setups(sources: Sequence[ModelSource], targets: Sequence[str]) -> tuple[dict[str, list[str]], list[str]]:
    """Refuse (one :class:`ConfigError` naming every difference) runs whose set-ups differ: run.json
    and the reports of ``targets``; see the module docstring.  Return the conditions each target is
    compared on and the warnings naming those left out (:func:`_compared_conditions`)."""
    first = sources[0]
    diffs: list[str] = []
    compared: dict[str, list[str]] = {}
    warnings: list[str] = []
    for t in targets:
        compared[t], warning, d = _compared_conditions(sources, t)
        warnings += [warning] if warning else []
        diffs += d
    # a condition of these runs with a severity (the first image one, else joint) for the messages' example
    graded = [c for conds in compared.values() for c in conds if parse_condition(c).severity is not None]
    example = min(graded, key=lambda c: parse_condition(c).kind != "image", default=None)
    for other in sources[1:]:
        run = _run_diffs(first, other, targets, example)
        diffs += run + _report_diffs(first, other, targets, {d.split(":")[0] for d in run})
    _fail(diffs)
    return compared, warnings


def _uncounted(arrays: PerQueryArrays, metrics: Sequence[str]) -> set[str] | None:
    """The queries a ranking metric leaves out (no relevant item), from the clean condition's values."""
    qids, values = arrays
    for m in metrics:
        try:
            rule = metric_family(m).counts
        except ConfigError:
            continue
        v = values.get("clean", {}).get(m)
        if rule in ("ranking", "positives") and v is not None:
            return {q for q, x in zip(qids, np.isnan(v)) if x}
    return None


def _check_queries(sources: Sequence[ModelSource], target: str, tables: Sequence[PerQueryArrays],
                  metrics: Sequence[str]) -> None:
    """Refuse per-query tables of ``target`` over different queries, or with different queries
    without a relevant item (different qrels)."""
    first, t0 = sources[0], tables[0]
    diffs = []
    z0 = _uncounted(t0, metrics)
    for s, t in zip(sources[1:], tables[1:]):
        if (d := set_diff("queries", first.label, t0[0], s.label, t[0])) is not None:
            diffs.append(f"queries of {target}: {d}")
            continue
        z = _uncounted(t, metrics)
        if z0 is not None and z is not None and (d := set_diff("queries without a relevant item", first.label,
                                                                 sorted(z0), s.label, sorted(z))) is not None:
            diffs.append(f"qrels of {target}: {d}")
    _fail(diffs)
