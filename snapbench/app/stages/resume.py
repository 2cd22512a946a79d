"""Stage 2, resume: what an output folder already holds of this run, and its ``run.json``.

:func:`open_run` checks the folder through the one resume check (:func:`snapbench.store.check_resume`:
another dataset, encoder, seed, grid, variants... is refused naming every difference, unless
``force``), discards a forced folder's embeddings, reads the finished query blocks and writes
``run.json`` (``kind: "run"``).  A folder that holds this run complete, made with the same
evaluation settings, is reported as such (:attr:`RunState.complete`): nothing needs redoing.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..._version import __version__
from ...core.defaults import DEFAULT_RBO_DEPTH, DEFAULT_RBO_P
from ...core.jsonable import to_json
from ...store import RunDir, check_resume, read_run_json, write_run_json
from .options import RunOptions
from .plan import RunPlan

__all__ = ["RunState", "limit_record", "open_run", "read_block_measures", "run_fingerprint", "save_run_json",
           "shared_fingerprint"]


@dataclass
class RunState:
    """One encoder's run folder: its layout, its run.json body (kept up to date by :func:`save_run_json`),
    the finished query blocks (block -> the skips recorded with it) and whether it is complete already."""

    dir: RunDir
    meta: dict[str, Any]
    done: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    complete: bool = False


def shared_fingerprint(dataset: Any, options: RunOptions, grid_json: Any) -> dict[str, Any]:
    """What every run on these data with these options depends on, whatever the encoder."""
    ids = hashlib.sha256("\x1f".join(q.id for q in dataset.queries).encode()).hexdigest()
    gids = hashlib.sha256("\x1f".join(g.id for g in dataset.gallery).encode()).hexdigest()
    from ...corruptions import parse_severity_target
    from ..corrupt import measure_fingerprint

    return {
        "dataset_queries_sha256": ids,
        "dataset_gallery_sha256": gids,
        "seed": int(options.seed),
        "variants": options.variants,
        "grid": grid_json,
        "block_queries": int(options.block_queries),
        "gallery_shard_rows": options.gallery_shard_rows,
        "batch_size": int(options.batch_size),
        # a severity target changes every image; measuring is recorded per block (both: only when set)
        **measure_fingerprint(bool(options.measure), parse_severity_target(options.severity_target)),
    }


def run_fingerprint(dataset: Any, encoder: Any, options: RunOptions, grid_json: Any, sources: dict,
                    recorded: dict[str, Any] | None = None) -> dict[str, Any]:
    """Everything a run folder's embeddings depend on (a change refuses the folder, unless forced);
    ``recorded``: the folder's recorded fingerprint (the revision of an operator no longer registered
    is taken from it, as ``corrupt`` does)."""
    fp = shared_fingerprint(dataset, options, grid_json)
    enc = str(getattr(encoder, "fingerprint", getattr(encoder, "name", type(encoder).__name__)))
    keys = list(fp)
    fp["encoder_fingerprint"] = enc
    fp["sources"] = sources
    revisions = _operator_revisions(sources["image"], options.variants, recorded)
    # the order of earlier snapbench versions (run.json files are compared as JSON objects: order-free),
    # then the operator revisions
    order = keys[:2] + ["encoder_fingerprint"] + keys[2:] + ["sources"]
    return {**{k: fp[k] for k in order}, **revisions}


def _operator_revisions(image_sources: Sequence[str], variants: str, recorded: dict[str, Any] | None) -> dict[str, Any]:
    """The ``revision.<op>`` entries of the image operators whose generated variants the run encodes (a
    change of algorithm refuses the folder, naming the operator); released variants have none."""
    from ...core.conditions import parse_condition
    from ..corrupt import revision_fingerprint

    if variants != "generated":
        return {}
    return revision_fingerprint((parse_condition(s).image_operator for s in image_sources if s != "clean"), recorded)


def _evaluation(options: RunOptions, plan: RunPlan) -> dict[str, Any]:
    """The settings the reports depend on beyond the embeddings and the conditions (a change redoes the
    evaluation only)."""
    return to_json({"snapbench_version": __version__,
                    "modes": None if options.modes is None else list(options.modes), "resamples": int(options.resamples),
                    "ks": [int(k) for k in options.ks], "group_by": options.group_by, "report": bool(options.report),
                    # the label-free measures' settings: a run evaluated before them is evaluated again
                    "stability": {"rbo_p": DEFAULT_RBO_P, "rbo_depth": DEFAULT_RBO_DEPTH}})


def _discard(rundir: RunDir) -> None:
    """A forced rerun: the embeddings of the run the folder held are not this run's."""
    if rundir.query_embeddings.exists():
        shutil.rmtree(rundir.query_embeddings)
    if rundir.gallery_shards.is_dir():
        shutil.rmtree(rundir.gallery_shards)
    for f in rundir.embeddings.glob("gallery.*.npy"):
        f.unlink()


def _contact_sheet(dataset: Any, seed: int, severity_target: Any = None) -> dict[str, Any] | None:
    first = next((q for q in dataset.queries if q.image is not None and Path(q.image).exists()), None)
    if first is None:
        return None
    spec = {"image": str(Path(first.image).resolve()), "key": first.id, "seed": int(seed), "question": first.question,
            "entity": first.entity}
    if severity_target is not None:  # the report's sheet shows the variants the run evaluated
        from ...corruptions import parse_severity_target

        spec["severity_target"] = parse_severity_target(severity_target).spec
    return spec


def limit_record(dataset: Any) -> dict[str, Any]:
    """run.json's ``limit`` (``{"queries": N, "of": M}``) of a dataset cut by ``--limit`` (else nothing):
    stated for every reader of the folder (compare, report) and named by the resume check's refusal."""
    if getattr(dataset, "limited_from", None) is None:
        return {}
    return {"limit": {"queries": len(dataset.queries), "of": int(dataset.limited_from)}}


def open_run(out: Path, dataset: Any, encoder_label: str, encoder: Any, plan: RunPlan, options: RunOptions) -> RunState:
    """The :class:`RunState` of ``out`` for this run (see the module docstring); writes run.json."""
    rundir = RunDir(out)
    sources = {"image": list(plan.image_sources), "text": list(plan.text_sources)}
    # the folder was claimed before the dataset was loaded (pipeline.run._claim: another command's folder,
    # or a run of several encoders, is refused there)
    recorded = (read_run_json(out) or {}).get("fingerprint")
    fp = run_fingerprint(dataset, encoder, options, plan.grid_json, sources, recorded if isinstance(recorded, dict) else None)
    previous = check_resume(out, "run", fp, force=options.force)
    evaluation = _evaluation(options, plan)
    targets = list(plan.modes.targets)
    if (previous is not None and not options.force and previous.get("status") == "complete"
            and previous.get("evaluation") == evaluation and previous.get("conditions") == plan.condition_ids
            and all(rundir.report(t).is_file() for t in previous.get("modes", targets))):
        return RunState(rundir, previous, _read_blocks(rundir.blocks_log), complete=True)
    if options.force and previous is not None:
        _discard(rundir)
    rundir.query_embeddings.mkdir(parents=True, exist_ok=True)
    meta = {
        "snapbench_version": __version__,
        "dataset": f"{dataset.name} ({dataset.format})",
        "dataset_info": {"name": dataset.name, "format": dataset.format, "root": str(Path(dataset.root).resolve()),
                         "n_queries": len(dataset.queries), "n_gallery": len(dataset.gallery)},
        **limit_record(dataset),
        "encoder": encoder_label,
        "seed": int(options.seed),
        "variants": options.variants,
        "modes": targets,
        "conditions": plan.condition_ids,
        # a run that reads one side of the query only: the planned conditions of the other side (a
        # text-only encoder: the image and joint ones), so that its whole condition plan is on record
        **({} if plan.left_out is None else {"conditions_left_out": list(plan.left_out)}),
        "fingerprint": fp,
        "evaluation": evaluation,
        "status": "running",
        "contact_sheet": _contact_sheet(dataset, options.seed, options.severity_target),
        "notes": list(plan.notes),
    }
    if options.command != "run":
        meta["command"] = options.command
    state = RunState(rundir, meta, _read_blocks(rundir.blocks_log))
    save_run_json(state)
    return state


def save_run_json(state: RunState) -> None:
    """Write the state's run.json (``kind: "run"``)."""
    write_run_json(state.dir.root, "run", state.meta)


def _log_lines(path: Path) -> Iterator[Any]:
    """The parsed lines of the resume log (none when it does not exist).

    This run's own file, appended to across resumes: a line cut by a kill can sit anywhere, not only
    last, so a line that is not JSON is skipped, not an error (unlike
    :func:`snapbench.store.jsonl.read_jsonl_records`); its block is redone."""
    if not path.exists():
        return
    for raw in path.read_bytes().splitlines():
        try:
            yield json.loads(raw.decode("utf-8"))
        except ValueError:
            continue


def _read_blocks(path: Path) -> dict[int, list[dict[str, Any]]]:
    """Finished blocks of the resume log (a line cut by a kill is ignored: that block is redone)."""
    done: dict[int, list[dict[str, Any]]] = {}
    for rec in _log_lines(path):
        try:
            done[int(rec["block"])] = list(rec.get("skips", []))
        except (ValueError, KeyError, TypeError):
            continue
    return done


def read_block_measures(path: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """The measured strength the resume log recorded with its blocks: query id -> image source ->
    {"psnr", "ssim"} (the last line of a block wins, as in :func:`_read_blocks`)."""
    by_block: dict[int, dict[str, Any]] = {}
    for rec in _log_lines(path):
        try:
            block, measured = int(rec["block"]), rec.get("measured") or {}
        except (ValueError, KeyError, TypeError):
            continue
        by_block[block] = measured if isinstance(measured, dict) else {}
    return {str(q): per for b in sorted(by_block) for q, per in by_block[b].items() if isinstance(per, dict)}
