"""Reading a run directory (its layout is :class:`snapbench.store.RunDir`), for every reader: the report
(:func:`load_run_dir`), the traffic view (:func:`read_run`) and comparisons (:class:`snapbench.store.compare.ModelSource`
reads through :func:`read_report` and :func:`read_target_values`).  For the report every input is
optional except at least one report.

A missing or unreadable optional piece becomes a line in :attr:`RunData.missing`, shown by the
report in the section that needed it; only a directory without any readable report is an error.
"""

from __future__ import annotations

import hashlib
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..core.errors import InputError
from ..core.records import PerQuery, Report, ReportMeta
from ..core.targets import FUSION_PREFIX, MODE_LABELS, TARGET_ORDER, primary_target
from ..core.userfiles import read_json
from . import RunDir, open_run_dir
from .folders import REPORT_JSON, check_schema_version, unfinished_run
from .perquery import read_per_query

__all__ = ["TARGET_NAMES", "RunData", "load_run_dir", "read_target_per_query", "read_target_values"]

#: How tables, figures and sentences name a mode or MOOR (fusion baselines are named by the caller).
TARGET_NAMES: dict[str, str] = {**MODE_LABELS, "MOOR": "MOOR"}


@dataclass
class RunData:
    """Everything read from a run directory.

    ``reports`` maps a mode (``I2I`` ... ``MOOR``) to its report, ``fusion`` a baseline name to its
    report, ``per_query`` a target (a mode or ``fusion/<name>``) to its per-query table; ``missing``
    collects what could not be read, keyed by topic; ``unfinished`` is the warning for a run that
    stopped before it wrote every report (:func:`snapbench.store.folders.unfinished_run`), else ``None``.
    """

    path: Path
    run: dict = field(default_factory=dict)
    reports: dict[str, Report] = field(default_factory=dict)
    fusion: dict[str, Report] = field(default_factory=dict)
    per_query: dict[str, PerQuery] = field(default_factory=dict)
    text_share: dict[str, float] | None = None
    contact_sheet: Path | None = None
    missing: dict[str, list[str]] = field(default_factory=dict)
    unfinished: str | None = None

    def note(self, topic: str, message: str) -> None:
        self.missing.setdefault(topic, []).append(message)

    @property
    def modes(self) -> list[str]:
        """The evaluated modes and MOOR in :data:`~snapbench.core.targets.TARGET_ORDER` (MOOR last)."""
        return [m for m in TARGET_ORDER if m in self.reports]

    @property
    def primary_mode(self) -> str:
        """The mode the findings speak of first (:func:`~snapbench.core.targets.primary_target`: IT→IT, the
        paper's joint mode, if present)."""
        return primary_target(self.reports)

    @property
    def first_report(self) -> Report:
        return self.reports[self.primary_mode]

    def target_report(self, target: str) -> Report | None:
        """The report of a mode, ``MOOR`` or ``fusion/<name>``."""
        if target.startswith(FUSION_PREFIX):
            return self.fusion.get(target[len(FUSION_PREFIX):])
        return self.reports.get(target)


def _read_json_object(path: Path, data: RunData, topic: str) -> dict | None:
    try:
        obj = read_json(path)
    except InputError as e:
        data.note(topic, f"{path}: unreadable ({e.problem})")
        return None
    if not isinstance(obj, dict):
        data.note(topic, f"{path}: not a JSON object")
        return None
    return obj


def _read_report(path: Path, data: RunData, topic: str) -> Report | None:
    try:
        return read_report(path)
    except InputError as e:
        data.note(topic, f"{path}: unreadable ({e.problem})")
        return None


def _read_text_share(path: Path, data: RunData) -> dict[str, float] | None:
    obj = _read_json_object(path, data, "text_share")
    if obj is None:
        return None
    out: dict[str, float] = {}
    for cond, v in obj.items():
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            out[str(cond)] = float(v)
        else:
            data.note("text_share", f"{path}: condition {cond!r} has no finite share ({v!r}); ignored")
    return out


def read_target_values(run_dir: str | Path, target: str) -> tuple[list[str], dict[str, dict[str, np.ndarray]]] | None:
    """The per-query table of one target of a run (``DIR/<target>/per_query.csv``) as arrays,
    ``(query_ids, {condition: {metric: values}})`` (NaN = the query does not count), ``None`` when
    the run has none: the one way per-query values of a run are read (the report, comparisons of
    runs).  :class:`InputError` naming the file when it is malformed."""
    path = RunDir(run_dir).per_query(target)
    if not path.is_file():
        return None
    return read_per_query(path)


def read_target_per_query(run_dir: str | Path, target: str) -> PerQuery | None:
    """:func:`read_target_values` as a :class:`snapbench.core.records.PerQuery`."""
    got = read_target_values(run_dir, target)
    return None if got is None else PerQuery.from_arrays(*got)


def _load_target(rd: RunDir, target: str, data: RunData, topic: str) -> Report | None:
    rep = _read_report(rd.report(target), data, topic)
    if rep is None:
        return None
    try:
        pq = read_target_per_query(rd.root, target)
    except InputError as e:
        data.note("per_query", str(e))
        pq = None
    if pq is not None:
        data.per_query[target] = pq
    return rep


def load_run_dir(path: str | Path) -> RunData:
    """Read ``path`` (see the module docstring).  Raises :class:`InputError` when it is not a run
    directory (:func:`snapbench.store.open_run_dir` says what it is instead), holds no readable
    ``<MODE>/report.json``, or holds a ``run.json`` that is not a JSON object (named with its problem)."""
    rd = open_run_dir(path)
    data = RunData(path=rd.root)
    if rd.run_json.is_file():
        # optional, but not when present and damaged: what it says (the modes, the dataset) decides what is
        # shown, so a run.json that is not a JSON object is an error naming it, as run and compare refuse it
        data.run = read_json(rd.run_json)
        if not isinstance(data.run, dict):
            raise InputError("not a JSON object (run.json records the run: dataset, encoder, modes...)",
                             path=rd.run_json)
        data.unfinished = unfinished_run(data.run, rd.root)
    else:
        data.note("run", f"{rd.run_json} not found: dataset, encoder and seed come from the reports where they can")
    listed = data.run.get("modes") if isinstance(data.run.get("modes"), list) else None
    for target in rd.targets():
        if listed is not None and not target.startswith(FUSION_PREFIX) and target not in listed:
            # run.json's list is the run's targets: a folder of a mode it does not list is not this run's
            data.note("run", f"{rd.target_dir(target)} is not one of the modes run.json lists: not shown")
            continue
        topic = "fusion" if target.startswith(FUSION_PREFIX) else target
        rep = _load_target(rd, target, data, topic)
        if rep is None:
            continue
        if target.startswith(FUSION_PREFIX):
            data.fusion[target[len(FUSION_PREFIX):]] = rep
        else:
            data.reports[target] = rep
    if not data.reports:
        problems = "; ".join(m for msgs in data.missing.values() for m in msgs)
        raise InputError(
            "no readable <MODE>/report.json (MODE one of " + ", ".join(TARGET_ORDER) + ")"
            + (f": {problems}" if problems else ""), path=rd.root)
    for mode in listed or []:
        if str(mode) not in data.reports and str(mode) not in data.missing:  # unreadable ones are noted already
            data.note("run", f"run.json lists mode {mode!r} but {rd.report(str(mode))} is missing")
    if rd.text_share.is_file():
        data.text_share = _read_text_share(rd.text_share, data)
    if rd.contact_sheet.is_file():
        data.contact_sheet = rd.contact_sheet
    return data


def report_digests(run_dir: str | os.PathLike) -> dict[str, str]:
    """sha256 of each target's report.json (traffic.json records them; a change means it is stale)."""
    rd = RunDir(run_dir)
    return {t: hashlib.sha256(rd.report(t).read_bytes()).hexdigest() for t in rd.targets()}


def read_report(path: str | os.PathLike) -> Report:
    """Read and check a ``report.json`` (decoded through :mod:`snapbench.core.userfiles`)."""
    from ..core.userfiles import read_json

    obj = read_json(path, what="report")
    if isinstance(obj, dict) and isinstance(obj.get("meta"), dict):
        check_schema_version(obj["meta"], REPORT_JSON, path)
    return Report.from_json(obj, path=path)


def write_report(report: Report, path: str | os.PathLike) -> None:
    """Write ``report`` as strict JSON (undefined values as null), atomically (parent folders are
    created); :class:`~snapbench.core.errors.OutputError` naming ``path`` when it cannot be written."""
    from ..core.errors import OutputError
    from ..store.atomic import write_json

    try:
        write_json(Path(path), report.to_json())
    except OSError as e:
        raise OutputError(f"cannot write the report ({e.strerror or e})", path=path) from None


@dataclass
class RunTables:
    """What a run directory holds for the traffic view: typed reports and per-query values."""

    path: Path
    targets: list[str]
    reports: dict[str, Report]
    per_query: dict[str, tuple[list[str], dict[str, dict[str, np.ndarray]]]]
    conditions: list[str]
    digests: dict[str, str] = field(default_factory=dict)

    @property
    def meta(self) -> ReportMeta:
        return self.reports[self.targets[0]].meta


def read_run(run_dir: str | os.PathLike) -> RunTables:
    """The reports (and per-query tables where present) of every target of a run directory."""
    rd = open_run_dir(run_dir)
    targets = rd.targets()
    reports = {t: read_report(rd.report(t)) for t in targets}
    per_query = {t: got for t in targets if (got := read_target_values(rd.root, t)) is not None}
    conds = [c for c in reports[targets[0]].condition_ids if all(c in r.conditions for r in reports.values())]
    return RunTables(rd.root, targets, reports, per_query, conds, report_digests(rd.root))
