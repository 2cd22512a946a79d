"""Reader for the authors' SnapBench release: ``benchmark/snap_bench.json`` + ``bench_images/``.

Each record of the JSON list::

    {"query_id": "bench_0000", "query_text": ..., "query_entity": ..., "query_image_local": "0000.jpg",
     "domain": "place",
     "gallery": {"gt": [{"local": "08805.jpg", "caption": ...}, ...], "hard_negative": [...]},
     "text_perturbations": {<op>: {"perturbed_text": ..., "changed": true}, ...},
     "image_perturbations": {<op>: {"severity", "category", "sev1", "sev3", "sev5"}, ...}}

Decisions:

* Images: query images under ``<images>/query/``, gallery images under ``<images>/gallery/``,
  where ``<images>`` is the ``images`` argument or, by default, ``<json dir>/../bench_images``
  (the release layout) or ``<json dir>/bench_images``.  Absent images are not an error: the paths
  are kept, and a note says which retrieval modes can run.  Without any image folder the image
  fields are ``None``.
* Gallery: the union of every record's ``gt`` and ``hard_negative`` items, de-duplicated on
  (``local``, ``caption``), in order of first appearance (records in file order, ``gt`` before
  ``hard_negative``).  Gallery id: the file stem of ``local`` (``"08805"``) when exactly one
  (local, caption) pair has that stem; otherwise ``"<stem>#<k>"``, k = 1, 2, ... in order of first
  appearance among the pairs sharing the stem (the same file with two captions is two items).
* Qrels: each record's ``gt`` items with grade 1; ``hard_negative`` items are gallery items
  without a judgement; a record with an empty ``gt`` list is a zero-GT query.
* Released variants: ``text_perturbations`` (operator names mapped to snapbench's 8 through
  the module's alias table; unknown ones are reported in the notes and skipped) and the
  ``image_perturbations`` files that exist, ``sev1/sev3/sev5`` -> severities 1/2/3.
* Query ids are the release's ``query_id`` strings; this is the JSON id space (the Hugging Face
  ImageFolder copy is read with ``hf-`` prefixed ids and never matches these).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.conditions import IMAGE_OPERATORS, TEXT_OPERATORS
from ..core.errors import InputError
from ..core.records import QueryRecord
from ..core.userfiles import read_json
from ..core.validate import did_you_mean, examples
from .common import image_notes
from .model import Dataset, GalleryItem, ReleasedVariants

__all__ = ["find_snapbench_json", "load_snapbench_json"]

_SNAPBENCH_JSON_NAME = "snap_bench.json"

#: Top-level fields of a snap_bench.json record this reader knows.
_KNOWN_FIELDS: tuple[str, ...] = (
    "query_id", "query_text", "query_entity", "query_image_local", "domain",
    "gallery", "text_perturbations", "image_perturbations",
)

def _aliases(table: dict[str, tuple[str, ...]]) -> dict[str, str]:
    return {alias: op for op, names in table.items() for alias in (op, *names)}


#: Spellings of the 8 text operators seen in write-ups of the benchmark -> snapbench's names.
#: Names are compared after lower-casing and turning "-" and " " into "_".
_TEXT_OPERATOR_ALIASES: dict[str, str] = _aliases({
    "char_add": ("char_insert", "char_insertion", "char_addition", "character_add", "character_insert", "add_char"),
    "char_delete": ("char_del", "char_deletion", "char_remove", "character_delete", "character_deletion", "delete_char"),
    "char_change": ("char_replace", "char_substitute", "char_substitution", "char_sub", "character_change",
                    "character_replace", "character_substitution", "change_char"),
    "char_swap": ("char_swapping", "char_transpose", "character_swap", "swap_char"),
    "word_repeat": ("word_repetition", "word_duplicate", "word_duplication", "repeat_word"),
    "word_swap": ("word_swapping", "word_order", "swap_word"),
    "sent_add": ("sentence_add", "sent_addition", "sentence_addition", "sentence_append", "add_sentence"),
    "sent_replace": ("sentence_replace", "sent_replacement", "sentence_replacement", "sentence_rewrite",
                     "replace_sentence"),
})

#: Spellings of the 15 image operators -> snapbench's names (same normalisation).
_IMAGE_OPERATOR_ALIASES: dict[str, str] = _aliases({
    "low_light": ("lowlight", "dark", "underexposure"),
    "overexposure": ("over_exposure", "overexposed", "bright"),
    "defocus_blur": ("defocus", "out_of_focus"),
    "motion_blur": ("motion",),
    "compression": ("jpeg", "jpeg_compression", "jpeg_artifacts"),
    "low_resolution": ("low_res", "lowres", "pixelate", "pixelation"),
    "rotation": ("rotate",),
    "perspective": ("perspective_transform", "perspective_warp"),
    "lens_distortion": ("lens", "fisheye", "barrel_distortion"),
    "cropping": ("crop",),
    "downscale": ("downscaling", "small", "shrink"),
    "watermark": ("watermarking",),
    "mosaic": ("mosaicing", "blur_mosaic"),
    "scribble": ("scribbles", "doodle"),
    "ui_elements": ("ui", "ui_element", "ui_overlay", "screenshot_ui"),
})

#: The release's severity keys -> snapbench's severity levels.
_RELEASE_SEVERITIES: dict[str, int] = {"sev1": 1, "sev3": 2, "sev5": 3}

assert set(_TEXT_OPERATOR_ALIASES.values()) == set(TEXT_OPERATORS)
assert set(_IMAGE_OPERATOR_ALIASES.values()) == set(IMAGE_OPERATORS)


def _norm(name: str) -> str:
    return re.sub(r"[\s\-]+", "_", name.strip().lower())


def _find_image_root(json_path: Path, images: Path | None) -> Path | None:
    """The ``bench_images`` folder: ``images`` if given (it must exist), else the release layout's."""
    if images is not None:
        images = Path(images)
        if not images.is_dir():
            raise InputError("image folder not found (images should be the 'bench_images' folder)", path=images)
        if not (images / "query").is_dir() and not (images / "gallery").is_dir():
            if (images / "bench_images").is_dir():
                return images / "bench_images"
            found = sorted(p.name for p in images.iterdir())[:10]
            raise InputError(
                f"expected the 'bench_images' folder with 'query/' and 'gallery/' inside; found {found}", path=images
            )
        return images
    here = json_path.parent
    for cand in (here.parent / "bench_images", here / "bench_images"):
        if cand.is_dir():
            return cand
    return None


class _Reader:
    def __init__(self, path: Path, root: Path | None) -> None:
        self.path, self.root = path, root
        self.notes: list[str] = []
        self.unknown_fields: dict[str, list[str]] = {}
        self.unknown_text_ops: dict[str, int] = {}
        self.unknown_image_ops: dict[str, int] = {}

    def fail(self, where: str, problem: str) -> InputError:
        return InputError(f"{where}: {problem}", path=self.path)

    def string(self, rec: dict, key: str, where: str, *, required: bool) -> str | None:
        val = rec.get(key)
        if val is None:
            if required:
                raise self.fail(where, f"missing {key!r}")
            return None
        if not isinstance(val, str):
            raise self.fail(where, f"{key!r} must be a string, got {type(val).__name__}")
        return val

    def gallery_items(self, rec: dict, where: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
        gal = rec.get("gallery")
        if gal is None:
            raise self.fail(where, "missing 'gallery' (an object with 'gt' and 'hard_negative' lists)")
        if not isinstance(gal, dict):
            raise self.fail(where, f"'gallery' must be an object with 'gt' and 'hard_negative' lists, got {type(gal).__name__}")
        out = []
        for part in ("gt", "hard_negative"):
            items = gal.get(part, [])
            if items is None:
                items = []
            if not isinstance(items, list):
                raise self.fail(where, f"'gallery.{part}' must be a list, got {type(items).__name__}")
            keys = []
            for j, item in enumerate(items):
                if not isinstance(item, dict) or not isinstance(item.get("local"), str) or not item["local"].strip():
                    raise self.fail(where, f"'gallery.{part}[{j}]' must be an object with a 'local' file name")
                cap = item.get("caption")
                if cap is not None and not isinstance(cap, str):
                    raise self.fail(where, f"'gallery.{part}[{j}].caption' must be a string")
                keys.append((item["local"], cap or ""))
            out.append(keys)
        unknown = sorted(set(gal) - {"gt", "hard_negative"})
        for k in unknown:
            self.unknown_fields.setdefault(f"gallery.{k}", []).append(where)
        return out[0], out[1]

    def texts(self, rec: dict, where: str) -> dict[str, str]:
        tp = rec.get("text_perturbations")
        if tp is None:
            return {}
        if not isinstance(tp, dict):
            raise self.fail(where, f"'text_perturbations' must be an object, got {type(tp).__name__}")
        out: dict[str, str] = {}
        for name, entry in tp.items():
            op = _TEXT_OPERATOR_ALIASES.get(_norm(name))
            if op is None:
                self.unknown_text_ops[name] = self.unknown_text_ops.get(name, 0) + 1
                continue
            text = entry.get("perturbed_text") if isinstance(entry, dict) else entry
            if not isinstance(text, str):
                raise self.fail(where, f"'text_perturbations.{name}' must be an object with a 'perturbed_text' string")
            out[op] = text
        return out

    def released_image(self, rel: str, op_name: str, sev_key: str, qid: str) -> Path | None:
        """The first existing candidate for a released image path (None if none exists)."""
        rel_path = Path(rel)
        cands = []
        if rel_path.is_absolute():
            cands.append(rel_path)
        else:
            parts = rel_path.parts
            if self.root is not None:
                tail = Path(*parts[parts.index("bench_images") + 1:]) if "bench_images" in parts else rel_path
                cands += [self.root / tail, self.root.parent / rel_path]
            cands += [self.path.parent / rel_path, self.path.parent.parent / rel_path]
        if self.root is not None:
            cands.append(self.root / "perturbed" / op_name / sev_key / f"{qid}.jpg")
        return next((c for c in cands if c.is_file()), None)

    def images(self, rec: dict, where: str, qid: str) -> tuple[dict[tuple[str, int], Path], int]:
        ip = rec.get("image_perturbations")
        if ip is None:
            return {}, 0
        if not isinstance(ip, dict):
            raise self.fail(where, f"'image_perturbations' must be an object, got {type(ip).__name__}")
        out: dict[tuple[str, int], Path] = {}
        listed = 0
        for name, entry in ip.items():
            op = _IMAGE_OPERATOR_ALIASES.get(_norm(name))
            if op is None:
                self.unknown_image_ops[name] = self.unknown_image_ops.get(name, 0) + 1
                continue
            if not isinstance(entry, dict):
                raise self.fail(where, f"'image_perturbations.{name}' must be an object with sev1/sev3/sev5 paths")
            for key, sev in _RELEASE_SEVERITIES.items():
                rel = entry.get(key)
                if rel is None:
                    continue
                if not isinstance(rel, str) or not rel.strip():
                    raise self.fail(where, f"'image_perturbations.{name}.{key}' must be a path string, got {rel!r}")
                listed += 1
                found = self.released_image(rel, name, key, qid)
                if found is not None:
                    out[(op, sev)] = found
        return out, listed


@dataclass
class _Parsed:
    """What the records give, accumulated record by record."""

    queries: list[QueryRecord] = field(default_factory=list)
    gal_keys: dict[tuple[str, str], int] = field(default_factory=dict)  # (local, caption) -> position, first appearance
    positives: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    texts: dict[str, dict[str, str]] = field(default_factory=dict)
    sev_images: dict[str, dict[tuple[str, int], Path]] = field(default_factory=dict)
    seen: dict[str, int] = field(default_factory=dict)
    n_listed: int = 0
    n_present: int = 0
    both: int = 0


def _query_id(rd: _Reader, rec: Any, i: int, seen: dict[str, int]) -> str:
    where = f"record #{i + 1}"
    if not isinstance(rec, dict):
        raise rd.fail(where, f"a query record must be a JSON object, got {type(rec).__name__}")
    qid = rec.get("query_id")
    if isinstance(qid, int) and not isinstance(qid, bool):
        qid = str(qid)
    if not isinstance(qid, str) or not qid.strip():
        raise rd.fail(where, f"missing or invalid 'query_id' ({qid!r})")
    if any(c in qid for c in "/\\\x00") or qid in (".", ".."):
        raise rd.fail(where, f"query_id {qid!r} cannot be used as a file name")
    if qid in seen:
        raise rd.fail(where, f"duplicate query_id {qid!r} (first at record #{seen[qid] + 1})")
    seen[qid] = i
    return qid


def _record(rd: _Reader, rec: dict, i: int, root: Path | None, out: _Parsed) -> None:
    """Parse one query record into ``out``."""
    qid = _query_id(rd, rec, i, out.seen)
    where = f"record #{i + 1} (query_id {qid!r})"
    question = rd.string(rec, "query_text", where, required=True)
    entity = rd.string(rec, "query_entity", where, required=False)
    local = rd.string(rec, "query_image_local", where, required=False)
    domain = rec.get("domain")
    if domain is not None and not isinstance(domain, str):
        raise rd.fail(where, f"'domain' must be a string, got {type(domain).__name__}")
    gt, hn = rd.gallery_items(rec, where)
    out.both += len(set(gt) & set(hn))
    for key in (*gt, *hn):
        out.gal_keys.setdefault(key, len(out.gal_keys))
    out.positives[qid] = list(dict.fromkeys(gt))
    t = rd.texts(rec, where)
    if t:
        out.texts[qid] = t
    sev, listed = rd.images(rec, where, qid)
    out.n_listed += listed
    out.n_present += len(sev)
    if sev:
        out.sev_images[qid] = sev
    tags: dict[str, Any] = {}
    if domain is not None:
        tags["domain"] = domain
    for k, v in rec.items():
        if k in _KNOWN_FIELDS:
            continue
        rd.unknown_fields.setdefault(k, []).append(where)
        if isinstance(v, (str, int, float, bool)) or v is None:
            tags[k] = v
    image = None if (local is None or root is None) else root / "query" / local
    out.queries.append(QueryRecord(qid, image, question, entity or None, tags))


def _gallery_ids(gal_keys: dict[tuple[str, str], int]) -> dict[tuple[str, str], str]:
    """Gallery ids: the file stem when unique among the (local, caption) pairs, else stem#k."""
    by_stem: dict[str, list[tuple[str, str]]] = {}
    for key in gal_keys:
        by_stem.setdefault(Path(key[0]).stem, []).append(key)
    gid: dict[tuple[str, str], str] = {}
    for stem, keys in by_stem.items():
        for k, key in enumerate(keys, 1):
            gid[key] = stem if len(keys) == 1 else f"{stem}#{k}"
    return gid


def _notes(path: Path, root: Path | None, rd: _Reader, parsed: _Parsed, qrels: dict[str, dict[str, float]]) -> list[str]:
    notes = []
    if root is None:
        notes.append(
            f"{path}: no 'bench_images' folder next to it (looked in {path.parent.parent / 'bench_images'} and "
            f"{path.parent / 'bench_images'}): images are absent; if they are elsewhere, give their folder with --images (images= in Python)"
        )
    for name, wheres in sorted(rd.unknown_fields.items()):
        hint = did_you_mean(name, _KNOWN_FIELDS)
        notes.append(f"{path}: unknown field {name!r} in {len(wheres)} record(s) (first: {wheres[0]}){hint}; kept as a tag")
    for name, n in sorted(rd.unknown_text_ops.items()):
        notes.append(f"{path}: unknown text operator {name!r} in text_perturbations ({n} record(s)) skipped"
                     + did_you_mean(_norm(name), _TEXT_OPERATOR_ALIASES))
    for name, n in sorted(rd.unknown_image_ops.items()):
        notes.append(f"{path}: unknown image operator {name!r} in image_perturbations ({n} record(s)) skipped"
                     + did_you_mean(_norm(name), _IMAGE_OPERATOR_ALIASES))
    if parsed.both:
        notes.append(f"{path}: {parsed.both} item(s) listed both as gt and hard_negative of one query: counted as positives")
    zero = [q for q, v in qrels.items() if not v]
    if zero:
        notes.append(f"{len(zero)} zero-GT query(ies) (empty gallery.gt): {examples(zero)}")
    if parsed.n_listed:
        notes.append(f"released image variants: {parsed.n_present} of {parsed.n_listed} listed files present")
    return notes


def find_snapbench_json(folder: Path) -> Path | None:
    """``snap_bench.json`` in ``folder`` or in its ``benchmark/`` (``None`` when neither holds one)."""
    for cand in (folder / _SNAPBENCH_JSON_NAME, folder / "benchmark" / _SNAPBENCH_JSON_NAME):
        if cand.is_file():
            return cand
    return None


def load_snapbench_json(path: Path, *, images: Path | None = None) -> Dataset:
    """Load ``snap_bench.json``, or the one :func:`find_snapbench_json` finds in the folder ``path`` (see
    the module docstring for every decision)."""
    path = Path(path)
    if path.is_dir():
        found = find_snapbench_json(path)
        if found is None:
            raise InputError(f"no {_SNAPBENCH_JSON_NAME} here or under benchmark/", path=path)
        path = found
    data = read_json(path, what="SnapBench JSON")
    if not isinstance(data, list):
        raise InputError(f"expected a JSON list of query records, got a JSON {type(data).__name__}", path=path)
    if not data:
        raise InputError("holds no query records", path=path)
    root = _find_image_root(path, images)
    rd = _Reader(path, root)
    parsed = _Parsed()
    for i, rec in enumerate(data):
        _record(rd, rec, i, root, parsed)
    gid = _gallery_ids(parsed.gal_keys)
    gallery = [GalleryItem(gid[key], None if root is None else root / "gallery" / key[0], key[1] or None)
               for key in parsed.gal_keys]
    qrels = {qid: {gid[key]: 1.0 for key in pos} for qid, pos in parsed.positives.items()}
    released = ReleasedVariants(parsed.texts, parsed.sev_images) if (parsed.texts or parsed.n_listed) else None
    ds = Dataset(name="snapbench", format="snapbench-json", root=path.parent, queries=parsed.queries, gallery=gallery,
                 qrels=qrels, released=released, notes=_notes(path, root, rd, parsed, qrels))
    ds.notes.extend(image_notes(ds))
    return ds
