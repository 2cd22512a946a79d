"""`snapbench corrupt`: write the corrupted variants of a query set (lossless image files, PNG by default or
any of `corruptions.codecs.FORMATS`, + manifest.jsonl).

Batch corruption of a query set: manifest in, lossless variants + manifest out, resumable, parallel.

Outputs of :func:`run_corruption` in ``DIR`` (SPEC §11; names from :class:`snapbench.store.CorruptDir`)::

    DIR/run.json                         kind "corrupt", seed, conditions, resolved grid, versions, fingerprint
    DIR/images/clean/<id>.png            the decoded, normalised source (see io.load_image), lossless
    DIR/images/<condition file name>/<id>.png   one per image / joint condition ("/" -> "__")
    DIR/manifest.jsonl                   one line per output (see MANIFEST_FIELDS; measured strength, target)
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
  condition's parts are always produced with it (see :mod:`snapbench.corruptions.plan`).
* All randomness is keyed by (seed, query id, operator, severity) through
  :mod:`snapbench.core.seeding`; outputs do not depend on worker count, order or process.
* Workers are spawned processes (see :mod:`snapbench.corruptions.workers`): operators registered at
  run time are sent to them, and they exit when the parent dies.  Each runs :func:`process_query`.
* Measured strength (:mod:`snapbench.corruptions.measure`) is computed in the worker, once per image or text part, from
  the arrays it already holds, and written into each manifest line (``"measured"``); a severity
  target (:mod:`snapbench.corruptions.target`) searches each image part's knob in the worker too (``"target"``).
* Resume (below): images are written atomically (temp file + ``os.replace``); manifest
  lines are appended by the parent only, flushed and fsynced once per completed query.  A rerun
  into a folder with the same fingerprint keeps every manifest line whose file still exists with
  the recorded sha256 and whose query inputs (image file bytes, question, entity:
  ``input_sha256``) are unchanged (a truncated last line from a kill is dropped), and redoes the
  rest.  Skipped pairs are retried on every run (the input may have been fixed), so
  ``skips.jsonl`` is rewritten by each run.

One query of a corruption run, as a worker process does it: load, generate, write, describe.

:func:`process_query` is the task every engine runs (see :mod:`snapbench.engines`): it loads the
query image and generates the pending conditions with
:func:`~snapbench.corruptions.variants.record_variants`, writes each image file atomically and returns the manifest
lines and skips for the parent to append (workers never touch ``manifest.jsonl``).  Its output
depends on the task alone, so any worker, engine or retry writes the same bytes.

Resuming a corruption run: what a folder's outputs depend on, and which outputs are kept.

* :func:`_corrupt_fingerprint` -- everything the bytes of a corrupt folder depend on: the seed, the
  resolved grid, the image format, the OpenCV and NumPy majors (warps, resizes, JPEG and the
  Generator streams behind every sampled parameter may change there), the text renderer (font
  file, Pillow, FreeType: watermark and ui_elements pixels), the algorithm revision of each image
  operator of the folder's conditions, and the severity target (``severity_target``, present only
  when the run has one: a target changes every image) and ``measure: false`` (present only when
  measuring is off: a folder's lines are measured all or none).  Both keys are absent in the
  defaults, so folders written before they existed resume.  ``run.json`` records it, and
  :func:`snapbench.store.check_resume` (the one resume check of every command) refuses a rerun
  whose fingerprint differs, naming each differing entry.
* :func:`_kept_outputs` -- the manifest lines a rerun keeps: their file still has the recorded sha256
  and the query's inputs are unchanged (``input_sha256``); a line cut by a kill is dropped.

Why a corrupt run produced nothing: every skipped query counted by cause, with the first of each.

``snapbench corrupt`` goes on past unreadable queries and records them in ``skips.jsonl``; when no
output at all was written that is an input error, and its message must say what went wrong with
*all* of them, not only the first ("3 of 7 queries have an image too large ..., 4 of 7 have an
unreadable image ...").  The failed images are loaded again here to get their errors as objects
(their type is the cause; their message keeps parameter references, so the command line shows its
flags): this runs only when the whole run failed, where every load fails fast.
"""

from __future__ import annotations

import contextlib
import dataclasses
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

from .._version import __version__
from ..core.conditions import Condition, ConditionPlan, parse_condition
from ..core.defaults import DEFAULT_MAX_PIXELS, DEFAULT_SEED
from ..core.errors import ConfigError, ImageLoadError, InputError, RunConfigError, WorkerSetupError, arg
from ..core.image_formats import DEFAULT_IMAGE_FORMAT
from ..core.jsonable import dumps
from ..core.records import QueryRecord, TargetOutcome
from ..core.validate import positive_int
from ..corruptions.codecs import check_format, encode_image, extension
from ..corruptions.entity import guess_entity
from ..corruptions.image import image_operator_revisions, image_operators
from ..corruptions.image.add import renderer_versions
from ..corruptions.io import PNG_COMPRESSION, image_problem, load_image
from ..corruptions.manifest import ManifestWarning, load_manifest
from ..corruptions.plan import GridArg, grid_json, plan_conditions, plan_grid
from ..corruptions.target import SeverityTarget, parse_severity_target, target_outcome
from ..corruptions.text import text_operators
from ..corruptions.variants import Skip, Variant, checked_target, record_variants
from ..corruptions.workers import registrations_payload, restore_registrations, setup_error
from ..engines import check_engine, ordered_map, runs_inline
from ..render.progress import ProgressDisplay
from ..store import CorruptDir, check_resume, claim_output_dir, read_run_json, write_run_json
from ..store.atomic import write_bytes_atomic
from ..store.jsonl import read_jsonl_records, read_skips

__all__ = ["MANIFEST_FIELDS", "CorruptOptions", "RunSummary", "run_corruption", "QueryTask", "QueryResult", "process_query",
           "revision_fingerprint", "measure_fingerprint", "nothing_written_error"]


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
    "measured",     # measured strength (image: psnr, ssim, changed, area_kept; text: char_edits, word_edits,
                    # entity_intact; joint: both); null for clean and with measure off
    "target",       # severity target's search: metric, value, achieved, reached, knob, knob_value (null without)
)


@dataclass(frozen=True)
class CorruptOptions:
    """Everything :func:`run_corruption` takes besides the input manifest and the output folder."""

    seed: int = DEFAULT_SEED
    #: condition ids; None = the 54 states (clean + 45 image + 8 text)
    conditions: Iterable[str | Condition] | None = None
    joint: bool = False                 # add the paper's 18 joint conditions
    workers: int = 1                    # processes (local) or tasks at once (ray), one query each
    grid: GridArg = None                # a grid file, or an override mapping merged over the defaults
    progress: bool = True
    force: bool = False                 # discard an earlier run in the folder made with another fingerprint
    max_pixels: int = DEFAULT_MAX_PIXELS
    image_format: str = DEFAULT_IMAGE_FORMAT  # one of snapbench.core.image_formats.IMAGE_FORMATS (lossless)
    engine: str = "local"               # local | ray
    address: str | None = None          # Ray cluster address (engine "ray")
    measure: bool = True                # record each variant's measured strength (manifest "measured")
    #: severity levels as measured targets, "ssim=0.90,0.75,0.60" / "psnr=30,25,20" (or a SeverityTarget)
    severity_target: str | SeverityTarget | None = None


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
    #: queries with a question but no entity and no word to guess (only stopwords): their text
    #: conditions are skipped (skips.jsonl); 0 when the run has no text conditions
    unguessed_entities: int = 0
    #: warnings about the input (unknown manifest fields), also passed to ``log`` as they happen
    warnings: list[str] = field(default_factory=list)
    #: with a severity target: the image variants (``img/`` lines) the folder's manifest holds after this
    #: call, those kept from earlier calls included; how many missed their target (``"reached": false``);
    #: and the (query, operator) pairs whose harsher level measures milder (:class:`~snapbench.core.records.TargetOutcome`)
    targeted: int = 0
    target_missed: int = 0
    target_inverted: int = 0

    @property
    def target_outcome(self) -> TargetOutcome:
        """:attr:`targeted`, :attr:`target_missed`, :attr:`target_inverted` as a :class:`~snapbench.core.records.TargetOutcome`."""
        return TargetOutcome(self.targeted, self.target_missed, self.target_inverted)

    @property
    def manifest_path(self) -> Path:
        return CorruptDir(self.out_dir).manifest

    @property
    def skips_path(self) -> Path:
        return CorruptDir(self.out_dir).skips


def _checked(opts: CorruptOptions) -> CorruptOptions:
    """Options validated before any work (a missing codec library or Ray fails here, not after hours)."""
    workers = positive_int(opts.workers, "workers")
    check_engine(opts.engine, workers, opts.address)
    image_format = check_format(opts.image_format)
    encode_image(np.zeros((1, 1, 3), np.uint8), image_format)
    grid = plan_grid(opts.grid)
    conditions = None if opts.conditions is None else tuple(opts.conditions)
    return dataclasses.replace(opts, workers=workers, image_format=image_format, grid=grid, conditions=conditions,
                               max_pixels=positive_int(opts.max_pixels, "max_pixels"), measure=bool(opts.measure),
                               severity_target=parse_severity_target(opts.severity_target))


def _resume(folder: CorruptDir, opts: CorruptOptions, plan: ConditionPlan) -> list[str]:
    """Claim the folder and check it against this run (see the module docstring), write its run.json; the
    folder's conditions."""
    table = grid_json(plan.grid)

    def fingerprint(ids: Iterable[str], recorded: Any) -> dict[str, Any]:
        return _corrupt_fingerprint(opts.seed, table, opts.image_format, ids, recorded, measure=opts.measure,
                                   target=opts.severity_target)

    try:
        claim_output_dir(folder.root, "corrupt")
        before = read_run_json(folder.root, kind="corrupt") or {}
        recorded = before.get("fingerprint") or {}
        # compared over the conditions the folder holds: those are what its outputs depend on
        now = fingerprint(before.get("conditions", []), recorded)
        check_resume(folder.root, "corrupt", now, force=opts.force)
    except ConfigError as exc:
        raise RunConfigError(exc.problem, path=exc.path, param=exc.param) from None
    if opts.force:
        _clear_previous(folder)
        before, recorded = {}, {}
    ids = list(dict.fromkeys([*before.get("conditions", []), *(c.id for c in plan.conditions)]))
    write_run_json(folder.root, "corrupt", {
        "snapbench_version": __version__,
        # library versions that decide pixel bytes, so a difference between two runs can be traced
        "opencv_version": cv2.__version__,
        "text_renderer": renderer_versions(),
        "numpy_version": np.__version__,
        "seed": int(opts.seed),
        "conditions": ids,
        "grid_file": str(opts.grid) if isinstance(opts.grid, (str, os.PathLike)) else None,
        "grid": table,
        "image_format": opts.image_format,
        "png": {"level": PNG_COMPRESSION, "filter": "paeth", "strategy": "rle"},
        "max_pixels": int(opts.max_pixels),
        "measure": bool(opts.measure),
        "severity_target": None if opts.severity_target is None else opts.severity_target.to_json(),
        "fingerprint": fingerprint(ids, recorded),
    })
    return ids


def _tasks(records: list[QueryRecord], cond_ids: list[str], kept: dict, folder: CorruptDir, opts: CorruptOptions,
           table: dict, fingerprints: dict[str, str]) -> tuple[list[QueryTask], int]:
    """One task per query with pending conditions, and how many outputs are reused."""
    tasks: list[QueryTask] = []
    reused = 0
    for rec in records:
        pending = tuple(c for c in cond_ids if (rec.id, c) not in kept)
        reused += len(cond_ids) - len(pending)
        if not pending:
            continue
        clean = kept.get((rec.id, "clean"))
        clean_ref = (clean["path"], clean["sha256"], clean["width"], clean["height"]) if clean and clean.get("path") else None
        tasks.append(QueryTask(rec, pending, str(folder.root), int(opts.seed), table, int(opts.max_pixels), clean_ref,
                               fingerprints[rec.id], opts.image_format, opts.measure, opts.severity_target))
    return tasks, reused


def _execute(tasks: list[QueryTask], opts: CorruptOptions, payload: bytes) -> Iterator[QueryResult]:
    """Run tasks on the engine; results come back in task order (so the manifest is independent of
    scheduling, of the engine and of retries)."""
    try:
        if runs_inline(opts.engine, opts.workers, len(tasks)):
            yield from ordered_map(process_query, tasks)
            return
        yield from ordered_map(process_query, tasks, engine=opts.engine, workers=opts.workers, address=opts.address,
                               initializer=restore_registrations, initargs=(payload,))
    except WorkerSetupError as exc:
        raise ConfigError(str(exc), param="workers") from None


@dataclass
class _Counts:
    written: int = 0
    skipped: int = 0
    skipped_queries: int = 0
    #: the image lines written with a severity target (for the folder's :class:`TargetOutcome`)
    targeted: list[dict[str, Any]] = field(default_factory=list)


def _outcome(lines: Iterable[dict[str, Any]]) -> TargetOutcome:
    """The severity targets of the image lines among ``lines`` (a joint line repeats its image part's)."""
    entries = []
    for x in lines:
        if x.get("kind") == "image" and x.get("target") is not None:
            c = parse_condition(str(x["condition"]))
            entries.append((str(x["id"]), str(c.image_operator), int(c.severity), x["target"]))
    return target_outcome(entries)


def _write(folder: CorruptDir, tasks: list[QueryTask], n_records: int, opts: CorruptOptions, payload: bytes) -> _Counts:
    """Run the tasks, appending each query's lines (flushed and fsynced) as it completes."""
    counts = _Counts()
    with open(folder.manifest, "a", encoding="utf-8") as mf, open(folder.skips, "w", encoding="utf-8") as sf:
        # an interrupted run shuts its pool down here, before the command says how to resume
        with ProgressDisplay(opts.progress) as bar, contextlib.closing(_execute(tasks, opts, payload)) as results:
            task = bar.add("corrupting queries", n_records)
            bar.advance(task, n_records - len(tasks))
            for res in results:
                if res.lines:
                    mf.write("".join(_dumps_line(x) + "\n" for x in res.lines))
                    mf.flush()
                    os.fsync(mf.fileno())
                if res.skips:
                    sf.write("".join(_dumps_line(x) + "\n" for x in res.skips))
                    sf.flush()
                counts.written += len(res.lines)
                counts.skipped += len(res.skips)
                counts.skipped_queries += sum(1 for s in res.skips if s["condition"] is None)
                counts.targeted += [x for x in res.lines if x.get("target") is not None]
                bar.advance(task)
    return counts


def run_corruption(
    manifest_path: str | os.PathLike,
    out_dir: str | os.PathLike,
    options: CorruptOptions | None = None,
    *,
    log: Callable[[str], None] | None = None,
    **fields: Any,
) -> RunSummary:
    """Corrupt every query of ``manifest_path`` into ``out_dir`` (layout in the module docstring).

    ``options`` (a :class:`CorruptOptions`) and/or its fields as keywords (``seed=3``,
    ``workers=4``, ...; keywords override ``options``).  ``conditions`` defaults to the 54 states
    (clean + 45 image + 8 text); ``joint`` adds the paper's 18 joint conditions; ``clean`` is always
    included, and so are the image and text parts of every joint condition (listed in
    ``RunSummary.added_conditions`` when added).  ``grid`` is a grid file or an override mapping
    merged over the default grid.  ``workers`` > 1 runs that many processes, one query per work
    unit; outputs are byte-identical for any worker count; operators registered at run time are
    sent to the workers (they must be picklable, see :mod:`snapbench.corruptions.workers`).

    Rerunning into the same directory resumes: outputs recorded in ``manifest.jsonl`` whose file
    still has the recorded sha256 are kept, everything else is redone; so are all outputs of a query
    whose image file, question or entity changed (``input_sha256``).  A folder whose fingerprint
    (seed, grid, image format, library versions, operator revisions; see the module docstring) differs is
    refused with :class:`RunConfigError` naming each difference unless ``force``, which first
    removes the earlier run's manifest, skips, run.json and condition image folders.  A folder
    another command wrote is refused even with ``force``.

    ``measure`` (default on) records each variant's measured strength in its manifest line
    (``"measured"``, :mod:`snapbench.corruptions.measure`), computed in the workers from the arrays they
    hold; the bytes do not change.  ``severity_target`` (``"ssim=0.90,0.75,0.60"``, ``"psnr=30,25,20"``
    or a :class:`~snapbench.corruptions.target.SeverityTarget`) makes each image part's severity a
    measured target: the operator's knob is searched per image
    (:func:`~snapbench.corruptions.target.target_variant`) and the outcome recorded (``"target"``);
    every image severity of the run needs a target value.  Both are part of the fingerprint when not
    the defaults.

    ``log(message)`` receives warnings about the input as they arise (unknown manifest fields);
    without it they are issued as :class:`~snapbench.corruptions.manifest.ManifestWarning`.  Both
    end up in ``RunSummary.warnings``.

    ``engine`` runs the queries on a local process pool (``"local"``) or on Ray (``"ray"``, at
    ``address`` or a local instance started on demand; the output folder must then be on a
    filesystem every worker sees); the files are the same either way.  ``image_format`` is the
    lossless file format of the variants: ``png`` (default), ``qoi``, ``jxl``, ``webp`` or ``npz``
    (all but png need ``snapbench[codecs]``); one output folder holds one format.  ``max_pixels``
    bounds an input image's width x height (checked from its header before decoding).

    Bad image files and conditions that cannot be produced (entity not found, ...) are recorded in
    ``skips.jsonl`` and the run goes on.  Raises :class:`ManifestError` (an
    :class:`~snapbench.core.errors.InputError`) for a malformed input manifest and
    :class:`~snapbench.core.errors.ConfigError` for unknown conditions, a bad grid or ``workers < 1``.
    """
    t0 = time.perf_counter()
    opts = _checked(dataclasses.replace(options or CorruptOptions(), **fields))
    notes: list[str] = []

    def note(message: str) -> None:
        notes.append(message)
        if log is not None:
            log(message)
        else:
            warnings.warn(message, ManifestWarning, stacklevel=3)

    from ..store import refuse_output_folder

    # corrupt's own manifest.jsonl as input: every variant would be a "duplicate id"
    refuse_output_folder(manifest_path, "a query manifest")
    records = load_manifest(manifest_path, on_warning=note)
    plan = plan_conditions(opts.conditions, joint=opts.joint, grid=opts.grid)
    conds, cond_ids = plan.conditions, [c.id for c in plan.conditions]
    checked_target(opts.severity_target, conds, plan.grid)  # one target per grid level: fail before any output
    payload = registrations_payload(conds) if opts.workers > 1 or opts.engine != "local" else b""
    folder = CorruptDir(out_dir)
    _resume(folder, opts, plan)
    _remove_stale_temps(folder)
    fingerprints = {rec.id: _input_fingerprint(rec) for rec in records}
    kept = _kept_outputs(folder, opts.seed, fingerprints)
    tasks, reused = _tasks(records, cond_ids, kept, folder, opts, dict(plan.grid), fingerprints)
    counts = _write(folder, tasks, len(records), opts, payload)
    outcome = _outcome([*kept.values(), *counts.targeted])  # the folder's total, not only this call's
    has_text = any("text" in c.sides for c in conds)
    no_entity = [r.question for r in records if r.question is not None and not (r.entity or "").strip()] if has_text else []
    unguessed = sum(1 for q in no_entity if guess_entity(q) is None)
    return RunSummary(out_dir=folder.root, n_queries=len(records), conditions=cond_ids, written=counts.written,
                      reused=reused, skipped=counts.skipped, skipped_queries=counts.skipped_queries,
                      elapsed_s=time.perf_counter() - t0, added_conditions=[c.id for c in plan.added_parts],
                      guessed_entities=len(no_entity) - unguessed, unguessed_entities=unguessed, warnings=notes,
                      targeted=outcome.variants, target_missed=outcome.missed, target_inverted=outcome.inverted)


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


def _manifest_line(task: QueryTask, item: Variant, image: ImageRef | None) -> dict[str, Any]:
    """The ``manifest.jsonl`` record of one variant: the values of :data:`MANIFEST_FIELDS`, in order."""
    path, sha, width, height = image if image is not None else (None, None, None, None)
    values = (task.record.id, item.condition, item.kind, path, sha, width, height, item.question,
              item.params.get("image"), item.params.get("text"), task.seed, task.fingerprint, item.measured, item.target)
    return dict(zip(MANIFEST_FIELDS, values, strict=True))


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
    writer = _ImageWriter(task, conds)
    lines: list[dict[str, Any]] = []
    skips: list[dict[str, Any]] = []
    for item in record_variants(rec, seed=task.seed, conditions=conds, grid=task.table, max_pixels=task.max_pixels,
                                measure=task.measure, target=task.target):
        if isinstance(item, Skip):
            skips.append(item.record(rec.id))
        else:
            lines.append(_manifest_line(task, item, writer.write(item) if item.image is not None else None))
        writer.used(item.condition)
    return QueryResult(rec.id, lines, skips)


def _major(version: Any) -> int | None:
    head = str(version or "").split(".")[0]
    return int(head) if head.isdigit() else None


def _library_versions() -> dict[str, Any]:
    return {"opencv_major": _major(cv2.__version__), "numpy_major": _major(np.__version__),
            **{f"text_renderer.{k}": v for k, v in renderer_versions().items()}}


def revision_fingerprint(ops: Iterable[str], recorded: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``{"revision.<op>": n}`` for the image operators ``ops`` (sorted by name), the entries ``corrupt``
    and ``run`` add to their fingerprints: a registered operator's revision; for one not registered now
    (it produces nothing in this run) the revision ``recorded`` (the folder's fingerprint) holds; none
    for an operator neither registered nor recorded."""
    names = sorted({op for op in ops if op})
    now = image_operator_revisions(names)
    recorded = recorded or {}
    return {f"revision.{op}": now[op] if op in now else recorded[f"revision.{op}"]
            for op in names if op in now or f"revision.{op}" in recorded}


def _grid_sha256(grid: Any) -> str:
    # run.json holds the grid itself; the fingerprint only needs to tell two grids apart
    text = json.dumps(grid, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _corrupt_fingerprint(seed: int, grid: Mapping[str, Any], image_format: str, condition_ids: Iterable[str],
                        recorded: Mapping[str, Any] | None = None, *, measure: bool = True,
                        target: Any = None) -> dict[str, Any]:
    """The fingerprint of a corrupt folder holding ``condition_ids`` (see the module docstring);
    ``grid`` as :func:`~snapbench.corruptions.plan.grid_json` writes it (the fingerprint holds its sha256).  Flat keys, so
    a refusal names what differs (``revision.motion_blur 1 (this run: 2)``); ``recorded`` is the
    folder's recorded fingerprint (the revision of an operator no longer registered is taken from it);
    ``measure`` and ``target`` (a :class:`~snapbench.corruptions.target.SeverityTarget`) add their keys only when not the
    defaults (on; none)."""
    fp = {"seed": int(seed), "grid": _grid_sha256(grid), "image_format": image_format, **_library_versions(),
          **revision_fingerprint((parse_condition(c).image_operator for c in condition_ids), recorded)}
    return {**fp, **measure_fingerprint(measure, target)}


def measure_fingerprint(measure: bool, target: Any) -> dict[str, Any]:
    """The fingerprint entries of measuring and of a severity target, each only where it is not the
    default: ``severity_target`` (its spec; with the tolerance and evaluation budget when those are
    not the defaults) and ``measure: false``.
    Shared by ``corrupt`` and ``run``."""
    out: dict[str, Any] = {}
    if target is not None:
        t = target.to_json()
        # the spec alone when the search runs with its defaults, so a refusal shows both values in full
        default = target.tol is None and t["max_evals"] == type(target).max_evals
        out["severity_target"] = target.spec if default else (
            f"{target.spec} (tolerance {t['tolerance']:g}, max_evals {t['max_evals']})")
    if not measure:
        out["measure"] = False
    return out


def _dumps_line(obj: Any) -> str:
    """One JSONL line of the manifest or skips (strict JSON, UTF-8 kept)."""
    return dumps(obj, indent=None)


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


def _kept_outputs(folder: CorruptDir, seed: int, fingerprints: Mapping[str, str]) -> dict[tuple[str, str], dict[str, Any]]:
    """The verified lines of ``manifest.jsonl`` by (query id, condition); the manifest is rewritten
    with exactly those (without a possibly cut last line)."""
    kept: dict[tuple[str, str], dict[str, Any]] = {}
    sha_cache: dict[str, str | None] = {}
    for line in read_jsonl_records(folder.manifest, required=("id", "condition"), what="manifest record"):
        if line.get("seed") != int(seed):  # possible only if run.json was deleted or edited
            raise RunConfigError(f"holds outputs made with seed {line.get('seed')} (this run: {int(seed)}); use a new "
                              f"output folder, or {arg('force')} to discard them", path=folder.manifest, param="force")
        qid = str(line["id"])
        if qid in fingerprints and line.get("input_sha256") != fingerprints[qid]:
            continue  # the image file, question or entity changed since: redo the query
        rel = line.get("path")
        if rel is not None:
            if rel not in sha_cache:
                sha_cache[rel] = _sha256_file(folder.root / rel)
            if sha_cache[rel] is None or sha_cache[rel] != line.get("sha256"):
                continue
        kept[(qid, str(line["condition"]))] = line
    data = "".join(_dumps_line(v) + "\n" for v in kept.values()).encode("utf-8")
    write_bytes_atomic(folder.manifest, data, fsync=True)
    return kept


def _clear_previous(folder: CorruptDir) -> None:
    """``force``: remove what an earlier run wrote (only our files and condition folders)."""
    for path in (folder.manifest, folder.skips, folder.run_json):
        path.unlink(missing_ok=True)
    if not folder.images.is_dir():
        return
    for sub in folder.images.iterdir():
        try:
            parse_condition(sub.name)
        except ConfigError:
            continue
        if sub.is_dir():
            shutil.rmtree(sub)
    try:
        folder.images.rmdir()
    except OSError:
        pass


def _remove_stale_temps(folder: CorruptDir) -> None:
    """Delete temp files a killed run left behind (write_bytes_atomic names them ``.<name>.*.tmp``)."""
    images = folder.images
    dirs = [folder.root] + ([p for p in images.iterdir() if p.is_dir()] if images.is_dir() else [])
    for d in dirs:
        for tmp in d.glob(".*.tmp"):
            tmp.unlink(missing_ok=True)


#: image_problem -> how the message says it ("N of M queries <...>"), in the order the message lists
#: them; a file that cannot be read and one that cannot be decoded are both "unreadable" here
_CAUSES: dict[str, str] = {
    "too large": "have an image too large",
    "file not found": "have no image file",
    "cannot be read": "have an unreadable image",
    "cannot be decoded": "have an unreadable image",
    "other": "were skipped for another reason",
}


def nothing_written_error(manifest_path: str | os.PathLike, out_dir: str | os.PathLike, n_queries: int,
                          max_pixels: int) -> InputError:
    """The error for a run that wrote no output: the skipped queries counted by cause, each cause
    with its first query's own error (naming the file and, for a size, the pixel limit)."""
    skips = read_skips(out_dir)
    whole = {str(s.get("id")): str(s.get("reason", "unknown")) for s in skips if s.get("condition") is None}
    skips_file = CorruptDir(out_dir).skips
    if not whole:  # every (query, condition) failed on its own: their reasons are per condition
        first = skips[0].get("reason", "unknown") if skips else "no query produced an output"
        return InputError(f"no output could be written ({len(skips)} skipped conditions, listed in {skips_file}); "
                          f"the first: {first}")
    records = {r.id: r for r in load_manifest(manifest_path, on_warning=lambda _: None)}
    by_cause: dict[str, list[str]] = {}
    for qid, reason in whole.items():
        rec = records.get(qid)
        try:
            if rec is not None and rec.image is not None:
                load_image(rec.image, max_pixels=max_pixels)
        except ImageLoadError as exc:
            if len(whole) == 1 and n_queries == 1:
                return exc  # the one query's own error says it all
            by_cause.setdefault(_CAUSES[image_problem(exc)], []).append(exc.render(arg))  # keeps the references
        else:  # no image to blame (or readable now, changed since the run): the recorded reason
            by_cause.setdefault(_CAUSES["other"], []).append(f"query {qid!r}: {reason}")
    parts = [f"{len(by_cause[label])} of {n_queries} queries {label} (first: {by_cause[label][0]})"
             for label in dict.fromkeys(_CAUSES.values()) if label in by_cause]
    return InputError(f"no query could be read ({len(whole)} of {n_queries} skipped, listed in {skips_file}): "
                      + "; ".join(parts))
