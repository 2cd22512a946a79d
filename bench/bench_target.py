"""Severity by target vs the default grid across image sizes: resolution invariance and cost (issue #17).

    python bench/bench_target.py [--photos moto_left,moto_right,gravel,grass] [--out bench/RESULTS_target.md]

For each photo (scikit-image photos snapbench does not ship) at 320x240, 1024x768 and 2048x1536, and
each of the 45 image conditions:

* the SSIM the default grid's variant measures, and the SSIM the variant measures under
  ``--severity-target ssim=0.90,0.75,0.60`` (``target_variant``, what ``corrupt`` runs), with its
  number of operator+measure evaluations and its time;
* whether the target is *reachable*: the search reached it, or an independent sweep of the
  operator's knob (32 values evenly spread on the knob's scale, every integer for short integer
  ranges) finds a value whose variant measures within ±0.01 SSIM of it -- so a miss counted
  against the search is a target the sweep shows reachable;
* the **spread across sizes** of each (photo, condition): max − min of the measured SSIM over the
  three sizes, under the default grid and under the target.

One thread (cv2.setNumThreads(1)).  Times per query are the sum over the 45 conditions (operators +
measuring; no file writes), so they compare the two ways of making a query's variants.  End to
end, ``run_corruption`` (= ``snapbench corrupt``, one worker, PNG, the 54 states) per query with and
without the target, alternating, minimum of ``--repeats``, on the first photo at 1024x768 and
2048x1536.
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

from snapbench.corruptions.image import corrupt_image_with_params, default_grid, image_operators  # noqa: E402
from snapbench.corruptions.image.base import sample_image_params  # noqa: E402
from snapbench.corruptions.measure import image_reference, measure_image  # noqa: E402
from snapbench.corruptions.target import SeverityTarget, target_variant  # noqa: E402

SIZES = ((240, 320), (768, 1024), (1536, 2048))
TARGET = SeverityTarget("ssim", (0.90, 0.75, 0.60))
SWEEP = 32


def photo(name: str, h: int, w: int) -> np.ndarray:
    """The same photos as tests/measure_reference.py: RGB, resized with INTER_AREA / INTER_CUBIC."""
    img = {"moto_left": lambda: data.stereo_motorcycle()[0], "moto_right": lambda: data.stereo_motorcycle()[1]}.get(
        name, lambda: getattr(data, name)())()
    if img.ndim == 2:
        img = np.dstack([img] * 3)
    img = np.ascontiguousarray(img[..., :3])
    interp = cv2.INTER_AREA if h < img.shape[0] else cv2.INTER_CUBIC
    return np.ascontiguousarray(cv2.resize(img, (w, h), interpolation=interp))


def sweep_values(knob) -> list[float]:
    if knob.integer and knob.hi - knob.lo < SWEEP:
        return list(range(int(knob.lo), int(knob.hi) + 1))
    t = np.linspace(0.0, 1.0, SWEEP)
    v = knob.lo * (knob.hi / knob.lo) ** t if knob.log else knob.lo + (knob.hi - knob.lo) * t
    return sorted({int(round(x)) for x in v}) if knob.integer else [float(x) for x in v]


def sweep(op, img: np.ndarray, params: dict, ref) -> list[float]:
    """The SSIM of the variant at every sweep value of the operator's knob (the draws held fixed)."""
    shape = img.shape[:2]
    out = []
    for v in sweep_values(op.knob):
        p = op.knob.params_at(params, v, shape, op.sample)
        out.append(measure_image(ref, np.ascontiguousarray(op.apply(img, p), dtype=np.uint8)).ssim)
    return out


def run_photo(name: str, rows: list[dict], cost: dict) -> None:
    grid = default_grid()
    conds = [(n, s) for n in image_operators() if n in grid for s in sorted(grid[n])]
    for h, w in SIZES:
        img = photo(name, h, w)
        ref = image_reference(img)
        t_default = t_target = 0.0
        swept: dict[str, list[float]] = {}
        for op_name, sev in conds:
            t0 = time.perf_counter()
            res = corrupt_image_with_params(img, op_name, sev, seed=0, key=name)
            base = measure_image(ref, res.image).ssim
            t1 = time.perf_counter()
            op, image, params = sample_image_params(img, op_name, sev, seed=0, key=name)
            found = target_variant(op, image, params, TARGET.value_at(sev), "ssim", reference=ref)
            t2 = time.perf_counter()
            t_default += t1 - t0
            t_target += t2 - t1
            if op_name not in swept:
                swept[op_name] = sweep(op, image, params, ref)
            goal = TARGET.value_at(sev)
            reachable = any(abs(v - goal) <= TARGET.tolerance for v in swept[op_name] if np.isfinite(v))
            rows.append({"photo": name, "size": f"{w}x{h}", "op": op_name, "sev": sev, "default": base,
                         "achieved": found.achieved, "reached": found.reached, "reachable": reachable or found.reached,
                         "swept_reachable": reachable, "evals": found.evaluations, "ms": (t2 - t1) * 1e3})
        cost.setdefault(f"{w}x{h}", []).append((t_default, t_target))
        print(f"{name} {w}x{h}: default {t_default:.2f} s, targeted {t_target:.2f} s per query", flush=True)


def time_corrupt(name: str, repeats: int, root: Path) -> dict[str, dict[str, float]]:
    """Seconds per query of run_corruption, default grid vs the target (the first photo, two sizes)."""
    import json
    import shutil

    from PIL import Image

    from snapbench.app.corrupt import run_corruption

    out: dict[str, dict[str, float]] = {}
    for h, w in SIZES[1:]:
        Image.fromarray(photo(name, h, w)).save(root / "p.png")
        (root / "q.jsonl").write_text(json.dumps({"id": "q", "image": "p.png", "question": "What is this?"}) + "\n")
        best = {"default": np.inf, "target": np.inf}
        for r in range(repeats):
            for kind in (("default", "target") if r % 2 == 0 else ("target", "default")):
                shutil.rmtree(root / "o", ignore_errors=True)
                t0 = time.perf_counter()
                run_corruption(root / "q.jsonl", root / "o", progress=False,
                               severity_target=TARGET if kind == "target" else None)
                best[kind] = min(best[kind], time.perf_counter() - t0)
        out[f"{w}x{h}"] = best
    return out


def _spread(rows: list[dict], key: str, only_reached: bool) -> dict[tuple[str, int, str], float]:
    by: dict[tuple[str, int, str], list[float]] = {}
    for r in rows:
        by.setdefault((r["op"], r["sev"], r["photo"]), []).append(r[key] if (r["reached"] or not only_reached)
                                                                  else np.nan)
    return {k: float(np.max(v) - np.min(v)) for k, v in by.items() if len(v) == len(SIZES) and np.all(np.isfinite(v))}


def report(rows: list[dict], cost: dict, photos: list[str], load: tuple[float, float], e2e: dict) -> str:
    ops = list(dict.fromkeys(r["op"] for r in rows))
    d_spread, t_spread = _spread(rows, "default", False), _spread(rows, "achieved", True)
    sw = [r for r in rows if r["reachable"]]
    lines = [
        "# Severity by target: resolution invariance and cost",
        "",
        f"- date: {dt.date.today().isoformat()}",
        f"- machine: {machine()}; 1-minute load average {load[0]:.1f} before, {load[1]:.1f} after",
        f"- photos: {', '.join(photos)} (scikit-image, not shipped by snapbench), each at "
        + ", ".join(f"{w}x{h}" for h, w in SIZES) + " (INTER_AREA down / INTER_CUBIC up); seed 0; one thread",
        f"- target: `--severity-target {TARGET.spec}` (±{TARGET.tolerance:g} SSIM, at most {TARGET.max_evals} "
        f"evaluations); reachable = reached, or a sweep of the knob ({SWEEP} values on its scale) finds a variant "
        "within ±0.01",
        "",
        f"Overall: the target is reached for **{sum(r['reached'] for r in sw)} of {len(sw)}** (photo, size, "
        f"condition) where it is reachable ({sum(r['reached'] for r in sw) / max(1, len(sw)):.1%}); "
        f"{sum(r['reached'] for r in rows)} of {len(rows)} in all. Mean spread of SSIM across the three sizes per "
        f"(photo, condition): default grid **{np.mean(list(d_spread.values())):.3f}** (all {len(d_spread)}; "
        f"{np.mean([d_spread[k] for k in t_spread]):.3f} over the {len(t_spread)} whose target is reached at every "
        f"size), under the target **{np.mean(list(t_spread.values())):.3f}** (over those {len(t_spread)}).",
        "",
        "| operator | spread, default grid (mean, max) | spread, target (mean, max) | reached / reachable | "
        "not reachable | evaluations per variant (mean) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for op in ops:
        d = [v for (o, _, _), v in d_spread.items() if o == op]
        t = [v for (o, _, _), v in t_spread.items() if o == op]
        mine = [r for r in rows if r["op"] == op]
        reach = [r for r in mine if r["reachable"]]
        lines.append(f"| {op} | {np.mean(d):.3f}, {np.max(d):.3f} | "
                     + (f"{np.mean(t):.3f}, {np.max(t):.3f}" if t else "–")
                     + f" | {sum(r['reached'] for r in reach)} / {len(reach)} | "
                     f"{sum(not r['reachable'] for r in mine)} | {np.mean([r['evals'] for r in mine]):.1f} |")
    lines += ["", "Measured SSIM per size, mean over the photos (default grid → under the target):", "",
              "| condition | " + " | ".join(f"{w}x{h}" for h, w in SIZES) + " |", "|---|" + "---:|" * len(SIZES)]
    for op in ops:
        for sev in (1, 2, 3):
            cells = []
            for h, w in SIZES:
                sel = [r for r in rows if r["op"] == op and r["sev"] == sev and r["size"] == f"{w}x{h}"]
                cells.append(f"{np.mean([r['default'] for r in sel]):.3f} → {np.mean([r['achieved'] for r in sel]):.3f}")
            lines.append(f"| {op}/s{sev} | " + " | ".join(cells) + " |")
    lines += ["", "Cost per query (45 image conditions, operators + measuring, no file writes; mean over photos):", "",
              "| size | default grid s | targeted s | ratio |", "|---|---:|---:|---:|"]
    for size, pairs in cost.items():
        d, t = np.mean([p[0] for p in pairs]), np.mean([p[1] for p in pairs])
        lines.append(f"| {size} | {d:.2f} | {t:.2f} | {t / d:.1f}x |")
    lines += ["", f"End to end, `snapbench corrupt` (one worker, PNG, the 54 states) per query, {photos[0]}:", "",
              "| size | default grid s | `--severity-target` s | ratio |", "|---|---:|---:|---:|"]
    for size, r in e2e.items():
        lines.append(f"| {size} | {r['default']:.2f} | {r['target']:.2f} | {r['target'] / r['default']:.1f}x |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--photos", default="moto_left,moto_right,gravel,grass")
    ap.add_argument("--out", default=str(Path(__file__).with_name("RESULTS_target.md")))
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    cv2.setNumThreads(1)
    photos = args.photos.split(",")
    load0 = os.getloadavg()[0]
    rows: list[dict] = []
    cost: dict = {}
    for name in photos:
        run_photo(name, rows, cost)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        e2e = time_corrupt(photos[0], args.repeats, Path(tmp))
    text = report(rows, cost, photos, (load0, os.getloadavg()[0]), e2e)
    Path(args.out).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
