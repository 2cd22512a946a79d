"""Throughput of `run_corruption` (disk) vs `stream_corruptions` (no disk), and the PNG level choice.

    python bench/bench_pipeline.py [--queries 8] [--size 1024x768] [--out bench/RESULTS_pipeline.md]

Measures, on real photos (scikit-image) resized to --size:
* PNG encode time and size per zlib level (why snapbench writes variants at level 1);
* end-to-end `run_corruption` of the 54 states with workers=1 and workers=2 (seconds per query);
* `stream_corruptions` over the same queries (variants in memory, what feeding an encoder costs);
* a resume of a finished run (verification only: hashing the existing files).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import cv2  # noqa: E402
import numpy as np  # noqa: E402
from _machine import machine  # noqa: E402  (bench/ is on sys.path when run as a script)
from PIL import Image  # noqa: E402
from skimage import data  # noqa: E402

from snapbench.app.corrupt import run_corruption
from snapbench.corruptions import stream_corruptions  # noqa: E402
from snapbench.corruptions.io import PNG_COMPRESSION, encode_png  # noqa: E402

PHOTOS = ("astronaut", "coffee", "chelsea", "rocket")




def _rgb(img: np.ndarray) -> np.ndarray:
    return np.dstack([img] * 3) if img.ndim == 2 else img


def make_set(root: Path, n: int, size: tuple[int, int]) -> Path:
    (root / "imgs").mkdir(parents=True)
    rows = []
    for i in range(n):
        name = PHOTOS[i % len(PHOTOS)]
        img = cv2.resize(_rgb(getattr(data, name)()), size, interpolation=cv2.INTER_AREA)
        Image.fromarray(img).save(root / "imgs" / f"{i}.jpg", quality=92)
        rows.append({"id": f"q{i:03d}", "image": f"imgs/{i}.jpg", "question": f"What kind of {name} is this?", "entity": name})
    (root / "q.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root / "q.jsonl"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=8)
    ap.add_argument("--size", default="1024x768")
    ap.add_argument("--out", default=str(Path(__file__).with_name("RESULTS_pipeline.md")))
    args = ap.parse_args()
    w, h = (int(x) for x in args.size.lower().split("x"))
    rows: list[str] = []
    load = os.getloadavg()[0]

    # PNG settings on four photos at the benchmark size (CPU time: robust to other load on the machine)
    cv2.setNumThreads(1)
    photos = [cv2.resize(_rgb(getattr(data, n)()), (w, h), interpolation=cv2.INTER_AREA) for n in PHOTOS]
    rows += ["## Lossless PNG encode (OpenCV), per setting", "",
             f"Four {w}x{h} photos x 5 runs, median CPU ms; snapbench uses level {PNG_COMPRESSION} + Paeth + RLE "
             "(`encode_png`).", "", "| setting | CPU ms | KiB |", "|---|---|---|"]
    C, S, F = cv2.IMWRITE_PNG_COMPRESSION, cv2.IMWRITE_PNG_STRATEGY, cv2.IMWRITE_PNG_FILTER
    settings = [(f"level {lv}, adaptive filters (OpenCV default)", [C, lv]) for lv in (0, 1, 3, 6)]
    settings += [(f"level {lv}, Paeth + RLE", [C, lv, S, cv2.IMWRITE_PNG_STRATEGY_RLE, F, cv2.IMWRITE_PNG_FILTER_PAETH]) for lv in (1, 3)]
    for name, params in settings:
        ts, size = [], 0
        for photo in photos:
            bgr = np.ascontiguousarray(photo[..., ::-1])
            for _ in range(5):
                t0 = time.process_time()
                _, buf = cv2.imencode(".png", bgr, params)
                ts.append(time.process_time() - t0)
            size += len(buf)
        rows.append(f"| {name} | {statistics.median(ts) * 1e3:.1f} | {size // len(photos) // 1024} |")
    t0 = time.process_time()
    for photo in photos:
        encode_png(photo)
    rows.append(f"| encode_png (check) | {(time.process_time() - t0) / len(photos) * 1e3:.1f} | |")

    tmp = Path(tempfile.mkdtemp(prefix="snapbench_bench_"))
    try:
        manifest = make_set(tmp / "qs", args.queries, (w, h))
        rows += ["", f"## Batch run: {args.queries} queries at {w}x{h}, 54 states (clean + 45 image + 8 text)", "",
                 "| what | total s | s / query | outputs |", "|---|---|---|---|"]
        for workers in (1, 2):
            out = tmp / f"out{workers}"
            t0 = time.perf_counter()
            s = run_corruption(manifest, out, workers=workers, progress=False)
            dt_s = time.perf_counter() - t0
            rows.append(f"| run_corruption workers={workers} | {dt_s:.2f} | {dt_s / args.queries:.3f} | {s.written} |")
        t0 = time.perf_counter()
        s = run_corruption(manifest, tmp / "out1", workers=1, progress=False)
        dt_s = time.perf_counter() - t0
        rows.append(f"| resume of a finished run (sha256 checks) | {dt_s:.2f} | {dt_s / args.queries:.3f} | reused {s.reused} |")
        t0 = time.perf_counter()
        n = sum(1 for _ in stream_corruptions(manifest))
        dt_s = time.perf_counter() - t0
        rows.append(f"| stream_corruptions (no disk) | {dt_s:.2f} | {dt_s / args.queries:.3f} | {n} |")
        size = sum(p.stat().st_size for p in (tmp / "out1").rglob("*.png"))
        rows += ["", f"Disk used by one run: {size / 2**20:.1f} MiB ({size / args.queries / 2**20:.2f} MiB per query)."]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    text = "\n".join([
        "# Pipeline benchmark", "",
        f"Machine: {machine()}  ",
        f"Date: {dt.date.today().isoformat()}  ",
        "Command: `python bench/bench_pipeline.py " + " ".join(f"--{k} {v}" for k, v in (("queries", args.queries), ("size", args.size))) + "`",
        "",
        "Wall-clock rows are sensitive to other load on the machine (`uptime` load average at the start: "
        f"{load:.1f}); the PNG table uses CPU time.",
        "",
        *rows, "",
    ])
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
