"""One query of a corruption run, as a worker process does it: load, generate, write, describe.

:func:`process_query` is the task every engine runs (see :mod:`snapbench.engines`): it loads the
query image through :func:`~.io.load_image`, generates the pending conditions with
:func:`~.variants.generate_variants`, writes each image file atomically and returns the manifest
lines and skips for the parent to append (workers never touch ``manifest.jsonl``).  Its output
depends on the task alone, so any worker, engine or retry writes the same bytes.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..core.conditions import Condition, parse_condition
from ..core.errors import arg, in_words
from ..store import CorruptDir
from ..store.atomic import write_bytes_atomic
from .codecs import encode_image, extension
from .image import image_operators
from .io import ImageLoadError, load_image
from .manifest import QueryRecord
from .target import SeverityTarget
from .text import text_operators
from .variants import Skip, Variant, generate_variants
from .workers import setup_error

__all__ = ["QueryTask", "QueryResult", "WorkerSetupError", "process_query", "manifest_line"]

#: (path, sha256, width, height) of an image file already written for a query
ImageRef = tuple[str, str, int, int]


@dataclass(frozen=True)
class QueryTask:
    """What a worker needs for one query: the record, its pending conditions (ids, in run order) and
    everything the bytes depend on."""

    record: QueryRecord
    conditions: tuple[str, ...]
    out_dir: str
    seed: int
    table: dict
    max_pixels: int
    clean_ref: ImageRef | None  # the clean image kept from an earlier run (text conditions point at it)
    fingerprint: str            # input_sha256 of the query
    image_format: str = "png"
    measure: bool = True        # record each variant's measured strength ("measured")
    target: SeverityTarget | None = None  # severity levels as measured targets ("target")


@dataclass
class QueryResult:
    """The manifest lines and skips of one query, for the parent to append in task order."""

    id: str
    lines: list[dict[str, Any]]
    skips: list[dict[str, Any]]


class WorkerSetupError(RuntimeError):
    """A worker cannot run the task's operators (they are not registered in its process)."""


def manifest_line(task: QueryTask, item: Variant, image: ImageRef | None) -> dict[str, Any]:
    """The ``manifest.jsonl`` record of one variant (keys: :data:`~.run.MANIFEST_FIELDS`, in order)."""
    path, sha, width, height = image if image is not None else (None, None, None, None)
    return {
        "id": task.record.id,
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
        "measured": item.measured,
        "target": item.target,
    }


def _check_operators(conds: list[Condition]) -> None:
    if (why := setup_error()) is not None:
        raise WorkerSetupError(why)
    missing = sorted({c.image_operator for c in conds if c.image_operator} - set(image_operators()))
    missing += sorted({c.text_operator for c in conds if c.text_operator} - set(text_operators()))
    if missing:
        raise WorkerSetupError(
            f"operator(s) {', '.join(missing)} are not registered in the worker process; register them "
            f"before the run, or set {arg('workers')} to 1")


class _ImageWriter:
    """Encodes each image part once and writes it under every condition that shows it; a part's
    encoded bytes are dropped after their last use (a query's 45 variants of a 12 Mpx photo would
    otherwise be held at once)."""

    def __init__(self, task: QueryTask, conds: list[Condition]) -> None:
        self.task = task
        self.folder = CorruptDir(task.out_dir)
        self.clean_ref = task.clean_ref
        # image_from of each pending condition that writes an image
        self.source = {c.id: (c.image_part.id if "image" in c.sides else "clean")
                       for c in conds if c.kind != "text"}
        self.uses = Counter(self.source.values())
        self.encoded: dict[str, tuple[bytes, str]] = {}

    def used(self, condition: str) -> None:
        """``condition`` is done: release its image part's bytes if no later condition needs them."""
        src = self.source.get(condition)
        if src is not None:
            self.uses[src] -= 1
            if self.uses[src] <= 0:
                self.encoded.pop(src, None)

    def write(self, item: Variant) -> ImageRef:
        if item.kind == "text":
            if self.clean_ref is None:  # clean comes first in every run; only a failed clean gets here
                raise RuntimeError("clean image missing")
            return self.clean_ref
        src = item.image_from
        if src not in self.encoded:
            data = encode_image(item.image, self.task.image_format)
            self.encoded[src] = (data, hashlib.sha256(data).hexdigest())
        data, sha = self.encoded[src]
        rel = self.folder.image_relpath(item.condition, self.task.record.id, extension(self.task.image_format))
        write_bytes_atomic(Path(self.task.out_dir) / rel, data)
        h, w = item.image.shape[:2]
        ref = (rel, sha, int(w), int(h))
        if item.kind == "clean":
            self.clean_ref = ref
        return ref


def process_query(task: QueryTask) -> QueryResult:
    """Produce the pending conditions of one query (see the module docstring)."""
    rec = task.record
    conds = [parse_condition(c) for c in task.conditions]
    _check_operators(conds)
    image: np.ndarray | None = None
    if rec.image is not None:
        try:
            image = load_image(rec.image, max_pixels=task.max_pixels)
        except ImageLoadError as exc:
            return QueryResult(rec.id, [], [{"id": rec.id, "condition": None, "reason": exc.render(in_words)}])
    writer = _ImageWriter(task, conds)
    lines: list[dict[str, Any]] = []
    skips: list[dict[str, Any]] = []
    for item in generate_variants(image, rec.question, key=rec.id, entity=rec.entity, seed=task.seed,
                                  conditions=conds, grid=task.table, measure=task.measure, target=task.target):
        if isinstance(item, Skip):
            skips.append({"id": rec.id, "condition": item.condition, "reason": item.reason})
        else:
            lines.append(manifest_line(task, item, writer.write(item) if item.image is not None else None))
        writer.used(item.condition)
    return QueryResult(rec.id, lines, skips)
