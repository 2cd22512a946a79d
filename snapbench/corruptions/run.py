"""Batch corruption of a query set: manifest in, lossless variants + manifest out, resumable, parallel.

Outputs of :func:`run_corruption` in ``DIR`` (SPEC §11; names from :class:`snapbench.layout.CorruptDir`)::

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
  condition's parts are always produced with it (see :mod:`.plan`).
* All randomness is keyed by (seed, query id, operator, severity) through
  :mod:`snapbench.seeding`; outputs do not depend on worker count, order or process.
* Workers are spawned processes (see :mod:`.workers`): operators registered at run time are sent
  to them, and they exit when the parent dies.  Each runs :func:`.query.process_query`.
* Measured strength (:mod:`.measure`) is computed in the worker, once per image or text part, from
  the arrays it already holds, and written into each manifest line (``"measured"``); a severity
  target (:mod:`.target`) searches each image part's knob in the worker too (``"target"``).
* Resume (:mod:`.resume`): images are written atomically (temp file + ``os.replace``); manifest
  lines are appended by the parent only, flushed and fsynced once per completed query.  A rerun
  into a folder with the same fingerprint keeps every manifest line whose file still exists with
  the recorded sha256 and whose query inputs (image file bytes, question, entity:
  ``input_sha256``) are unchanged (a truncated last line from a kill is dropped), and redoes the
  rest.  Skipped pairs are retried on every run (the input may have been fixed), so
  ``skips.jsonl`` is rewritten by each run.
"""

from __future__ import annotations

import dataclasses
import os
import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from .._version import __version__
from ..conditions import Condition, ConditionPlan, parse_condition
from ..defaults import DEFAULT_SEED
from ..engines import check_engine, ordered_map, runs_inline
from ..errors import ConfigError
from ..image_formats import DEFAULT_IMAGE_FORMAT
from ..layout import CorruptDir, check_resume, claim_output_dir, read_run_json, write_run_json
from ..progress import ProgressDisplay
from ..validate import positive_int
from .codecs import check_format, encode_image
from .entity import guess_entity
from .image.add import renderer_versions
from .io import DEFAULT_MAX_PIXELS, PNG_COMPRESSION
from .manifest import ManifestWarning, QueryRecord, load_manifest
from .plan import GridArg, grid_json, plan_conditions, plan_grid
from .query import QueryResult, QueryTask, WorkerSetupError, process_query
from .resume import (
    RunConfigError,
    assumed_revisions,
    clear_previous,
    corrupt_fingerprint,
    dumps_line,
    input_fingerprint,
    kept_outputs,
    remove_stale_temps,
    upgrade_legacy_run_json,
)
from .target import SeverityTarget, TargetOutcome, parse_severity_target, target_outcome
from .variants import checked_target
from .workers import registrations_payload, restore_registrations

__all__ = ["MANIFEST_FIELDS", "CorruptOptions", "RunConfigError", "RunSummary", "run_corruption"]

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
    image_format: str = DEFAULT_IMAGE_FORMAT  # one of snapbench.image_formats.IMAGE_FORMATS (lossless)
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
    #: and the (query, operator) pairs whose harsher level measures milder (:class:`~.target.TargetOutcome`)
    targeted: int = 0
    target_missed: int = 0
    target_inverted: int = 0

    @property
    def target_outcome(self) -> TargetOutcome:
        """:attr:`targeted`, :attr:`target_missed`, :attr:`target_inverted` as a :class:`~.target.TargetOutcome`."""
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
    """Claim the folder and check it against this run (see :mod:`.resume`), write its run.json; the folder's
    conditions."""
    table = grid_json(plan.grid)

    def fingerprint(ids: Iterable[str], recorded: Any) -> dict[str, Any]:
        return corrupt_fingerprint(opts.seed, table, opts.image_format, ids, recorded, measure=opts.measure,
                                   target=opts.severity_target)

    try:
        claim_output_dir(folder.root, "corrupt")
        upgrade_legacy_run_json(folder.root)
        before = read_run_json(folder.root, kind="corrupt") or {}
        recorded = before.get("fingerprint") or {}
        # compared over the conditions the folder holds: those are what its outputs depend on
        now = fingerprint(before.get("conditions", []), recorded)
        check_resume(folder.root, "corrupt", now, force=opts.force, assume=assumed_revisions(now))
    except ConfigError as exc:
        raise RunConfigError(exc.problem, path=exc.path, param=exc.param) from None
    if opts.force:
        clear_previous(folder)
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
        with ProgressDisplay(opts.progress) as bar:
            task = bar.add("corrupting queries", n_records)
            bar.advance(task, n_records - len(tasks))
            for res in _execute(tasks, opts, payload):
                if res.lines:
                    mf.write("".join(dumps_line(x) + "\n" for x in res.lines))
                    mf.flush()
                    os.fsync(mf.fileno())
                if res.skips:
                    sf.write("".join(dumps_line(x) + "\n" for x in res.skips))
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
    (seed, grid, image format, library versions, operator revisions; see :mod:`.resume`) differs is
    refused with :class:`RunConfigError` naming each difference unless ``force``, which first
    removes the earlier run's manifest, skips, run.json and condition image folders.  A folder
    another command wrote is refused even with ``force``.

    ``measure`` (default on) records each variant's measured strength in its manifest line
    (``"measured"``, :mod:`.measure`), computed in the workers from the arrays they hold; the bytes
    do not change.  ``severity_target`` (``"ssim=0.90,0.75,0.60"``, ``"psnr=30,25,20"`` or a
    :class:`~.target.SeverityTarget`) makes each image part's severity a measured target: the
    operator's knob is searched per image (:func:`~.target.target_variant`) and the outcome recorded
    (``"target"``); every image severity of the run needs a target value.  Both are part of the
    fingerprint when not the defaults.

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
    :class:`~snapbench.errors.InputError`) for a malformed input manifest and
    :class:`~snapbench.errors.ConfigError` for unknown conditions, a bad grid or ``workers < 1``.
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

    from ..layout import refuse_output_folder

    # corrupt's own manifest.jsonl as input: every variant would be a "duplicate id"
    refuse_output_folder(manifest_path, "a query manifest")
    records = load_manifest(manifest_path, on_warning=note)
    plan = plan_conditions(opts.conditions, joint=opts.joint, grid=opts.grid)
    conds, cond_ids = plan.conditions, [c.id for c in plan.conditions]
    checked_target(opts.severity_target, conds, plan.grid)  # one target per grid level: fail before any output
    payload = b""
    if opts.workers > 1 or opts.engine != "local":
        payload = registrations_payload({c.image_operator for c in conds if c.image_operator},
                                        {c.text_operator for c in conds if c.text_operator})
    folder = CorruptDir(out_dir)
    _resume(folder, opts, plan)
    remove_stale_temps(folder)
    fingerprints = {rec.id: input_fingerprint(rec) for rec in records}
    kept = kept_outputs(folder, opts.seed, fingerprints, measure=opts.measure)
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
