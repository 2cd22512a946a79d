"""Record the image operators' outputs under this environment's library versions.

    python scripts/record_operator_hashes.py [--save-outputs OLD.npz] [--against-outputs OLD.npz]

Writes tests/data/operator_hashes/<opencv-…_numpy-…_pillow-…_freetype-…>.json (+ .npz fingerprints),
the record tests/test_speed_equivalence.py checks exact bytes against under these versions.  The
record also writes down how far this environment's outputs are from the nearest existing record
(``moved_from``: per condition, the outputs with other bytes and the largest 8 x 8 block-mean
difference).  For the exact per-pixel difference, save every output under the old versions first
(``--save-outputs``, about 300 MB) and pass that file here under the new ones (``--against-outputs``):
the record then also holds the largest absolute pixel difference and the share of changed pixels.

Refuses to record when an operator whose revision did not change moved by more than the tolerance of
the test: that is a change of the algorithm, not of a library's rounding (bump its revision).
"""

from __future__ import annotations

import argparse
import io
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from operator_records import (  # noqa: E402
    RECORDS,
    TOLERANCE,
    fingerprint,
    images,
    load_records,
    measure,
    nearest,
    outputs,
    record_name,
    revisions,
    sha,
    versions,
)

from snapbench.store.atomic import write_bytes_atomic, write_text_atomic  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    """Write this environment's record; 0 on success, 1 when the outputs moved beyond the tolerance."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--save-outputs", type=Path, help="also save every output (npz) to measure a later version against")
    ap.add_argument("--against-outputs", type=Path, help="outputs saved under other versions: measure exact pixel differences")
    args = ap.parse_args(argv)

    now, revs = versions(), revisions()
    got: dict[str, tuple[str, np.ndarray]] = {}
    full: dict[str, np.ndarray] = {}
    for key, out in outputs(images()):
        got[key] = (sha(out), fingerprint(out))
        if args.save_outputs or args.against_outputs:
            full[key] = out
    records = [r for r in load_records() if r["versions"] != now]
    moved = measure(nearest(records, now), got, revs) if any(r["fingerprints"] is not None for r in records) else None
    if moved and args.against_outputs:
        with np.load(args.against_outputs, allow_pickle=False) as z:
            keys = json.loads(str(z["keys"]))
            for i, key in enumerate(keys):
                cond = key.split("|")[1]
                if cond not in moved["conditions"]:
                    continue
                d = np.abs(full[key].astype(np.int16) - z[f"o{i}"].astype(np.int16))
                entry = moved["conditions"][cond]
                entry["max_abs_pixel_diff"] = max(entry.get("max_abs_pixel_diff", 0), int(d.max()))
                share = float(d.any(axis=2).mean())
                entry["max_changed_pixel_share"] = round(max(entry.get("max_changed_pixel_share", 0.0), share), 5)
    if moved:
        too_far = {c: e for c, e in moved["conditions"].items() if e["max_block_mean_diff"] > TOLERANCE}
        if too_far:
            print(f"not recorded: outputs moved by more than {TOLERANCE} grey levels on unchanged revisions: {too_far}")
            return 1
    rec = {"about": "sha256 over (output bytes + str(shape)) of corrupt_image for every built-in condition on the "
                    "images of tests/operator_records.py, recorded by scripts/record_operator_hashes.py; "
                    "fingerprints (8x8 block means, 1/64 grey level) in the .npz of the same name.",
           "versions": now, "revisions": revs, "moved_from": moved,
           "hashes": {k: v[0] for k, v in got.items()}}
    RECORDS.mkdir(parents=True, exist_ok=True)
    name = record_name(now)  # not Path.with_suffix: the versions hold dots
    buf = io.BytesIO()
    np.savez_compressed(buf, fingerprints=np.stack([v[1] for v in got.values()]))
    write_bytes_atomic(RECORDS / f"{name}.npz", buf.getvalue())
    write_text_atomic(RECORDS / f"{name}.json", json.dumps(rec, indent=1) + "\n")
    print(f"recorded {len(got)} outputs under {now} -> {RECORDS / name}.json")
    if moved:
        print(f"moved from {moved['versions']}: {json.dumps(moved['conditions'])}")
    if args.save_outputs:
        buf = io.BytesIO()
        np.savez(buf, keys=np.array(json.dumps(list(full))), **{f"o{i}": v for i, v in enumerate(full.values())})
        write_bytes_atomic(args.save_outputs, buf.getvalue())
        print(f"saved every output -> {args.save_outputs}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
