"""Time the model comparison at the issue's scale: 10 models x 72 conditions x 1,145 queries, 10^4 resamples.

    python bench/bench_compare.py [--out bench/RESULTS_compare.md] [--repeats 3] [--metrics hit@1,...]

Workload (issue #16, point 4; target <= 30 s on this 2-core machine): synthetic per-query values of
10 models on SnapBench's 72 conditions (clean + 45 image + 8 text + 18 joint) and 1,145 queries, 3%
of them zero-GT (not counted), from a latent model with realistic rates (clean hit@1 0.45-0.75,
hit@10 ~0.9; drops up to ~0.3 at severity 3; per-query outcomes correlated across conditions of a
query and across models): the 13 default metrics (hit/recall/ndcg @1,5,10,20 + mrr) of one mode;
10,000 bootstrap resamples and 10,000 permutations.  Timed: :func:`snapbench.compare.compare_models`
(every record: per-model deltas + CIs, 45 pairs x (71 conditions + 17 groups) with CIs, exact tests for
hit@k and permutation tests otherwise, Holm, ranking, CE, effective robustness, additivity) from
in-memory per-query values -- best of ``--repeats`` interleaved runs; peak memory of the process.
Also one metric alone (hit@1) to give the per-metric cost.

End to end (``snapbench compare`` from run folders, :func:`snapbench.compare.compare_runs`): a
several-encoder run folder of the same 10 models x 6 targets (I2I, T2T, IT2IT, I2IT, T2IT, MOOR),
each target with its report.json and per_query.csv of 72 conditions x 13 metrics x 1,145 queries
(~1M rows, written by the one writer, :func:`snapbench.store.perquery.write_per_query`; built once under
``--runs`` and reused).  Timed: the default comparison (every target, the runs' hit@k) with every
output (HTML, tables, records as CSV and Parquet, figures as PNG), and all 13 metrics of one target;
split into reading, statistics and writing.  Also reading one per-query table with the reader used
(pyarrow) against the csv-module row reader.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import resource
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine  # noqa: E402

from snapbench.app.compare import CompareOptions, compare_runs  # noqa: E402
from snapbench.compare import CompareConfig, ModelValues, compare_models
from snapbench.core.conditions import list_conditions, parse_condition  # noqa: E402
from snapbench.core.records import REPORT_SCHEMA_VERSION  # noqa: E402
from snapbench.store import RunDir, write_run_json  # noqa: E402
from snapbench.store.atomic import write_json  # noqa: E402
from snapbench.store.perquery import _read_rows, read_per_query, write_per_query  # noqa: E402

Q, M = 1145, 10
KS = (1, 5, 10, 20)
NOTES_MARK = "<!-- hand-written notes below: kept when the benchmark is rerun -->"
METRICS = [f"hit@{k}" for k in KS] + [f"recall@{k}" for k in KS] + [f"ndcg@{k}" for k in KS] + ["mrr"]


def synthetic_models(seed: int = 0, metrics=METRICS) -> list[ModelValues]:
    """Per-query values of :func:`synthetic_values` as :class:`ModelValues` (mode IT2IT)."""
    return [ModelValues.from_values(name, qids, {"IT2IT": vals}) for name, qids, vals in synthetic_values(seed, metrics)]


def synthetic_values(seed: int = 0, metrics=METRICS, target: int = 0):
    """Yield ``(name, query ids, {condition: {metric: values}})`` per model from a latent-ability
    model: rank of the first positive r = a lognormal whose location moves with query difficulty,
    model strength and the condition's drop.  ``target`` varies the outcomes of one data set (the
    queries, their positives and difficulty stay those of ``seed``): the targets of one run."""
    rng = np.random.default_rng(seed)
    conds = [c.id for c in list_conditions(joint=True)]
    qids = [f"q{i:04d}" for i in range(Q)]
    zero_gt = rng.random(Q) < 0.03
    n_pos = rng.poisson(3.8, Q) + 1
    difficulty = rng.standard_normal(Q)
    if target:
        rng = np.random.default_rng([seed, target])
    sev_drop = {None: 0.0, 1: 0.25, 2: 0.5, 3: 0.9}
    op_weight = {c: rng.uniform(0.3, 1.5) for c in conds}
    for m in range(M):
        strength = 1.0 + 0.08 * m
        fragility = rng.uniform(0.6, 1.4)
        own = rng.standard_normal(Q)  # the model's own per-query luck, shared by its conditions
        vals = {}
        for c in conds:
            pc = parse_condition(c)
            drop = 0.0 if c == "clean" else fragility * op_weight[c] * (sev_drop[pc.severity] if pc.severity else 0.4)
            z = 0.9 * difficulty + 0.6 * own + 0.5 * rng.standard_normal(Q) - strength + drop
            r = np.maximum(1.0, np.floor(np.exp(1.3 * z + 0.8)))
            per = {}
            for k in KS:
                hit = (r <= k).astype(float)
                per[f"hit@{k}"] = hit
                per[f"recall@{k}"] = hit * np.minimum(1.0, (1 + np.floor((k - np.minimum(r, k)) / 3)) / n_pos)
                per[f"ndcg@{k}"] = hit / np.log2(r + 1) * np.minimum(1.0, 2.0 / np.sqrt(n_pos))
            per["mrr"] = 1.0 / r
            vals[c] = {mm: np.where(zero_gt, np.nan, per[mm]) for mm in metrics}
        yield f"model{m}", qids, vals


def timed(fn) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process: all threads)."""
    t0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - t0, time.process_time() - c0


def reference_gemm() -> float:
    """Best of 3: one float64 product of the bootstrap's shape (10,000 x 1,145 @ 1,145 x 720) -- a
    contention gauge: its time on the idle machine is the yardstick for the numbers of this run."""
    rng = np.random.default_rng(0)
    a, b = rng.random((10_000, Q)), rng.random((Q, 720))
    return min(timed(lambda: a @ b)[0] for _ in range(3))


def input_mb(models: list[ModelValues]) -> float:
    return sum(st.num.nbytes + st.den.nbytes for m in models for conds in m.stats.values()
               for metrics in conds.values() for st in metrics.values()) / 2**20


TARGETS = ("I2I", "T2T", "IT2IT", "I2IT", "T2IT", "MOOR")


def _report(target: str, qids, vals) -> dict:
    """A report.json of the synthetic values: values and deltas per condition and metric, the meta a
    run writes (what compare reads of a report: its conditions, metrics and settings)."""
    clean = {m: float(np.nanmean(v)) for m, v in vals["clean"].items()}
    n_zero = int(np.isnan(vals["clean"]["hit@1"]).sum())
    meta = {"snapbench_version": "bench", "schema_version": REPORT_SCHEMA_VERSION, "seed": 0, "resamples": 10_000,
            "permutations": 10_000, "ci_level": 0.95, "ci_method": "paired bootstrap", "ks": list(KS), "metrics": METRICS,
            "tie_rule": "stable", "tests": {}, "correction": "holm", "zero_gt": "excluded from ranking metrics",
            "n_zero_gt": n_zero, "n_gallery": 5000, "graded_labels": False, "set_threshold": None, "paired_delta": "",
            "additivity_drops": "", "cliff_rule": "", "cliff_tol": 0.01, "cliff_ratio": 2.0, "stability_metric": "hit@1",
            "mode": target, "dataset": "synthetic", "n_dropped_queries": 0}
    conds = {c: {m: float(np.nanmean(v)) for m, v in per.items()} for c, per in vals.items()}
    paired = {c: {m: {"delta": conds[c][m] - clean[m], "ci": [None, None], "p": None, "p_raw": None} for m in per}
              for c, per in vals.items() if c != "clean"}
    return {"conditions": conds, "paired": paired, "additivity": {}, "n_queries": len(qids),
            "n_excluded_zero_gt": n_zero, "meta": meta}


def build_runs(root: Path) -> Path:
    """A several-encoder run folder of M models x 6 targets (reused when ``root/run.json`` exists)."""
    if (root / "run.json").is_file():
        return root
    fp = {"dataset_queries_sha256": "q", "dataset_gallery_sha256": "g", "seed": 0, "variants": "generated", "grid": {}}
    runs = [{"name": f"model{m}", "encoder": f"model{m}", "path": f"model{m}"} for m in range(M)]
    for i, target in enumerate(TARGETS):
        for name, qids, vals in synthetic_values(target=i):
            rd = RunDir(root / name)
            write_per_query(rd.per_query(target), qids, vals)
            write_json(rd.report(target), _report(target, qids, vals))
            print(f"built {name}/{target}", flush=True)
    for r in runs:
        write_run_json(root / r["path"], "run", {"encoder": r["encoder"], "seed": 0, "variants": "generated",
                                                  "fingerprint": fp, "modes": list(TARGETS)})
    write_run_json(root, "run", {"seed": 0, "variants": "generated", "fingerprint": fp, "encoder_runs": runs})
    return root


def end_to_end(runs: Path, out: Path, repeats: int) -> dict:
    """Timings of compare_runs (default; 13 metrics of IT2IT) and of reading one per-query table."""
    table = RunDir(runs / "model0").per_query("IT2IT")
    rows = {"fast": [], "csv": []}
    for _ in range(repeats):  # interleaved
        rows["fast"].append(timed(lambda: read_per_query(table)))
        rows["csv"].append(timed(lambda: _read_rows(_csv_reader(table), table)))
    runs_e2e = {"default": [], "all13": []}
    fmts = ["html", "md", "tex", "csv", "parquet", "png"]
    for _ in range(repeats):
        for key, opts in (("default", CompareOptions(formats=fmts)),
                          ("all13", CompareOptions(modes=["IT2IT"], metrics="all", formats=fmts))):
            c0 = time.process_time()
            res = compare_runs([runs], out / key, opts)
            runs_e2e[key].append({**res.timings, "cpu_s": time.process_time() - c0, "files": len(res.files),
                                  "json_mb": (out / key / "compare.json").stat().st_size / 2**20})
            print(key, {k: round(v, 2) for k, v in runs_e2e[key][-1].items()}, f"load {os.getloadavg()[0]:.2f}",
                  flush=True)
    tracemalloc.start()  # numpy's buffers and Python objects (pyarrow's parse buffers are not traced)
    compare_runs([runs], out / "traced", CompareOptions(formats=fmts))
    own_mb = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return {"read": rows, "runs": runs_e2e, "own_mb": own_mb}


def _csv_reader(path: Path):
    import csv
    import io

    reader = csv.reader(io.StringIO(path.read_text(encoding="utf-8")))
    next(reader)
    return reader


def core(args) -> tuple:
    """Timings and memory of compare_models at the issue's scale (one mode, 13 metrics)."""
    cfg = CompareConfig(resamples=args.resamples)
    full = synthetic_models()
    one = synthetic_models(metrics=["hit@1"])
    base_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    gemm = [reference_gemm()]
    t_full, t_one = [], []
    for _ in range(args.repeats):  # interleaved
        t_full.append(timed(lambda: compare_models(full, cfg)))
        t_one.append(timed(lambda: compare_models(one, cfg)))
        print(f"full {t_full[-1][0]:.2f} s (CPU {t_full[-1][1]:.2f} s), hit@1 only {t_one[-1][0]:.2f} s, "
              f"load {os.getloadavg()[0]:.2f}", flush=True)
    gemm.append(reference_gemm())
    print(f"reference product {gemm[0]:.3f} s before, {gemm[1]:.3f} s after")
    tracemalloc.start()  # numpy reports its buffers to tracemalloc: the comparison's own peak
    res = compare_models(full, cfg)
    own_mb = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    n_rec = {k: len(v) for k, v in res.records().items() if isinstance(v, list)}
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    mem = {"inputs": input_mb(full) + input_mb(one), "before": base_mb, "peak": peak_mb, "own": own_mb}
    print(n_rec, {k: round(v) for k, v in mem.items()})
    return t_full, t_one, n_rec, mem, gemm


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--resamples", type=int, default=10_000)
    ap.add_argument("--runs", default="/tmp/snapbench_bench_compare_runs", help="where the run folders are built once")
    ap.add_argument("--part", choices=("core", "e2e", "both"), default="both")
    args = ap.parse_args()
    if args.part != "both" and args.out:
        raise SystemExit("--out writes the results of both parts: use --part both")
    parts = core(args) if args.part in ("core", "both") else None
    if args.part in ("e2e", "both"):
        with tempfile.TemporaryDirectory() as tmp:
            e2e = end_to_end(build_runs(Path(args.runs)), Path(tmp), args.repeats)
        if args.out:
            write_results(Path(args.out), *parts, args.resamples, e2e)


def _e2e_lines(e2e: dict) -> list[str]:
    read = {k: min(v) for k, v in e2e["read"].items()}
    lines = [
        "## End to end: `snapbench compare` from run folders",
        "",
        f"A several-encoder run folder of {M} models x 6 targets (I2I, T2T, IT2IT, I2IT, T2IT, MOOR), each target's "
        f"per_query.csv of 72 conditions x 13 metrics x {Q:,} queries (~1.07M rows, ~57 MB) and report.json; "
        "`compare_runs` writes every output (compare.json, HTML, md/tex tables, CSV + Parquet records, PNG "
        "figures of the headline metric per target). Best of the repeats, interleaved:",
        "",
        "| comparison | total (s) | reading (s) | statistics (s) | writing (s) | CPU (s) | files | compare.json (MB) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for key, label in (("default", "default: 6 targets x the runs' hit@k (4 metrics)"),
                       ("all13", "IT2IT, all 13 metrics")):
        b = min(e2e["runs"][key], key=lambda r: r["total_s"])
        lines.append(f"| {label} | {b['total_s']:.2f} | {b['read_s']:.2f} | {b['statistics_s']:.2f} | "
                     f"{b['write_s']:.2f} | {b['cpu_s']:.2f} | {b['files']} | {b['json_mb']:.1f} |")
    totals = {k: ", ".join(f"{r['total_s']:.2f}" for r in v) for k, v in e2e["runs"].items()}
    lines += [
        "",
        f"All repeats, total wall (s): default {totals['default']}; IT2IT all metrics {totals['all13']}.",
        "",
        f"Reading one per_query.csv (~1.07M rows): {read['fast'][0]:.3f} s with the reader used (pyarrow's CSV "
        f"reader, {read['fast'][1]:.3f} s CPU) vs {read['csv'][0]:.3f} s with the csv-module row reader "
        f"({read['csv'][0] / read['fast'][0]:.1f}x).",
        "",
        f"Memory: one default comparison allocates at most {e2e['own_mb']:.0f} MB at a time (tracemalloc peak of "
        "`compare_runs`: the per-query values of the compared metrics of every model and target, one target's "
        "tables while they are read, the draws, one (target, metric) of resampled values, the records and the "
        "outputs being written; pyarrow's parse buffers are not traced).",
        "",
    ]
    return lines


def write_results(path, t_full, t_one, n_rec, mem, gemm, resamples, e2e=None) -> None:
    load = os.getloadavg()[0]
    best = min(t_full)
    lines = [
        "# Compare: statistics core at the issue's scale",
        "",
        f"- date: {dt.date.today().isoformat()}",
        f"- machine: {machine()}; 1-min load average at the end {load:.2f}",
        f"- workload: {M} models x 72 conditions x {Q:,} queries (3% zero-GT), {resamples:,} bootstrap resamples and "
        f"as many permutations; `compare_models` from in-memory per-query values (synthetic, see the script)",
        "",
        "| run | best wall (s) | its CPU time (s) | all runs, wall (s) |",
        "|---|---:|---:|---|",
        f"| 13 metrics (hit/recall/ndcg @1,5,10,20 + mrr), one mode | {best[0]:.2f} | {best[1]:.2f} | "
        f"{', '.join(f'{t[0]:.2f}' for t in t_full)} |",
        f"| hit@1 only | {min(t_one)[0]:.2f} | {min(t_one)[1]:.2f} | {', '.join(f'{t[0]:.2f}' for t in t_one)} |",
        "",
        f"Target <= 30 s: **{'met' if best[0] <= 30 else 'NOT met'}** in wall time ({best[0]:.2f} s for all 13 "
        f"metrics); CPU time of that run {best[1]:.2f} s.",
        "",
        f"Contention gauge: one float64 product of the bootstrap's shape (10,000 x 1,145 @ 1,145 x 720) took "
        f"{gemm[0]:.3f} s before and {gemm[1]:.3f} s after the runs.",
        "",
        f"Records (13 metrics): {', '.join(f'{k} {v:,}' for k, v in n_rec.items())}.",
        "",
        f"Memory: the comparison itself allocates at most {mem['own']:.0f} MB at a time (tracemalloc peak of one "
        "`compare_models` call, 13 metrics): the counts and swap matrices (10,000 x 1,145 float64, 87 MB each, "
        "and a float32 copy of the counts) plus, one metric at a time, the resampled values and their "
        "temporaries (models x columns x resamples); nothing depends on a gallery. Peak resident memory of "
        f"the whole benchmark process: {mem['peak']:.0f} MB, of which {mem['before']:.0f} MB before the first "
        f"comparison (Python, numpy/scipy and the synthetic inputs: {mem['inputs']:.0f} MB of per-query "
        "(num, den) vectors).",
        "",
    ]
    if e2e is not None:
        lines += _e2e_lines(e2e)
    notes = ""
    if path.exists() and NOTES_MARK in path.read_text():
        notes = path.read_text().split(NOTES_MARK, 1)[1]
    path.write_text("\n".join(lines) + "\n" + NOTES_MARK + notes)


if __name__ == "__main__":
    main()
