"""The encode + score step: corrupted query set + gallery + encoder -> path score matrices.

Reads the output of ``snapbench corrupt`` (``DIR/manifest.jsonl``) and a gallery (a manifest file,
JSONL or JSON list of ``{"id", "image", "caption"}`` with image paths relative to the manifest, or
any sequence of objects with ``id``, ``image``, ``caption`` attributes, either of the last two
possibly ``None``), and writes::

    OUT/query_ids.txt, OUT/gallery_ids.txt
    OUT/embeddings/gallery.image.npy, gallery.text.npy          (N x d, float32)
    OUT/embeddings/<condition file name>.image.npy / .text.npy   (Q x d, float32)
    OUT/paths/<condition file name>.{II,TT,IT,TI}.npy            (Q x N cosine scores)
    OUT/paths/query_ids.txt, OUT/paths/gallery_ids.txt
    OUT/dropped_queries.json                                     {query id: reason}
    OUT/run.json                                                 kind "encode": inputs, encoder, conditions, paths
    OUT/paths/<condition file name>.npy, OUT/embeddings/*.joint.npy   only for a native joint model

A model with a native joint embedding (``joint = True`` and ``encode_queries(images, texts)``)
also gets its own IT→IT scores: ``encode_queries`` embeds each query (image, question) and each
gallery item (image, caption), and ``paths/<condition>.npy`` holds their cosines, which
``snapbench evaluate OUT/paths`` (no ``--mode``) scores.

``OUT/paths`` is what ``snapbench evaluate --mode IT2IT`` and ``snapbench moor --paths-dir`` read;
``OUT/embeddings`` is what exact MOOR (with whitening) needs.

Decisions:

* One encoding stage with ``snapbench run``: the gallery goes through
  :func:`snapbench.app.stages.gallery.encode_gallery` and every batch through
  :func:`snapbench.app.stages.encoders.call_encoder`, so a failing model is the same clean error in
  both, and image and text embeddings of different sizes (two separate models) leave out the
  cross-modal paths IT and TI in both (the one rule of :func:`snapbench.core.targets.plan_targets`).
* Memory is bounded by the batch, not the gallery: images are decoded, encoded and dropped batch by
  batch; only embeddings are kept.  Each distinct variant image (manifest ``sha256``) and question
  is encoded once per run (text conditions share the clean image, image conditions the clean
  question); an :class:`~snapbench.store.cache.CachedEncoder` makes that once per model across runs.
* A path is written only when both of its sides exist for *every* query and gallery item, the
  encoder encodes them and (IT, TI) the two sides share one embedding space: II needs query and gallery images, TT questions and captions, IT query
  images and captions, TI questions and gallery images.  Image-only queries give II (and IT with
  captions); a text-only model gives TT.  The paths left out, and why, are in
  :attr:`EncodeSummary.skipped_paths`.
* ``OUT/embeddings`` and ``OUT/paths`` hold exactly this run's matrices: ``.npy`` files an earlier
  run left there (other conditions, paths, or rows of other queries) are removed at the end, since
  they would be read with this run's id lists.
* Queries without an output under some selected condition are dropped from every condition so all
  states stay paired on the same queries; ``dropped_queries.json`` gives each one's reason.
* A failure (a model error, a foreign cache entry, Ctrl-C) removes what this call wrote into an output
  folder that held no file before it (:func:`snapbench.store.folders.undone_on_failure`): encode does not
  resume its own folder, so a half-written one would only mislead.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._version import __version__
from ..core.conditions import parse_condition
from ..core.defaults import DEFAULT_BATCH_SIZE
from ..core.errors import ConfigError, InputError, SnapbenchError
from ..core.targets import PATH_SIDES, SIDES, TargetPlan, plan_targets, query_sides
from ..core.validate import LIST_MAX, positive_int, unknown_name
from ..corruptions.io import load_image
from ..data.common import read_gallery_manifest
from ..models import Encoder, cosine_path_scores
from ..store import (
    EMBEDDINGS_DIR,
    GALLERY_IDS,
    PATHS_DIR,
    QUERY_IDS,
    EncodeDir,
    claim_output_dir,
    write_ids,
    write_run_json,
)
from ..store.atomic import save_npy_atomic, write_json
from ..store.folders import refuse_unfinished, remove_stale, undone_on_failure
from ..store.jsonl import read_manifest, read_skips
from .stages.encoders import ZeroRows, encode_batches
from .stages.gallery import encode_gallery

__all__ = ["EncodeSummary", "check_conditions", "encode_corrupted", "prepare_out_dir"]


@dataclass
class EncodeSummary:
    out_dir: Path
    conditions: list[str]
    n_queries: int
    n_gallery: int
    dropped_queries: dict[str, str] = field(default_factory=dict)  # id -> reason
    paths: list[str] = field(default_factory=list)  # the paths written, e.g. ["II", "TT", "IT", "TI"]
    skipped_paths: dict[str, str] = field(default_factory=dict)  # path -> why it was not written
    joint: bool = False  # paths/<condition>.npy hold the encoder's native joint IT→IT scores
    modes: list[str] = field(default_factory=list)  # the retrieval modes the written paths give


@dataclass
class _Input:
    """The corrupt output as encode reads it: manifest rows per condition and the paired queries."""

    corrupt_dir: Path
    by_cond: dict[str, dict[str, dict]]
    conditions: list[str]
    query_ids: list[str]
    dropped: dict[str, str]


def prepare_out_dir(out_dir: str | os.PathLike) -> None:
    """Create ``out_dir/embeddings`` and ``out_dir/paths``; raise :class:`OutputError` if ``out_dir``
    cannot hold the outputs (or holds another command's) -- before any encoding is spent."""
    claim_output_dir(out_dir, "encode", EMBEDDINGS_DIR, PATHS_DIR)  # never write into the folder of corrupt, run...


def _condition_ids(conditions: Sequence[str]) -> list[str]:
    ids = []
    for c in conditions:
        try:
            ids.append(parse_condition(c).id)
        except ValueError as exc:  # a user's typo: said as a problem of this parameter
            if isinstance(exc, SnapbenchError) and exc.param is not None:
                raise
            raise ConfigError(exc.problem if isinstance(exc, SnapbenchError) else str(exc), param="conditions") from None
    return ids


def check_conditions(corrupt_dir: str | os.PathLike, conditions: Sequence[str] | None,
                     manifest: Sequence[dict[str, Any]] | None = None) -> list[str]:
    """The conditions to encode: every condition of ``corrupt_dir``'s manifest (``None``), or clean
    and the ``conditions`` given, in order.  An id the folder has no outputs for (a misspelt one, or
    one corrupt did not make) is a :class:`ConfigError` naming the close ids of the folder -- checked
    before any model is loaded.  ``manifest``: its records, when already read."""
    refuse_unfinished(corrupt_dir)
    records = read_manifest(corrupt_dir) if manifest is None else manifest
    have = list(dict.fromkeys(str(ln["condition"]) for ln in records))
    if "clean" not in have:
        raise InputError("manifest.jsonl has no 'clean' outputs", path=corrupt_dir)
    wanted = have if conditions is None else ["clean"] + [c for c in _condition_ids(conditions) if c != "clean"]
    wanted = list(dict.fromkeys(wanted))
    for c in wanted:
        if c not in have:  # the folder's conditions are the known ones
            raise ConfigError(unknown_name("condition", c, have, n=LIST_MAX, where=f" in {corrupt_dir}"),
                              param="conditions")
    return wanted


def _read_input(corrupt_dir: Path, conditions: Sequence[str] | None) -> _Input:
    records = read_manifest(corrupt_dir)
    wanted = check_conditions(corrupt_dir, conditions, records)
    by_cond: dict[str, dict[str, dict]] = {}
    for ln in records:
        by_cond.setdefault(ln["condition"], {})[str(ln["id"])] = ln
    skips = {(str(s["id"]), s.get("condition")): str(s.get("reason")) for s in read_skips(corrupt_dir)}
    query_ids = list(by_cond["clean"])
    dropped: dict[str, str] = {}
    for c in wanted:
        for q in query_ids:
            if q not in by_cond[c] and q not in dropped:
                why = skips.get((q, c)) or skips.get((q, None)) or "see skips.jsonl"
                dropped[q] = f"no output under {c}: {why}"
    query_ids = [q for q in query_ids if q not in dropped]
    if not query_ids:
        raise InputError("no query has outputs under every selected condition", path=corrupt_dir)
    return _Input(corrupt_dir, by_cond, wanted, query_ids, dropped)


def _side_reason(side: str, queries: bool, missing: list[str], total: int) -> str:
    one, many = ("query", "queries") if queries else ("gallery item", "gallery items")
    noun = "image" if side == "image" else ("question" if queries else "caption")
    if len(missing) == total:
        return f"no {one} has a{'n' if noun[0] in 'aeiou' else ''} {noun}"
    ex = ", ".join(missing[:3]) + (", ..." if len(missing) > 3 else "")
    return f"{len(missing)} of {total} {many} have no {noun} ({ex}); a path needs it for every one"


def _side_reasons(inp: _Input, items: Sequence[Any], encoder: Any) -> dict[str, str]:
    """Side (``"query image"``, ``"gallery text"``..., as :func:`~snapbench.core.targets.plan_targets`
    reads them) -> why that side cannot be encoded (absent: it can)."""
    clean = inp.by_cond["clean"]
    mods = frozenset(getattr(encoder, "modalities", None) or SIDES)
    lacking = {
        "query image": [q for q in inp.query_ids if not clean[q].get("path")],
        "query text": [q for q in inp.query_ids if clean[q].get("question") is None],
        "gallery image": [g.id for g in items if g.image is None],
        "gallery text": [g.id for g in items if g.caption is None],
    }
    why: dict[str, str] = {}
    for key, miss in lacking.items():
        who, side = key.split()
        if side not in mods:
            why[key] = f"encoder {getattr(encoder, 'name', '?')!r} does not encode {side}s"
        elif miss:
            why[key] = _side_reason(side, who == "query", miss, len(inp.query_ids) if who == "query" else len(items))
    return why


def _plan(why: dict[str, str], dims: dict[str, int] | None = None) -> TargetPlan:
    """The :class:`~snapbench.core.targets.TargetPlan` of the sides not in ``why`` (``dims``: side ->
    embedding size, once known): encode writes its ``available`` paths."""
    return plan_targets([s for s in SIDES if f"query {s}" not in why], [s for s in SIDES if f"gallery {s}" not in why],
                        why=why, dims=dims)


class _Ticks:
    """``progress(stage, done, total)`` as the progress display the gallery stage drives."""

    def __init__(self, progress: Callable[[str, int, int], None] | None) -> None:
        self.progress, self.state = progress, {}

    _STAGES = {"encode gallery images": "gallery images", "encode gallery texts": "gallery captions"}

    def add(self, description: str, total: int) -> str:
        stage = self._STAGES.get(description, description)
        self.state[stage] = [0, total]
        return stage

    def advance(self, task: str, n: int = 1) -> None:
        done = self.state[task]
        done[0] += n
        if self.progress is not None:
            self.progress(task, done[0], done[1])


def _encode_queries(inp: _Input, encoder: Any, need: frozenset[str], batch_size: int,
                    out: EncodeDir) -> dict[str, dict[str, np.ndarray]]:
    """Each condition's query embeddings of the sides in ``need``, each distinct image (sha256) and
    question once."""
    zeros = ZeroRows()  # one warning per side for all conditions (pipeline.encoding)
    image_memo: dict[str, np.ndarray] = {}  # sha256 of the variant file -> embedding
    text_memo: dict[str, np.ndarray] = {}
    result: dict[str, dict[str, np.ndarray]] = {}
    for cond in inp.conditions:
        rows = [inp.by_cond[cond][q] for q in inp.query_ids]
        result[cond] = {}
        if "image" in need:
            for r in rows:
                if not r.get("path") or not r.get("sha256"):
                    raise InputError(f"query {r['id']!r} under {cond} has no image file in manifest.jsonl", path=inp.corrupt_dir)
            files = {r["sha256"]: inp.corrupt_dir / r["path"] for r in rows}
            todo = [k for k in dict.fromkeys(r["sha256"] for r in rows) if k not in image_memo]
            if todo:
                embs = encode_batches(encoder.encode_images, [files[k] for k in todo], "query images",
                                      batch_size=batch_size, load=load_image, zeros=zeros)
                image_memo.update(zip(todo, embs))
            result[cond]["image"] = np.stack([image_memo[r["sha256"]] for r in rows])
        if "text" in need:
            for r in rows:
                if r.get("question") is None:
                    raise InputError(f"query {r['id']!r} under {cond} has no question in manifest.jsonl", path=inp.corrupt_dir)
            todo_txt = [t for t in dict.fromkeys(r["question"] for r in rows) if t not in text_memo]
            if todo_txt:
                text_memo.update(zip(todo_txt, encode_batches(encoder.encode_texts, todo_txt, "questions", batch_size=batch_size,
                                                                  zeros=zeros)))
            result[cond]["text"] = np.stack([text_memo[r["question"]] for r in rows])
        for side, arr in result[cond].items():
            save_npy_atomic(out.embedding(cond, side), arr)
    zeros.warn()
    return result


def _joint_scores(inp: _Input, items: Sequence[Any], encoder: Any, batch_size: int, out: EncodeDir,
                  progress: _Ticks) -> list[Path]:
    """A native joint model's own IT→IT scores: ``paths/<condition>.npy`` (+ ``*.joint.npy`` embeddings)."""
    def joint(batch: list) -> Any:
        return encoder.encode_queries([x[0] for x in batch], [x[1] for x in batch])

    task = progress.add("gallery items (joint)", len(items))
    g = encode_batches(joint, list(items), "gallery items (joint)", batch_size=batch_size,
                       load=lambda it: (load_image(it.image), it.caption), on_batch=lambda n: progress.advance(task, n))
    written = [out.embedding(None, "joint")]
    save_npy_atomic(written[0], g)
    for cond in inp.conditions:
        rows = [inp.by_cond[cond][q] for q in inp.query_ids]
        pairs = list(dict.fromkeys((r["path"], r["question"]) for r in rows))
        emb = encode_batches(joint, pairs, "queries (joint)", batch_size=batch_size,
                             load=lambda k: (load_image(inp.corrupt_dir / k[0]), k[1]))
        memo = dict(zip(pairs, emb))
        q = np.stack([memo[(r["path"], r["question"])] for r in rows])
        # the cosine of the joint embeddings: the same formula as the II path, on joint vectors
        written += [out.embedding(cond, "joint"), out.path_scores(cond, None)]
        save_npy_atomic(written[-2], q)
        save_npy_atomic(written[-1], cosine_path_scores(q, None, g, None)["II"])
    return written


def _write_paths(inp: _Input, q_emb: dict[str, dict[str, np.ndarray]], g_emb: dict[str, np.ndarray], paths: list[str],
                 out: EncodeDir, progress: _Ticks) -> list[Path]:
    written = []
    for n, cond in enumerate(inp.conditions, 1):
        q = q_emb[cond]
        scores = cosine_path_scores(q.get("image"), q.get("text"), g_emb.get("image"), g_emb.get("text"), paths=paths)
        for p in paths:
            written.append(out.path_scores(cond, p))
            save_npy_atomic(written[-1], scores[p])
        if progress.progress is not None:
            progress.progress(cond, n, len(inp.conditions))
    return written


def encode_corrupted(
    corrupt_dir: str | os.PathLike,
    gallery: str | os.PathLike | Sequence[Any],
    encoder: Encoder,
    out_dir: str | os.PathLike,
    *,
    conditions: Sequence[str] | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    progress: Callable[[str, int, int], None] | None = None,
) -> EncodeSummary:
    """Encode a corrupted query set and a gallery with ``encoder``; write embeddings and path scores.

    ``gallery``: a manifest path or a sequence of objects with ``id``, ``image`` (path or ``None``)
    and ``caption`` (str or ``None``).  ``conditions`` restricts the conditions encoded (``clean``
    is always included).  ``batch_size``: images decoded (and passed to the encoder) at a time;
    memory grows with it, not with the gallery.  ``progress(stage, done, total)`` is called after
    each gallery batch (stage ``"gallery images"`` / ``"gallery captions"``, counting items) and
    after each condition (stage = the condition id, counting conditions).  The encoder's ``modalities``
    (default: both) decide, with the data, which paths are written (module docstring).
    """
    batch_size = positive_int(batch_size, "batch_size")
    corrupt_dir, out = Path(corrupt_dir), EncodeDir(out_dir)
    inp = _read_input(corrupt_dir, conditions)
    items = read_gallery_manifest(Path(gallery)) if isinstance(gallery, (str, os.PathLike)) else list(gallery)
    if not items:
        raise InputError("the gallery is empty")
    gallery_ids = [str(g.id) for g in items]
    if len(set(gallery_ids)) != len(gallery_ids):
        raise InputError(f"duplicate gallery id {next(i for i in gallery_ids if gallery_ids.count(i) > 1)!r}")
    why = _side_reasons(inp, items, encoder)
    plan = _plan(why)
    paths, skipped = list(plan.available), dict(plan.path_skipped)
    joint = bool(getattr(encoder, "joint", False)) and callable(getattr(encoder, "encode_queries", None))
    if joint and why:
        skipped["joint"] = f"native joint scores need images and texts on both sides: {next(iter(why.values()))}"
        joint = False
    if not paths and not joint:
        raise ConfigError("no path can be scored: " + "; ".join(f"{p}: {w}" for p, w in skipped.items()))

    # encode does not resume: a failure (a model error, a foreign cache entry, Ctrl-C) leaves no half-written
    # folder behind; a folder holding an earlier call's output is kept
    with undone_on_failure(out.root):
        prepare_out_dir(out.root)
        return _encode_into(inp, items, gallery, encoder, out, paths, skipped, why, joint, batch_size, progress)


def _encode_into(inp: _Input, items: Sequence[Any], gallery: Any, encoder: Any, out: EncodeDir, paths: list[str],
                 skipped: dict[str, str], why: dict[str, str], joint: bool, batch_size: int,
                 progress: Callable[[str, int, int], None] | None) -> EncodeSummary:
    corrupt_dir = inp.corrupt_dir
    gallery_ids = [str(g.id) for g in items]
    for d in (out.root, out.paths):  # the id lists of the folder, and of its SCORES_DIR
        write_ids(d / QUERY_IDS, inp.query_ids)
        write_ids(d / GALLERY_IDS, gallery_ids)
    write_json(out.dropped_queries, inp.dropped, indent=1)
    ticks = _Ticks(progress)
    g_need = {PATH_SIDES[p][1] for p in paths}
    g_emb = encode_gallery(items, encoder, [s for s in SIDES if s in g_need], batch_size=batch_size, bar=ticks).sides
    written = []
    for side, arr in g_emb.items():
        written.append(out.embedding(None, side))
        save_npy_atomic(written[-1], arr)
    q_emb = _encode_queries(inp, encoder, query_sides(paths), batch_size, out)
    written += [out.embedding(c, side) for c, per in q_emb.items() for side in per]
    dims = {side: int(a.shape[1]) for side, a in g_emb.items()} | {s: int(a.shape[1]) for per in q_emb.values() for s, a in per.items()}
    plan = _plan(why, dims)
    paths = list(plan.available)
    skipped.update(plan.path_skipped)
    if not paths and not joint:
        raise ConfigError("no path can be scored: " + "; ".join(f"{p}: {w}" for p, w in skipped.items()))
    written += _write_paths(inp, q_emb, g_emb, paths, out, ticks)
    if joint:
        written += _joint_scores(inp, items, encoder, batch_size, out, ticks)
    # Files an earlier run left (other conditions, paths or sides, other query rows) would be read
    # with this run's id lists: remove them.
    remove_stale([f for d in (out.embeddings, out.paths) for f in d.glob("*.npy")], written)
    write_run_json(out.root, "encode", {
        "snapbench_version": __version__, "corrupt_dir": str(corrupt_dir.resolve()),
        "gallery": str(Path(gallery).resolve()) if isinstance(gallery, (str, os.PathLike)) else None,
        "encoder": str(getattr(encoder, "name", type(encoder).__name__)), "conditions": inp.conditions,
        "paths": paths, "joint": joint, "n_queries": len(inp.query_ids), "n_gallery": len(items)})
    return EncodeSummary(out.root, inp.conditions, len(inp.query_ids), len(items), inp.dropped, paths,
                         {p: w for p, w in skipped.items() if p not in paths}, joint,
                         list(plan.modes))
