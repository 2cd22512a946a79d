"""The run: the stages chained, for one encoder (:func:`run_benchmark`) or several (:func:`run_encoders`).

plan (:mod:`.plan`) -> resume (:mod:`.resume`) -> encode gallery (:mod:`.gallery`) -> encode queries
(:mod:`.queries`, one variant stream for every encoder) -> score (:mod:`.score`) -> evaluate
(:mod:`.evaluation`: it pulls each target's scores per row block, so no Q x N matrix is held) -> report
(:mod:`.report`).
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...core.errors import ConfigError
from ...core.targets import plan_targets
from ...data.model import limit_queries
from ...render.progress import ProgressDisplay
from ...store import check_resume, claim_output_dir, refuse_output_folder, write_run_json
from .encoders import close_encoder, encoder_label, open_encoder, run_names
from .evaluation import check_group_by, evaluate_all
from .gallery import encode_gallery
from .measured import measured_rows
from .options import RunOptions, RunResult, RunSetResult, check_options
from .plan import RunPlan, grid_json, plan_run
from .queries import QueryEmbeddings, QueryJob, encode_queries
from .report import Evaluated, finish_run, reused_run
from .resume import RunState, limit_record, open_run, shared_fingerprint

__all__ = ["run_benchmark", "run_encoders"]


@dataclass
class _Job:
    """One encoder of a run: its spec, its loaded encoder, its plan and its folder's state."""

    name: str
    spec: str | Any
    encoder: Any
    plan: RunPlan
    state: RunState
    say: Callable[[str], None]


def _claim(out_dir: str | os.PathLike, names: Sequence[str] | None = None, *,
           within: Path | None = None) -> Path:
    """Claim ``out_dir`` as a run folder (given ``names``: the folder of a run of several encoders, and
    ``out_dir/<name>`` the run folder of each, claimed ``within`` it) before the dataset is loaded or a
    model opened: a folder another command wrote, or a run of the other layout, is refused first."""
    out = Path(out_dir)
    before = claim_output_dir(out, "run", within=within)
    if before is not None and names is not None and "encoder_runs" not in before:
        raise ConfigError(f"{out} holds the run of one encoder (the folder is its run folder); use a new output folder "
                          "for a run of several encoders")
    if before is not None and names is None and "encoder_runs" in before:
        raise ConfigError(f"{out} holds a run of several encoders (one folder each: "
                          f"{', '.join(str(r.get('name', '?')) for r in before['encoder_runs'])}); use a new output folder")
    for name in names or ():
        _claim(out / name, within=out)
    return out


def _load_dataset(dataset: str | os.PathLike | Any, opts: RunOptions) -> Any:
    """The dataset, checked against the options that depend on its fields (before anything is encoded)."""
    if hasattr(dataset, "queries"):
        ds = dataset
    else:
        from ...data import load_dataset

        refuse_output_folder(dataset, "a dataset")  # a run or corrupt folder would be read as a dataset, wrongly
        ds = load_dataset(dataset, format=opts.dataset_format, images=opts.images, qrels=opts.qrels, gallery=opts.gallery)
    ds = limit_queries(ds, opts.limit)
    check_group_by(ds, opts.group_by)
    return ds


def _open_encoders(specs: Sequence[str | Any], opts: RunOptions, say: Callable[[str], None]) -> list[Any]:
    """Every encoder, loaded before any work (a bad spec or a missing model fails first)."""
    opened: list[Any] = []
    try:
        for spec in specs:
            enc, note = open_encoder(spec, device=opts.device, batch_size=opts.batch_size, engine=opts.engine,
                                     actors=opts.encoder_actors, address=opts.address, workers=opts.workers,
                                     use_cache=opts.use_cache, cache_dir=opts.cache_dir, progress=opts.progress)
            opened.append(enc)
            if note:
                warnings.warn(note, stacklevel=2)
    except BaseException:
        for enc in opened:
            close_encoder(enc)
        raise
    from ...store.cache import CachedEncoder

    roots = sorted({str(enc.cache_dir) for enc in opened if isinstance(enc, CachedEncoder)})
    if roots:
        say(f"embedding cache: {', '.join(roots)}")
    return opened


def _evaluate(ds: Any, job: _Job, gallery: Any, queries: QueryEmbeddings, opts: RunOptions, bar: Any) -> Evaluated:
    """Score + evaluate, once the embedding sizes say which modes have a shared space: the plan made
    up front, restricted by the same rule with the sizes."""
    sides = job.plan.sides
    modes = plan_targets(sides.query, sides.gallery, opts.modes, why=sides.why, dims={**gallery.dims, **queries.dims})
    note = modes.space_note
    if not modes.targets:
        raise ConfigError(f"no retrieval mode can run: {note}")
    if note:
        job.say(note)
    measured = None
    if opts.measure or opts.severity_target is not None:
        qids = [ds.queries[i].id for i in queries.keep]
        measured = measured_rows(job.plan.conditions, qids, queries.keep, queries.embeddings, queries.measured,
                                 damage=bool(opts.measure))
    reports = evaluate_all(ds, job.state.dir.root, job.plan.conditions, list(modes.modes), modes.moor, gallery.sides,
                           queries.embeddings, queries.keep, opts, bar, job.say, measured)
    return Evaluated(modes, note, reports)


def _run_jobs(ds: Any, jobs: list[_Job], opts: RunOptions, t0: float) -> list[RunResult]:
    """Gallery, queries, evaluation and report of every job that is not complete already."""
    results: dict[str, RunResult] = {}
    for j in jobs:
        if j.state.complete:
            j.say(f"complete already in {j.state.dir.root} (same settings): nothing to redo, the reports are read back")
            results[j.name] = reused_run(j.state, ds, opts, j.say, t0)
    todo = [j for j in jobs if not j.state.complete]
    with ProgressDisplay(opts.progress) as bar:
        blocks = -(-len(ds.queries) // int(opts.block_queries))
        for j in todo:
            if j.state.done:
                j.say(f"resuming: {sum(1 for b in j.state.done if b < blocks)} of {blocks} query blocks already done "
                      f"in {j.state.dir.root}")
        galleries: list[Any] = []

        def encode_galleries() -> None:
            galleries.extend(encode_gallery(ds.gallery, j.encoder, j.plan.sides.gallery, batch_size=opts.batch_size,
                                            bar=bar, rundir=j.state.dir, shard_rows=opts.gallery_shard_rows) for j in todo)

        qjobs = [QueryJob(j.encoder, j.plan.image_sources, j.plan.text_sources, j.state.dir, j.state.done) for j in todo]
        # the gallery is encoded while the workers start and corrupt the first queries (workers > 1)
        encoded = encode_queries(ds, qjobs, opts, todo[0].plan.grid, bar, meanwhile=encode_galleries) if todo else []
        for j, gallery, queries in zip(todo, galleries, encoded, strict=True):
            if queries.dropped:
                n = len(queries.dropped)
                j.say(f"{n} quer{'y' if n == 1 else 'ies'} dropped from every state (listed in {j.state.dir.dropped_queries})")
            evaluated = _evaluate(ds, j, gallery, queries, opts, bar)
            results[j.name] = finish_run(j.state, ds, queries, evaluated, opts, j.say, t0)
    return [results[j.name] for j in jobs]


def _plan_jobs(ds: Any, specs: Sequence[str | Any], encs: list[Any], names: list[str], dirs: list[Path], opts: RunOptions,
               say: Callable[[str], None], prefix: bool) -> list[_Job]:
    jobs = []
    plans = [plan_run(ds, enc, opts) for enc in encs]  # every plan first: a bad option fails before any output
    shared = list(getattr(ds, "notes", []))
    for note in shared:  # the dataset's notes once; each encoder's own notes with its name
        say(note)
    for name, spec, enc, out, plan in zip(names, specs, encs, dirs, plans):
        js = (lambda msg, n=name: say(f"{n}: {msg}")) if prefix else say
        state = open_run(out, ds, encoder_label(spec, enc), enc, plan, opts)
        if not state.complete:
            for note in plan.notes[len(shared):]:
                js(note)
        jobs.append(_Job(name, spec, enc, plan, state, js))
    return jobs


def run_benchmark(
    dataset: str | os.PathLike | Any,
    encoder: str | Any,
    out_dir: str | os.PathLike,
    options: RunOptions | None = None,
    *,
    log: Callable[[str], None] | None = None,
) -> RunResult:
    """From a dataset and an encoder to the paired robustness reports (layout in :mod:`snapbench.app.stages`).

    ``dataset`` is a path (any format :func:`snapbench.data.load_dataset` reads) or a loaded
    :class:`snapbench.data.Dataset`; ``encoder`` a spec string (``toy``,
    ``sentence-transformers:NAME``, ``hf:NAME``, ``open_clip:ARCH[:PRETRAINED]``, ``module:attr``)
    or an encoder object.  Rerunning into the same ``out_dir`` resumes (a run complete with the same
    settings is read back, not redone); a run made with another dataset, encoder, seed, grid or
    variants is refused unless ``options.force``.
    """
    opts = options or RunOptions()
    say = log or (lambda _msg: None)
    t0 = time.perf_counter()
    check_options(opts)
    out = _claim(out_dir)
    ds = _load_dataset(dataset, opts)
    (enc,) = _open_encoders([encoder], opts, say)
    try:
        jobs = _plan_jobs(ds, [encoder], [enc], ["run"], [out], opts, say, prefix=False)
        return _run_jobs(ds, jobs, opts, t0)[0]
    finally:
        close_encoder(enc)


def _open_run_set(out: Path, ds: Any, specs: Sequence[str | Any], encs: list[Any], names: list[str], opts: RunOptions) -> dict:
    """Check (resume or refuse) and write the run.json of a several-encoder run folder."""
    from ..._version import __version__
    from ...corruptions import resolve_grid

    fp = shared_fingerprint(ds, opts, grid_json(resolve_grid(opts.grid)))
    previous = check_resume(out, "run", fp, force=opts.force)
    runs = [{"name": n, "encoder": encoder_label(s, e), "path": n} for n, s, e in zip(names, specs, encs)]
    kept = [r for r in (previous or {}).get("encoder_runs", []) if r.get("name") not in names and not opts.force]
    meta = {"snapbench_version": __version__, "dataset": f"{ds.name} ({ds.format})", "seed": int(opts.seed),
            "variants": opts.variants, **limit_record(ds), "fingerprint": fp, "encoder_runs": runs + kept,
            "status": "running"}
    write_run_json(out, "run", meta)
    return meta


def run_encoders(
    dataset: str | os.PathLike | Any,
    encoders: Sequence[str | Any],
    out_dir: str | os.PathLike,
    options: RunOptions | None = None,
    *,
    names: Sequence[str] | None = None,
    log: Callable[[str], None] | None = None,
) -> RunSetResult:
    """Several encoders on one dataset with one corruption pass: ``out_dir/<name>/`` per encoder.

    Each query is corrupted once and its variants are fed to every encoder; each encoder's folder
    is the run folder a :func:`run_benchmark` of it alone would write (byte-identical reports) and
    resumes on its own.  ``names``: the folder of each encoder (default: derived from its spec,
    see :func:`snapbench.app.stages.encoders.run_names`).  ``out_dir/run.json`` (``kind: "run"``) lists
    the encoder runs under ``encoder_runs`` ({"name", "encoder", "path"}).  Every model is loaded at
    once (memory: all of them).
    """
    opts = options or RunOptions()
    say = log or (lambda _msg: None)
    t0 = time.perf_counter()
    check_options(opts)
    if not encoders:
        raise ConfigError("needs at least one encoder", param="encoder")
    folder_names = run_names(encoders, names)
    out = _claim(out_dir, folder_names)
    ds = _load_dataset(dataset, opts)
    encs = _open_encoders(encoders, opts, say)
    try:
        meta = _open_run_set(out, ds, encoders, encs, folder_names, opts)
        jobs = _plan_jobs(ds, encoders, encs, folder_names, [out / n for n in folder_names], opts, say, prefix=True)
        results = _run_jobs(ds, jobs, opts, t0)
    finally:
        for enc in encs:
            close_encoder(enc)
    meta["status"] = "complete"
    write_run_json(out, "run", meta)
    runs = dict(zip(folder_names, results))
    shared = ("wait_s", "first_wait_s", "meanwhile_s")  # the one query phase all encoders shared
    timings = {k: max((r.timings.get(k, 0.0) for r in results), default=0.0) for k in shared}
    timings.update({f"encode_s[{n}]": r.timings.get("encode_s", 0.0) for n, r in runs.items()})
    return RunSetResult(out, runs, time.perf_counter() - t0, timings)
