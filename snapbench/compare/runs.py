"""``compare_runs``: from run folders (or evaluate report files) to the comparison report in one folder.

Steps: open the models (:mod:`.sources`), pick targets, metrics and settings (:mod:`.options`),
refuse set-ups that differ (:mod:`.check`), read each target's per-query values (only the metrics
compared), compute every record (:func:`~snapbench.compare.core.compare_models`) and write the
outputs (:mod:`.write`).  The output folder's run.json (``kind: "compare"``) records the inputs and
settings and the files written (a new compare into the folder removes those of the previous one it
does not write again: :mod:`.stale`); a folder another command wrote is refused.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._version import __version__
from ..errors import InputError
from ..layout import CompareDir, claim_output_dir, write_run_json
from .check import check_queries, check_setups
from .core import CompareConfig, compare_models
from .inputs import ModelValues
from .options import CompareOptions, Settings, resolve_settings
from .records import Comparison
from .sources import ModelSource, open_sources
from .stale import possible_files, previous_files, relative_names, remove_stale

__all__ = ["CompareResult", "compare_runs"]


@dataclass
class CompareResult:
    """What a comparison computed and wrote."""

    out: Path
    sources: list[ModelSource]
    settings: Settings
    comparison: Comparison
    files: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    removed: list[Path] = field(default_factory=list)


def model_values(sources: Sequence[ModelSource], targets: Sequence[str], metrics: Sequence[str],
                 say: Callable[[str], None] = lambda _m: None,
                 conditions: Mapping[str, Sequence[str]] | None = None) -> list[ModelValues]:
    """Each model's per-query values of ``targets`` x ``metrics`` (checked: the same queries and
    qrels in every run), of the ``conditions`` of each target when given (default: all)."""
    values: list[dict[str, Any]] = [{} for _ in sources]
    qids: list[list[str]] = [[] for _ in sources]
    for t in targets:
        say(f"reading per-query values of {t}")
        tables = [s.per_query(t) for s in sources]
        check_queries(sources, t, tables, metrics)
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
    return {"snapbench_version": __version__,
            "inputs": [{"name": s.name, "path": str(s.path), "kind": s.kind} for s in sources],
            "reference": reference, "correction": options.correction, "targets": st.targets, "metrics": st.metrics,
            "resamples": st.resamples, "seed": st.seed, "ci": st.ci}


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


def compare_runs(
    paths: Sequence[str | os.PathLike],
    out: str | os.PathLike,
    options: CompareOptions | None = None,
    *,
    progress: Callable[[str], None] | None = None,
) -> CompareResult:
    """Compare the models of ``paths`` (run folders, several-encoder run folders, evaluate report
    files with per-query values) and write the comparison report into ``out``.

    Raises :class:`~snapbench.errors.ConfigError` naming every difference when the runs' queries,
    gallery, qrels, planned conditions, seed or metric settings differ (the variant source may
    differ), and :class:`~snapbench.errors.InputError` for a path that is no run or has no per-query
    values.  A run that left conditions out because its modes read one side of the query only (a
    text-only encoder) is compared on the conditions every run has; ``warnings`` name the rest."""
    from .write import write_outputs

    opts = options or CompareOptions()
    opts.check()
    say = progress or (lambda _m: None)
    t0 = time.perf_counter()
    outdir = Path(out)
    before = claim_output_dir(outdir, "compare")  # a folder another command wrote is refused before any work
    sources = open_sources(paths, opts.names)
    st = resolve_settings(sources, opts)
    compared = check_setups(sources, st.targets)
    warnings = [c.warning for c in compared.values() if c.warning]
    models = model_values(sources, st.targets, st.metrics, say, {t: c.conditions for t, c in compared.items()})
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
    write_outputs(res, opts)
    res.files.append(cdir.run_json)
    res.removed = remove_stale(cdir, candidates, res.files)
    write_run_json(outdir, "compare", {**body, "status": "complete", "files": relative_names(cdir, res.files)})
    t_end = time.perf_counter()
    res.timings = {"read_s": t_read - t0, "statistics_s": t_stats - t_read, "write_s": t_end - t_stats,
                   "total_s": t_end - t0}
    return res
