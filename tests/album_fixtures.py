"""Synthetic personal albums whose answers are known from their fields, in both layouts, and a
bag-of-words text encoder (``album_fixtures:BagOfWords``) for ``snapbench stress``.

Every photo has a caption ending in its object word ("... showing the dog"), OCR on some photos
("printed words: ticket"), an ISO time, real city coordinates and faces.  Queries are single words:
an object (needs the caption, source V), an OCR word (V), a city (M) or a person's nickname (F), so
the relevant photos of each query follow from the fields alone.  Zero-GT queries ask for a city no
photo of the album was taken in.
"""

from __future__ import annotations

import json
import re
import zlib
from pathlib import Path

import numpy as np

CITIES = {  # name as the query writes it -> coordinates of the city centre
    "paris": (48.8566, 2.3522),
    "london": (51.5074, -0.1278),
    "sydney": (-33.8688, 151.2093),
    "rome": (41.9028, 12.4964),
    "berlin": (52.5200, 13.4050),
    "cairo": (30.0444, 31.2357),
    "madrid": (40.4168, -3.7038),
    "vienna": (48.2082, 16.3738),
}
ABSENT_CITY = "lisbon"
OBJECTS = ("dog", "bicycle", "cake", "guitar", "boat", "kite", "piano", "tractor")
OCR_WORDS = ("ticket", "menu", "receipt", "poster")
PEOPLE = {"1": ["me", "myself"], "2": ["alice", "mom"], "3": ["bob"], "4": ["carol", "aunt"]}
ALBUMS = ("album1", "album2", "album3")
N_PHOTOS = 72


def photo_fields(album_no: int, i: int) -> dict:
    """The fields of photo i of album ``album_no`` (deterministic, no RNG: the answers are known)."""
    city = list(CITIES)[(i + album_no) % len(CITIES)]
    lat, lon = CITIES[city]
    has_loc = i % 9 != 0  # some photos have no geotag (absent, not an error)
    faces = []
    if i % 2 == 0:
        faces.append("1")
    if i % 3 == 0:
        faces.append("2")
    if i % 4 == 1:
        faces.append("3")
    if i % 5 == 2:
        faces.append("4")
    month = 1 + (i % 12)
    return {
        "file": f"IMG_{i:04d}.jpg",
        "caption": f"a bright picture taken outdoors with friends showing the {OBJECTS[(i * 7 + album_no) % len(OBJECTS)]}",
        "ocr": f"printed words: {OCR_WORDS[(i // 2) % len(OCR_WORDS)]}" if i % 2 == 1 else None,
        "time": f"2023-{month:02d}-{1 + i % 27:02d}T{(8 + i) % 24:02d}:15:00" if i % 11 != 5 else None,
        "latitude": lat if has_loc else None,
        "longitude": lon if has_loc else None,
        "city": city if has_loc else None,
        "faces": faces,
    }


def _queries(album_no: int, n_photos: int = N_PHOTOS) -> list[dict]:
    photos = [photo_fields(album_no, i) for i in range(n_photos)]
    out = []

    def add(word: str, kind: str, source: str, pred) -> None:
        gt = [p["file"] for p in photos if pred(p)]
        out.append({"query_en": word, "query_cn": f"{word}的照片", "Source": source, "kind": kind, "ground_truth": gt,
                    "ground_truth_count": len(gt)})

    for o in OBJECTS:
        add(o, "caption", "V", lambda p, o=o: p["caption"].endswith(o))
    for w in OCR_WORDS:
        add(w, "ocr", "V", lambda p, w=w: p["ocr"] is not None and p["ocr"].endswith(w))
    for c in CITIES:
        add(c, "place", "M", lambda p, c=c: p["city"] == c)
    add(ABSENT_CITY, "place", "M", lambda p: False)  # zero-GT
    for fid in ("2", "3", "4"):
        add(PEOPLE[fid][0], "person", "F", lambda p, fid=fid: fid in p["faces"])
    return out


def write_photobench(root: Path) -> Path:
    """The PhotoBench layout: ``root/album<N>/{query.json, images/metadata/metadata.json,
    images/faceid/face_info_en.json, images/captions.json, images/ocr.json}``."""
    for n, album in enumerate(ALBUMS, 1):
        a = root / album
        (a / "images" / "metadata").mkdir(parents=True)
        (a / "images" / "faceid").mkdir(parents=True)
        photos = [photo_fields(n, i) for i in range(N_PHOTOS)]
        (a / "query.json").write_text(json.dumps(_queries(n), indent=1))
        meta = {p["file"]: {"latitude": p["latitude"], "longitude": p["longitude"], "time": p["time"] or ""}
                for p in photos}
        (a / "images" / "metadata" / "metadata.json").write_text(json.dumps(meta))
        faces = {"face_id_to_nicknames": PEOPLE, "image_to_face_ids": {p["file"]: p["faces"] for p in photos if p["faces"]}}
        (a / "images" / "faceid" / "face_info_en.json").write_text(json.dumps(faces))
        (a / "images" / "captions.json").write_text(json.dumps({p["file"]: p["caption"] for p in photos}))
        (a / "images" / "ocr.json").write_text(json.dumps({p["file"]: p["ocr"] for p in photos if p["ocr"]}))
    return root


def write_jsonl(root: Path, n_photos: int = N_PHOTOS, caption: str | None = None) -> Path:
    """The same albums as JSONL: queries.jsonl (with album and source), gallery.jsonl (fields, people as
    names, the owner ``me``), qrels.json.  ``n_photos`` per album (small albums: k >= their size);
    ``caption``: one caption for every photo (a caption swap then changes nothing)."""
    root.mkdir(parents=True, exist_ok=True)
    q_lines, g_lines, qrels = [], [], {}
    for n, album in enumerate(ALBUMS, 1):
        for j, q in enumerate(_queries(n, n_photos)):
            qid = f"{album}_q{j:04d}"
            q_lines.append({"id": qid, "question": q["query_en"], "album": album, "source": q["Source"],
                            "tags": {"kind": q["kind"]}})
            qrels[qid] = [f"{album}/{f}" for f in q["ground_truth"]]
        for i in range(n_photos):
            p = photo_fields(n, i)
            g_lines.append({"id": f"{album}/{p['file']}", "album": album, "caption": caption or p["caption"],
                            "ocr": p["ocr"],
                            "time": p["time"], "latitude": p["latitude"], "longitude": p["longitude"],
                            "people": [PEOPLE[f][0] for f in p["faces"]]})
    (root / "queries.jsonl").write_text("".join(json.dumps(x) + "\n" for x in q_lines))
    (root / "gallery.jsonl").write_text("".join(json.dumps(x) + "\n" for x in g_lines))
    (root / "qrels.json").write_text(json.dumps(qrels))
    return root


_WORD = re.compile(r"[a-z0-9]+")


def bow_vectors(texts, dim: int = 1 << 14) -> np.ndarray:
    """Word counts hashed into ``dim`` buckets (crc32: stable across processes; no two words of the
    fixtures share a bucket at this size)."""
    out = np.zeros((len(texts), dim), dtype=np.float32)
    for i, t in enumerate(texts):
        for w in _WORD.findall(t.lower()):
            out[i, zlib.crc32(w.encode()) % dim] += 1.0
    return out


class BagOfWords:
    """A text-only encoder: hashed bag of words.  ``BagOfWords.encoded`` counts every text it encoded."""

    name = "bag-of-words"
    fingerprint = None
    modalities = frozenset({"text"})
    encoded: list[str] = []

    def encode_texts(self, texts):
        BagOfWords.encoded.extend(texts)
        return bow_vectors(list(texts))

    def encode_images(self, images):  # pragma: no cover - text only
        raise NotImplementedError
