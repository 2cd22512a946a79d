"""Lossless output formats side by side: encode/decode time and size for a query's 54-state variants.

    python bench/bench_formats.py [--size 1024x768] [--repeats 3] [--out bench/RESULTS_formats.md]

One real photo (scikit-image "astronaut") resized to --size; `iter_variants` produces its 54 states
(clean + 45 image + 8 text); the 46 distinct images among them (text states reuse the clean image, as
`corrupt` does) are encoded with every format of `snapbench.corruptions.codecs` and decoded back.
Every format is checked to give back the exact pixels.  Times are CPU seconds of this process
(one thread: OpenCV and libjxl are limited to one), the median over --repeats passes, so other load
on a shared machine moves them less than wall time would.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import cv2
import numpy as np
from _machine import machine
from skimage import data

from snapbench.corruptions import iter_variants
from snapbench.corruptions.codecs import FORMATS, decode_image, encode_image


def _variants(size: tuple[int, int]) -> list[np.ndarray]:
    photo = cv2.resize(data.astronaut(), size, interpolation=cv2.INTER_AREA)
    seen: set[str] = set()
    images: list[np.ndarray] = []
    n_states = 0
    for v in iter_variants(photo, "Which astronaut is this?", key="bench", entity="astronaut", seed=0):
        n_states += 1
        if v.image_from not in seen:  # a text state's image is the clean one
            seen.add(v.image_from)
            images.append(v.image)
    assert n_states == 54, n_states
    return images


def _cpu(fn) -> float:
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="1024x768")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--queries", type=int, default=3, help="queries of the whole-run comparison")
    ap.add_argument("--out", default=str(Path(__file__).with_name("RESULTS_formats.md")))
    args = ap.parse_args()
    w, h = (int(x) for x in args.size.lower().split("x"))
    cv2.setNumThreads(1)
    images = _variants((w, h))
    load = os.getloadavg()[0]

    rows = []
    for fmt in FORMATS:
        blobs = [encode_image(im, fmt) for im in images]  # warm-up + size + exactness check
        for im, b in zip(images, blobs):
            assert np.array_equal(decode_image(b), im), fmt
        enc = [_cpu(lambda f=fmt: [encode_image(im, f) for im in images]) for _ in range(args.repeats)]
        dec = [_cpu(lambda bs=blobs: [decode_image(b) for b in bs]) for _ in range(args.repeats)]
        rows.append((fmt, statistics.median(enc), statistics.median(dec), sum(map(len, blobs))))

    png_enc = rows[0][1]
    raw = sum(im.nbytes for im in images)
    lines = [
        "# Lossless output formats",
        "",
        f"Machine: {machine()}  ",
        f"Date: {dt.date.today().isoformat()}  ",
        f"Command: `python bench/bench_formats.py --size {w}x{h} --repeats {args.repeats}`",
        "",
        (f"The 54 states of one {w}x{h} photo (scikit-image astronaut) from `iter_variants` give {len(images)} distinct "
        "images (clean + 45 image conditions; the 8 text states reuse the clean image). Each format encodes all of them "
        f"and decodes them back (exact pixels checked). CPU seconds, one thread, median of {args.repeats} passes; "
        f"load average at the start {load:.1f}. Raw size {raw / 2**20:.1f} MiB."),
        "",
        "| format | encode s (all) | ms / image | encode speed vs PNG | decode s (all) | MiB | of raw |",
        "|---|---|---|---|---|---|---|",
    ]
    for fmt, e, d, size in rows:
        lines.append(
            f"| {fmt} | {e:.3f} | {1e3 * e / len(images):.1f} | {png_enc / e:.1f}x | {d:.3f} | "
            f"{size / 2**20:.2f} | {size / raw:.0%} |"
        )
    best = max(rows[1:], key=lambda r: png_enc / r[1])
    lines += [
        "",
        (f"Fastest lossless encoder here: **{best[0]}**, {png_enc / best[1]:.1f}x faster than PNG for the whole set. "
        "PNG is OpenCV zlib level 1 + Paeth + RLE (snapbench's default, see RESULTS_pipeline.md); "
        "jxl is libjxl lossless at effort 1, webp libwebp lossless at method 0, qoi the reference QOI codec, "
        "npz numpy `savez_compressed` (zlib level 6 over raw bytes, no image filter)."),
        "",
    ]
    lines += _corrupt_to_disk((w, h), args.queries)
    Path(args.out).write_text("\n".join(lines))
    print("\n".join(lines))


def _corrupt_to_disk(size: tuple[int, int], n_queries: int) -> list[str]:
    """The whole `snapbench corrupt` run (54 states, one worker) to disk per format, in this same run:
    wall seconds per query including decode, operators, encoding and atomic writes."""
    import json
    import tempfile

    from snapbench.app.corrupt import run_corruption

    photos = ("astronaut", "coffee", "chelsea", "rocket")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        recs = []
        for i in range(n_queries):
            name = photos[i % len(photos)]
            img = cv2.resize(getattr(data, name)(), size, interpolation=cv2.INTER_AREA)
            cv2.imwrite(str(root / f"{i}.png"), np.ascontiguousarray(img[..., ::-1]))
            recs.append({"id": f"q{i}", "image": f"{i}.png", "question": f"Which {name} is this?", "entity": name})
        (root / "q.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
        times = {}
        for fmt in FORMATS:
            t0 = time.perf_counter()
            run_corruption(root / "q.jsonl", root / fmt, image_format=fmt, progress=False)
            times[fmt] = (time.perf_counter() - t0) / n_queries
    out = [
        "## `snapbench corrupt` to disk per format (same run)",
        "",
        (f"`run_corruption` of {n_queries} queries of {size[0]}x{size[1]} (scikit-image photos), the 54 states, "
         "one worker, into a fresh folder per format: wall seconds per query (load, 45 operators + 8 text edits, "
         "encoding, atomic writes, manifest)."),
        "",
        "| format | s / query | speed-up vs png |",
        "|---|---|---|",
    ]
    out += [f"| {f} | {t:.2f} | {times['png'] / t:.1f}x |" for f, t in times.items()]
    return out + [""]


if __name__ == "__main__":
    main()
