"""Time and memory of the traffic view (``snapbench report RUN --traffic DIAG``) on synthetic runs.

    python bench/bench_traffic.py [--queries 300,1000] [--traffic 100000] [--resamples 2000,10000]
                                  [--repeats 3] [--out bench/RESULTS_traffic.md]

A synthetic run directory like ``snapbench run`` writes with the default conditions and metrics: 8
targets (5 modes, MOOR, 2 fusion baselines) x 72 conditions x 13 metrics, ``<target>/report.json``
(the condition values are the means of the per-query table) and ``<target>/per_query.csv``; a
synthetic diagnose folder of ``--traffic`` queries with the pilot's mix (29% clean, 35% both sides).
Timed, minimum over repeats: reading the diagnose folder (:func:`read_traffic`), reading the run
(:func:`read_run`: report.json and per_query.csv of every target) and the computation on what was
read (:func:`traffic_body`: mix, both resamplings, intervals, assembly); peak traced memory
(tracemalloc: numpy arrays and Python objects) of each step in a separate pass.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
from _machine import machine  # bench/ is on sys.path

from snapbench.app.traffic import read_traffic, traffic_body
from snapbench.core.conditions import list_conditions
from snapbench.diagnose import IMAGE_DETECTORS, TEXT_DETECTORS
from snapbench.evaluate.metrics import parse_metrics
from snapbench.store.perquery import write_per_query
from snapbench.store.rundir import read_run

TARGETS = ("I2I", "T2T", "IT2IT", "I2IT", "T2IT", "MOOR", "fusion/comb_sum", "fusion/rrf")
META = {"snapbench_version": "bench", "schema_version": 1, "seed": 0, "resamples": 0, "permutations": 0,
        "ci_level": 0.95, "ci_method": "paired bootstrap over queries, percentile interval", "ks": [1, 5, 10, 20],
        "tie_rule": "-", "tests": {}, "correction": "-", "zero_gt": "-", "n_zero_gt": 0, "n_gallery": 1000,
        "graded_labels": False, "set_threshold": None, "paired_delta": "-", "additivity_drops": "-",
        "cliff_rule": "-", "cliff_tol": 0.01, "cliff_ratio": 2.0, "stability_metric": "hit@1"}


def make_run(root: Path, n: int, resamples: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    conds = [c.id for c in list_conditions(joint=True)]
    metrics = parse_metrics(None)
    qids = [f"q{i}" for i in range(n)]
    for t in TARGETS:
        values = {}
        for c in conds:
            p = rng.uniform(0.3, 0.95)
            values[c] = {m: (rng.random(n) < p).astype(float) if m.startswith("hit") else rng.random(n) * p
                         for m in metrics}
        (root / t).mkdir(parents=True)
        write_per_query(root / t / "per_query.csv", qids, values)
        rep = {"conditions": {c: {m: float(v.mean()) for m, v in per.items()} for c, per in values.items()},
               "paired": {}, "additivity": {}, "n_queries": n, "n_excluded_zero_gt": 0,
               "meta": {**META, "resamples": resamples, "metrics": metrics, "mode": t}}
        (root / t / "report.json").write_text(json.dumps(rep), encoding="utf-8")


def make_diag(root: Path, m: int, seed: int = 1) -> None:
    """Pilot-like traffic: 29% clean, 36% image only... drawn per query from one flag per side."""
    rng = np.random.default_rng(seed)
    root.mkdir(parents=True)
    kind = rng.choice(4, size=m, p=[0.29, 0.26, 0.10, 0.35])  # clean, image only, text only, both
    with open(root / "diagnose.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["query_id", "side", "detector", "score", "flag"])
        for q in range(m):
            fi = IMAGE_DETECTORS[rng.integers(len(IMAGE_DETECTORS))] if kind[q] in (1, 3) else None
            ft = TEXT_DETECTORS[rng.integers(len(TEXT_DETECTORS))] if kind[q] in (2, 3) else None
            w.writerows((f"u{q}", "image", d, "1", int(d == fi)) for d in IMAGE_DETECTORS)
            w.writerows((f"u{q}", "text", d, "1", int(d == ft)) for d in TEXT_DETECTORS)
    (root / "summary.json").write_text(json.dumps({"skips": []}), encoding="utf-8")


def _best(fn, repeats: int) -> float:
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _peak(fn):
    tracemalloc.start()
    out = fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return out, peak


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", default="300,1000")
    ap.add_argument("--traffic", type=int, default=100_000)
    ap.add_argument("--resamples", default="2000,10000")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=str(Path(__file__).with_name("RESULTS_traffic.md")))
    args = ap.parse_args()
    sizes = [int(x) for x in args.queries.split(",")]
    bs = [int(x) for x in args.resamples.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        diag = Path(tmp) / "diag"
        make_diag(diag, args.traffic)
        t_diag = _best(lambda: read_traffic(diag), args.repeats)
        sample, m_diag = _peak(lambda: read_traffic(diag))
        for n in sizes:
            run = Path(tmp) / f"run{n}"
            make_run(run, n, bs[0])
            t_run = _best(lambda: read_run(run), args.repeats)
            tables, m_run = _peak(lambda: read_run(run))
            for b in bs:
                t_comp = _best(lambda: traffic_body(tables, sample, resamples=b), args.repeats)
                body, m_comp = _peak(lambda: traffic_body(tables, sample, resamples=b))
                rows.append((n, b, t_run, m_run, t_comp, m_comp, len(body["weights"])))
    lines = ["# Traffic view: time and memory", "", f"- date: {dt.date.today().isoformat()}", f"- machine: {machine()}",
             f"- synthetic run: {len(TARGETS)} targets x 72 conditions x 13 metrics; diagnose folder of "
             f"{args.traffic:,} queries (pilot-like mix, one flag per flagged side); minimum over {args.repeats} repeats",
             f"- reading the diagnose folder ({args.traffic:,} queries, {args.traffic * 8:,} rows): {t_diag:.2f} s, "
             f"peak traced memory {m_diag / 2**20:.0f} MiB", "",
             "| run queries | resamples | read run (s) | read run, peak (MiB) | compute (s) | compute, peak (MiB) "
             "| mix conditions |", "|---|---|---|---|---|---|---|"]
    for n, b, tr, mr, tc, mc, k in rows:
        lines.append(f"| {n} | {b} | {tr:.2f} | {mr / 2**20:.0f} | {tc:.2f} | {mc / 2**20:.0f} | {k} |")
    text = "\n".join(lines) + "\n"
    print(text)
    Path(args.out).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
