"""`snapbench run` on the local process pool vs Ray, on one machine; Ray's start-up and per-task costs.

    PYTHONPATH=. python bench/bench_ray.py [--queries 16] [--size 1024x768] [--workers 2] [--out bench/RESULTS_ray.md]

Measures, on real photos (scikit-image) resized to --size, with the toy encoder (so that the rows
show the cost of producing variants, not of a model):
* starting and stopping a local Ray instance (``ray.init`` / ``ray.shutdown``);
* per-task overhead of :func:`snapbench.engines.ordered_map` for a task doing nothing, and for a task
  returning one query's worth of variant images (46 x a 1024x768 RGB array);
* `run_benchmark` over the 72 conditions (54 states + 18 joint): local workers=1, local workers=N,
  Ray workers=N on a running Ray session, and Ray workers=N starting its own instance.
Every Ray run's reports are checked equal to the local run's.  The output file is regenerated up to
the line NOTES_MARKER; the hand-written reading of the numbers below it is kept.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

os.environ.setdefault("OMP_NUM_THREADS", "1")

import cv2  # noqa: E402
import numpy as np  # noqa: E402
from _machine import machine  # noqa: E402  (bench/ is on sys.path when run as a script)
from PIL import Image  # noqa: E402
from skimage import data  # noqa: E402

from snapbench.app.stages import RunOptions, run_benchmark  # noqa: E402
from snapbench.core.defaults import DEFAULT_DATA  # noqa: E402
from snapbench.engines import ordered_map  # noqa: E402
from snapbench.models import get_encoder  # noqa: E402

PHOTOS = ("astronaut", "coffee", "chelsea", "rocket")
NOTES_MARKER = "<!-- hand-written notes below: kept when the benchmark is rerun -->"
N_VARIANT_IMAGES = 46  # clean + 45 image conditions: the images one query's task returns


def noop(x: int) -> int:
    return x


class Variants:
    """A task returning one query's worth of images (what a `run` task sends back to the driver)."""

    def __init__(self, size: tuple[int, int]):
        self.size = size

    def __call__(self, i: int) -> list[np.ndarray]:
        w, h = self.size
        return [np.full((h, w, 3), (i + k) % 256, np.uint8) for k in range(N_VARIANT_IMAGES)]


def make_dataset(root: Path, n: int, size: tuple[int, int]) -> SimpleNamespace:
    from snapbench.app.encode import load_gallery
    from snapbench.corruptions import load_manifest

    (root / "imgs").mkdir(parents=True)
    rows = []
    for i in range(n):
        name = PHOTOS[i % len(PHOTOS)]
        img = data.astronaut() if name == "astronaut" else getattr(data, name)()
        img = np.dstack([img] * 3) if img.ndim == 2 else img[..., :3]
        Image.fromarray(cv2.resize(img, size, interpolation=cv2.INTER_AREA)).save(root / "imgs" / f"{i}.jpg", quality=92)
        rows.append({"id": f"q{i:03d}", "image": f"imgs/{i}.jpg", "question": f"What kind of {name} is this?", "entity": name})
    (root / "q.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    gallery = load_gallery(DEFAULT_DATA / "gallery.jsonl")
    qrels = {}
    for r in rows:
        rel = [g.id for g in gallery if g.id.startswith(r["entity"])] or [gallery[0].id]
        qrels[r["id"]] = {g: 1.0 for g in rel}
    return SimpleNamespace(name="bench", format="jsonl", root=root, queries=load_manifest(root / "q.jsonl"), gallery=gallery,
                           qrels=qrels, released=None, notes=[], has_query_images=True, has_gallery_images=True)


def toy():
    enc = get_encoder("toy")
    enc.name, enc.modalities = "toy", frozenset({"image", "text"})
    return enc


def map_s(fn, n: int, engine: str, workers: int) -> float:
    t0 = time.perf_counter()
    out = list(ordered_map(fn, range(n), engine=engine, workers=workers))
    assert len(out) == n
    return time.perf_counter() - t0


def per_task_ms(fn, n: int, engine: str, workers: int, fixed_s: float = 0.0) -> float:
    """Wall ms per task over ``n`` tasks, less ``fixed_s`` (the pool's start-up, paid once per map)."""
    return max(map_s(fn, n, engine, workers) - fixed_s, 0.0) / n * 1e3


def main() -> None:
    import ray

    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=16)
    ap.add_argument("--size", default="1024x768")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", default=str(Path(__file__).with_name("RESULTS_ray.md")))
    args = ap.parse_args()
    size = tuple(int(v) for v in args.size.split("x"))
    W = args.workers
    load = os.getloadavg()[0]
    tmp = Path(tempfile.mkdtemp(prefix="bench_ray_"))
    # Ray workers are started by the raylet with this environment: they must import snapbench and bench/
    here = Path(__file__).resolve().parent
    os.environ["PYTHONPATH"] = os.pathsep.join([str(here), str(here.parent), os.environ.get("PYTHONPATH", "")])
    try:
        ds = make_dataset(tmp / "data", args.queries, size)
        base = dict(joint=True, resamples=200, report=False, progress=False, use_cache=False)

        def run(name: str, **kw) -> tuple[float, dict]:
            out = tmp / name
            t0 = time.perf_counter()
            res = run_benchmark(ds, toy(), out, RunOptions(**base, **kw))
            wall = time.perf_counter() - t0
            shutil.rmtree(out / "embeddings")
            return wall, {m: json.loads((out / m / "report.json").read_text())["conditions"] for m in res.reports} | {
                "_timings": res.timings, "_n": len(res.conditions)}

        rows: list[tuple[str, list[float], str]] = []
        reference = None
        for label, kw in (("local, workers=1 (in process)", dict(workers=1)), (f"local pool, workers={W}", dict(workers=W))):
            walls, waits = [], []
            for r in range(args.repeats):
                wall, rep = run(f"{label[:5]}{kw['workers']}_{r}", **kw)
                walls.append(wall)
                waits.append(rep["_timings"]["wait_s"])
                reference = reference or rep
            rows.append((label, walls, f"{statistics.median(waits):.1f}"))

        # Ray started by the run itself (what a one-off `snapbench run --engine ray` costs on one machine)
        walls, waits = [], []
        for r in range(args.repeats):
            wall, rep = run(f"raycold_{r}", workers=W, engine="ray")
            assert {k: v for k, v in rep.items() if k != "_timings"} == {k: v for k, v in reference.items() if k != "_timings"}
            walls.append(wall)
            waits.append(rep["_timings"]["wait_s"])
        rows.append((f"Ray, workers={W}, starting its own instance", walls, f"{statistics.median(waits):.1f}"))

        t0 = time.perf_counter()
        ray.init(num_cpus=W, include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False)
        init_s = time.perf_counter() - t0
        walls, waits = [], []
        for r in range(args.repeats):
            wall, rep = run(f"raywarm_{r}", workers=W, engine="ray")
            assert {k: v for k, v in rep.items() if k != "_timings"} == {k: v for k, v in reference.items() if k != "_timings"}
            walls.append(wall)
            waits.append(rep["_timings"]["wait_s"])
        rows.append((f"Ray, workers={W}, session already running", walls, f"{statistics.median(waits):.1f}"))

        per_task = {
            "noop, Ray": per_task_ms(noop, 400, "ray", W),
            f"{N_VARIANT_IMAGES} x {args.size} images back, Ray": per_task_ms(Variants(size), 24, "ray", W),
        }
        t0 = time.perf_counter()
        ray.shutdown()
        shutdown_s = time.perf_counter() - t0
        # the local pool's own start-up (spawning W interpreters that import snapbench), paid once per map
        pool_s = statistics.median(map_s(noop, W, "local", W) for _ in range(3))
        per_task["noop, local pool"] = per_task_ms(noop, 400, "local", W, pool_s)
        per_task[f"{N_VARIANT_IMAGES} x {args.size} images back, local pool"] = per_task_ms(Variants(size), 24, "local", W, pool_s)
        per_task[f"{N_VARIANT_IMAGES} x {args.size} images, in process (no transfer)"] = per_task_ms(Variants(size), 24, "local", 1)
    finally:
        if ray.is_initialized():
            ray.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)

    n_cond = reference["_n"]
    lines = [
        "# Ray engine benchmark (one machine)",
        "",
        f"Machine: {machine()}, Ray {ray.__version__}  ",
        f"Date: {dt.date.today().isoformat()}  ",
        f"Command: `PYTHONPATH=. python bench/bench_ray.py --queries {args.queries} --size {args.size} --workers {W} --repeats {args.repeats}`",
        "",
        f"Wall-clock times; other load on the machine matters (load average at the start: {load:.1f} on {os.cpu_count()} CPUs).",
        "",
        f"## `snapbench run`: {args.queries} queries at {args.size}, {n_cond} conditions, toy encoder",
        "",
        "Every Ray run's reports were checked equal to the local run's. `wait s` = time the driver waited for "
        "variants (the rest is encoding, scoring, evaluation, in the driver).",
        "",
        "| engine | wall s (each repeat) | median s | s / query | wait s |",
        "|---|---|---|---|---|",
    ]
    for label, walls, wait in rows:
        med = statistics.median(walls)
        lines.append(f"| {label} | {', '.join(f'{w:.1f}' for w in walls)} | {med:.1f} | {med / args.queries:.2f} | {wait} |")
    lines += [
        "",
        "## Ray's fixed and per-task costs",
        "",
        "| what | value |",
        "|---|---|",
        f"| `ray.init(num_cpus={W})` (local instance, no dashboard) | {init_s:.1f} s |",
        f"| `ray.shutdown()` | {shutdown_s:.1f} s |",
        f"| local pool start-up ({W} spawned processes; subtracted from its per-task rows) | {pool_s:.1f} s |",
    ]
    lines += [f"| per task: {k} | {v:.1f} ms |" for k, v in per_task.items()]
    out = Path(args.out)
    notes = ""
    if out.exists() and NOTES_MARKER in out.read_text():
        notes = out.read_text().split(NOTES_MARKER, 1)[1]
    out.write_text("\n".join(lines) + "\n\n" + NOTES_MARKER + notes)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
