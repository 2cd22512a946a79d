"""Cost of measuring a variant's strength (snapbench.corruptions.measure) against corrupting it
and writing it as PNG, at 512x512, 1024x768 and 2048x1536, one thread.

    python bench/bench_measure.py [--repeats 3] [--out bench/RESULTS_measure.md]

Target (issue #17): measuring adds at most 30% to `corrupt`'s time.  First, end to end:
``run_corruption`` (what ``snapbench corrupt`` runs; one worker, default PNG output, the 54 states)
on the same three photos at each size, with measuring on (the default) and off (``--no-measure``),
alternating, each into a fresh folder; the minimum over repeats is kept.  Then the pieces: per query, `corrupt` runs
the 45 image operators and writes 46 PNGs (45 variants + the clean image, zlib level 1); measuring
adds one `image_reference` (the clean side) and 45 `measure_image` calls.  Every piece is timed
interleaved (one repeat = every size, photo and condition once) and the minimum over repeats is
kept, so load drift on a shared machine hits all pieces alike.  Also times `measure_text` on the
eight text operators' outputs.  Targeted severity: bench/bench_target.py.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import cv2  # noqa: E402
import numpy as np  # noqa: E402
from _machine import machine  # noqa: E402  (bench/ is on sys.path)
from skimage import data  # noqa: E402

from snapbench.core.conditions import TEXT_OPERATORS  # noqa: E402
from snapbench.corruptions.codecs import encode_image  # noqa: E402
from snapbench.corruptions.image import corrupt_image_with_params, default_grid, image_operators  # noqa: E402
from snapbench.corruptions.measure import image_reference, measure_image, measure_text  # noqa: E402
from snapbench.corruptions.text import corrupt_text_with_params  # noqa: E402

SIZES = ((512, 512), (768, 1024), (1536, 2048))
QUESTIONS = [("What kind of fish is this?", "fish"), ("Which rocket is on this launch pad?", "rocket"),
             ("What type of coffee is in this cup?", "coffee"), ("Where were these coins minted?", "coins")]


def _photos() -> list[np.ndarray]:
    imgs = [data.stereo_motorcycle()[0], data.rocket(), data.coffee()]
    return [np.ascontiguousarray(i[..., :3]) for i in imgs]


def _ms(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1e3


def _png(img: np.ndarray) -> bytes:
    return encode_image(img, "png")  # what corrupt writes by default (zlib level 1)


def _qoi(img: np.ndarray) -> bytes:
    return encode_image(img, "qoi")  # corrupt --format qoi (imagecodecs), the fastest lossless writer


def time_images(repeats: int) -> dict[tuple[int, int], dict[str, float]]:
    grid = default_grid()
    conds = [(op, s) for op in image_operators() if op in grid for s in sorted(grid[op])]
    photos = _photos()
    sized = {size: [np.ascontiguousarray(cv2.resize(p, (size[1], size[0]), interpolation=cv2.INTER_AREA
                                                    if p.shape[1] > size[1] else cv2.INTER_CUBIC)) for p in photos]
             for size in SIZES}
    best: dict = {}  # (size, photo, piece) -> min ms

    def keep(key, ms):
        best[key] = min(best.get(key, np.inf), ms)

    for _ in range(repeats):
        for size, imgs in sized.items():
            for k, img in enumerate(imgs):
                keep((size, k, "reference"), _ms(lambda: image_reference(img)))
                keep((size, k, "png clean"), _ms(lambda: _png(img)))
                keep((size, k, "qoi clean"), _ms(lambda: _qoi(img)))
                ref = image_reference(img)
                for op, s in conds:
                    box = {}
                    keep((size, k, f"op {op}/{s}"), _ms(lambda: box.setdefault("r", corrupt_image_with_params(
                        img, op, s, seed=0, key="q"))))
                    r = box["r"]
                    keep((size, k, f"png {op}/{s}"), _ms(lambda: _png(r.image)))
                    keep((size, k, f"qoi {op}/{s}"), _ms(lambda: _qoi(r.image)))
                    keep((size, k, f"measure {op}/{s}"),
                         _ms(lambda: measure_image(ref, r.image, operator=op, params=r.params)))
    out = {}
    for size in SIZES:
        n = len(sized[size])

        def total(prefix: str) -> float:
            return sum(v for (sz, _, piece), v in best.items() if sz == size and piece.startswith(prefix)) / n

        per_measure = [np.mean([best[(size, k, f"measure {op}/{s}")] for k in range(n)]) for op, s in conds]
        out[size] = {
            "ops": total("op "), "png": total("png "), "qoi": total("qoi "), "measure": total("measure "),
            "reference": total("reference"), "measure_min": float(min(per_measure)),
            "measure_max": float(max(per_measure)), "n_conditions": len(conds),
            "measure_slowest": conds[int(np.argmax(per_measure))],
        }
    return out


def time_corrupt(repeats: int, root: Path) -> dict[tuple[int, int], dict[bool, float]]:
    """Seconds per query of ``run_corruption`` with measuring on / off (min over repeats, alternating)."""
    import json
    import shutil

    from PIL import Image

    from snapbench.app.corrupt import run_corruption

    out: dict = {}
    for size in SIZES:
        folder = root / f"{size[1]}x{size[0]}"
        folder.mkdir(parents=True, exist_ok=True)
        lines = []
        for k, p in enumerate(_photos()):
            img = cv2.resize(p, (size[1], size[0]), interpolation=cv2.INTER_AREA if p.shape[1] > size[1] else
                             cv2.INTER_CUBIC)
            Image.fromarray(img).save(folder / f"p{k}.png")
            lines.append(json.dumps({"id": f"p{k}", "image": f"p{k}.png", "question": "What is this?"}))
        (folder / "q.jsonl").write_text("\n".join(lines) + "\n")
        best = {True: np.inf, False: np.inf}
        for r in range(repeats):
            for measure in ((True, False) if r % 2 == 0 else (False, True)):
                dst = folder / f"out-{measure}"
                shutil.rmtree(dst, ignore_errors=True)
                t0 = time.perf_counter()
                run_corruption(folder / "q.jsonl", dst, progress=False, measure=measure)
                best[measure] = min(best[measure], (time.perf_counter() - t0) / len(lines))
        out[size] = best
        shutil.rmtree(folder, ignore_errors=True)
    return out


def time_text(repeats: int) -> tuple[float, float]:
    pairs = []
    for q, e in QUESTIONS:
        for op in TEXT_OPERATORS:
            r = corrupt_text_with_params(q, op, entity=e, seed=0, key="q")
            pairs.append((q, r.text, r.params["entity"], op, e))
    measure = min(_ms(lambda: [measure_text(a, b, c) for a, b, c, *_ in pairs]) for _ in range(repeats * 10))
    corrupt = min(_ms(lambda: [corrupt_text_with_params(a, op, entity=e, seed=0, key="q")
                               for a, _, _, op, e in pairs]) for _ in range(repeats * 10))
    return measure / len(pairs), corrupt / len(pairs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=str(Path(__file__).with_name("RESULTS_measure.md")))
    args = ap.parse_args()
    cv2.setNumThreads(1)
    load_before = os.getloadavg()[0]
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        e2e = time_corrupt(args.repeats, Path(tmp))
    img = time_images(args.repeats)
    txt_measure, txt_corrupt = time_text(args.repeats)
    load_after = os.getloadavg()[0]

    lines = [
        "# Measured strength: cost",
        "",
        f"- date: {dt.date.today().isoformat()}",
        f"- machine: {machine()}; 1-minute load average {load_before:.1f} before, {load_after:.1f} after "
        "(other jobs share the CPUs: compare ratios within this run, not absolute times across runs)",
        f"- one thread (cv2.setNumThreads(1), OMP_NUM_THREADS=1); minimum of {args.repeats} interleaved runs per "
        "piece, mean over 3 photos (scikit-image stereo_motorcycle left, rocket, coffee), resized with "
        "INTER_AREA/INTER_CUBIC; default grid, 45 image conditions",
        "",
        "End to end: `run_corruption` (= `snapbench corrupt`, one worker, PNG, the 54 states: clean + 45 image + 8 "
        "text) per query, measuring on (default) vs off (`--no-measure`), alternating, fresh output folder each time:",
        "",
        "| size | `corrupt` s per query, measuring | `--no-measure` | measuring adds |",
        "|---|---:|---:|---:|",
        *[f"| {w}x{h} | {r[True]:.2f} | {r[False]:.2f} | **{r[True] / r[False] - 1:.1%}** |"
          for (h, w), r in e2e.items()],
        "",
        "The pieces: `corrupt` per query = 45 operators + 46 PNG writes (45 variants + clean, zlib level 1); "
        "measuring = 1 `image_reference` + 45 `measure_image`",
        "",
        "| size | operators ms | PNG writes ms | `corrupt` ms | measuring ms | measuring / `corrupt` | "
        "per variant: measure (min-max) | per variant: operator + PNG | with `--format qoi`: writes ms, "
        "measuring / `corrupt` |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for (h, w), r in img.items():
        n = r["n_conditions"]
        png = r["png"] + r["png"] / n  # the clean image's PNG, about one variant's
        qoi = r["qoi"] + r["qoi"] / n
        corrupt = r["ops"] + png
        measure = r["measure"] + r["reference"]
        lines.append(
            f"| {w}x{h} | {r['ops']:.1f} | {png:.1f} | {corrupt:.1f} | {measure:.1f} | **{measure / corrupt:.1%}** | "
            f"{r['measure'] / n:.2f} ({r['measure_min']:.2f}-{r['measure_max']:.2f}) | {(r['ops'] + r['png']) / n:.2f} | "
            f"{qoi:.1f}, {measure / (r['ops'] + qoi):.0%} |"
        )
    lines += ["", "Slowest condition to measure per size (size-changing operators are resized back to the clean "
              "size first): " + "; ".join(f"{w}x{h} `{r['measure_slowest'][0]}/s{r['measure_slowest'][1]}`"
                                          for (h, w), r in img.items()), ""]
    lines += [f"Text: `measure_text` {txt_measure * 1e3:.0f} µs per corrupted question vs "
              f"`corrupt_text_with_params` {txt_corrupt * 1e3:.0f} µs (8 operators x {len(QUESTIONS)} questions).", ""]
    lines += ["Targeted severity (cost per query, resolution invariance): `bench/bench_target.py`, "
              "`bench/RESULTS_target.md`."]
    text = "\n".join(lines) + "\n"
    Path(args.out).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
