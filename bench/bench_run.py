"""Throughput of `snapbench run` and how long the encoder waits for variants.

Setup: N scikit-image photos resized to 1024x768 as queries (54 states + 18 joint), the same photos
as the gallery; an encoder that costs a fixed time per image (the toy encoder plus a sleep: a stand-in
for a model of that speed, since none is downloadable here).  For workers 1 and 2 it reports queries
per second and the share of the query phase spent waiting for variants (time blocked on the next
query's variants / (that + time inside the encoder)).  The claim to check: with 2 workers corruption
is not the bottleneck for an encoder slower than ~20 ms per image.

    python bench/bench_run.py [--queries 8] [--ms-per-image 20] [--out bench/RESULTS_run.md]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

import cv2
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from snapbench.app.stages import RunOptions, run_benchmark  # noqa: E402
from snapbench.data import load_dataset  # noqa: E402
from snapbench.models import get_encoder  # noqa: E402

PHOTOS = ("astronaut", "coffee", "chelsea", "rocket", "hubble_deep_field", "immunohistochemistry", "retina", "camera")


class TimedEncoder:
    """The toy encoder plus ``ms`` milliseconds per image: a model of known speed."""

    modalities = frozenset({"image", "text"})

    def __init__(self, ms: float):
        self.inner, self.ms = get_encoder("toy"), ms
        self.name = self.fingerprint = f"toy+{ms}ms"

    def encode_images(self, images):
        time.sleep(self.ms / 1000 * len(images))
        return self.inner.encode_images(images)

    def encode_texts(self, texts):
        return self.inner.encode_texts(texts)


def make_dataset(folder: Path, n: int) -> Path:
    from skimage import data as skd

    q, g, rel = [], [], {}
    for i in range(n):
        name = PHOTOS[i % len(PHOTOS)]
        img = getattr(skd, name)()
        if img.ndim == 2:
            img = np.stack([img] * 3, axis=-1)
        img = cv2.resize(np.ascontiguousarray(img[..., :3]), (1024, 768), interpolation=cv2.INTER_AREA)
        path = folder / f"{i:03d}_{name}.png"
        cv2.imwrite(str(path), img[..., ::-1])
        q.append({"id": f"q{i}", "image": path.name, "question": f"What kind of {name.split('_')[0]} is this?",
                  "entity": name.split("_")[0]})
        g.append({"id": f"g{i}", "image": path.name, "caption": f"a photo of a {name.replace('_', ' ')}"})
        rel[f"q{i}"] = [f"g{i}"]
    (folder / "queries.jsonl").write_text("".join(json.dumps(x) + "\n" for x in q))
    (folder / "gallery.jsonl").write_text("".join(json.dumps(x) + "\n" for x in g))
    (folder / "qrels.json").write_text(json.dumps(rel))
    return folder


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=8)
    ap.add_argument("--ms-per-image", type=float, nargs="+", default=[0.0, 20.0])
    ap.add_argument("--out", type=Path, default=Path(__file__).with_name("RESULTS_run.md"))
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "data"
        folder.mkdir()
        ds = load_dataset(make_dataset(folder, args.queries))
        for ms in args.ms_per_image:
            for workers in (1, 2):
                enc = TimedEncoder(ms)
                t0 = time.perf_counter()
                res = run_benchmark(ds, enc, Path(tmp) / f"run_{ms}_{workers}",
                                    RunOptions(workers=workers, resamples=1000, report=False, progress=False, use_cache=False))
                total = time.perf_counter() - t0
                w, e = res.timings["wait_s"], res.timings["encode_s"]
                steady = w - res.timings.get("first_wait_s", 0.0)  # without start-up (pool spawn, first query)
                rows.append((ms, workers, total, args.queries / total, w, e, w / (w + e) if w + e else 0.0,
                             steady / (steady + e) if steady + e else 0.0))
                print(f"{ms:5.1f} ms/img  workers={workers}  {total:6.1f} s  {args.queries / total:.3f} q/s  "
                      f"wait {w:.1f} s  encode {e:.1f} s  wait share {rows[-1][-2]:.0%}  after the first query "
                      f"{rows[-1][-1]:.0%}", flush=True)
    lines = [
        "# `snapbench run` throughput (bench/bench_run.py)",
        "",
        f"Machine: {platform.processor() or platform.machine()}, {platform.system()}, Python {platform.python_version()}; "
        f"{date.today().isoformat()}; {args.queries} queries of 1024x768, 72 conditions (54 states + 18 joint), "
        "gallery = the same photos; encoder = toy + a fixed sleep per image.",
        "",
        "| encoder ms/image | workers | total s | queries/s | wait for variants s | in encoder s | wait share | "
        "wait share after the first query |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for ms, wk, total, qps, w, e, share, steady in rows:
        lines.append(f"| {ms:.0f} | {wk} | {total:.1f} | {qps:.3f} | {w:.1f} | {e:.1f} | {share:.0%} | {steady:.0%} |")
    lines += ["", "Wait share = time the main process spent blocked on the next query's variants / (that + time "
              "inside the encoder). The first query's wait includes spawning the workers (importing snapbench, "
              "OpenCV) and is left out of the last column.", ""]
    # keep the section bench_multi_encoder.py writes below this one
    old = args.out.read_text() if args.out.exists() else ""
    tail = old[old.index("\n## "):] if "\n## " in old else ""
    args.out.write_text("\n".join(lines) + "\n" + tail)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
