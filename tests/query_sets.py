"""Query sets on disk for the tests, built from real photos (scikit-image) with real codecs.

One place for the query-set builders the corrupt, pipeline and worker tests share, and for the two
helpers they all use on what a command wrote (:func:`tree`) and how a test starts the CLI in a
separate process (:func:`snapbench_cmd`).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image
from skimage import data

#: the three photo crops (96x128) the small query sets use, by file stem
CROPS = {
    "astronaut": lambda: data.astronaut()[20:116, 160:288],
    "cat": lambda: data.chelsea()[40:136, 100:228],
    "coffee": lambda: data.coffee()[100:196, 200:328],
}
QUESTIONS = {
    "astronaut": ("Which astronaut is this?", "astronaut"),
    "cat": ("What kind of cat is this?", "cat"),
    "coffee": ("What type of coffee is in this cup?", "coffee"),
}


def write_manifest(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def three_photo_set(root: Path, *, bad: bool = True) -> Path:
    """Three photos (JPEG q92, PNG, WebP q90), one query each, and with ``bad`` a truncated JPEG as a
    fourth query; returns the manifest path (``root/queries.jsonl``)."""
    (root / "imgs").mkdir(parents=True, exist_ok=True)
    Image.fromarray(CROPS["astronaut"]()).save(root / "imgs" / "astronaut.jpg", quality=92)
    Image.fromarray(CROPS["cat"]()).save(root / "imgs" / "cat.png")
    Image.fromarray(CROPS["coffee"]()).save(root / "imgs" / "coffee.webp", quality=90)
    rows = [{"id": "q_astro", "image": "imgs/astronaut.jpg", "question": QUESTIONS["astronaut"][0],
             "entity": "astronaut", "domain": "photo"},
            {"id": "q_cat", "image": "imgs/cat.png", "question": QUESTIONS["cat"][0], "entity": "cat"},
            {"id": "q_coffee", "image": "imgs/coffee.webp", "question": QUESTIONS["coffee"][0], "entity": "coffee"}]
    if bad:
        (root / "imgs" / "broken.jpg").write_bytes((root / "imgs" / "astronaut.jpg").read_bytes()[:700])
        rows.append({"id": "q_broken", "image": "imgs/broken.jpg", "question": "What is this dog?", "entity": "dog"})
    return write_manifest(root / "queries.jsonl", rows)


def twelve_query_set(root: Path) -> Path:
    """12 queries over the three photos (codec defaults), one with an entity its question lacks (its
    text and joint conditions become skips) and one whose PNG is truncated."""
    (root / "imgs").mkdir(parents=True)
    files = {"astronaut": "astronaut.jpg", "cat": "cat.png", "coffee": "coffee.webp"}
    for stem, name in files.items():
        Image.fromarray(CROPS[stem]()).save(root / "imgs" / name)
    (root / "imgs" / "broken.png").write_bytes((root / "imgs" / "cat.png").read_bytes()[:300])
    stems = list(files)
    rows = []
    for i in range(11):
        q, e = QUESTIONS[stems[i % 3]]
        rows.append({"id": f"q{i:02d}", "image": f"imgs/{files[stems[i % 3]]}", "question": q, "entity": e})
    rows[4]["entity"] = "giraffe"
    rows.append({"id": "q11", "image": "imgs/broken.png", "question": "What is this?", "entity": "thing"})
    return write_manifest(root / "queries.jsonl", rows)


def square_photo_set(root: Path, n: int, size: int = 96) -> Path:
    """``n`` queries, each its own PNG: the top-left ``size`` x ``size`` of the three full photos in turn
    (``root/q.jsonl``)."""
    root.mkdir(parents=True, exist_ok=True)
    photos = [data.astronaut(), data.chelsea(), data.coffee()]
    rows = []
    for i in range(n):
        Image.fromarray(np.ascontiguousarray(photos[i % 3][:size, :size])).save(root / f"p{i}.png")
        rows.append({"id": f"q{i:02d}", "image": f"p{i}.png", "question": "What is this photo?", "entity": "photo"})
    return write_manifest(root / "q.jsonl", rows)


def tree(out: Path) -> dict[str, str]:
    """Every file under ``out`` (relative path) -> sha256 of its bytes."""
    return {str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(out.rglob("*")) if p.is_file()}


def snapbench_cmd() -> list[str]:
    """The command that starts snapbench in a new process: the installed ``snapbench`` script of this
    interpreter (the entry point users run), else ``python -m snapbench``."""
    script = Path(sys.executable).parent / "snapbench"
    return [str(script)] if script.exists() else [sys.executable, "-m", "snapbench"]
