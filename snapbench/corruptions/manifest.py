"""Query manifests: the query set a run reads, one :class:`QueryRecord` per query.

Accepted layouts (detected from the content, not the extension): JSONL (one object per line), a
JSON list of objects, or a JSON object holding the list under ``"queries"``, ``"data"`` or
``"items"``.  The SnapBench release's ``benchmark/snap_bench.json`` (a JSON list) is read as is:
its field names are aliases below, and its image names are found under ``bench_images/query/``.

Unknown fields are reported, not silently dropped: a typo such as ``questoin`` would otherwise run
the query without its question (or, for ``entitiy``, with a guessed entity word).  One warning per
distinct unknown field names the file, an example record and the closest known field; the field
is still kept in ``tags`` (put your own metadata under ``"tags"`` to avoid the warning).
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..core.errors import ManifestError
from ..core.records import QueryRecord
from ..core.userfiles import jsonl_lines, read_text
from ..core.validate import did_you_mean

__all__ = [
    "ManifestWarning",
    "load_manifest",
]


class ManifestWarning(UserWarning):
    """A query manifest has fields the loader does not know (likely typos)."""


# The first alias present wins.  The SnapBench release's names: query_id, query_text, query_entity,
# query_image_local (see _snapbench_image for where its files live).
_ID_ALIASES = ("id", "query_id", "qid")
_IMAGE_ALIASES = ("image", "image_path", "query_image", "img", "query_image_local")
_QUESTION_ALIASES = ("question", "query", "text", "query_text")
_ENTITY_ALIASES = ("entity", "query_entity", "category", "target", "object")
_TAG_FIELDS = ("domain",)  # known metadata, copied into tags
# Known SnapBench fields this loader does not use (the release's gallery and its precomputed
# perturbations belong to the data loaders, not to the query set of a corruption run).
_IGNORED_FIELDS = ("gallery", "text_perturbations", "image_perturbations")
_LIST_KEYS = ("queries", "data", "items")

#: Every top-level field name a query record may have without a warning.
_KNOWN_FIELDS: tuple[str, ...] = (
    *_ID_ALIASES, *_IMAGE_ALIASES, *_QUESTION_ALIASES, *_ENTITY_ALIASES, "tags", *_TAG_FIELDS, *_IGNORED_FIELDS,
)


def _first(obj: Mapping[str, Any], aliases: Sequence[str]) -> tuple[str | None, Any]:
    for name in aliases:
        if name in obj and obj[name] is not None:
            return name, obj[name]
    return None, None


def _snapbench_image(base: Path, name: str) -> Path:
    """Where the SnapBench release keeps ``query_image_local``: ``bench_images/query/<name>`` beside
    the ``benchmark/`` folder that holds snap_bench.json (or beside the manifest); else relative to
    the manifest, like every other image path."""
    for cand in (base.parent / "bench_images" / "query" / name, base / "bench_images" / "query" / name):
        if cand.exists():
            return cand
    return base / name


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
        if not image.strip():
            image = None
        elif k == "query_image_local":
            image = _snapbench_image(base, image)
        else:
            image = base / image
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
    used.update(_IGNORED_FIELDS)
    tags.update({key: val for key, val in obj.items() if key not in used})
    return QueryRecord(qid, image, question, entity or None, tags)


def _unknown_field_message(path: Path, name: str, where: str, qid: str | None, count: int) -> str:
    example = where.split(": ", 1)[-1] + (f", id {qid!r}" if qid is not None else "")
    return (
        f"{path}: unknown field {name!r}{did_you_mean(name, _KNOWN_FIELDS)} in {count} record(s) (e.g. {example}); "
        f"it is kept as a tag and otherwise ignored (put your own metadata under \"tags\"; "
        f"known fields: id, image, question, entity and their aliases)"
    )


def load_manifest(
    path: str | os.PathLike,
    *,
    on_warning: Callable[[str], None] | None = None,
) -> list[QueryRecord]:
    """Read a query manifest into :class:`QueryRecord` objects, in file order.

    Accepted layouts (detected from the content, not the extension):

    * JSONL: one JSON object per line (blank lines ignored);
    * a JSON list of objects (the SnapBench release's ``snap_bench.json``);
    * a JSON object with the list under ``"queries"``, ``"data"`` or ``"items"``.

    Field names (the first alias present wins):

    * id: ``id`` | ``query_id`` | ``qid`` (string or integer; must be usable as a file name)
    * image: ``image`` | ``image_path`` | ``query_image`` | ``img`` (relative to the manifest's
      directory) | ``query_image_local`` (the SnapBench release: ``bench_images/query/<name>`` next
      to the manifest's folder or inside it, whichever exists, else relative to the manifest)
    * question: ``question`` | ``query`` | ``text`` | ``query_text``
    * entity: ``entity`` | ``query_entity`` | ``category`` | ``target`` | ``object``
    * ``tags``: an object of free metadata; ``domain`` is copied into the tags;
    * ``gallery``, ``text_perturbations``, ``image_perturbations`` (SnapBench): known, ignored here.

    Any other field is kept in ``tags`` and reported once per distinct name, with the closest
    known field name, through ``on_warning(message)`` (default: :func:`warnings.warn` with
    :class:`ManifestWarning`).

    A record needs an id and at least one of image / question.  Raises :class:`ManifestError`
    naming the file and the line (JSONL) or record number (JSON) for malformed records, bad JSON
    and duplicate ids.  Image files are not opened here (a bad image becomes a recorded skip).
    """
    path = Path(path)
    text = read_text(path, what="query manifest")  # bad bytes: an error with line and column
    if not text.strip():
        raise ManifestError("query manifest is empty", path=path)
    entries = _entries(text, path)
    if not entries:
        raise ManifestError("query manifest holds no records", path=path)
    records: list[QueryRecord] = []
    seen: dict[str, str] = {}
    unknown: dict[str, tuple[str, str, int]] = {}  # field -> (first where, its id, count)
    known = set(_KNOWN_FIELDS)
    for where, obj in entries:
        rec = _record_from_obj(obj, where, path.parent)
        if rec.id in seen:
            raise ManifestError(f"{where}: duplicate id {rec.id!r} (first at {seen[rec.id].split(': ', 1)[-1]})")
        seen[rec.id] = where
        records.append(rec)
        for name in obj:
            if name not in known:
                first_where, first_id, n = unknown.get(name, (where, rec.id, 0))
                unknown[name] = (first_where, first_id, n + 1)
    for name, (where, qid, count) in unknown.items():
        message = _unknown_field_message(path, name, where, qid, count)
        if on_warning is not None:
            on_warning(message)
        else:
            warnings.warn(message, ManifestWarning, stacklevel=2)
    return records


def _is_record(obj: dict[str, Any]) -> bool:
    """Whether a lone JSON object is one query record (it has a record's fields), so that a record
    without an id gets the record's error, not the one about a missing query list."""
    return any(k in obj for k in (*_ID_ALIASES, *_IMAGE_ALIASES, *_QUESTION_ALIASES, *_ENTITY_ALIASES))


def _entries(text: str, path: Path) -> list[tuple[str, Any]]:
    """``(where, object)`` of every record: JSONL if the first line is a complete object by itself and
    more lines follow, otherwise one (pretty) JSON document."""
    stripped = text.lstrip()
    first_line = stripped.splitlines()[0]
    jsonl = False
    if stripped[0] == "{":
        try:
            jsonl = isinstance(json.loads(first_line), dict) and len(stripped.strip().splitlines()) > 1
        except json.JSONDecodeError:
            jsonl = False
    if jsonl:
        return [(f"{path}: line {lineno}", obj) for lineno, obj in jsonl_lines(text, path, objects=False, error=ManifestError)]
    try:
        whole = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ManifestError(f"{path}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    if isinstance(whole, list):
        return [(f"{path}: record #{i + 1}", obj) for i, obj in enumerate(whole)]
    if isinstance(whole, dict) and any(isinstance(whole.get(k), list) for k in _LIST_KEYS):
        key = next(k for k in _LIST_KEYS if isinstance(whole.get(k), list))
        return [(f"{path}: {key} record #{i + 1}", obj) for i, obj in enumerate(whole[key])]
    if isinstance(whole, dict) and _is_record(whole):
        return [(f"{path}: {'line 1' if len(stripped.strip().splitlines()) == 1 else 'record #1'}", whole)]
    if isinstance(whole, dict):
        raise ManifestError(
            f"{path}: JSON object without a query list (expected the list under one of "
            f"{', '.join(repr(k) for k in _LIST_KEYS)}, a JSON list, or JSONL)")
    raise ManifestError(f"{path}: expected JSONL, a JSON list or an object, got a JSON {type(whole).__name__}")
