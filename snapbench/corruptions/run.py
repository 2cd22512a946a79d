"""Batch corruption of a query set: manifest in, lossless variants + manifest out, resumable, parallel.

Outputs of :func:`run_corruption` in ``DIR`` (SPEC §11)::

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
  still written under its own directory so every image condition has the SPEC layout.  A joint
  condition's parts are always produced with it (see :mod:`.plan`).
* All randomness is keyed by (seed, query id, operator, severity) through
  :mod:`snapbench.seeding`; outputs do not depend on worker count, order or process.
* Workers are spawned processes (see :mod:`.workers`): operators registered at run time are sent
  to them, and they exit when the parent dies.
* Resume: images are written atomically (temp file + ``os.replace``); manifest lines are appended
  by the parent only, flushed and fsynced once per completed query.  A rerun keeps every manifest
  line whose file still exists with the recorded sha256 and whose query inputs (image file bytes,
  question, entity: ``input_sha256``) are unchanged (a truncated last line from a kill is
  dropped), and redoes the rest.  Skipped pairs are retried on every run (the input may have been
  fixed), so ``skips.jsonl`` is rewritten by each run.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from ..atomic import write_bytes_atomic
from ..conditions import Condition, condition_to_filename, parse_condition
from ..engines import check_engine, ordered_map
from ..errors import ConfigError, InputError
from ..layout import MANIFEST, RUN_CONFIG, SKIPS, read_jsonl_records, read_run_config
from ..progress import ProgressDisplay
from .codecs import check_format, encode_image, extension
from .image import image_operator_revisions
from .image.add import renderer_versions
from .io import (
    DEFAULT_MAX_PIXELS,
    PNG_COMPRESSION,
    ImageLoadError,
    load_image,
)
from .manifest import ManifestWarning, QueryRecord, load_manifest
from .plan import grid_json, plan_conditions, resolve_grid
from .variants import Skip, Variant, generate_variants
from .workers import registrations_payload, restore_registrations, setup_error

__all__ = ["MANIFEST_FIELDS", "RunConfigError", "RunSummary", "run_corruption"]

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


class RunConfigError(ConfigError):
    """An output directory holds a run made with a different seed or grid."""


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
    #: image/text parts of joint conditions that were not asked for and were added (additivity needs them)
    added_conditions: list[str] = field(default_factory=list)
    #: queries with a question but no entity, whose text conditions edit a guessed word (the last
    #: non-stopword word of the question; 0 when the run has no text conditions)
    guessed_entities: int = 0
    #: warnings about the input (unknown manifest fields), also passed to ``log`` as they happen
    warnings: list[str] = field(default_factory=list)

    @property
    def manifest_path(self) -> Path:
        return self.out_dir / MANIFEST

    @property
    def skips_path(self) -> Path:
        return self.out_dir / SKIPS


# ------------------------------------------------------------------------------------------------
# one query (runs in the worker processes)
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
    image_format: str = "png"


@dataclass
class _Result:
    id: str
    lines: list[dict[str, Any]]
    skips: list[dict[str, Any]]


class _WorkerSetupError(RuntimeError):
    pass


def _image_relpath(cond_id: str, qid: str, image_format: str = "png") -> str:
    return f"images/{condition_to_filename(cond_id)}/{qid}{extension(image_format)}"


def _process_query(task: _Task) -> _Result:
    from .image import image_operators
    from .text import text_operators

    if (why := setup_error()) is not None:
        raise _WorkerSetupError(why)
    rec = task.record
    conds = [parse_condition(c) for c in task.conditions]
    missing = sorted({c.image_operator for c in conds if c.image_operator} - set(image_operators()))
    missing += sorted({c.text_operator for c in conds if c.text_operator} - set(text_operators()))
    if missing:
        raise _WorkerSetupError(
            f"operator(s) {', '.join(missing)} are not registered in the worker process; register them "
            "before calling run_corruption, or use workers=1"
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
            data = encode_image(variant.image, task.image_format)
            encoded[src] = (data, hashlib.sha256(data).hexdigest())
        data, sha = encoded[src]
        rel = _image_relpath(cond_id, rec.id, task.image_format)
        write_bytes_atomic(out_dir / rel, data)
        h, w = variant.image.shape[:2]
        return rel, sha, int(w), int(h)

    for item in generate_variants(
        image, rec.question, key=rec.id, entity=rec.entity, seed=task.seed, conditions=conds, grid=task.table
    ):
        src = source.get(item.condition)
        if src is not None:
            uses[src] -= 1
        if isinstance(item, Skip):
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
# resume support
# ------------------------------------------------------------------------------------------------


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, allow_nan=False)


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
    for name in (MANIFEST, SKIPS, RUN_CONFIG):
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
    try:
        return read_run_config(out)
    except InputError as exc:
        raise RunConfigError(f"{exc}; use a new output directory or force=True") from None


def _check_previous(out: Path, previous: dict[str, Any], seed: int, grid_obj: dict[str, Any],
                    revisions: dict[str, int]) -> None:
    diffs = []
    if previous.get("seed") != int(seed):
        diffs.append(f"seed {previous.get('seed')} (this run: {int(seed)})")
    if _dumps(previous.get("grid")) != _dumps(grid_obj):
        diffs.append("a different severity grid")
    # a resumed run must not mix bytes from two OpenCV majors (warps, resizes, JPEG) or two NumPy
    # majors (the Generator streams behind every sampled parameter may change there)
    for lib, now in (("opencv", cv2.__version__), ("numpy", np.__version__)):
        before = previous.get(f"{lib}_version")
        if before and str(before).split(".")[0] != now.split(".")[0]:
            diffs.append(f"{'OpenCV' if lib == 'opencv' else 'NumPy'} {before} (this run: {now})")
    # nor text drawn by another font file, Pillow or FreeType (watermark and ui_elements pixels)
    before = previous.get("text_renderer")
    now_r = renderer_versions()
    if before is not None and before != now_r:
        changed = ", ".join(f"{k} {before.get(k)} (this run: {v})" for k, v in now_r.items() if before.get(k) != v)
        diffs.append(f"another text renderer: {changed}")
    # nor two algorithms of one operator (a run.json without revisions predates them: all were 1)
    before_rev = previous.get("operator_revisions") or {}
    changed_ops = [f"{op} revision {before_rev.get(op, 1)} (this run: {rev})" for op, rev in revisions.items()
                   if before_rev.get(op, 1) != rev]
    if changed_ops:
        diffs.append(f"other image operator revisions: {', '.join(changed_ops)}")
    if diffs:
        raise RunConfigError(
            f"{out} holds a run made with {' and '.join(diffs)} (see {out / 'run.json'}); "
            "use a new output directory, or force=True (--force) to discard the earlier outputs"
        )


# ------------------------------------------------------------------------------------------------
# the run
# ------------------------------------------------------------------------------------------------


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
    log: Callable[[str], None] | None = None,
    image_format: str = "png",
    engine: str = "local",
    address: str | None = None,
) -> RunSummary:
    """Corrupt every query of ``manifest_path`` into ``out_dir`` (layout in the module docstring).

    ``conditions`` defaults to the 54 states (clean + 45 image + 8 text); ``joint`` adds the paper's
    18 joint conditions; ``clean`` is always included, and so are the image and text parts of every
    joint condition (listed in ``RunSummary.added_conditions`` when added).  ``grid`` is a grid
    file or an override mapping merged over the default grid.  ``workers`` > 1 runs that many
    processes, one query per work unit; outputs are byte-identical for any worker count; operators
    registered at run time are sent to the workers (they must be picklable, see
    :mod:`snapbench.corruptions.workers`).

    Rerunning into the same directory resumes: outputs recorded in ``manifest.jsonl`` whose file
    still has the recorded sha256 are kept, everything else is redone; so are all outputs of a query
    whose image file, question or entity changed (``input_sha256``).  If ``out_dir`` was written
    with a different seed or grid, :class:`RunConfigError` is raised unless ``force=True``, which
    first removes the earlier run's manifest, skips, run.json and condition image directories.

    ``log(message)`` receives warnings about the input as they arise (unknown manifest fields);
    without it they are issued as :class:`~snapbench.corruptions.manifest.ManifestWarning`.  Both
    end up in ``RunSummary.warnings``.

    ``engine`` runs the queries on a local process pool (``"local"``) or on Ray (``"ray"``, at
    ``address`` or a local instance started on demand; the output folder must then be on a
    filesystem every worker sees); the files are the same either way.
    ``image_format`` is the lossless file format of the variants: ``png`` (default), ``qoi``, ``jxl``,
    ``webp`` or ``npz`` (all but png need ``snapbench[codecs]``); one output folder holds one format.

    Bad image files and conditions that cannot be produced (entity not found, ...) are recorded in
    ``skips.jsonl`` and the run goes on.  Raises :class:`ManifestError` (an
    :class:`~snapbench.errors.InputError`) for a malformed input manifest and
    :class:`~snapbench.errors.ConfigError` for unknown conditions, a bad grid or ``workers < 1``.
    """
    from .. import __version__

    t0 = time.perf_counter()
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ConfigError(f"workers must be an integer >= 1, got {workers!r}")
    notes: list[str] = []

    def note(message: str) -> None:
        notes.append(message)
        if log is not None:
            log(message)
        else:
            warnings.warn(message, ManifestWarning, stacklevel=3)

    check_engine(engine, workers, address)
    image_format = check_format(image_format)
    encode_image(np.zeros((1, 1, 3), np.uint8), image_format)  # a missing codec library fails here, before any work
    records = load_manifest(manifest_path, on_warning=note)
    table = resolve_grid(grid)
    try:
        plan = plan_conditions(conditions, joint=joint, grid=table)
    except ConfigError as exc:
        if isinstance(grid, (str, os.PathLike)) and "severity grid entry" in str(exc):
            raise ConfigError(str(exc), path=grid) from None  # name the grid file that holds the bad level
        raise
    conds = plan.conditions
    cond_ids = [c.id for c in conds]
    added = [c.id for c in plan.added_parts]
    payload = b""
    if workers > 1 or engine != "local":
        payload = registrations_payload(
            {c.image_operator for c in conds if c.image_operator}, {c.text_operator for c in conds if c.text_operator}
        )
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    grid_obj = grid_json(table)

    previous = _load_run_config(out)
    if previous is not None and ("grid" not in previous or "seed" not in previous):
        # e.g. the folder of `snapbench run`: never clear another command's outputs, even when forced
        raise RunConfigError(f"{out} is not the output folder of snapbench corrupt (its run.json was written by "
                             "something else); use a new output directory")
    revisions = image_operator_revisions(c.image_operator for c in conds if c.image_operator)
    if previous is not None and not force:
        _check_previous(out, previous, seed, grid_obj, revisions)
        before = previous.get("image_format", "png")
        if before != image_format:
            raise RunConfigError(
                f"{out} holds {before} variants (this run: {image_format}); one folder holds one format: "
                "use a new output folder, or force to discard the earlier outputs"
            )
    if force:
        _clear_previous(out)
        previous = None

    all_ids = list(previous.get("conditions", [])) if previous else []
    all_ids += [c for c in cond_ids if c not in all_ids]
    run_cfg = {
        "snapbench_version": __version__,
        # Library versions that decide pixel bytes, recorded so a resume cannot mix them (see
        # _check_previous) and a difference between two runs can be traced.
        "opencv_version": cv2.__version__,
        "text_renderer": renderer_versions(),
        "numpy_version": np.__version__,
        # the algorithm revision of each image operator of the run (see register_image_operator)
        "operator_revisions": {**((previous or {}).get("operator_revisions") or {}), **revisions},
        "seed": int(seed),
        "conditions": all_ids,
        "grid_file": str(grid) if isinstance(grid, (str, os.PathLike)) else None,
        "grid": grid_obj,
        "image_format": image_format,
        "png": {"level": PNG_COMPRESSION, "filter": "paeth", "strategy": "rle"},
        "max_pixels": int(max_pixels),
    }
    write_bytes_atomic(out / RUN_CONFIG, (json.dumps(run_cfg, indent=2, ensure_ascii=False) + "\n").encode())

    _remove_stale_temps(out)
    # Resume: keep verified lines, rewrite the manifest without a possibly cut last line.
    manifest_file = out / MANIFEST
    fingerprints = {rec.id: _input_fingerprint(rec) for rec in records}
    kept: dict[tuple[str, str], dict[str, Any]] = {}
    sha_cache: dict[str, str | None] = {}
    for line in read_jsonl_records(manifest_file, required=("id", "condition"), what="manifest record"):
        if line.get("seed") != int(seed):  # possible only if run.json was deleted or edited
            raise RunConfigError(
                f"{manifest_file} holds outputs made with seed {line.get('seed')} (this run: {int(seed)}); "
                "use a new output directory, or force=True (--force) to discard them"
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
        tasks.append(_Task(rec, pending, str(out), int(seed), table, int(max_pixels), clean_ref, fingerprints[rec.id],
                           image_format))

    written = skipped = skipped_queries = 0
    with open(manifest_file, "a", encoding="utf-8") as mf, open(out / SKIPS, "w", encoding="utf-8") as sf:

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

        with ProgressDisplay(progress) as bar:
            task = bar.add("corrupting queries", len(records))
            bar.advance(task, len(records) - len(tasks))
            for res in _execute(tasks, workers, payload, engine, address):
                commit(res)
                bar.advance(task)

    has_text = any(c.kind in ("text", "joint") for c in conds)
    guessed = sum(1 for r in records if r.question is not None and not (r.entity or "").strip()) if has_text else 0
    return RunSummary(
        out_dir=out,
        n_queries=len(records),
        conditions=cond_ids,
        written=written,
        reused=reused,
        skipped=skipped,
        skipped_queries=skipped_queries,
        elapsed_s=time.perf_counter() - t0,
        added_conditions=added,
        guessed_entities=guessed,
        warnings=notes,
    )


def _execute(tasks: list[_Task], workers: int, payload: bytes, engine: str, address: str | None) -> Iterator[_Result]:
    """Run tasks on ``engine``; results come back in task order (so the manifest is independent of
    scheduling, of the engine and of retries)."""
    try:
        if engine == "local" and (workers == 1 or len(tasks) <= 1):
            for task in tasks:
                yield _process_query(task)
            return
        yield from ordered_map(_process_query, tasks, engine=engine, workers=workers, address=address,
                               initializer=restore_registrations, initargs=(payload,))
    except _WorkerSetupError as exc:
        raise ConfigError(str(exc)) from None
