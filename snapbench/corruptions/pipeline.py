"""Batch corruption of a query set: manifest in, lossless variants + manifest out, resumable, parallel.

Inputs (:func:`load_manifest`): a JSONL file, a JSON list, or a JSON object holding the list (the
authors' ``snap_bench.json`` layout).  Outputs of :func:`run_corruption` in ``DIR`` (SPEC §11)::

    DIR/run.json                         seed, conditions, resolved severity grid, snapbench version
    DIR/images/clean/<id>.png            the decoded, normalised source (see io.load_image), lossless
    DIR/images/<condition file name>/<id>.png   one per image / joint condition ("/" -> "__")
    DIR/manifest.jsonl                   one line per output (see MANIFEST_FIELDS)
    DIR/skips.jsonl                      one line per skipped (query, condition); condition null = all

Decisions (documented here because they shape every consumer):

* ``clean`` is always produced: the clean image is written through the same decoder and the same
  lossless encoder as every variant, so an encoder sees identical preprocessing for clean and
  corrupted queries (the authors' release re-encodes variants as JPEG q92; we never do).
* Every manifest line is a complete query: image conditions carry the clean question, text
  conditions point ``path``/``sha256`` at the clean image (no duplicate file is written), joint
  conditions carry both corrupted parts.  A joint condition's image is byte-identical to its
  ``img/<op>/s<N>`` counterpart (same seeded parameters) and its question to ``txt/<op>``; it is
  still written under its own directory so every image condition has the SPEC layout.
* All randomness is keyed by (seed, query id, operator, severity) through
  :mod:`snapbench.seeding`; outputs do not depend on worker count, order or process.
* Workers are processes started with the ``spawn`` context (no fork of a parent that holds
  threads, such as rich's progress refresher; same behaviour on Linux, macOS and Windows).  A
  consequence: operators registered at run time inside a function are unknown to the workers;
  register them at import time of a module, or use ``workers=1``.
* Resume: images are written atomically (temp file + ``os.replace``); manifest lines are appended
  by the parent only, flushed and fsynced once per completed query.  A rerun keeps every manifest
  line whose file still exists with the recorded sha256 and whose query inputs (image file bytes,
  question, entity: ``input_sha256``) are unchanged (a truncated last line from a kill is
  dropped), and redoes the rest.  Skipped pairs are retried on every run (the input may have been
  fixed), so ``skips.jsonl`` is rewritten by each run.
"""

from __future__ import annotations

import concurrent.futures as cf
import difflib
import hashlib
import json
import multiprocessing
import os
import shutil
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Literal, Mapping, Sequence

import cv2
import numpy as np

from ..conditions import (
    JOINT_PAIRS,
    TEXT_OPERATORS,
    Condition,
    condition_to_filename,
    list_conditions,
    parse_condition,
)
from .io import DEFAULT_MAX_PIXELS, PNG_COMPRESSION, ImageLoadError, encode_png, load_image, write_bytes_atomic

__all__ = [
    "QueryRecord",
    "Variant",
    "RunSummary",
    "RunConfigError",
    "ManifestError",
    "MANIFEST_FIELDS",
    "load_manifest",
    "resolve_grid",
    "resolve_conditions",
    "run_corruption",
    "iter_variants",
    "stream_corruptions",
]

#: Keys of every line of ``DIR/manifest.jsonl`` (values may be null where they do not apply).
MANIFEST_FIELDS = (
    "id",           # query id
    "condition",    # condition id, e.g. "img/motion_blur/s2"
    "kind",         # clean | image | text | joint
    "path",         # image file relative to DIR (text conditions: the clean image); null without image
    "sha256",       # sha256 of that file's bytes
    "width",
    "height",
    "question",     # the question of this variant (clean for clean/image conditions); null without one
    "image_params", # parameters the image operator actually applied (null for clean/text)
    "text_params",  # parameters the text operator actually applied (null for clean/image)
    "seed",
    "input_sha256", # fingerprint of the query's inputs (image file bytes, question, entity)
)

_ID_ALIASES = ("id", "query_id", "qid")
_IMAGE_ALIASES = ("image", "image_path", "query_image", "img")
_QUESTION_ALIASES = ("question", "query", "text", "query_text")
_ENTITY_ALIASES = ("entity", "category", "target", "object")
_LIST_KEYS = ("queries", "data", "items")


class ManifestError(ValueError):
    """A query manifest (input) or a run's manifest.jsonl (output) is malformed."""


class RunConfigError(ValueError):
    """An output directory holds a run made with a different seed or grid."""


# ------------------------------------------------------------------------------------------------
# input manifest
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=True)
class QueryRecord:
    """One query of a query set. ``image`` is resolved against the manifest's directory."""

    id: str
    image: Path | None
    question: str | None
    entity: str | None = None
    tags: dict[str, Any] = field(default_factory=dict)


def _first(obj: Mapping[str, Any], aliases: Sequence[str]) -> tuple[str | None, Any]:
    for name in aliases:
        if name in obj and obj[name] is not None:
            return name, obj[name]
    return None, None


def _record_from_obj(obj: Any, where: str, base: Path) -> QueryRecord:
    if not isinstance(obj, dict):
        raise ManifestError(f"{where}: a query record must be a JSON object, got {type(obj).__name__}")
    used: set[str] = set()

    k, qid = _first(obj, _ID_ALIASES)
    if k is None:
        raise ManifestError(f"{where}: record has no id (expected one of {', '.join(_ID_ALIASES)})")
    used.add(k)
    if isinstance(qid, bool) or not isinstance(qid, (str, int)):
        raise ManifestError(f"{where}: id must be a string or integer, got {qid!r}")
    qid = str(qid)
    bad = [c for c in ("/", "\\", "\x00") if c in qid]
    if not qid.strip() or qid in (".", "..") or bad:
        raise ManifestError(
            f"{where}: id {qid!r} cannot be used as a file name"
            + (f" (contains {bad[0]!r})" if bad else "")
        )

    k, image = _first(obj, _IMAGE_ALIASES)
    if k is not None:
        used.add(k)
        if not isinstance(image, str):
            raise ManifestError(f"{where} (id {qid!r}): image path must be a string, got {image!r}")
        image = (base / image) if image.strip() else None
    k, question = _first(obj, _QUESTION_ALIASES)
    if k is not None:
        used.add(k)
        if not isinstance(question, str):
            raise ManifestError(f"{where} (id {qid!r}): question must be a string, got {question!r}")
    k, entity = _first(obj, _ENTITY_ALIASES)
    if k is not None:
        used.add(k)
        if not isinstance(entity, str):
            raise ManifestError(f"{where} (id {qid!r}): entity must be a string, got {entity!r}")
    if image is None and question is None:
        raise ManifestError(f"{where} (id {qid!r}): record has neither an image nor a question")

    tags: dict[str, Any] = {}
    if isinstance(obj.get("tags"), dict):
        tags.update(obj["tags"])
        used.add("tags")
    tags.update({key: val for key, val in obj.items() if key not in used})
    return QueryRecord(qid, image, question, entity or None, tags)


def load_manifest(path: str | os.PathLike) -> list[QueryRecord]:
    """Read a query manifest into :class:`QueryRecord` objects, in file order.

    Accepted layouts (detected from the content, not the extension):

    * JSONL: one JSON object per line (blank lines ignored);
    * a JSON list of objects;
    * a JSON object with the list under ``"queries"``, ``"data"`` or ``"items"`` (the authors'
      ``snap_bench.json``: its exact schema is not public, so these common containers are accepted).

    Field names (the first alias present wins; all other fields, plus a ``"tags"`` object if
    present, become ``tags``):

    * id: ``id`` | ``query_id`` | ``qid`` (string or integer; must be usable as a file name)
    * image: ``image`` | ``image_path`` | ``query_image`` | ``img`` (relative to the manifest's directory)
    * question: ``question`` | ``query`` | ``text`` | ``query_text``
    * entity: ``entity`` | ``category`` | ``target`` | ``object``

    A record needs an id and at least one of image / question.  Raises :class:`ManifestError`
    naming the file and the line (JSONL) or record number (JSON) for malformed records, bad JSON
    and duplicate ids.  Image files are not opened here (a bad image becomes a recorded skip).
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise ManifestError(f"{path}: query manifest not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ManifestError(f"{path}: cannot read query manifest ({exc})") from None
    base = path.parent
    stripped = text.lstrip()
    if not stripped:
        raise ManifestError(f"{path}: query manifest is empty")

    entries: list[tuple[str, Any]] = []
    first_line = stripped.splitlines()[0]
    jsonl = False
    if stripped[0] == "{":
        # JSONL if the first line is a complete object by itself; otherwise one (pretty) document.
        try:
            jsonl = isinstance(json.loads(first_line), dict) and len(stripped.strip().splitlines()) > 1
        except json.JSONDecodeError:
            jsonl = False
    if not jsonl:
        try:
            whole = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ManifestError(f"{path}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
        if isinstance(whole, list):
            entries = [(f"{path}: record #{i + 1}", obj) for i, obj in enumerate(whole)]
        elif isinstance(whole, dict) and any(isinstance(whole.get(k), list) for k in _LIST_KEYS):
            key = next(k for k in _LIST_KEYS if isinstance(whole.get(k), list))
            entries = [(f"{path}: {key} record #{i + 1}", obj) for i, obj in enumerate(whole[key])]
        elif isinstance(whole, dict) and any(k in whole for k in _ID_ALIASES):
            entries = [(f"{path}: {'line 1' if len(stripped.strip().splitlines()) == 1 else 'record #1'}", whole)]
        elif isinstance(whole, dict):
            raise ManifestError(
                f"{path}: JSON object without a query list (expected the list under one of "
                f"{', '.join(repr(k) for k in _LIST_KEYS)}, a JSON list, or JSONL)"
            )
        else:
            raise ManifestError(f"{path}: expected JSONL, a JSON list or an object, got a JSON {type(whole).__name__}")
    else:
        for lineno, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ManifestError(f"{path}: line {lineno}: invalid JSON ({exc.msg} at column {exc.colno})") from None
            entries.append((f"{path}: line {lineno}", obj))

    if not entries:
        raise ManifestError(f"{path}: query manifest holds no records")
    records: list[QueryRecord] = []
    seen: dict[str, str] = {}
    for where, obj in entries:
        rec = _record_from_obj(obj, where, base)
        if rec.id in seen:
            raise ManifestError(f"{where}: duplicate id {rec.id!r} (first at {seen[rec.id].split(': ', 1)[-1]})")
        seen[rec.id] = where
        records.append(rec)
    return records


# ------------------------------------------------------------------------------------------------
# conditions and grid
# ------------------------------------------------------------------------------------------------


def resolve_grid(grid: str | os.PathLike | Mapping[str, Any] | None = None) -> dict[str, dict[int, dict[str, Any]]]:
    """The full severity table for a run: defaults, updated by a grid file path or an override mapping."""
    from .image import default_grid, load_grid, merge_grid

    if grid is None:
        return default_grid()
    if isinstance(grid, (str, os.PathLike)):
        return load_grid(grid, base=default_grid())
    return merge_grid(default_grid(), grid)


def _grid_json(table: Mapping[str, Mapping[int, Mapping[str, Any]]]) -> dict[str, dict[str, Any]]:
    return {op: {f"s{s}": dict(table[op][s]) for s in sorted(table[op])} for op in sorted(table)}


def _text_operator_names() -> tuple[str, ...]:
    from . import text as text_mod

    registry = getattr(text_mod, "text_operators", None)  # built-ins + user-registered operators
    names = registry() if callable(registry) else None
    return tuple(names) if names else TEXT_OPERATORS


def resolve_conditions(
    conditions: Iterable[str | Condition] | None = None,
    *,
    joint: bool = False,
    grid: Mapping[str, Mapping[int, Mapping[str, Any]]] | None = None,
) -> list[Condition]:
    """Validate and order the conditions of a run; ``clean`` always comes first.

    ``conditions=None`` means clean + every registered image operator at every severity of the grid
    + the 8 text operators (54 states by default); ``joint=True`` adds the paper's 18 joint
    conditions.  Explicit ids may include any ``joint/<image op>+<text op>/s<N>`` pair.  Unknown ids
    raise ``ValueError`` naming the id, the closest valid ids, and the valid forms; so does a grid
    level of the chosen conditions that its operator rejects (a typo or an out-of-range value),
    before any query is processed.
    """
    from .image import image_operators

    table = resolve_grid(None) if grid is None else grid
    img_ops = [op for op in image_operators() if op in table]
    txt_ops = list(_text_operator_names())
    sevs = {op: sorted(table[op]) for op in img_ops}

    if conditions is None:
        pairs = [(i, t) for i, t in JOINT_PAIRS if i in img_ops and t in txt_ops]
        return _check_grid_levels(
            list_conditions(
                joint=joint, image_operators=img_ops, text_operators=txt_ops, severities=sevs, joint_pairs=pairs
            ),
            table,
        )

    valid_single = [c.id for c in list_conditions(image_operators=img_ops, text_operators=txt_ops, severities=sevs)]
    valid_joint = [
        Condition("joint", image_operator=i, text_operator=t, severity=s).id
        for i in img_ops
        for t in txt_ops
        for s in sevs[i]
    ]

    def problem(c: Condition) -> str | None:
        if c.image_operator is not None:
            if c.image_operator not in img_ops:
                return f"unknown image operator {c.image_operator!r}"
            if c.severity not in sevs[c.image_operator]:
                return f"image operator {c.image_operator!r} has no severity s{c.severity} (levels: {sevs[c.image_operator]})"
        if c.text_operator is not None and c.text_operator not in txt_ops:
            return f"unknown text operator {c.text_operator!r}"
        return None

    out: list[Condition] = [Condition("clean")]
    for item in conditions:
        raw = item.id if isinstance(item, Condition) else str(item).strip()
        if not raw:
            continue
        try:
            cond = item if isinstance(item, Condition) else parse_condition(raw)
            why = problem(cond)
        except ValueError:
            cond, why = None, "not a condition id"
        if why is not None:
            close = difflib.get_close_matches(raw, valid_single + valid_joint, n=3, cutoff=0.5)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise ValueError(
                f"unknown condition {raw!r} ({why}){hint}\nvalid forms: clean, img/<op>/s<N>, txt/<op>, "
                f"joint/<image op>+<text op>/s<N>\nimage operators: {', '.join(img_ops) or '(none registered)'}\n"
                f"text operators: {', '.join(txt_ops)}\n(`snapbench conditions --joint` lists the ids)"
            )
        if cond not in out:
            out.append(cond)
    if joint:
        extra = [
            Condition("joint", image_operator=i, text_operator=t, severity=s)
            for i, t in JOINT_PAIRS
            if i in img_ops and t in txt_ops
            for s in sevs[i]
        ]
        out += [c for c in extra if c not in out]
    return _check_grid_levels(out, table)


def _check_grid_levels(
    conds: list[Condition], table: Mapping[str, Mapping[int, Mapping[str, Any]]]
) -> list[Condition]:
    """Run each image level's ``sample`` once on a stand-in frame so that a level the operator rejects
    (unknown key, bad value) fails the run up front instead of becoming one skip per query."""
    from ..seeding import derive_generator
    from .image import get_image_operator

    for op, sev in dict.fromkeys((c.image_operator, c.severity) for c in conds if c.image_operator is not None):
        sample = get_image_operator(op).sample
        level = table[op][sev]
        # iter_variants resolves per query: check each distinct level once per process
        memo = (op, sev, id(sample), _dumps_sorted(level))
        if memo in _CHECKED_LEVELS:
            continue
        try:
            sample(derive_generator("grid-check", op, sev), level, (480, 640))
        except (ValueError, TypeError, KeyError) as exc:
            raise ValueError(f"severity grid entry for img/{op}/s{sev} is invalid: {exc}") from None
        _CHECKED_LEVELS.add(memo)
    return conds


_CHECKED_LEVELS: set[tuple[str, int, int, str]] = set()


def _dumps_sorted(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, default=repr)


# ------------------------------------------------------------------------------------------------
# per-query variant generation (shared by the batch workers and the streaming API)
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Variant:
    """One condition of one query, as a complete query.

    ``image`` is the image an encoder should see (the clean image for text conditions) and
    ``question`` the question (the clean one for image conditions); either is ``None`` only when
    the query has no image / no question.  ``image_from`` / ``text_from`` name the single condition
    whose image / question this variant shares (e.g. a text condition's image comes from
    ``"clean"``, ``joint/mosaic+sent_add/s2``'s from ``"img/mosaic/s2"``), so an encoder can cache
    embeddings.  ``params`` holds ``"image"`` and/or ``"text"``: the parameters actually applied.
    """

    condition: str
    kind: str
    image: np.ndarray | None
    question: str | None
    params: dict[str, Any]
    image_from: str | None = None
    text_from: str | None = None


@dataclass(frozen=True)
class _Skip:
    condition: str
    reason: str


def _text_corrupt(question: str, op: str, entity: str | None, seed: int, key: str) -> tuple[str, dict[str, Any]]:
    from . import text as text_mod

    fn = getattr(text_mod, "corrupt_text_with_params", None)
    if fn is not None:
        res = fn(question, op, entity=entity, seed=seed, key=key)
        return res.text, dict(res.params)
    return text_mod.corrupt_text(question, op, entity=entity, seed=seed, key=key), {"operator": op}


def _generate(
    image: np.ndarray | None,
    question: str | None,
    *,
    key: str,
    entity: str | None,
    seed: int,
    conds: Sequence[Condition],
    table: Mapping[str, Mapping[int, Mapping[str, Any]]],
) -> Iterator[Variant | _Skip]:
    """Yield a Variant or a _Skip for each condition, computing each image / text part once."""
    from .image import corrupt_image_with_params

    img_cache: dict[tuple[str, int], tuple[np.ndarray, dict] | str] = {}
    txt_cache: dict[str, tuple[str, dict] | str] = {}

    def image_part(op: str, sev: int) -> tuple[np.ndarray, dict] | str:
        if (op, sev) not in img_cache:
            try:
                res = corrupt_image_with_params(image, op, sev, seed=seed, key=key, grid=table)
                img_cache[(op, sev)] = (res.image, _jsonable(res.params))
            except Exception as exc:  # noqa: BLE001 - one failing operator must not stop the query
                img_cache[(op, sev)] = f"image operator {op} s{sev} failed: {type(exc).__name__}: {exc}"
        return img_cache[(op, sev)]

    def text_part(op: str) -> tuple[str, dict] | str:
        if op not in txt_cache:
            try:
                txt_cache[op] = (lambda t, p: (t, _jsonable(p)))(*_text_corrupt(question, op, entity, seed, key))
            except NotImplementedError:
                txt_cache[op] = f"text operator {op} is not implemented"
            except ValueError as exc:  # EntityNotFoundError / TextCorruptionError (both ValueError)
                txt_cache[op] = f"text operator {op}: {exc}"
        return txt_cache[op]

    # An image part is kept only until the last condition that uses it (a joint condition reuses
    # its image condition's part): a query's 45 variants of a 12 Mpx photo would hold ~1.6 GB.
    uses = Counter((c.image_operator, c.severity) for c in conds if c.kind in ("image", "joint"))
    prev: Condition | None = None
    for cond in conds:
        # Resumed: the consumer is done with the previous condition's variant.
        if prev is not None and prev.kind in ("image", "joint"):
            part = (prev.image_operator, prev.severity)
            uses[part] -= 1
            if uses[part] <= 0:
                img_cache.pop(part, None)
        prev = cond
        cid = cond.id
        if cond.kind == "clean":
            yield Variant(cid, "clean", image, question, {}, "clean" if image is not None else None,
                          "clean" if question is not None else None)
            continue
        if cond.kind in ("image", "joint") and image is None:
            yield _Skip(cid, "query has no image")
            continue
        if cond.kind in ("text", "joint") and question is None:
            yield _Skip(cid, "query has no question")
            continue
        params: dict[str, Any] = {}
        img_out, q_out = image, question
        img_from = "clean" if image is not None else None
        txt_from = "clean" if question is not None else None
        if cond.kind in ("image", "joint"):
            part = image_part(cond.image_operator, cond.severity)
            if isinstance(part, str):
                yield _Skip(cid, part)
                continue
            img_out, params["image"] = part
            img_from = cond.image_part.id
        if cond.kind in ("text", "joint"):
            tpart = text_part(cond.text_operator)
            if isinstance(tpart, str):
                yield _Skip(cid, tpart)
                continue
            q_out, params["text"] = tpart
            txt_from = cond.text_part.id
        yield Variant(cid, cond.kind, img_out, q_out, params, img_from, txt_from)


def _jsonable(obj: Any) -> Any:
    """Convert numpy scalars/arrays and tuples in operator params to plain JSON types."""
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def iter_variants(
    image: np.ndarray | None,
    question: str | None = None,
    *,
    key: str,
    entity: str | None = None,
    seed: int = 0,
    conditions: Iterable[str | Condition] | None = None,
    joint: bool = False,
    grid: str | os.PathLike | Mapping[str, Any] | None = None,
    errors: Literal["raise", "skip"] = "raise",
) -> Iterator[Variant]:
    """Yield the variants of one query in memory, without touching the disk.

    ``image`` is an HxWx3 uint8 RGB array (e.g. from :func:`~snapbench.corruptions.io.load_image`),
    ``key`` the query id (it keys all randomness, so variants equal those of
    :func:`run_corruption` for the same id and seed).  ``conditions``/``joint``/``grid`` as in
    :func:`resolve_conditions` / :func:`resolve_grid`; ``clean`` comes first.  With
    ``errors="raise"`` a condition that cannot be produced (entity not found, no question...)
    raises ``ValueError``; with ``"skip"`` it is left out.
    """
    if image is None and question is None:
        raise ValueError(f"query {key!r}: needs an image or a question")
    table = resolve_grid(grid)
    conds = resolve_conditions(conditions, joint=joint, grid=table)
    for item in _generate(image, question, key=str(key), entity=entity, seed=seed, conds=conds, table=table):
        if isinstance(item, _Skip):
            if errors == "raise":
                raise ValueError(f"query {key!r}, condition {item.condition}: {item.reason}")
            continue
        yield item


def stream_corruptions(
    records: str | os.PathLike | Iterable[QueryRecord],
    *,
    seed: int = 0,
    conditions: Iterable[str | Condition] | None = None,
    joint: bool = False,
    grid: str | os.PathLike | Mapping[str, Any] | None = None,
    max_pixels: int = DEFAULT_MAX_PIXELS,
    skips: list[dict[str, Any]] | None = None,
) -> Iterator[tuple[QueryRecord, Variant]]:
    """Yield ``(record, variant)`` for every query of a manifest (path or records) and condition.

    Images are loaded with :func:`load_image`; nothing is written.  Queries whose image cannot be
    loaded and conditions that cannot be produced are skipped; pass a list as ``skips`` to collect
    ``{"id", "condition", "reason"}`` dicts (``condition`` None = the whole query), the same
    records ``run_corruption`` writes to ``skips.jsonl``.
    """
    recs = load_manifest(records) if isinstance(records, (str, os.PathLike)) else records
    table = resolve_grid(grid)
    conds = resolve_conditions(conditions, joint=joint, grid=table)
    for rec in recs:
        image = None
        if rec.image is not None:
            try:
                image = load_image(rec.image, max_pixels=max_pixels)
            except ImageLoadError as exc:
                if skips is not None:
                    skips.append({"id": rec.id, "condition": None, "reason": str(exc)})
                continue
        for item in _generate(image, rec.question, key=rec.id, entity=rec.entity, seed=seed, conds=conds, table=table):
            if isinstance(item, _Skip):
                if skips is not None:
                    skips.append({"id": rec.id, "condition": item.condition, "reason": item.reason})
                continue
            yield rec, item


# ------------------------------------------------------------------------------------------------
# batch worker
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Task:
    record: QueryRecord
    conditions: tuple[str, ...]  # pending condition ids, in run order
    out_dir: str
    seed: int
    table: dict
    max_pixels: int
    clean_ref: tuple[str, str, int, int] | None  # (path, sha256, width, height) of a reused clean image
    fingerprint: str


@dataclass
class _Result:
    id: str
    lines: list[dict[str, Any]]
    skips: list[dict[str, Any]]


class _WorkerSetupError(RuntimeError):
    pass


def _worker_init() -> None:
    import cv2

    # One process per core: OpenCV's own thread pool would oversubscribe the CPUs.
    cv2.setNumThreads(1)


def _image_relpath(cond_id: str, qid: str) -> str:
    return f"images/{condition_to_filename(cond_id)}/{qid}.png"


def _process_query(task: _Task) -> _Result:
    from .image import image_operators

    rec = task.record
    conds = [parse_condition(c) for c in task.conditions]
    missing = sorted({c.image_operator for c in conds if c.image_operator} - set(image_operators()))
    if missing:
        raise _WorkerSetupError(
            f"image operator(s) {', '.join(missing)} are not registered in the worker process; register them "
            "at import time of a module (workers are spawned fresh) or use workers=1"
        )
    out_dir = Path(task.out_dir)
    image = None
    if rec.image is not None:
        try:
            image = load_image(rec.image, max_pixels=task.max_pixels)
        except ImageLoadError as exc:
            return _Result(rec.id, [], [{"id": rec.id, "condition": None, "reason": str(exc)}])

    lines: list[dict[str, Any]] = []
    skips: list[dict[str, Any]] = []
    encoded: dict[str, tuple[bytes, str]] = {}  # image_from condition -> (png bytes, sha256)
    # image_from of each pending condition that writes an image; PNG bytes are dropped after their last use
    source = {c.id: (c.image_part.id if c.kind in ("image", "joint") else "clean") for c in conds if c.kind != "text"}
    uses = Counter(source.values())
    clean_ref = task.clean_ref

    def image_file(variant: Variant, cond_id: str) -> tuple[str, str, int, int]:
        if variant.kind == "text":
            if clean_ref is None:
                # clean is always part of a run and comes first, so this only happens if it failed
                raise RuntimeError("clean image missing")
            return clean_ref
        src = variant.image_from
        if src not in encoded:
            data = encode_png(variant.image)
            encoded[src] = (data, hashlib.sha256(data).hexdigest())
        data, sha = encoded[src]
        rel = _image_relpath(cond_id, rec.id)
        write_bytes_atomic(out_dir / rel, data)
        h, w = variant.image.shape[:2]
        return rel, sha, int(w), int(h)

    for item in _generate(image, rec.question, key=rec.id, entity=rec.entity, seed=task.seed, conds=conds, table=task.table):
        src = source.get(item.condition)
        if src is not None:
            uses[src] -= 1
        if isinstance(item, _Skip):
            skips.append({"id": rec.id, "condition": item.condition, "reason": item.reason})
            if src is not None and uses[src] <= 0:
                encoded.pop(src, None)
            continue
        path = sha = width = height = None
        if item.image is not None:
            path, sha, width, height = image_file(item, item.condition)
            if item.kind == "clean":
                clean_ref = (path, sha, width, height)
            if src is not None and uses[src] <= 0:
                encoded.pop(src, None)
        lines.append(
            {
                "id": rec.id,
                "condition": item.condition,
                "kind": item.kind,
                "path": path,
                "sha256": sha,
                "width": width,
                "height": height,
                "question": item.question,
                "image_params": item.params.get("image"),
                "text_params": item.params.get("text"),
                "seed": task.seed,
                "input_sha256": task.fingerprint,
            }
        )
    return _Result(rec.id, lines, skips)


# ------------------------------------------------------------------------------------------------
# batch run
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunSummary:
    """What a :func:`run_corruption` call did."""

    out_dir: Path
    n_queries: int
    conditions: list[str]
    written: int        # manifest lines (outputs) produced by this call
    reused: int         # outputs of this run's (query, condition) set kept from an earlier call
    skipped: int        # lines written to skips.jsonl
    skipped_queries: int  # queries skipped as a whole (bad image file)
    elapsed_s: float

    @property
    def manifest_path(self) -> Path:
        return self.out_dir / "manifest.jsonl"

    @property
    def skips_path(self) -> Path:
        return self.out_dir / "skips.jsonl"


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, allow_nan=False)


def _read_run_manifest(path: Path) -> list[dict[str, Any]]:
    """Lines of an existing manifest.jsonl; a truncated (unparseable) last line is dropped."""
    if not path.exists():
        return []
    raw = path.read_bytes()
    parts = raw.split(b"\n")
    lines: list[dict[str, Any]] = []
    last = max((i for i, p in enumerate(parts) if p.strip()), default=-1)
    for i, part in enumerate(parts):
        if not part.strip():
            continue
        try:
            obj = json.loads(part.decode("utf-8"))
            if not isinstance(obj, dict) or "id" not in obj or "condition" not in obj:
                raise ValueError("not a manifest record")
        except (ValueError, UnicodeDecodeError) as exc:
            if i == last:
                break  # cut by a kill mid-write: that query is simply redone
            raise ManifestError(
                f"{path}: line {i + 1} is not a valid manifest record ({exc}); fix it or rerun with --force"
            ) from None
        lines.append(obj)
    return lines


def _sha256_file(path: Path) -> str | None:
    try:
        with open(path, "rb") as fh:
            return hashlib.file_digest(fh, "sha256").hexdigest()
    except OSError:
        return None


def _input_fingerprint(rec: QueryRecord) -> str:
    """sha256 over what a query's outputs depend on besides seed and grid: the image file's bytes,
    the question and the entity (not the path, so a moved data set stays valid)."""
    image_sha = _sha256_file(rec.image) if rec.image is not None else None
    payload = json.dumps([image_sha, rec.question, rec.entity], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def _clear_previous(out: Path) -> None:
    """--force: remove what an earlier run wrote (only our files and condition directories)."""
    for name in ("manifest.jsonl", "skips.jsonl", "run.json"):
        (out / name).unlink(missing_ok=True)
    images = out / "images"
    if not images.is_dir():
        return
    for sub in images.iterdir():
        try:
            parse_condition(sub.name)
        except ValueError:
            continue
        if sub.is_dir():
            shutil.rmtree(sub)
    try:
        images.rmdir()
    except OSError:
        pass


def _remove_stale_temps(out: Path) -> None:
    """Delete temp files a killed run left behind (write_bytes_atomic names them ``.<name>.*.tmp``)."""
    dirs = [out] + ([p for p in (out / "images").iterdir() if p.is_dir()] if (out / "images").is_dir() else [])
    for d in dirs:
        for tmp in d.glob(".*.tmp"):
            tmp.unlink(missing_ok=True)


def _load_run_config(out: Path) -> dict[str, Any] | None:
    path = out / "run.json"
    if not path.exists():
        return None
    try:
        cfg = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(cfg, dict):
            raise ValueError("not an object")
        return cfg
    except (OSError, ValueError) as exc:
        raise RunConfigError(f"{path}: unreadable run configuration ({exc}); use a new --out directory or --force") from None


def run_corruption(
    manifest_path: str | os.PathLike,
    out_dir: str | os.PathLike,
    *,
    seed: int = 0,
    conditions: Iterable[str | Condition] | None = None,
    joint: bool = False,
    workers: int = 1,
    grid: str | os.PathLike | Mapping[str, Any] | None = None,
    progress: bool = True,
    force: bool = False,
    max_pixels: int = DEFAULT_MAX_PIXELS,
) -> RunSummary:
    """Corrupt every query of ``manifest_path`` into ``out_dir`` (layout in the module docstring).

    ``conditions`` defaults to the 54 states (clean + 45 image + 8 text); ``joint`` adds the paper's
    18 joint conditions; ``clean`` is always included.  ``grid`` is a grid file or an override
    mapping merged over the default grid.  ``workers`` > 1 runs that many processes, one query per
    work unit; outputs are byte-identical for any worker count.

    Rerunning into the same directory resumes: outputs recorded in ``manifest.jsonl`` whose file
    still has the recorded sha256 are kept, everything else is redone; so are all outputs of a query
    whose image file, question or entity changed (``input_sha256``).  If ``out_dir`` was written
    with a different seed or grid, :class:`RunConfigError` is raised unless ``force=True``, which
    first removes the earlier run's manifest, skips, run.json and condition image directories.

    Bad image files and conditions that cannot be produced (entity not found, ...) are recorded in
    ``skips.jsonl`` and the run goes on.  Raises :class:`ManifestError` for a malformed input
    manifest and ``ValueError`` for unknown conditions.
    """
    from .. import __version__

    t0 = time.perf_counter()
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    records = load_manifest(manifest_path)
    table = resolve_grid(grid)
    conds = resolve_conditions(conditions, joint=joint, grid=table)
    cond_ids = [c.id for c in conds]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    grid_json = _grid_json(table)

    previous = _load_run_config(out)
    if previous is not None and not force:
        diffs = []
        if previous.get("seed") != int(seed):
            diffs.append(f"seed {previous.get('seed')} (this run: {int(seed)})")
        if _dumps(previous.get("grid")) != _dumps(grid_json):
            diffs.append("a different severity grid")
        # a resumed run must not mix bytes from two OpenCV majors (watermark/ui_elements glyphs differ)
        # or two NumPy majors (the Generator streams behind every sampled parameter may change there)
        for lib, now in (("opencv", cv2.__version__), ("numpy", np.__version__)):
            before = previous.get(f"{lib}_version")
            if before and str(before).split(".")[0] != now.split(".")[0]:
                diffs.append(f"{'OpenCV' if lib == 'opencv' else 'NumPy'} {before} (this run: {now})")
        if diffs:
            raise RunConfigError(
                f"{out} holds a run made with {' and '.join(diffs)} (see {out / 'run.json'}); "
                "use a new --out directory, or --force to discard the earlier outputs"
            )
    if force:
        _clear_previous(out)
        previous = None

    all_ids = list(previous.get("conditions", [])) if previous else []
    all_ids += [c for c in cond_ids if c not in all_ids]
    run_cfg = {
        "snapbench_version": __version__,
        # Pixel bytes of the text-drawing operators (watermark, ui_elements) depend on the OpenCV
        # major version (its Hershey glyphs changed in 5.x): recorded so a mismatch can be traced.
        "opencv_version": cv2.__version__,
        "numpy_version": np.__version__,
        "seed": int(seed),
        "conditions": all_ids,
        "grid_file": str(grid) if isinstance(grid, (str, os.PathLike)) else None,
        "grid": grid_json,
        "png": {"level": PNG_COMPRESSION, "filter": "paeth", "strategy": "rle"},
        "max_pixels": int(max_pixels),
    }
    write_bytes_atomic(out / "run.json", (json.dumps(run_cfg, indent=2, ensure_ascii=False) + "\n").encode())

    _remove_stale_temps(out)
    # Resume: keep verified lines, rewrite the manifest without a possibly cut last line.
    manifest_file = out / "manifest.jsonl"
    fingerprints = {rec.id: _input_fingerprint(rec) for rec in records}
    kept: dict[tuple[str, str], dict[str, Any]] = {}
    sha_cache: dict[str, str | None] = {}
    for line in _read_run_manifest(manifest_file):
        if line.get("seed") != int(seed):  # possible only if run.json was deleted or edited
            raise RunConfigError(
                f"{manifest_file} holds outputs made with seed {line.get('seed')} (this run: {int(seed)}); "
                "use a new --out directory, or --force to discard them"
            )
        qid = str(line["id"])
        if qid in fingerprints and line.get("input_sha256") != fingerprints[qid]:
            continue  # the image file, question or entity changed since: redo the query
        rel = line.get("path")
        if rel is not None:
            if rel not in sha_cache:
                sha_cache[rel] = _sha256_file(out / rel)
            if sha_cache[rel] is None or sha_cache[rel] != line.get("sha256"):
                continue
        kept[(str(line["id"]), str(line["condition"]))] = line
    write_bytes_atomic(manifest_file, "".join(_dumps(v) + "\n" for v in kept.values()).encode("utf-8"), fsync=True)

    tasks: list[_Task] = []
    reused = 0
    for rec in records:
        pending = tuple(c for c in cond_ids if (rec.id, c) not in kept)
        reused += len(cond_ids) - len(pending)
        if not pending:
            continue
        clean_line = kept.get((rec.id, "clean"))
        clean_ref = None
        if clean_line is not None and clean_line.get("path"):
            clean_ref = (clean_line["path"], clean_line["sha256"], clean_line["width"], clean_line["height"])
        tasks.append(_Task(rec, pending, str(out), int(seed), table, int(max_pixels), clean_ref, fingerprints[rec.id]))

    written = skipped = skipped_queries = 0
    with open(manifest_file, "a", encoding="utf-8") as mf, open(out / "skips.jsonl", "w", encoding="utf-8") as sf:

        def commit(res: _Result) -> None:
            nonlocal written, skipped, skipped_queries
            if res.lines:
                mf.write("".join(_dumps(x) + "\n" for x in res.lines))
                mf.flush()
                os.fsync(mf.fileno())
            if res.skips:
                sf.write("".join(_dumps(x) + "\n" for x in res.skips))
                sf.flush()
            written += len(res.lines)
            skipped += len(res.skips)
            skipped_queries += sum(1 for s in res.skips if s["condition"] is None)

        with _progress_bar(progress, len(records)) as advance:
            advance(len(records) - len(tasks))
            for res in _execute(tasks, workers):
                commit(res)
                advance(1)

    return RunSummary(
        out_dir=out,
        n_queries=len(records),
        conditions=cond_ids,
        written=written,
        reused=reused,
        skipped=skipped,
        skipped_queries=skipped_queries,
        elapsed_s=time.perf_counter() - t0,
    )


def _execute(tasks: list[_Task], workers: int) -> Iterator[_Result]:
    """Run tasks; results come back in task order (so the manifest is independent of scheduling)."""
    try:
        if workers == 1 or len(tasks) <= 1:
            for task in tasks:
                yield _process_query(task)
            return
        ctx = multiprocessing.get_context("spawn")
        with cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_worker_init) as pool:
            window: deque[cf.Future] = deque()
            it = iter(tasks)
            try:
                for task in it:
                    window.append(pool.submit(_process_query, task))
                    if len(window) >= 2 * workers:
                        yield window.popleft().result()
                while window:
                    yield window.popleft().result()
            except BaseException:
                for fut in window:
                    fut.cancel()
                raise
    except _WorkerSetupError as exc:
        raise ValueError(str(exc)) from None


class _progress_bar:
    """A rich progress bar over queries (stderr), or a no-op."""

    def __init__(self, enabled: bool, total: int) -> None:
        self.enabled, self.total, self._progress, self._task = enabled, total, None, None

    def __enter__(self):
        if self.enabled:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

            self._progress = Progress(
                TextColumn("corrupting queries"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=Console(stderr=True),
            )
            self._progress.__enter__()
            self._task = self._progress.add_task("corrupt", total=self.total)

        def advance(n: int) -> None:
            if self._progress is not None and n:
                self._progress.advance(self._task, n)

        return advance

    def __exit__(self, *exc) -> None:
        if self._progress is not None:
            self._progress.__exit__(*exc)
