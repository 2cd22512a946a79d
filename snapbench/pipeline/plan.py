"""What a run evaluates: modes from the sides the data and model have, conditions, sources."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..conditions import JOINT_PAIRS, Condition, parse_condition
from ..errors import ConfigError, InputError
from ..modes import MODES as MODE_WEIGHTS
from ..modes import PATH_SIDES

MODES: tuple[str, ...] = tuple(MODE_WEIGHTS)
BLOCK_QUERIES = 16
BASELINES: tuple[str, ...] = ("comb_sum", "rrf")
RUN_SCHEMA = 1


@dataclass
class RunOptions:
    """Everything ``snapbench run`` takes besides the dataset and the encoder (CLI flags in brackets)."""

    modes: Sequence[str] | None = None  # [--modes] default: every mode the data and the model allow
    conditions: Sequence[str] | None = None  # [--conditions] default: the 54 states
    # [--joint/--no-joint] the paper's 18 joint conditions; None: with the default conditions, not with
    # an explicit list (which is then run exactly, plus the parts of the joint ids it names)
    joint: bool | None = None
    variants: str = "generated"  # [--variants] generated | released
    seed: int = 0
    grid: str | os.PathLike | Mapping[str, Any] | None = None
    device: str | None = None
    batch_size: int = 32
    workers: int = 1  # [--workers] processes (local), CPUs of a local Ray, or tasks at once on a cluster
    engine: str = "local"  # [--engine] local | ray: where variants are generated
    # [--actors] with engine="ray": encode on this many Ray actors (one model load each, a GPU each when
    # the cluster has them); 0 = encode in this process
    encoder_actors: int = 0
    address: str | None = None  # [--address] an existing Ray cluster (engine="ray"); default: start a local one
    resamples: int = 10_000
    ks: tuple[int, ...] = (1, 5, 10, 20)
    group_by: str | None = None
    cache_dir: str | os.PathLike | None = None
    use_cache: bool = True
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
    # [--traffic] a snapbench diagnose folder: write DIR/traffic.json (expected R@k under its mix) before the report
    traffic: str | os.PathLike | None = None


@dataclass
class RunResult:
    """What :func:`run_benchmark` produced."""

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
    # where the query phase spent its time: waiting for variants, encoding them (seconds)
    timings: dict[str, float] = field(default_factory=dict)


# ------------------------------------------------------------------------------------------------
# planning: which modes, conditions and sources a run needs
# ------------------------------------------------------------------------------------------------


def image_source(cond: Condition) -> str:
    return cond.image_part.id if cond.kind in ("image", "joint") else "clean"


def text_source(cond: Condition) -> str:
    return cond.text_part.id if cond.kind in ("text", "joint") else "clean"


def available_sides(dataset: Any, encoder: Any) -> tuple[dict[str, bool], dict[str, bool], list[str]]:
    """Which query sides and gallery sides can be encoded, and why the others cannot."""
    mods = set(getattr(encoder, "modalities", {"image", "text"}))
    why: list[str] = []
    # The query side exists when some query image file exists: a query whose file is missing or
    # unreadable is dropped from every state (like any query that cannot be produced).  The gallery is
    # fixed, so it is all or nothing: no image files at all -> text-only; some missing -> an error.
    q_has_img = any(q.image is not None and Path(q.image).is_file() for q in dataset.queries)
    g_paths = [g.image for g in dataset.gallery]
    g_found = [p is not None and Path(p).is_file() for p in g_paths]
    g_has_img = bool(g_found) and all(g_found)
    if any(g_found) and not all(g_found):
        missing = [str(p) if p is not None else f"(item {g.id!r} names no image)" for p, ok, g in zip(g_paths, g_found, dataset.gallery) if not ok]
        raise InputError(
            f"{len(missing)} of {len(g_paths)} gallery image files are missing (the gallery is fixed: every item "
            f"needs its image, or none for a text-only run): {', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}"
        )
    q_has_txt = any(q.question for q in dataset.queries)
    n_cap = sum(1 for g in dataset.gallery if g.caption)
    g_has_txt = bool(dataset.gallery) and n_cap == len(dataset.gallery)
    if not q_has_img:
        why.append("the queries have no images")
    if not g_has_img:
        why.append("the gallery has no images")
    if not q_has_txt:
        why.append("the queries have no questions")
    if not g_has_txt:
        why.append("the gallery has no captions" if n_cap == 0 else f"{len(dataset.gallery) - n_cap} gallery items have no caption")
    if "image" not in mods:
        why.append(f"the encoder {getattr(encoder, 'name', '?')} encodes no images")
    if "text" not in mods:
        why.append(f"the encoder {getattr(encoder, 'name', '?')} encodes no text")
    query = {"image": q_has_img and "image" in mods, "text": q_has_txt and "text" in mods}
    gallery = {"image": g_has_img and "image" in mods, "text": g_has_txt and "text" in mods}
    return query, gallery, why


def plan_modes(query: Mapping[str, bool], gallery: Mapping[str, bool], requested: Sequence[str] | None) -> tuple[list[str], list[str], bool]:
    """(modes to evaluate, paths needed, whether MOOR can run) given the sides that exist."""

    paths_ok = {p: query[qs] and gallery[gs] for p, (qs, gs) in PATH_SIDES.items()}
    if requested is None:
        wanted = list(MODES)
    else:
        wanted = []
        for m in requested:
            key = str(m).strip().upper()
            if key not in MODES:
                raise ConfigError(f"unknown mode {m!r}; modes: {', '.join(MODES)}")
            if key not in wanted:
                wanted.append(key)
    modes = [m for m in wanted if all(paths_ok[p] for p in MODE_WEIGHTS[m])]
    moor_ok = all(paths_ok.values())
    needed = sorted({p for m in modes for p in MODE_WEIGHTS[m]} | (set(PATH_SIDES) if moor_ok else set()))
    return modes, needed, moor_ok


def plan_conditions(
    options: RunOptions, dataset: Any, *, use_query_images: bool, use_query_text: bool, grid: Mapping[str, Any]
) -> tuple[list[Condition], list[str]]:
    """The conditions of the run, in order (clean first), and notes on those left out."""
    from ..corruptions import resolve_conditions

    want_joint = options.joint if options.joint is not None else options.conditions is None
    notes: list[str] = []
    if options.variants == "released":
        rel = dataset.released
        if rel is None:
            raise ConfigError(f"dataset {dataset.name!r} ({dataset.format}) ships no variants; use variants='generated'")
        conds = [Condition("clean")]
        txt_ops = sorted({op for per in rel.texts.values() for op in per})
        img_parts = sorted({key for per in rel.images.values() for key in per})
        conds += [Condition("image", image_operator=op, severity=s) for op, s in img_parts]
        conds += [Condition("text", text_operator=op) for op in txt_ops]
        if want_joint:
            conds += [
                Condition("joint", image_operator=i, text_operator=t, severity=s)
                for i, t in JOINT_PAIRS
                for (op, s) in img_parts
                if op == i and t in txt_ops
            ]
        if options.conditions is not None:
            want = {parse_condition(c).id for c in options.conditions} | {"clean"}
            unknown = sorted(want - {c.id for c in conds})
            if unknown:
                raise ConfigError(f"the dataset ships no variants for {', '.join(unknown)}")
            conds = [c for c in conds if c.id in want]
    else:
        conds = resolve_conditions(options.conditions, joint=want_joint, grid=grid)
    kept = []
    for c in conds:
        if c.kind in ("image", "joint") and not use_query_images:
            continue
        if c.kind in ("text", "joint") and not use_query_text:
            continue
        kept.append(c)
    left = len(conds) - len(kept)
    if left:
        kinds = sorted({c.kind for c in conds if c not in kept})
        notes.append(f"{left} {'/'.join(kinds)} condition(s) left out: no evaluated mode reads that side of the query")
    return kept, notes


# ------------------------------------------------------------------------------------------------
