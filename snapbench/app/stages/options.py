"""What a run takes (:class:`RunOptions`) and what it gives back (:class:`RunResult`, :class:`RunSetResult`)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from ...core.defaults import DEFAULT_BATCH_SIZE, DEFAULT_KS, DEFAULT_RESAMPLES, DEFAULT_SEED
from ...core.errors import ConfigError, arg
from ...core.validate import choice, comma_list, int_list, positive_int

__all__ = ["BLOCK_QUERIES", "RunOptions", "RunResult", "RunSetResult", "check_options"]

#: Queries per resume checkpoint (a block's embeddings are flushed and logged together).
BLOCK_QUERIES = 16
#: Where a run's query variants come from.
_VARIANTS: tuple[str, ...] = ("generated", "released")


@dataclass
class RunOptions:
    """Everything ``snapbench run`` takes besides the dataset and the encoder (CLI flags in brackets)."""

    modes: Sequence[str] | None = None  # [--modes] default: every mode the data and the model allow
    conditions: Sequence[str] | None = None  # [--conditions] default: the 54 states
    # [--joint/--no-joint] the paper's 18 joint conditions; None: with the default conditions, not with
    # an explicit list (which is then run exactly, plus the parts of the joint ids it names)
    joint: bool | None = None
    variants: str = "generated"  # [--variants] generated | released
    seed: int = DEFAULT_SEED
    grid: str | os.PathLike | Mapping[str, Any] | None = None
    device: str | None = None
    batch_size: int = DEFAULT_BATCH_SIZE
    workers: int = 1  # [--workers] processes (local), CPUs of a local Ray, or tasks at once on a cluster
    engine: str = "local"  # [--engine] an engine of snapbench.engines.ENGINE_TABLE: where variants are generated
    # [--actors] with engine="ray": encode on this many Ray actors (one model load each, a GPU each when
    # the cluster has them); 0 = encode in this process
    encoder_actors: int = 0
    address: str | None = None  # [--address] an existing Ray cluster (engine="ray"); default: start a local one
    resamples: int = DEFAULT_RESAMPLES
    ks: tuple[int, ...] = DEFAULT_KS
    group_by: str | None = None
    cache_dir: str | os.PathLike | None = None  # [--cache-dir] default: $SNAPBENCH_CACHE or ~/.cache/snapbench
    # [--no-cache] the embedding cache: None = every encoder with a fingerprint except cheap ones (toy), or
    # every one when cache_dir is given; True = every encoder with a fingerprint; False = none
    use_cache: bool | None = None
    dataset_format: str | None = None
    images: str | os.PathLike | None = None
    qrels: str | os.PathLike | None = None
    gallery: str | os.PathLike | None = None
    force: bool = False
    report: bool = True
    progress: bool = True
    block_queries: int = BLOCK_QUERIES  # queries per resume checkpoint
    # [--gallery-shard-rows] galleries in the millions: embeddings as shards of this many items (resumable per
    # shard), scores streamed shard by shard (no Q x N, no N x d in memory); None = the gallery in memory
    gallery_shard_rows: int | None = None
    # [--traffic] a snapbench diagnose folder: write DIR/traffic.json (expected R@k under its mix) before the
    # report; not part of the run's fingerprint (it reads the finished reports)
    traffic: str | os.PathLike | None = None
    # [--no-measure] per-query rows psnr, ssim (image variants against the clean image, measured where they
    # are made) and drift_image, drift_text (1 - cos of the encoder's clean and corrupted query embeddings)
    measure: bool = True
    # [--severity-target] s1, s2, ... as measured strengths ("ssim=0.90,0.75,0.60" / "psnr=30,25,20"): each
    # image variant's knob is searched to its level's target; part of the run's fingerprint
    severity_target: Any = None
    # the command that made the folder, recorded in run.json as "command" when it is not "run": a
    # "demo" folder is one `snapbench demo` may replace (it never replaces anyone else's run)
    command: str = "run"
    # [--limit] evaluate the first N queries of the dataset only (a quick look before a long run); stated on
    # every output: the terminal, run.json ("limit") and the report (a run.json note)
    limit: int | None = None


def check_options(opts: RunOptions) -> None:
    """Refuse meaningless options before any work (each error names its parameter)."""
    from ...core.targets import normalize_mode
    from ...engines import check_engine

    check_engine(opts.engine, opts.workers, opts.address)
    for name in ("batch_size", "block_queries", "resamples"):
        positive_int(getattr(opts, name), name)
    positive_int(opts.encoder_actors, "encoder_actors", minimum=0)
    if opts.encoder_actors and opts.engine != "ray":
        raise ConfigError(f"{arg('encoder_actors')} needs the ray engine ({arg('engine')} is {opts.engine!r})",
                          param="encoder_actors")
    if opts.gallery_shard_rows is not None:
        positive_int(opts.gallery_shard_rows, "gallery_shard_rows")
    if opts.limit is not None:
        positive_int(opts.limit, "limit")
    if not opts.ks:
        raise ConfigError("needs at least one cut-off", param="ks")
    int_list(list(opts.ks), "ks")
    choice(opts.variants, _VARIANTS, "variants", what="variant source")
    for m in comma_list(opts.modes, "modes") or ():
        normalize_mode(m, param="modes")
    if opts.traffic is not None:  # a wrong diagnose folder fails now, not after the run
        from ..traffic import check_traffic_dir

        check_traffic_dir(opts.traffic)
    comma_list(opts.conditions, "conditions")
    from ...models.device import check_device

    check_device(opts.device)
    if opts.cache_dir is not None:  # a file named as the cache fails now, not on the first encoded batch
        from ...store.cache import check_cache_dir

        check_cache_dir(opts.cache_dir)
    if opts.severity_target is not None:
        from ...corruptions import parse_severity_target

        if opts.variants == "released":
            raise ConfigError(f"{arg('severity_target')} makes generated variants; the released ones are fixed files",
                              param="severity_target")
        parse_severity_target(opts.severity_target)


@dataclass
class RunResult:
    """What :func:`~snapbench.app.stages.run_benchmark` produced (one encoder's run folder)."""

    out_dir: Path
    modes: list[str]
    conditions: list[str]
    n_queries: int
    n_gallery: int
    dropped: dict[str, str]
    notes: list[str] = field(default_factory=list)
    reports: dict[str, Path] = field(default_factory=dict)
    html: Path | None = None
    elapsed_s: float = 0.0
    # where the query phase spent its time (seconds): "wait_s" waiting for variants ("first_wait_s" for
    # the first: what starting the workers took beyond the gallery), "encode_s" encoding them,
    # "meanwhile_s" encoding the gallery (of every encoder of the run) once the workers had their first
    # queries (with one worker: before the first query), not counted as waiting
    timings: dict[str, float] = field(default_factory=dict)
    # True when the folder held this run already complete with the same settings (nothing was recomputed)
    reused: bool = False
    # with a severity target: how its image variants met it (a snapbench.core.records.TargetOutcome)
    target_outcome: Any = None


@dataclass
class RunSetResult:
    """What :func:`~snapbench.app.stages.run_encoders` produced: one run folder per encoder, by name."""

    out_dir: Path
    runs: dict[str, RunResult]
    elapsed_s: float = 0.0
    # the shared query phase (seconds): "wait_s", "first_wait_s", "meanwhile_s" as in RunResult, and
    # "encode_s[<name>]", each encoder's time in its encoder
    timings: dict[str, float] = field(default_factory=dict)
