"""Speed of the diagnose image detectors at 1024x768, decode included, one core.

    python bench/bench_diagnose.py [--repeats 7] [--n 40] [--out bench/RESULTS_diagnose.md]

Target (issue 18): >= 200 images per second per core at 1024x768 for the image detectors, decode
included (reduced-size decode allowed).  Measured per image: read the file, decode (JPEG: libjpeg's
DCT scaling to 512x384; PNG: full decode through snapbench's loader), the five image detectors and
the perceptual hash -- exactly what ``snapbench diagnose`` does per query image (``_image_part``),
without the CSV/HTML writing.  Photos: scikit-image's astronaut, coffee, chelsea, rocket resized to
1024x768 (INTER_CUBIC), saved as JPEG q90 (what phones and web uploads are) and as PNG.  Interleaved
repeats, minimum per repeat (the machine is shared).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import cv2  # noqa: E402
import numpy as np  # noqa: E402
from _machine import machine  # noqa: E402  (bench/ is on sys.path)
from skimage import data  # noqa: E402

from snapbench.core.records import QueryRecord  # noqa: E402
from snapbench.diagnose import load_thresholds  # noqa: E402
from snapbench.diagnose.detect import diagnose_record  # noqa: E402
from snapbench.diagnose.image import decode_for_diagnosis, image_scores, perceptual_hash  # noqa: E402

PHOTOS = ("astronaut", "coffee", "chelsea", "rocket")


def _files(folder: Path, n: int) -> dict[str, list[Path]]:
    out: dict[str, list[Path]] = {"jpeg q90": [], "png": []}
    for i in range(n):
        name = PHOTOS[i % len(PHOTOS)]
        img = getattr(data, name)()
        img = cv2.resize(img, (1024, 768), interpolation=cv2.INTER_CUBIC)
        img = np.roll(img, i, axis=1)  # distinct files, same content statistics
        bgr = np.ascontiguousarray(img[..., ::-1])
        j, p = folder / f"{i}.jpg", folder / f"{i}.png"
        cv2.imwrite(str(j), bgr, [cv2.IMWRITE_JPEG_QUALITY, 90])
        cv2.imwrite(str(p), bgr, [cv2.IMWRITE_PNG_COMPRESSION, 1])
        out["jpeg q90"].append(j)
        out["png"].append(p)
    return out


def _time(fn, items) -> float:
    t0 = time.perf_counter()
    for it in items:
        fn(it)
    return (time.perf_counter() - t0) / len(items)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--out", default=str(Path(__file__).with_name("RESULTS_diagnose.md")))
    args = ap.parse_args()
    cv2.setNumThreads(1)
    th = load_thresholds()
    with tempfile.TemporaryDirectory() as tmp:
        files = _files(Path(tmp), args.n)
        views = {k: [decode_for_diagnosis(f) for f in v] for k, v in files.items()}
        steps = {
            "whole (diagnose_record)": lambda f: diagnose_record(QueryRecord(f.stem, f, None), th, None),
            "decode only": lambda f: decode_for_diagnosis(f),
        }
        best: dict[tuple[str, str], float] = {}
        for _ in range(args.repeats):  # interleaved: every step and format once per repeat
            for fmt, fs in files.items():
                for step, fn in steps.items():
                    t = _time(fn, fs)
                    best[(fmt, step)] = min(best.get((fmt, step), np.inf), t)
                t = _time(lambda v: (image_scores(v, th), perceptual_hash(v.luma)), views[fmt])
                best[(fmt, "detectors only")] = min(best.get((fmt, "detectors only"), np.inf), t)
    lines = ["# Diagnose image detectors: speed", "", f"- date: {dt.date.today().isoformat()}",
             f"- machine: {machine()}",
             f"- one thread (cv2.setNumThreads(1)); {args.n} files of 1024x768 per format ({', '.join(PHOTOS)}, "
             f"resized INTER_CUBIC); minimum over {args.repeats} interleaved repeats of the mean per image",
             "- target: >= 200 images/s per core at 1024x768, decode included", "",
             "| file | step | ms / image | images / s |", "|---|---|---|---|"]
    for (fmt, step), t in best.items():
        lines.append(f"| {fmt} | {step} | {1e3 * t:.2f} | {1 / t:.0f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    Path(args.out).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
