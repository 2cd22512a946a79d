"""Recorded operator outputs per library version: what tests/test_speed_equivalence.py checks against.

Every built-in image condition is run on five images of different sizes with two seeds each (450
outputs).  A *record* (``tests/data/operator_hashes/<versions>.json`` + ``.npz``) holds, for one set of
library versions (OpenCV, numpy, Pillow, FreeType, the bundled font), the operator revisions and

* the sha256 of every output (bytes + shape): the exact check under those versions;
* a fingerprint of every output (8 x 8 block means per channel, in 1/64 grey levels, ``.npz``): what a
  later environment measures its outputs against when its library versions have no record yet.

OpenCV's warps and Pillow/FreeType's text rendering may round differently between releases, so bytes
are comparable only under the same versions.  Re-record with ``python scripts/record_operator_hashes.py``
(docs/corruptions.md, "Recorded operator outputs"): it writes the record of this environment and
writes down, in the record, how far the outputs moved from the nearest existing record.

No snapbench code imports this module; it lives with the tests and the recording script.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Iterator

import cv2
import numpy as np

from snapbench.corruptions import corrupt_image, default_grid, image_operators
from snapbench.corruptions.image import get_image_operator
from snapbench.corruptions.image.add import renderer_versions

RECORDS = Path(__file__).parent / "data" / "operator_hashes"
#: The first record (revision 1 of every operator, the code before issue 19), kept as written.
FIRST_RECORD = Path(__file__).parent / "data" / "operator_sha256_r1.json"
SEEDS = ((0, "q1"), (5, "other"))
BLOCKS = 8
#: Fingerprints are block means in 1/64 grey level.
FINGERPRINT_SCALE = 64.0
#: Largest block-mean difference (grey levels) a library version move may make on an operator whose
#: revision is unchanged.  OpenCV 5.0.0 -> 5.1.0 moved rotation and perspective by at most 0.094
#: (pixels by at most 1 grey level); a change of algorithm moves block means by whole levels.
TOLERANCE = 0.5


def versions() -> dict[str, str]:
    """The library versions that decide the operators' bytes in this environment."""
    return {"opencv": cv2.__version__, "numpy": np.__version__, **renderer_versions()}


def revisions() -> dict[str, int]:
    """Each built-in image operator's revision in this code."""
    return {op: get_image_operator(op).revision for op in image_operators()}


def record_name(v: dict[str, str]) -> str:
    """The file stem of the record for versions ``v``."""
    return "_".join(f"{k}-{v[k]}" for k in ("opencv", "numpy", "pillow", "freetype"))


def photo(name: str, w: int, h: int) -> np.ndarray:
    """scikit-image's photo ``name`` as RGB uint8, resized to w x h."""
    from skimage import data

    img = getattr(data, name)()
    if img.ndim == 2:
        img = np.dstack([img] * 3)
    return np.ascontiguousarray(cv2.resize(img[..., :3], (w, h), interpolation=cv2.INTER_AREA))


def images() -> dict[str, np.ndarray]:
    """The five inputs the records are made from (their names are part of every output key)."""
    return {"astronaut@1024x768": photo("astronaut", 1024, 768), "coffee@640x480": photo("coffee", 640, 480),
            "chelsea@333x517": photo("chelsea", 333, 517), "rocket@512x512": photo("rocket", 512, 512),
            "noise@37x23": np.random.default_rng(7).integers(0, 256, (23, 37, 3), dtype=np.uint8)}


def sha(img: np.ndarray) -> str:
    """sha256 over the output bytes and its shape."""
    return hashlib.sha256(np.ascontiguousarray(img).tobytes() + str(img.shape).encode()).hexdigest()


def fingerprint(img: np.ndarray) -> np.ndarray:
    """8 x 8 x 3 block means in 1/64 grey level (uint16), computed in numpy so that it does not move
    with the OpenCV version it is meant to measure.  An output under 8 pixels on a side (a downscaled
    tiny image) has one block per pixel there, the rest of the 8 x 8 stays 0."""
    h, w = img.shape[:2]
    bh, bw = min(BLOCKS, h), min(BLOCKS, w)
    rows = (np.arange(bh) * h) // bh
    cols = (np.arange(bw) * w) // bw
    sums = np.add.reduceat(np.add.reduceat(img.astype(np.float64), rows, axis=0), cols, axis=1)
    counts = np.diff(np.append(rows, h))[:, None, None] * np.diff(np.append(cols, w))[None, :, None]
    out = np.zeros((BLOCKS, BLOCKS, img.shape[2]), dtype=np.uint16)
    out[:bh, :bw] = np.round(sums / counts * FINGERPRINT_SCALE)
    return out


def outputs(imgs: dict[str, np.ndarray]) -> Iterator[tuple[str, np.ndarray]]:
    """(key, output) of every built-in condition on every image with both seeds, in record order."""
    grid = default_grid()
    for name, img in imgs.items():
        for op in image_operators():
            for s in sorted(grid[op]):
                for seed, qkey in SEEDS:
                    yield f"{name}|{op}/s{s}|{seed}|{qkey}", corrupt_image(img, op, s, seed=seed, key=qkey)


def load_records() -> list[dict[str, Any]]:
    """Every record: the first one (hashes only) and those in tests/data/operator_hashes/."""
    first = json.loads(FIRST_RECORD.read_text())
    out = [{"name": FIRST_RECORD.name, "versions": first["versions"], "hashes": first["hashes"],
            "revisions": {op: first["revision"] for op in {k.split("|")[1].split("/")[0] for k in first["hashes"]}},
            "fingerprints": None}]
    for f in sorted(RECORDS.glob("*.json")):
        rec = json.loads(f.read_text())
        fp = f.with_suffix(".npz")
        if fp.exists():
            with np.load(fp, allow_pickle=False) as z:
                rec["fingerprints"] = dict(zip(rec["hashes"], z["fingerprints"]))
        else:
            rec["fingerprints"] = None
        out.append({**rec, "name": f.name})
    return out


def nearest(records: list[dict[str, Any]], now: dict[str, str]) -> dict[str, Any]:
    """The record with fingerprints whose versions agree with ``now`` in the most entries (the newest
    file on a tie): what outputs under unrecorded versions are measured against."""
    with_fp = [r for r in records if r["fingerprints"] is not None]
    return max(reversed(with_fp), key=lambda r: sum(r["versions"].get(k) == v for k, v in now.items()))


def measure(rec: dict[str, Any], got: dict[str, tuple[str, np.ndarray]], revs: dict[str, int]) -> dict[str, Any]:
    """How the outputs ``got`` (key -> (sha, fingerprint)) differ from record ``rec``, for the operators
    whose revision is the recorded one: per condition, the outputs with other bytes and the largest
    block-mean difference (grey levels); and which operators changed revision since."""
    per: dict[str, dict[str, float]] = {}
    for key, digest in rec["hashes"].items():
        op = key.split("|")[1].split("/")[0]
        if revs.get(op) != rec["revisions"].get(op) or got[key][0] == digest:
            continue
        cond = key.split("|")[1]
        diff = np.abs(got[key][1].astype(np.int32) - rec["fingerprints"][key].astype(np.int32))
        entry = per.setdefault(cond, {"outputs_changed": 0, "max_block_mean_diff": 0.0})
        entry["outputs_changed"] += 1
        entry["max_block_mean_diff"] = max(entry["max_block_mean_diff"], float(diff.max()) / FINGERPRINT_SCALE)
    moved = sorted(op for op in revs if rec["revisions"].get(op) not in (None, revs[op]))
    return {"versions": rec["versions"], "conditions": per, "revision_changed": moved}
