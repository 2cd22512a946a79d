"""Rebuild the bundled demo set from scikit-image's sample photos (run once; outputs are committed).

    python assets/demo/make_demo_assets.py

The data is written into the package, ``snapbench/assets/demo/``, so that it ships with every install
(``snapbench demo`` works from any folder after a plain ``pip install``); this script stays outside
the package because it needs scikit-image, which the package does not.

12 scenes. Each scene gives one query (a tighter, shifted view + a question about its entity) and
three gallery views (full frame, a corner crop, a mirrored view) with captions.  The "moon" query has
no gallery item (a zero-ground-truth query, for the reject metrics).  Photos: scikit-image data
(public domain / CC0 / CC-BY as listed in skimage.data's README; see LICENSE.md here).
"""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
from skimage import data

HERE = Path(__file__).resolve().parents[2] / "snapbench" / "assets" / "demo"
SCENES = [  # (skimage name, entity, question, caption)
    ("astronaut", "astronaut", "Which astronaut is this?", "an astronaut in a white spacesuit with a flag"),
    ("chelsea", "cat", "What kind of cat is this?", "a ginger tabby cat looking sideways"),
    ("coffee", "coffee", "What type of coffee is in this cup?", "a cup of coffee on a saucer with a spoon"),
    ("rocket", "rocket", "Which rocket is on this launch pad?", "a rocket standing on a launch pad"),
    ("hubble_deep_field", "galaxy", "Which galaxy is this?", "a deep field of many small galaxies"),
    ("immunohistochemistry", "tissue", "What tissue is shown in this slide?", "stained tissue under a microscope"),
    ("retina", "retina", "What does this retina scan show?", "a fundus photograph of a retina"),
    ("camera", "photographer", "Who is this photographer?", "a man with a camera on a tripod"),
    ("clock", "clock", "What brand is this clock?", "a wall clock with black hands"),
    ("coins", "coins", "Where were these coins minted?", "old coins on a dark background"),
    ("brick", "wall", "What kind of wall is this?", "a brick wall texture"),
    ("moon", "moon", "Which crater of the moon is this?", None),  # zero-GT: not in the gallery
]


def rgb(name: str) -> np.ndarray:
    img = getattr(data, name)()
    if img.ndim == 2:
        img = np.dstack([img] * 3)
    return np.ascontiguousarray(img[..., :3])


def fit(img: np.ndarray, side: int = 256) -> np.ndarray:
    s = side / max(img.shape[:2])
    return cv2.resize(img, (round(img.shape[1] * s), round(img.shape[0] * s)), interpolation=cv2.INTER_AREA)


def save(path: Path, img: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    cv2.imwrite(str(path), img[..., ::-1], [cv2.IMWRITE_JPEG_QUALITY, 90])


def main() -> None:
    queries, gallery, qrels = [], [], {}
    for name, entity, question, caption in SCENES:
        img = rgb(name)
        h, w = img.shape[:2]
        qid = f"q_{name}"
        save(HERE / "queries" / f"{name}.jpg", fit(img[int(0.06 * h): int(0.94 * h), int(0.1 * w): int(0.96 * w)]))
        queries.append({"id": qid, "image": f"queries/{name}.jpg", "question": question, "entity": entity,
                        "tags": {"domain": "photo" if name not in {"immunohistochemistry", "retina", "hubble_deep_field"} else "science"}})
        qrels[qid] = []
        if caption is None:
            continue
        views = {"full": img, "corner": img[: int(0.75 * h), : int(0.75 * w)], "mirror": img[:, ::-1]}
        for view, vimg in views.items():
            gid = f"g_{name}_{view}"
            save(HERE / "gallery" / f"{name}_{view}.jpg", fit(vimg))
            gallery.append({"id": gid, "image": f"gallery/{name}_{view}.jpg", "caption": caption})
            qrels[qid].append(gid)
    (HERE / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (HERE / "gallery.jsonl").write_text("".join(json.dumps(g) + "\n" for g in gallery))
    (HERE / "qrels.json").write_text(json.dumps(qrels, indent=1) + "\n")


if __name__ == "__main__":
    main()
