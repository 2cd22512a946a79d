"""Worker scaling of `snapbench run` and `snapbench corrupt`, and the memory of one corruption worker.

    python bench/bench_workers.py [--queries 48] [--corrupt-queries 12] [--size 1024x768] [--repeats 2]
                                  [--out bench/RESULTS_workers.md]

Scaling (issue 19: 2 workers >= 1.8x one worker on a corruption-bound run): the demo's layout
(queries.jsonl, gallery.jsonl, qrels.json) with scikit-image photos at ``--size`` as queries and
gallery, all 72 conditions, with the demo's toy encoder (~30 ms of the main process's time per
1024x768 query, against ~55 ms of corrupting) and with an encoder that costs nothing (the run then
bound by corrupting alone).  Runs alternate between 1 worker (``--workers 1`` as it runs: inline, OpenCV
with its own threads), 1 worker with OpenCV on one thread (as each pool worker runs) and 2 workers,
``--repeats`` times each; the best of each is kept.  The gallery is encoded while the 2 workers start
(the run's ``meanwhile`` overlap).  For `run` the figure is the query phase after the first query (corrupting + encoding; the
first query also waits for the workers to start), from ``RunResult.timings``; for `corrupt` the
whole command (PNG variants, the default format), start-up included.  Before and after, two plain
processes corrupting side by side show how much parallelism the machine gives at that moment (the
ceiling of any speedup).  CPU seconds (this process
and its reaped children) show how much of the machine the run got: the machine is shared.  This
process calls ``keep_freed_memory()`` as the pool's workers do, so that 1 worker (which runs inline,
here) and 2 workers differ only in the number of processes.

Memory: one worker process (fresh interpreter, set up as a pool worker) corrupting one 2048x1536
query under all 72 states, as `run`'s workers do (variants kept for the shared-memory hand-off) and
as `corrupt`'s do (variants written as PNG one by one): peak resident size above the process's size
after start-up and after loading the image (VmHWM - VmRSS), and the peak of numpy/OpenCV
allocations (tracemalloc).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _machine import machine  # noqa: E402

from snapbench.app.corrupt import run_corruption  # noqa: E402
from snapbench.app.stages import RunOptions, run_benchmark  # noqa: E402
from snapbench.data import load_dataset  # noqa: E402
from snapbench.engines.local import keep_freed_memory  # noqa: E402

PHOTOS = ("astronaut", "coffee", "chelsea", "rocket", "hubble_deep_field", "immunohistochemistry", "retina", "camera")
NOTES = "<!-- hand-written notes below: kept when the benchmark is rerun -->"


def make_dataset(folder: Path, n: int, w: int, h: int) -> Path:
    from skimage import data as skd

    q, g, rel = [], [], {}
    for i in range(n):
        name = PHOTOS[i % len(PHOTOS)]
        img = getattr(skd, name)()
        img = (img if img.ndim == 3 else np.stack([img] * 3, axis=-1))[..., :3]
        img = cv2.resize(np.ascontiguousarray(img), (w, h), interpolation=cv2.INTER_AREA)
        path = folder / f"{i:03d}_{name}.png"
        cv2.imwrite(str(path), img[..., ::-1])
        entity = name.split("_")[0]
        q.append({"id": f"q{i}", "image": path.name, "question": f"What kind of {entity} is this?", "entity": entity})
        g.append({"id": f"g{i}", "image": path.name, "caption": f"a photo of a {name.replace('_', ' ')}"})
        rel[f"q{i}"] = [f"g{i}"]
    (folder / "queries.jsonl").write_text("".join(json.dumps(x) + "\n" for x in q))
    (folder / "gallery.jsonl").write_text("".join(json.dumps(x) + "\n" for x in g))
    (folder / "qrels.json").write_text(json.dumps(rel))
    return folder


def _cpu_s() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _spin(n: int, queue) -> None:
    """Corrupt one 1024x768 photo under the 45 image conditions ``n`` times (a calibration worker)."""
    import cv2

    cv2.setNumThreads(1)
    from skimage import data as skd

    from snapbench.corruptions import corrupt_image, image_operators

    img = np.ascontiguousarray(cv2.resize(skd.astronaut(), (1024, 768), interpolation=cv2.INTER_CUBIC))
    conds = [(op, s) for op in image_operators() for s in (1, 2, 3)]
    for op, s in conds:
        corrupt_image(img, op, s, seed=0, key="warm")
    queue.put(None)  # ready
    t0 = time.perf_counter()
    for r in range(n):
        for op, s in conds:
            corrupt_image(img, op, s, seed=r, key="spin")
    queue.put(time.perf_counter() - t0)


def machine_parallelism(n: int = 6) -> float:
    """How much more corruption work two processes got done than one, right now: the ceiling any
    2-worker speedup can reach on this (shared) machine at this moment."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")

    def once(k: int) -> float:
        q = ctx.Queue()
        procs = [ctx.Process(target=_spin, args=(n, q)) for _ in range(k)]
        for p in procs:
            p.start()
        times = [t for t in (q.get() for _ in range(2 * k)) if t is not None]
        for p in procs:
            p.join()
        return max(times)

    one = once(1)
    return 2 * one / once(2)


class NullEncoder:
    """An encoder that costs nothing (constant embeddings): `run` bound by corrupting alone."""

    name = fingerprint = "null"
    modalities = frozenset({"image", "text"})

    def encode_images(self, images):
        return np.ones((len(images), 8), np.float32)

    def encode_texts(self, texts):
        return np.ones((len(texts), 8), np.float32)


class opencv_threads:
    """OpenCV's thread count in this process for a block (None: leave it): the '1 worker, 1 thread' runs."""

    def __init__(self, n: int | None) -> None:
        self.n, self.before = n, cv2.getNumThreads()

    def __enter__(self) -> None:
        if self.n is not None:
            cv2.setNumThreads(self.n)

    def __exit__(self, *exc) -> None:
        cv2.setNumThreads(self.before)


#: the columns: (label, workers, OpenCV threads in this process while it runs)
SETUPS = (("1", 1, None), ("1t", 1, 1), ("2", 2, None))


def time_run(ds, out: Path, workers: int, encoder="toy") -> dict[str, float]:
    cpu0, t0 = _cpu_s(), time.perf_counter()
    res = run_benchmark(ds, encoder, out, RunOptions(workers=workers, joint=True, modes=["I2I"], resamples=100,
                                                   report=False, progress=False, use_cache=False))
    t = res.timings
    steady = t["wait_s"] - t.get("first_wait_s", 0.0) + t["encode_s"]
    return {"wall": time.perf_counter() - t0, "steady": steady, "cpu": _cpu_s() - cpu0}


def time_corrupt(queries: Path, out: Path, workers: int) -> dict[str, float]:
    cpu0, t0 = _cpu_s(), time.perf_counter()
    run_corruption(queries, out, workers=workers, joint=True, progress=False, force=True)
    return {"wall": time.perf_counter() - t0, "cpu": _cpu_s() - cpu0}


_MEMORY_PROBE = r"""
import json, sys, tempfile, tracemalloc
from pathlib import Path
from snapbench.engines.local import keep_freed_memory, worker_init
keep_freed_memory(); worker_init()  # as a local pool worker is set up
from snapbench.corruptions import load_image, resolve_conditions, resolve_grid
def status():
    f = dict(l.split(":", 1) for l in open("/proc/self/status").read().splitlines() if ":" in l)
    return int(f["VmRSS"].split()[0]) * 1024, int(f["VmHWM"].split()[0]) * 1024
path, kind = sys.argv[1], sys.argv[2]
image = load_image(path)
grid = resolve_grid(None)
conds = resolve_conditions(None, joint=True, grid=grid)
rss0, _ = status()
open("/proc/self/clear_refs", "w").write("5")  # reset VmHWM to the current size
tracemalloc.start()
if kind == "run":
    from snapbench.app.stages.sources import SharedBlocks, SharedTask, SourceTask, generate_sources_shared, take_shared
    srcs = tuple(dict.fromkeys(c.image_part.id if "image" in c.sides else "clean" for c in conds))
    txts = tuple(dict.fromkeys(c.text_part.id if "text" in c.sides else "clean" for c in conds))
    task = SourceTask(0, "q0", path, "What kind of astronaut is this?", "astronaut", 0, srcs, txts, grid)
    blocks = SharedBlocks()
    res = take_shared(blocks, generate_sources_shared(SharedTask(task, blocks.offer())))
    n, shared = len(res.images), res.shared[1]
    del res
    blocks.close()
else:
    from snapbench.corruptions.manifest import QueryRecord
    from snapbench.app.corrupt import QueryTask, process_query
    rec = QueryRecord("q0", Path(path), "What kind of astronaut is this?", "astronaut", {})
    with tempfile.TemporaryDirectory() as out:
        r = process_query(QueryTask(rec, tuple(c.id for c in conds), out, 0, dict(grid), 10**9, None, "x"))
    n, shared = len(r.lines), 0
peak_traced = tracemalloc.get_traced_memory()[1]
rss1, hwm = status()
print(json.dumps({"n": n, "rss_base": rss0, "hwm": hwm, "traced_peak": peak_traced, "image": int(image.nbytes),
                  "shared": shared}))
"""


def memory_probe(image_path: Path, kind: str) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[1]),
                                                          os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", _MEMORY_PROBE, str(image_path), kind], capture_output=True, text=True,
                         env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=48, help="queries of the `run` measurement")
    ap.add_argument("--corrupt-queries", type=int, default=12, help="queries of the `corrupt` measurement (the "
                    "first ones of the same set; writing PNG variants takes ~1 s a query)")
    ap.add_argument("--size", default="1024x768")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", type=Path, default=Path(__file__).with_name("RESULTS_workers.md"))
    args = ap.parse_args()
    w, h = (int(v) for v in args.size.split("x"))
    # 1 worker runs inline in this process: give it the allocator setting the pool's workers get, so
    # the two columns differ only in the number of processes
    keep_freed_memory()
    load0 = os.getloadavg()
    runs: dict[tuple[str, int], list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "data"
        folder.mkdir()
        ds = load_dataset(make_dataset(folder, args.queries, w, h))
        few = folder / "queries_corrupt.jsonl"
        few.write_text("".join((folder / "queries.jsonl").read_text().splitlines(keepends=True)[: args.corrupt_queries]))
        ceiling = [machine_parallelism()]
        for r in range(args.repeats):
            for label, workers, threads in SETUPS:
                with opencv_threads(threads):
                    res = time_run(ds, Path(tmp) / f"run{r}_{label}", workers)
                    runs.setdefault(("run", label), []).append(res)
                    print(f"run     workers={label}: {res}", flush=True)
                    res = time_run(ds, Path(tmp) / f"null{r}_{label}", workers, NullEncoder())
                    runs.setdefault(("run-null", label), []).append(res)
                    print(f"run (null encoder) workers={label}: {res}", flush=True)
                    res = time_corrupt(few, Path(tmp) / f"corrupt{r}_{label}", workers)
                    runs.setdefault(("corrupt", label), []).append(res)
                    print(f"corrupt workers={label}: {res}", flush=True)
        ceiling.append(machine_parallelism())
        load1 = os.getloadavg()
        big = Path(tmp) / "big.png"
        from skimage import data as skd

        cv2.imwrite(str(big), cv2.resize(skd.astronaut(), (2048, 1536), interpolation=cv2.INTER_CUBIC)[..., ::-1])
        mem = {kind: memory_probe(big, kind) for kind in ("run", "corrupt")}

    best = {k: min(v, key=lambda x: x["steady" if k[0].startswith("run") else "wall"]) for k, v in runs.items()}
    lines = [
        "# Worker scaling and worker memory (bench/bench_workers.py)",
        "",
        f"- date: {dt.date.today().isoformat()}",
        f"- machine: {machine()}",
        f"- command: `python bench/bench_workers.py --queries {args.queries} --corrupt-queries {args.corrupt_queries} "
        f"--size {args.size} --repeats {args.repeats}`",
        f"- load average (1 min) at the start / end of the timed runs: {load0[0]:.2f} / {load1[0]:.2f} on "
        f"{os.cpu_count()} CPUs (other jobs share the machine)",
        f"- data: {args.queries} scikit-image photos at {w}x{h} as queries and gallery (the demo's layout; `corrupt`: "
        f"the first {args.corrupt_queries}), toy encoder, 72 conditions (54 states + 18 joint); best of the repeats",
        "",
        "## Scaling",
        "",
        f"Ceiling on this machine at the time: two plain processes corrupting got {ceiling[0]:.2f}x / {ceiling[1]:.2f}x "
        "the work of one done (before / after the timed runs; 2.0x on two idle cores). '2 x CPU ratio' = 2 x CPU "
        "seconds with 1 worker / with 2 (whole command): the speedup two otherwise idle cores would allow if the "
        "work spread evenly, whatever the load during the run. '1 worker' is `--workers 1` as it runs: inline, "
        "where OpenCV uses its own threads (2 here); '1 worker, 1 thread' the same with OpenCV on one thread, as "
        "each pool worker runs: one worker on one core.",
        "",
        "| command | figure | 1 worker s | 1 worker, 1 thread s | 2 workers s | speedup vs 1 worker | vs 1 worker, 1 thread | "
        "CPU s (1 / 1, 1 thread / 2 workers) | 2 x CPU ratio (vs 1 worker) | every repeat, 1 / 1, 1 thread / 2 workers |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for cmd, key, what in (("run", "steady", "toy encoder: query phase after the first query"),
                           ("run", "wall", "toy encoder: whole run"),
                           ("run-null", "steady", "encoder that costs nothing: query phase after the first query"),
                           ("run-null", "wall", "encoder that costs nothing: whole run"),
                           ("corrupt", "wall", "whole command, PNG")):
        a, t, b = best[(cmd, "1")], best[(cmd, "1t")], best[(cmd, "2")]
        reps = " / ".join(", ".join(f"{x[key]:.2f}" for x in runs[(cmd, n)]) for n in ("1", "1t", "2"))
        lines.append(f"| `{cmd.split('-')[0]}` | {what} | {a[key]:.2f} | {t[key]:.2f} | {b[key]:.2f} | "
                     f"**{a[key] / b[key]:.2f}x** | **{t[key] / b[key]:.2f}x** | "
                     f"{a['cpu']:.1f} / {t['cpu']:.1f} / {b['cpu']:.1f} | {2 * a['cpu'] / b['cpu']:.2f}x | {reps} |")
    lines += [
        "",
        "## Memory of one worker: a 2048x1536 query under all 72 states",
        "",
        "| worker of | outputs | peak RSS above start (MB) | of which the shared block (MB) | the rest in image sizes | "
        "traced peak of numpy/OpenCV arrays (MB) | in image sizes |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for kind, m in mem.items():
        extra = m["hwm"] - m["rss_base"]
        lines.append(f"| `{kind}` | {m['n']} | {extra / 2**20:.0f} | {m['shared'] / 2**20:.0f} | "
                     f"{(extra - m['shared']) / m['image']:.1f} | {m['traced_peak'] / 2**20:.0f} | "
                     f"{m['traced_peak'] / m['image']:.1f} |")
    lines += ["", f"One 2048x1536 RGB image is {mem['run']['image'] / 2**20:.1f} MB. The shared block holds the "
              "query's images for the main process (the same pages are counted in the main process's RSS, "
              "not allocated twice). Measured in a fresh process: the first query also fills the per-worker "
              "caches (lens_distortion's remap tables, 6 bytes a pixel for each k1; the scratch frames).", ""]
    notes = args.out.read_text().split(NOTES, 1)[1] if args.out.exists() and NOTES in args.out.read_text() else "\n"
    args.out.write_text("\n".join(lines) + "\n" + NOTES + notes)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
