"""The settings of ``snapbench compare`` and how its defaults follow from the runs.

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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..errors import ConfigError, arg
from ..evaluate.metrics import parse_metrics
from ..evaluate.paired import DEFAULT_CI, DEFAULT_RESAMPLES
from ..layout import FUSION_PREFIX, TARGET_ORDER
from ..report import FORMATS
from ..report.figures import check_dpi
from ..validate import choice, ci_level, hint_and_known, positive_int
from .multiple import CORRECTIONS
from .sources import ModelSource

__all__ = ["CompareOptions", "Settings", "resolve_settings"]


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
        choice(self.correction, list(CORRECTIONS), "correction", what="correction")
        if self.resamples is not None:
            positive_int(self.resamples, "resamples")
        if self.ci is not None:
            ci_level(self.ci, "ci")
        for f in self.formats:
            choice(f, FORMATS, "formats", what="format")
        check_dpi(self.dpi)


@dataclass
class Settings:
    """The comparison's resolved settings, and notes on what was left out or defaulted."""

    targets: list[str]
    metrics: list[str]
    metric: str
    resamples: int
    seed: int
    ci: float
    notes: list[str] = field(default_factory=list)


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
        lacking = [f"{s.label} ({t})" for s, t, r in reports if m not in r.metrics]
        if lacking:
            raise ConfigError(f"metric {m!r} is not in the report of {', '.join(lacking)}", param="metrics")
    return wanted


def _runs_value(sources, targets, get, default, what: str, notes: list[str]):
    vals = {get(s.report(t)) for s in sources for t in targets}
    if len(vals) == 1:
        return vals.pop()
    notes.append(f"the runs used different {what} ({', '.join(map(str, sorted(vals)))}); the comparison uses "
                 f"{default}, so its per-model CIs differ from some runs' reports")
    return default


def resolve_settings(sources: Sequence[ModelSource], options: CompareOptions) -> Settings:
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
    return Settings(targets, metrics, metric, int(resamples), int(seed), float(ci), notes)
