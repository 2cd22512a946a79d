"""Reading a run directory: every input of the report is optional except at least one report.

Layout (written by ``snapbench run``)::

    DIR/run.json                         dataset, encoder, seed, modes, conditions, version, ...
    DIR/<MODE>/report.json               MODE in I2I, T2T, IT2IT, I2IT, T2IT (``snapbench evaluate``)
    DIR/<MODE>/per_query.csv             query_id,condition,metric,value (optional)
    DIR/MOOR/report.json, per_query.csv  MOOR fusion
    DIR/MOOR/text_share.json             {condition: mean text-path share}
    DIR/fusion/<baseline>/report.json    fixed-fusion baselines (comb_sum, rrf, wh_uniform, ...)
    DIR/contact_sheet.png                ready contact sheet (else built from run.json)

A missing or unreadable optional piece becomes a line in :attr:`RunData.missing`, shown by the
report in the section that needed it; only a directory without any readable report is an error.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..modes import MODE_LABELS, MODES
from .perquery import read_per_query

__all__ = ["MODE_NAMES", "MODE_ORDER", "RunData", "load_run_dir"]

MODE_ORDER: tuple[str, ...] = (*MODES, "MOOR")
MODE_NAMES: dict[str, str] = {**MODE_LABELS, "MOOR": "MOOR"}


@dataclass
class RunData:
    """Everything read from a run directory.

    ``reports`` maps a mode (``I2I`` ... ``MOOR``) to its evaluate report, ``fusion`` a baseline name
    to its report, ``per_query`` a mode (or ``fusion/<name>``) to ``(query_ids, {condition: {metric:
    values}})``; ``missing`` collects what could not be read, keyed by topic.
    """

    path: Path
    run: dict = field(default_factory=dict)
    reports: dict[str, dict] = field(default_factory=dict)
    fusion: dict[str, dict] = field(default_factory=dict)
    per_query: dict[str, tuple[list[str], dict[str, dict[str, np.ndarray]]]] = field(default_factory=dict)
    text_share: dict[str, float] | None = None
    contact_sheet: Path | None = None
    missing: dict[str, list[str]] = field(default_factory=dict)

    def note(self, topic: str, message: str) -> None:
        self.missing.setdefault(topic, []).append(message)

    @property
    def modes(self) -> list[str]:
        """Evaluated modes in the paper's order (MOOR last)."""
        return [m for m in MODE_ORDER if m in self.reports]

    @property
    def primary_mode(self) -> str:
        """The mode the findings speak of first: IT→IT (the paper's joint mode) if present."""
        for m in ("IT2IT", "MOOR", "I2I", "I2IT", "T2IT", "T2T"):
            if m in self.reports:
                return m
        return next(iter(self.reports))

    @property
    def first_report(self) -> dict:
        return self.reports[self.primary_mode]


def _read_json(path: Path, data: RunData, topic: str) -> dict | None:
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        data.note(topic, f"{path}: unreadable ({e})")
        return None
    if not isinstance(obj, dict):
        data.note(topic, f"{path}: not a JSON object")
        return None
    return obj


def _read_report(path: Path, data: RunData, topic: str) -> dict | None:
    rep = _read_json(path, data, topic)
    if rep is None:
        return None
    lacking = [k for k in ("conditions", "paired") if not isinstance(rep.get(k), dict)]
    if lacking or "clean" not in rep.get("conditions", {}):
        data.note(topic, f"{path}: not a snapbench evaluate report (no {', '.join(lacking) or 'clean condition'})")
        return None
    rep.setdefault("additivity", {})
    return rep


def _read_text_share(path: Path, data: RunData) -> dict[str, float] | None:
    obj = _read_json(path, data, "text_share")
    if obj is None:
        return None
    out: dict[str, float] = {}
    for cond, v in obj.items():
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            out[str(cond)] = float(v)
        else:
            data.note("text_share", f"{path}: condition {cond!r} has no finite share ({v!r}); ignored")
    return out


def load_run_dir(path: str | Path) -> RunData:
    """Read ``path`` (see the module docstring).  Raises :class:`InputError` when it is not a
    folder or holds no readable ``<MODE>/report.json``."""
    root = Path(path)
    if not root.is_dir():
        raise InputError("not a run directory (no such folder)", path=root)
    data = RunData(path=root)
    run_json = root / "run.json"
    if run_json.is_file():
        data.run = _read_json(run_json, data, "run") or {}
    else:
        data.note("run", f"{run_json} not found: dataset, encoder and seed come from the reports where they can")
    for mode in MODE_ORDER:
        rp = root / mode / "report.json"
        if not rp.is_file():
            continue
        rep = _read_report(rp, data, mode)
        if rep is None:
            continue
        data.reports[mode] = rep
        pq = root / mode / "per_query.csv"
        if pq.is_file():
            try:
                data.per_query[mode] = read_per_query(pq)
            except InputError as e:
                data.note("per_query", str(e))
    if not data.reports:
        problems = "; ".join(m for msgs in data.missing.values() for m in msgs)
        raise InputError(
            "no readable <MODE>/report.json (MODE one of " + ", ".join(MODE_ORDER) + ")"
            + (f": {problems}" if problems else ""), path=root)
    listed = data.run.get("modes") if isinstance(data.run.get("modes"), list) else []
    for mode in listed:
        if str(mode) not in data.reports and str(mode) not in data.missing:  # unreadable ones are noted already
            data.note("run", f"run.json lists mode {mode!r} but {root / str(mode) / 'report.json'} is missing")
    fdir = root / "fusion"
    if fdir.is_dir():
        for sub in sorted(p for p in fdir.iterdir() if p.is_dir()):
            rp = sub / "report.json"
            if rp.is_file():
                rep = _read_report(rp, data, "fusion")
                if rep is not None:
                    data.fusion[sub.name] = rep
                pq = sub / "per_query.csv"
                if pq.is_file():
                    try:
                        data.per_query[f"fusion/{sub.name}"] = read_per_query(pq)
                    except InputError as e:
                        data.note("per_query", str(e))
    share = root / "MOOR" / "text_share.json"
    if share.is_file():
        data.text_share = _read_text_share(share, data)
    sheet = root / "contact_sheet.png"
    if sheet.is_file():
        data.contact_sheet = sheet
    return data
