"""On-disk fixtures for the dataset loader tests: a miniature SnapBench release, a PhotoBench
album, a Hugging Face ImageFolder copy; the bundled demo without its qrels and a SCORES_DIR of
given score matrices (for the label-free tests).  Images are real photos from ``skimage.data`` written with
real codecs (JPEG, PNG, WebP), shrunk so the fixtures stay small."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
from PIL import Image
from skimage import data as skdata

_PHOTOS = ("astronaut", "chelsea", "coffee", "rocket", "camera", "coins", "moon", "horse")


def photo(i: int, size: int = 48) -> np.ndarray:
    img = getattr(skdata, _PHOTOS[i % len(_PHOTOS)])()
    if img.ndim == 2:
        img = np.stack([img] * 3, axis=-1)
    if img.dtype != np.uint8:
        img = (np.asarray(img, dtype=float) * 255 / max(1.0, float(img.max()))).astype(np.uint8)
    return np.asarray(Image.fromarray(img[..., :3]).resize((size, size)))


def write_photo(path: Path, i: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fmt = {".jpg": "JPEG", ".jpeg": "JPEG", ".png": "PNG", ".webp": "WEBP"}[path.suffix.lower()]
    Image.fromarray(photo(i)).save(path, format=fmt)
    return path


TEXT_OPS_RELEASE = ("char_add", "char_delete", "char_change", "char_swap", "word_repeat", "word_swap",
                    "sent_add", "sent_replace")


def _text_perturbations(question: str, names=TEXT_OPS_RELEASE) -> dict:
    return {name: {"perturbed_text": f"[{name}] {question}", "changed": True} for name in names}


def _image_perturbations(qid: str, ops=("motion_blur", "rotation")) -> dict:
    out = {}
    for op in ops:
        entry = {"severity": [1, 3, 5], "category": "degrade"}
        for sev in ("sev1", "sev3", "sev5"):
            entry[sev] = f"bench_images/perturbed/{op}/{sev}/{qid}.jpg"
        if op == "rotation":
            entry["angle"] = 15
        out[op] = entry
    return out


def snapbench_records() -> list[dict]:
    """Five records: shared gallery items, a file with two captions, two files with one stem
    (01000.png / 01000.jpg), a zero-GT query, hard negatives, an unknown field, variant spellings."""
    def g(local, caption):
        return {"local": local, "caption": caption}

    recs = [
        {"query_id": "bench_0000", "query_text": "what cup is this?", "query_entity": "cup",
             "query_image_local": "0000.jpg", "domain": "product",
             "gallery": {"gt": [g("08805.jpg", "red cup")], "hard_negative": [g("08806.jpg", "blue cup"), g("08807.jpg", "green cup")]}},
        {"query_id": "bench_0001", "query_text": "which rocket is it?", "query_entity": "rocket",
             "query_image_local": "0001.jpg", "domain": "place",
             "gallery": {"gt": [g("08806.jpg", "blue cup"), g("01000.png", "a rocket")], "hard_negative": [g("08805.jpg", "red cup")]}},
        {"query_id": "bench_0002", "query_text": "what mug is that?", "query_entity": "mug",
             "query_image_local": "0002.jpg", "domain": "product",
             "gallery": {"gt": [g("08805.jpg", "a crimson mug")], "hard_negative": [g("02000.webp", "a cat")]}},
        {"query_id": "bench_0003", "query_text": "is this a tiger?", "query_entity": "tiger",
             "query_image_local": "0003.jpg", "domain": "nature",
             "gallery": {"gt": [], "hard_negative": [g("02000.webp", "a cat"), g("01000.jpg", "a rocket on pad")]}},
        {"query_id": "bench_0004", "query_text": "what coins are these?", "query_entity": "coins",
             "query_image_local": "0004.jpg", "domian": "product",
             "gallery": {"gt": [g("03000.jpeg", "coins")], "hard_negative": []}},
    ]
    for r in recs:
        names = TEXT_OPS_RELEASE
        if r["query_id"] == "bench_0004":
            names = ("char-add", "character_deletion", "char_change", "char_swap", "word_repeat", "word_swap",
                     "sentence_addition", "sent_replace", "emoji_add")
        r["text_perturbations"] = _text_perturbations(r["query_text"], names)
        r["image_perturbations"] = _image_perturbations(r["query_id"])
    return recs


#: (image operator, release severity key, query id) of the perturbed files the fixture writes.
PRESENT_SEV_FILES = (("motion_blur", "sev1", "bench_0000"), ("motion_blur", "sev5", "bench_0000"),
                     ("rotation", "sev3", "bench_0001"))
GALLERY_FILES = ("08805.jpg", "08806.jpg", "08807.jpg", "01000.png", "02000.webp", "01000.jpg", "03000.jpeg")


def make_snapbench_release(root: Path, *, with_images: bool = True) -> Path:
    """``root/benchmark/snap_bench.json`` (+ ``root/bench_images``); returns the JSON path."""
    recs = snapbench_records()
    js = root / "benchmark" / "snap_bench.json"
    js.parent.mkdir(parents=True, exist_ok=True)
    js.write_text(json.dumps(recs, indent=1, ensure_ascii=False), encoding="utf-8")
    if with_images:
        imgs = root / "bench_images"
        for i, r in enumerate(recs):
            write_photo(imgs / "query" / r["query_image_local"], i)
        for i, name in enumerate(GALLERY_FILES):
            write_photo(imgs / "gallery" / name, i + 2)
        for op, sev, qid in PRESENT_SEV_FILES:
            write_photo(imgs / "perturbed" / op / sev / f"{qid}.jpg", 1)
    return js


PHOTOBENCH_QUERIES = [
    {"query_cn": "海边的日落", "query_en": "sunset at the beach", "Location": "fact", "Time": None, "Person": None,
     "Object": "fact", "Concept": None, "Genre": None, "Source": "VM"},
    {"query_cn": "我和妈妈的合照", "query_en": "photo of me with my mother", "Location": None, "Time": None,
     "Person": "cognitive", "Object": None, "Concept": None, "Genre": None, "Source": "F"},
    {"query_cn": "2019年东京的猫", "query_en": "the cat in Tokyo in 2019", "Location": "fact", "Time": "fact",
     "Person": None, "Object": "fact", "Concept": None, "Genre": None, "Source": "VMF"},
    {"query_cn": "咖啡收据", "query_en": "coffee receipt", "Location": None, "Time": None, "Person": None,
     "Object": "fact", "Concept": "cognitive", "Genre": "fact", "Source": "V"},
]
PHOTOBENCH_FILES = ("IMG_0003.jpg", "IMG_0001.jpg", "IMG_0002.png", "IMG_0010.jpg", "IMG_0004.jpg")


def make_photobench_album(root: Path, name: str = "album1") -> Path:
    album = root / name
    (album / "images" / "metadata").mkdir(parents=True, exist_ok=True)
    (album / "query.json").write_text(json.dumps(PHOTOBENCH_QUERIES, ensure_ascii=False, indent=1), encoding="utf-8")
    meta = {}
    for i, f in enumerate(PHOTOBENCH_FILES):
        write_photo(album / "images" / f, i)
        meta[f] = {"latitude": 35.0 + i if i % 2 == 0 else None, "longitude": 139.0 if i % 2 == 0 else None,
                   "time": f"2019-0{i + 1}-01 10:00:00" if i != 3 else ""}
    (album / "images" / "metadata" / "metadata.json").write_text(json.dumps(meta), encoding="utf-8")
    return album


def make_hf_imagefolder(root: Path) -> Path:
    """``root/test/query`` (metadata.jsonl) + ``root/test/gallery`` (metadata.csv)."""
    q, g = root / "test" / "query", root / "test" / "gallery"
    rows = [
        {"file_name": "q0.jpg", "query_id": "bench_0000", "query_text": "what cup is this?", "query_entity": "cup",
         "domain": "product", "gt": ["g_red"], "hard_negative": ["g_blue"]},
        {"file_name": "q1.jpg", "query_id": "bench_0001", "query_text": "which rocket is it?", "query_entity": "rocket",
         "domain": "place", "gt": ["rocket.png", "g_blue"], "hard_negative": []},
        {"file_name": "q2.jpg", "query_id": "bench_0002", "query_text": "is this a tiger?", "query_entity": "tiger",
         "domain": "nature", "gt": [], "hard_negative": ["g_cat"]},
    ]
    for i, r in enumerate(rows):
        write_photo(q / r["file_name"], i)
    (q / "metadata.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    gal = [("red.jpg", "g_red", "red cup"), ("blue.jpg", "g_blue", "blue cup, \"large\""),
           ("rocket.png", "g_rocket", "a rocket"), ("cat.webp", "g_cat", "a cat")]
    for i, (f, _, _) in enumerate(gal):
        write_photo(g / f, i + 3)
    lines = ["file_name,gallery_id,caption"] + [f'{f},{gid},"{cap.replace(chr(34), chr(34) * 2)}"' for f, gid, cap in gal]
    (g / "metadata.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def demo_without_qrels(root: Path) -> Path:
    """The bundled demo's queries.jsonl, gallery.jsonl and their images in ``root`` (created), without
    its qrels: a dataset without relevance labels.  Returns ``root / "queries.jsonl"``."""
    from snapbench.core.defaults import DEFAULT_DATA

    root.mkdir(parents=True)
    for f in ("queries.jsonl", "gallery.jsonl"):
        shutil.copy(DEFAULT_DATA / f, root / f)
    for d in ("queries", "gallery"):
        shutil.copytree(DEFAULT_DATA / d, root / d)
    return root / "queries.jsonl"


def write_scores_dir(d: Path, conds: dict[str, np.ndarray]) -> Path:
    """A SCORES_DIR ``d`` (created) holding each condition's (queries, gallery) scores as
    ``<id with / as __>.npy``, with ids q0.. and g0..."""
    d.mkdir()
    for c, s in conds.items():
        np.save(d / (c.replace("/", "__") + ".npy"), s)
    n_q, n = conds["clean"].shape
    (d / "query_ids.txt").write_text("".join(f"q{i}\n" for i in range(n_q)))
    (d / "gallery_ids.txt").write_text("".join(f"g{j}\n" for j in range(n)))
    return d
