"""Validate the diagnose detectors on what can be measured: snapbench's own operators.

    python bench/validate_diagnose.py [--out bench/RESULTS_diagnose_validation.md]
    python bench/validate_diagnose.py --calibrate     # the blockiness -> JPEG quality table

Image side: for each image detector, the recall on the variants of its matching operator(s) per
severity and the false-positive rate on the clean photos, on photos the project does not ship
(tests/diagnose_photos.py: TEST_PHOTOS) -- in memory (as `snapbench corrupt` writes them,
losslessly) and as JPEG q92 files (as the authors' release stores variants, and phones store
photos).  Then which detectors fire on each of the 15 operators at s3 (what they cannot see).
Text side: share of each text operator's outputs flagged by each text detector, on the hand-written
questions of tests/data/questions.jsonl and the demo's 12, against the clean questions.
The development photos (DEV_PHOTOS, the thresholds were chosen on them) are reported alongside.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import tempfile
from pathlib import Path

import cv2
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from _machine import machine  # noqa: E402  (bench/ is on sys.path)
from diagnose_photos import DEV_PHOTOS, TEST_PHOTOS, photo_set  # noqa: E402

from snapbench.corruptions import corrupt_image, corrupt_text, image_operators, load_manifest  # noqa: E402
from snapbench.diagnose import IMAGE_DETECTORS, TEXT_DETECTORS, diagnose_image, diagnose_question, load_thresholds  # noqa: E402
from snapbench.diagnose.text import Vocabulary  # noqa: E402

MATCH = {"blur": ("defocus_blur", "motion_blur"), "low_light": ("low_light",), "overexposure": ("overexposure",),
         "compression": ("compression",), "low_resolution": ("low_resolution", "downscale")}


def _flags_mem(img: np.ndarray, th) -> dict[str, bool]:
    return {d: r.flag for d, r in diagnose_image(img, th).items()}


def _flags_jpeg(img: np.ndarray, th, tmp: Path) -> dict[str, bool]:
    f = tmp / "x.jpg"
    ok, buf = cv2.imencode(".jpg", np.ascontiguousarray(img[..., ::-1]), [cv2.IMWRITE_JPEG_QUALITY, 92])
    f.write_bytes(buf.tobytes())
    return {d: r.flag for d, r in diagnose_image(f, th).items()}


def _rate(flags: list[dict[str, bool]], d: str) -> float:
    return float(np.mean([f[d] for f in flags]))


def image_tables(photos: dict[str, np.ndarray], th, tmp: Path, jpeg: bool) -> tuple[list[str], list[str]]:
    clean = {n: _flags_mem(p, th) for n, p in photos.items()}
    clean_j = {n: _flags_jpeg(p, th, tmp) for n, p in photos.items()} if jpeg else {}
    rows = ["| detector | operator | s1 | s2 | s3 | s3 as JPEG q92 files | FPR clean | FPR clean JPEG q92 |",
            "|---|---|---|---|---|---|---|---|"]
    cache: dict[tuple[str, int], list[dict[str, bool]]] = {}
    cache_j: dict[str, list[dict[str, bool]]] = {}
    for op in image_operators():
        for s in (1, 2, 3):
            cache[(op, s)] = [_flags_mem(corrupt_image(p, op, s, key=n), th) for n, p in photos.items()]
        if jpeg:
            cache_j[op] = [_flags_jpeg(corrupt_image(p, op, 3, key=n), th, tmp) for n, p in photos.items()]
    for d, ops in MATCH.items():
        for op in ops:
            rec = [f"{_rate(cache[(op, s)], d):.2f}" for s in (1, 2, 3)]
            rj = f"{_rate(cache_j[op], d):.2f}" if jpeg else "–"
            fj = f"{_rate(list(clean_j.values()), d):.2f}" if jpeg else "–"
            rows.append(f"| {d} | {op} | {' | '.join(rec)} | {rj} | {_rate(list(clean.values()), d):.2f} | {fj} |")
    cross = ["| operator (s3) | " + " | ".join(IMAGE_DETECTORS) + " | any |", "|---|" + "---|" * (len(IMAGE_DETECTORS) + 1)]
    for op in ("clean", *image_operators()):
        fl = list(clean.values()) if op == "clean" else cache[(op, 3)]
        anyr = float(np.mean([any(f.values()) for f in fl]))
        cross.append(f"| {op} | " + " | ".join(f"{_rate(fl, d):.2f}" for d in IMAGE_DETECTORS) + f" | {anyr:.2f} |")
    return rows, cross


def text_table(th) -> list[str]:
    recs = [json.loads(line) for line in (ROOT / "tests" / "data" / "questions.jsonl").read_text().splitlines()]
    recs += [{"id": r.id, "question": r.question, "entity": r.entity}
             for r in load_manifest(ROOT / "snapbench" / "assets" / "demo" / "queries.jsonl")]
    vocab = Vocabulary(th["oov"]["min_count"])
    ops = ("clean", "char_add", "char_delete", "char_change", "char_swap", "word_repeat", "word_swap", "sent_add",
           "sent_replace")
    rows = [f"| text condition (n = {len(recs)}) | " + " | ".join(TEXT_DETECTORS)
            + " | no_entity (entity not given) | any |", "|---|" + "---|" * (len(TEXT_DETECTORS) + 2)]
    for op in ops:
        qs = [(r["question"] if op == "clean" else corrupt_text(r["question"], op, entity=r["entity"], key=r["id"]),
               r["entity"]) for r in recs]
        fl = [{d: x.flag for d, x in diagnose_question(q, e, th, vocab).items()} for q, e in qs]
        no_e = np.mean([diagnose_question(q, None, th, vocab)["no_entity"].flag for q, _ in qs])
        anyr = np.mean([any(f.values()) for f in fl])
        rows.append(f"| {op} | " + " | ".join(f"{_rate(fl, d):.2f}" for d in TEXT_DETECTORS) + f" | {no_e:.2f} | {anyr:.2f} |")
    return rows


def calibrate() -> None:
    """Print the median 8x8 blockiness of OpenCV JPEG round trips per quality on the development
    photos: the table BLOCKINESS_QUALITY in snapbench/diagnose/image.py."""
    from snapbench.diagnose.image import blockiness, view_of

    qualities = (5, 10, 18, 30, 50, 75, 95)
    rows = []
    for img in photo_set(DEV_PHOTOS).values():
        row = []
        for q in qualities:
            ok, buf = cv2.imencode(".jpg", np.ascontiguousarray(img[..., ::-1]), [cv2.IMWRITE_JPEG_QUALITY, q])
            row.append(blockiness(view_of(np.ascontiguousarray(cv2.imdecode(buf, 1)[..., ::-1])).luma_full))
        rows.append(row)
    med = np.median(rows, axis=0)
    print("(blockiness, quality): " + ", ".join(f"({b:.2f}, {q}.0)" for b, q in zip(med, qualities)))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(Path(__file__).with_name("RESULTS_diagnose_validation.md")))
    ap.add_argument("--calibrate", action="store_true", help="print the blockiness -> quality table and stop")
    args = ap.parse_args()
    if args.calibrate:
        calibrate()
        return
    th = load_thresholds()
    lines = ["# Diagnose detectors: validation on snapbench's operators", "",
             f"- date: {dt.date.today().isoformat()}", f"- machine: {machine()}",
             f"- test photos (not shipped by the project): {', '.join(TEST_PHOTOS)}",
             f"- development photos (thresholds chosen on them): {', '.join(DEV_PHOTOS)}",
             "- share of variants flagged by the matching detector (recall) per severity; FPR = share of clean photos "
             "flagged; variants in memory unless the column says JPEG q92 files (decoded by diagnose's JPEG path)", ""]
    with tempfile.TemporaryDirectory() as tmp:
        for label, names, jpeg in (("test photos", TEST_PHOTOS, True), ("development photos", DEV_PHOTOS, False)):
            rows, cross = image_tables(photo_set(names), th, Path(tmp), jpeg)
            lines += [f"## Image detectors, {label} (n = {len(names)})", "", *rows, "",
                      f"Share of s3 variants each detector flags, every operator ({label}):", "", *cross, ""]
    lines += ["## Text detectors", "", *text_table(th), ""]
    text = "\n".join(lines)
    print(text)
    Path(args.out).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
