"""Traffic-weighted robustness: the expected R@k of a run's targets under the mix a diagnose folder saw.

``snapbench report RUN_DIR --traffic DIAGNOSE_DIR`` (or ``snapbench run ... --traffic DIAGNOSE_DIR``)
writes ``RUN_DIR/traffic.json``.  For each target of the run (every mode, MOOR, each fusion
baseline) and metric:

    E = Σ_c w_c R(c)

with ``w`` the condition weights of the diagnosed queries (:mod:`snapbench.diagnose.mix`; clean
included, summing to 1) and ``R(c)`` the target's value under condition ``c`` in its report.json.

Confidence interval: both samples are resampled, independently, with the same row ``b`` for every
target and metric -- the run's queries by a paired bootstrap over ``<target>/per_query.csv``
(:func:`snapbench.evaluate.paired.bootstrap_counts`, key ``traffic.benchmark``: one resample of the
queries for all targets and conditions), the diagnosed queries by a multinomial draw of the flag
signatures (equivalent to resampling the queries, generator ``traffic.queries``) -- and
``E_b = Σ_c w_c^b R_b(c)``; the interval is the percentile interval of the ``E_b``.  The same rows
give paired intervals for ``E − R(clean)`` and for MOOR's gain ``E_MOOR − E_IT2IT``; ``ci_benchmark``
and ``ci_traffic`` resample one sample only (which sample limits the precision).  A metric whose
per-query mean does not reproduce the report (a ratio of sums) gets its value without an interval.
"""

from __future__ import annotations

import csv
import os
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..core.errors import InputError
from ..core.records import Report
from ..core.seeding import derive_generator
from ..core.userfiles import read_json, read_text
from ..diagnose.mix import FLAG_CONDITIONS, FlagConditions, Mix, Signature, build_mix, signature_kind
from ..evaluate.metrics import QueryStat
from ..evaluate.paired import bootstrap_counts, bootstrap_values, percentile_ci
from ..store.atomic import write_json
from ..store.folders import SCHEMA_VERSIONS, TRAFFIC_JSON, RunDir
from ..store.rundir import RunTables, read_run
from .diagnose import CSV_COLUMNS, CSV_NAME, SUMMARY_NAME

__all__ = ["TrafficSample", "check_traffic_dir", "compute_traffic", "traffic_body",
           "read_traffic", "write_traffic"]

_TRAFFIC_SCHEMA_VERSION = SCHEMA_VERSIONS[TRAFFIC_JSON]
_MOOR_AGAINST = "IT2IT"


@dataclass
class TrafficSample:
    """The diagnosed queries as flag signatures: ``counts[s]`` queries have ``signatures[s]``."""

    path: Path
    signatures: list[Signature]
    counts: np.ndarray
    sides: list[str]
    n_unreadable: int = 0

    @property
    def n(self) -> int:
        return int(self.counts.sum())


def _lines(text: str) -> Iterator[str]:
    """The lines of ``text`` one at a time (no list and no StringIO copy of a large log)."""
    start = 0
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end + 1
        yield text[start:end]
        start = end


def _read_flags(path: Path) -> tuple[dict[str, list[int]], list[str], set[str]]:
    """diagnose.csv as ``{query_id: [image flag bits, text flag bits]}``, the detector of each bit,
    and the sides present (bit masks: a log of millions of queries stays small)."""
    reader = csv.reader(_lines(read_text(path, what="diagnose table")))
    header = next(reader, None)
    if header is None or tuple(h.strip() for h in header) != CSV_COLUMNS:
        raise InputError(f"not a diagnose table: the header must be {','.join(CSV_COLUMNS)}", path=path)
    bits: dict[str, int] = {}
    flags: dict[str, list[int]] = {}
    sides: set[str] = set()
    for lineno, row in enumerate(reader, start=2):
        if not row:
            continue
        if len(row) != len(CSV_COLUMNS) or row[1] not in ("image", "text") or row[4] not in ("0", "1"):
            raise InputError(f"line {lineno}: expected query_id,side (image/text),detector,score,flag (0/1), "
                             f"got {','.join(row)!r}", path=path)
        qid, side, det, _, flag = row
        entry = flags.setdefault(qid, [0, 0])
        sides.add(side)
        if flag == "1":
            entry[side == "text"] |= 1 << bits.setdefault(det, len(bits))
    return flags, list(bits), sides


def read_traffic(diagnose_dir: str | os.PathLike) -> TrafficSample:
    """Read the flags of a ``snapbench diagnose`` output folder (diagnose.csv, summary.json).

    Queries whose image could not be read (summary.json ``skips``) are left out: their image side
    is unknown.  They are counted in ``n_unreadable`` whether or not their question left rows in
    diagnose.csv (an image-only query has none).  Raises :class:`InputError` naming the file for a folder that is not diagnose's."""
    d = Path(diagnose_dir)
    if not d.is_dir():
        raise InputError("not a folder (expected the output folder of snapbench diagnose)", path=d, param="traffic")
    if not (d / CSV_NAME).is_file() or not (d / SUMMARY_NAME).is_file():
        raise InputError(f"not a snapbench diagnose folder: it needs {CSV_NAME} and {SUMMARY_NAME}", path=d,
                         param="traffic")
    summary = read_json(d / SUMMARY_NAME, what="diagnose summary")
    if not isinstance(summary, dict):
        raise InputError("must hold a JSON object", path=d / SUMMARY_NAME)
    skips = {str(s.get("query_id")) for s in summary.get("skips") or [] if isinstance(s, dict)}
    flags, names, sides = _read_flags(d / CSV_NAME)
    masks: dict[tuple[int, int], int] = {}
    for q, (i, t) in flags.items():
        if q not in skips:
            masks[(i, t)] = masks.get((i, t), 0) + 1
    if not masks:
        raise InputError(f"no diagnosed query with readable sides in {CSV_NAME}", path=d, param="traffic")

    def named(mask: int) -> frozenset[str]:
        return frozenset(n for b, n in enumerate(names) if mask >> b & 1)

    counts = {(named(i), named(t)): k for (i, t), k in masks.items()}
    order = sorted(counts, key=lambda s: (len(s[0]) + len(s[1]) > 0, signature_kind(s), sorted(s[0]), sorted(s[1])))
    return TrafficSample(d, order, np.array([counts[s] for s in order], dtype=np.int64),
                         [s for s in ("image", "text") if s in sides], len(skips))


def _columns(get: Any, mix: Mix) -> np.ndarray:
    """R over the mix's columns from ``get(condition)`` (scalar or array); estimated joints additively."""
    out = []
    for c in mix.conditions:
        if c in mix.estimated:
            ci, ct = mix.estimated[c]
            out.append(np.clip(get(ci) + get(ct) - get("clean"), 0.0, 1.0))
        else:
            out.append(get(c))
    return np.stack([np.asarray(v, dtype=np.float64) for v in out], axis=-1)


def _point(report: Report, metric: str, mix: Mix) -> np.ndarray:
    def get(c: str) -> float:
        v = report.value(c, metric)
        return np.nan if v is None else float(v)

    return _columns(get, mix)


def _needed(mix: Mix) -> list[str]:
    need = dict.fromkeys(c for c in mix.conditions if c not in mix.estimated)
    for ci, ct in mix.estimated.values():
        need.update(dict.fromkeys((ci, ct)))
    return list(need)


def _aligned(run: RunTables, notes: list[str]) -> dict[str, tuple[np.ndarray, dict]]:
    """Per target with per_query.csv: its row order onto the first such target's query ids."""
    out: dict[str, tuple[np.ndarray, dict]] = {}
    ref: list[str] | None = None
    for t in run.targets:
        if t not in run.per_query:
            notes.append(f"{t}: no per_query.csv, so its expected values have no confidence interval")
            continue
        qids, values = run.per_query[t]
        ref = qids if ref is None else ref
        if sorted(qids) != sorted(ref):
            notes.append(f"{t}: per_query.csv has other queries than the other targets; no confidence interval")
            continue
        pos = {q: i for i, q in enumerate(qids)}
        out[t] = (np.array([pos[q] for q in ref], dtype=np.int64), values)
    return out


def _query_columns(values: Mapping, order: np.ndarray, report: Report, need: list[str],
                   metric: str) -> dict[str, np.ndarray] | None:
    """Per-query values of ``need`` for one metric; None when they do not reproduce the report's values."""
    cols = {}
    for c in need:
        v, ref = values.get(c, {}).get(metric), report.value(c, metric)
        if v is None or ref is None:
            return None
        v = np.asarray(v, dtype=np.float64)[order]
        if np.all(np.isnan(v)) or abs(float(np.nanmean(v)) - ref) > 1e-9:
            return None
        cols[c] = v
    return cols


@dataclass
class _Draws:
    """Resampling state shared by every metric: the traffic weights and the benchmark count matrices."""

    resamples: int
    seed: int
    level: float
    wb: np.ndarray
    counts: dict[int, np.ndarray] = field(default_factory=dict)

    def benchmark(self, n: int) -> np.ndarray:
        if n not in self.counts:
            self.counts = {n: bootstrap_counts(n, self.resamples, self.seed, key="traffic.benchmark")}
        return self.counts[n]


def _benchmark_draws(run: RunTables, aligned: Mapping, metric: str, mix: Mix, draws: _Draws,
                     notes: list[str]) -> dict[str, np.ndarray]:
    """Per target: (B, columns) resampled R of the mix's columns for one metric (the same query
    resample for every target and condition)."""
    need = _needed(mix)
    vals: dict[str, dict[str, np.ndarray]] = {}
    for t, (order, values) in aligned.items():
        cols = _query_columns(values, order, run.reports[t], need, metric)
        if cols is None:
            notes.append(f"{t}/{metric}: the per-query values do not reproduce the report's value of every "
                         "condition the mix uses; no confidence interval")
        else:
            vals[t] = cols
    if not vals:
        return {}
    defined = np.zeros(len(next(iter(aligned.values()))[0]), dtype=bool)
    for cols in vals.values():
        for v in cols.values():
            defined |= ~np.isnan(v)
    stats = [QueryStat(np.nan_to_num(v[defined]), (~np.isnan(v[defined])).astype(np.float64))
             for cols in vals.values() for v in cols.values()]
    boot = bootstrap_values(stats, draws.benchmark(int(defined.sum())))
    out, j = {}, 0
    for t, cols in vals.items():
        by_cond = {c: boot[:, j + i] for i, c in enumerate(cols)}
        j += len(cols)
        out[t] = _columns(by_cond.__getitem__, mix)
    return out


def _traffic_draws(sample: TrafficSample, mix: Mix, resamples: int, seed: int) -> np.ndarray:
    """(B, columns) weights of resampled traffic: a multinomial draw of the signatures' counts."""
    rng = derive_generator("traffic.queries", int(seed), sample.n)
    draws = rng.multinomial(sample.n, sample.counts / sample.n, size=resamples)
    return mix.weights(draws)


def _weighted(w: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Σ_c w_c R_c along the last axis; a zero weight ignores an undefined R."""
    w, r = np.broadcast_arrays(w, r)
    return np.sum(np.where(w > 0, w * r, 0.0), axis=-1)


def _num(x: float) -> float:
    """A reported number: rounded to 12 decimals (drops float noise such as 1.0000000000000002 and -0.0)."""
    return round(float(x), 12) + 0.0 if np.isfinite(x) else float("nan")


def _interval(draws: np.ndarray | None, level: float) -> list[float] | None:
    if draws is None or np.all(np.isnan(draws)):
        return None
    lo, hi = percentile_ci(draws, level)
    return [_num(lo), _num(hi)]


def _ci(value: float, draws: np.ndarray | None, level: float) -> dict[str, Any]:
    ci = _interval(draws, level) if np.isfinite(value) else None
    return {"value": _num(value), "ci_low": None if ci is None else ci[0], "ci_high": None if ci is None else ci[1]}


def _metric_block(run: RunTables, aligned: Mapping, metric: str, mix: Mix, w: np.ndarray, draws: _Draws,
                  notes: list[str]) -> tuple[dict, dict, dict | None]:
    """Expected value, difference to clean and MOOR's gain for one metric, over every target."""
    boot = _benchmark_draws(run, aligned, metric, mix, draws, notes)
    expected, delta, eb, ep = {}, {}, {}, {}
    level, wb = draws.level, draws.wb
    for t in run.targets:
        if metric not in run.reports[t].metrics:
            continue
        r = _point(run.reports[t], metric, mix)
        e = ep[t] = float(_weighted(w, r))
        rb = boot.get(t)
        eb[t] = None if rb is None else _weighted(wb, rb)
        expected[t] = {**_ci(e, eb[t], level),
                       "ci_benchmark": None if rb is None else _interval(_weighted(w, rb), level),
                       "ci_traffic": _interval(_weighted(wb, r), level)}
        delta[t] = {**_ci(e - r[0], None if rb is None else eb[t] - rb[:, 0], level), "clean": _num(r[0])}
    gain = None
    if "MOOR" in expected and _MOOR_AGAINST in expected:
        both = eb["MOOR"] is not None and eb[_MOOR_AGAINST] is not None
        gain = _ci(ep["MOOR"] - ep[_MOOR_AGAINST], eb["MOOR"] - eb[_MOOR_AGAINST] if both else None, level)
    return expected, delta, gain


def _by_target(blocks: Mapping[str, dict]) -> dict[str, dict]:
    """{metric: {target: x}} -> {target: {metric: x}} in target order."""
    out: dict[str, dict] = {}
    for m, per_t in blocks.items():
        for t, x in per_t.items():
            out.setdefault(t, {})[m] = x
    return out


def compute_traffic(
    run_dir: str | os.PathLike,
    diagnose_dir: str | os.PathLike,
    *,
    mapping: Mapping[str, FlagConditions] = FLAG_CONDITIONS,
    resamples: int | None = None,
    seed: int | None = None,
    level: float | None = None,
) -> dict[str, Any]:
    """The traffic.json body for ``run_dir`` under the mix of ``diagnose_dir`` (module docstring).

    ``resamples``, ``seed`` and ``level`` default to the run's (its reports' meta)."""
    return traffic_body(read_run(run_dir), read_traffic(diagnose_dir), mapping=mapping, resamples=resamples,
                        seed=seed, level=level)


def traffic_body(
    run: RunTables,
    sample: TrafficSample,
    *,
    mapping: Mapping[str, FlagConditions] = FLAG_CONDITIONS,
    resamples: int | None = None,
    seed: int | None = None,
    level: float | None = None,
) -> dict[str, Any]:
    """:func:`compute_traffic` on inputs already read (:func:`read_run`, :func:`read_traffic`)."""
    meta = run.meta
    resamples = int(meta.resamples if resamples is None else resamples)
    seed = int(meta.seed if seed is None else seed)
    level = float(meta.ci_level if level is None else level)
    mix = build_mix(sample.signatures, run.conditions, mapping)
    notes = list(mix.notes)
    unmapped = sorted({f for s in sample.signatures for f in s[0] | s[1]} - set(mapping))
    if unmapped:
        notes.append(f"flags with no conditions in the table are ignored: {', '.join(unmapped)}")
    w = mix.weights(sample.counts)
    draws = _Draws(resamples, seed, level, _traffic_draws(sample, mix, resamples, seed))
    aligned = _aligned(run, notes)
    blocks = {m: _metric_block(run, aligned, m, mix, w, draws, notes) for m in meta.metrics}
    gains = {m: b[2] for m, b in blocks.items() if b[2] is not None}
    kinds = {k: int(sum(n for s, n in zip(sample.signatures, sample.counts) if signature_kind(s) == k))
             for k in ("clean", "image_only", "text_only", "both")}
    return {
        "kind": "traffic",
        "schema_version": _TRAFFIC_SCHEMA_VERSION,
        "run_dir": str(run.path),
        "diagnose_dir": str(sample.path),
        "queries": {"n": sample.n, **kinds, "excluded_unreadable_image": sample.n_unreadable, "sides": sample.sides},
        "weights": dict(zip(mix.conditions, (float(x) for x in w))),
        "estimated": {c: {"rule": "additive", "image": ci, "text": ct} for c, (ci, ct) in mix.estimated.items()},
        "expected": _by_target({m: b[0] for m, b in blocks.items()}),
        "delta_vs_clean": _by_target({m: b[1] for m, b in blocks.items()}),
        "moor_gain": {"against": _MOOR_AGAINST, "by_metric": gains} if gains else None,
        "mapping": {f: {"conditions": list(e.conditions), "explained_by": list(e.explained_by)}
                    for f, e in mapping.items()},
        "ci": {"level": level, "resamples": resamples, "seed": seed, "method": "percentile interval of "
               "E_b = Σ_c w_c^b R_b(c): paired bootstrap over the run's queries (key traffic.benchmark) × "
               "multinomial resample of the diagnosed queries (generator traffic.queries)"},
        "reports": run.digests,
        "notes": notes,
    }


def write_traffic(run_dir: str | os.PathLike, diagnose_dir: str | os.PathLike, *,
                  out_dir: str | os.PathLike | None = None, **options: Any) -> Path:
    """Compute :func:`compute_traffic` and write it to ``RUN_DIR/traffic.json`` (atomically), or to
    ``out_dir/traffic.json``: a report written elsewhere (``report --out``) leaves the run untouched.

    Each note (fallbacks, estimated joint conditions, missing intervals) is also a warning."""
    body = compute_traffic(run_dir, diagnose_dir, **options)
    for note in body["notes"]:
        warnings.warn(f"traffic: {note}", stacklevel=2)
    path = RunDir(run_dir if out_dir is None else out_dir).traffic
    write_json(path, body)
    return path


def check_traffic_dir(diagnose_dir: str | os.PathLike) -> None:
    """Fail early (before a long run) when ``diagnose_dir`` is not a readable diagnose folder."""
    read_traffic(diagnose_dir)

