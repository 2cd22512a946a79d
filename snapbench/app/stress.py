"""``snapbench stress``: the record-field stress suite end to end (load -> stress -> encode -> evaluate).

Only records whose text a condition changed are encoded for it; the clean gallery's vectors are reused
for every other record, and the query vectors for every condition.  Vectors are kept in the output
folder, so a rerun with the same fingerprint (dataset, encoder, template, seed) encodes nothing again;
statistics (cut-offs, resamples, resampling unit) are recomputed on every run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..albums.evaluate import (
    RESAMPLE_UNITS,
    AlbumIndex,
    album_stats,
    fixed_by_construction,
    group_rows,
    headline_metric,
    paired_delta,
    too_few_albums,
)
from ..albums.load import AlbumDataset, load_albums
from ..albums.records import DEFAULT_TEMPLATE, AlbumRecord, RecordTemplate
from ..albums.stress import CLEAN, FIELDS, Condition, StressResult, apply_condition, parse_conditions
from ..core.defaults import DEFAULT_CI, DEFAULT_KS, DEFAULT_RESAMPLES, DEFAULT_SEED
from ..core.errors import ConfigError
from ..core.validate import answer_threshold, ci_level, positive_int, unknown_name
from ..data.photobench import SOURCES, album_sort_key, check_language
from ..evaluate.metrics import counted_rows, parse_metrics
from ..store.folders import (
    STRESS_RECORDS_DIR,
    STRESS_VECTORS_DIR,
    StressDir,
    check_resume,
    claim_output_dir,
    remove_stale,
    write_run_json,
)
from ..store.perquery import write_combined_per_query
from .stages.encoders import ZeroRows, call_encoder, open_encoder

__all__ = ["MODE", "StressOptions", "StressOutcome", "field_availability", "run_stress"]

#: The one retrieval mode a record stress moves: the query text against the record text (T→T).
MODE = "T2T"


@dataclass
class StressOptions:
    """Everything ``snapbench stress`` takes besides the dataset, the encoder and the output folder."""

    stress: str | Sequence[str] = "combined-mild"
    ks: Sequence[int] = DEFAULT_KS
    seed: int = DEFAULT_SEED
    resamples: int = DEFAULT_RESAMPLES
    resample_by: str = "album"
    ci: float = DEFAULT_CI
    template: str = DEFAULT_TEMPLATE
    split: str | None = None
    language: str = "en"
    gallery: Path | None = None
    qrels: Path | None = None
    set_threshold: float | None = None
    device: str | None = None
    batch_size: int | None = None
    force: bool = False
    report: bool = True
    progress: bool = True  # False: the model libraries' loading bars are hidden too (as for ``snapbench run``)


@dataclass
class StressOutcome:
    out: Path
    conditions: list[str]
    n_queries: int
    n_records: int
    albums: list[str]
    encoded: dict[str, int] = field(default_factory=dict)  # texts encoded per part (queries, clean, each condition)
    summary: dict[str, Any] = field(default_factory=dict)
    html: Path | None = None
    elapsed_s: float = 0.0


def _record_rows(records: Sequence[AlbumRecord], texts: Sequence[str], template: RecordTemplate,
                 donors: dict[str, str] | None = None):
    """The records file rows: id, album, every field after the stress (absent = null; the place as the
    text names it, geocoded from latitude/longitude when the record has no own place), the text encoded."""
    for r, t in zip(records, texts):
        row = {"id": r.id, "album": r.album, **r.fields(), "place": template.place(r)}
        if donors is not None:
            row["caption_donor"] = donors.get(r.id)
        row["text"] = t
        yield row


def field_availability(records: Sequence[AlbumRecord]) -> dict[str, float]:
    """Share of records holding each field (people: holding at least one face)."""
    n = max(len(records), 1)
    has = {
        "caption": sum(1 for r in records if r.caption),
        "ocr": sum(1 for r in records if r.ocr),
        "time": sum(1 for r in records if r.time),
        "location": sum(1 for r in records if r.has_location),
        "people": sum(1 for r in records if r.faces),
    }
    return {f: has[f] / n for f in FIELDS}


def _encode(enc, texts: list[str], what: str, zeros: ZeroRows) -> np.ndarray:
    """``texts`` encoded in one call (the encoder batches) through :func:`call_encoder`: a failing model is
    a clean error, all-zero rows are counted into ``zeros``.  No texts (a condition that changed no
    record): an empty array, the encoder not called."""
    if not texts:
        return np.zeros((0, 0), dtype=np.float32)
    return call_encoder(enc.encode_texts, texts, what, zeros=zeros)


def run_stress(dataset: str | Path, encoder: str | Any, out: str | Path, opts: StressOptions | None = None, *,
               log: Callable[[str], None] | None = None) -> StressOutcome:
    """Run the stress suite (see the module docstring and docs/albums.md); returns what was written."""
    opts = opts or StressOptions()
    say = log or (lambda _m: None)
    t0 = time.perf_counter()
    if opts.resample_by not in RESAMPLE_UNITS:
        raise ConfigError(unknown_name("resampling unit", opts.resample_by, RESAMPLE_UNITS), param="resample_by")
    positive_int(opts.resamples, "resamples")
    if opts.batch_size is not None:  # checked before the model loads (the toy encoder takes any)
        positive_int(opts.batch_size, "batch_size")
    ci_level(opts.ci, "ci")
    opts = replace(opts, set_threshold=answer_threshold(opts.set_threshold))
    if not opts.ks:
        raise ConfigError("give at least one cut-off k", param="ks")
    check_language(opts.language)
    conds = parse_conditions(opts.stress)
    template = RecordTemplate(opts.template)
    metrics = parse_metrics("hit,recall,ndcg,mrr", [int(k) for k in opts.ks])
    if opts.set_threshold is not None:
        metrics += parse_metrics("reject")
    out = Path(out)
    spec = encoder if isinstance(encoder, str) else f"{type(encoder).__module__}:{type(encoder).__qualname__}"
    fingerprint = {"dataset": str(Path(dataset).resolve()), "split": opts.split, "language": opts.language,
                   "gallery": None if opts.gallery is None else str(Path(opts.gallery).resolve()),
                   "qrels": None if opts.qrels is None else str(Path(opts.qrels).resolve()),
                   "encoder": spec, "record_template": template.source, "seed": int(opts.seed)}
    # the dataset and the options that depend on it (--split, --language, --gallery) are checked before the
    # output folder: a resume refusal must not invite --force for a run whose flags could never apply
    ds = load_albums(dataset, split=opts.split, gallery=opts.gallery, qrels=opts.qrels, language=opts.language)
    claim_output_dir(out, "stress", STRESS_RECORDS_DIR, STRESS_VECTORS_DIR)
    previous = check_resume(out, "stress", fingerprint, force=opts.force)
    sd = StressDir(out)
    if previous is not None and opts.force and previous.get("fingerprint") != fingerprint:
        remove_stale(sd.vectors_dir.glob("*.npy"), [])  # vectors of another set-up
    # the one way run and encode open an encoder; the stress suite keeps its own vectors, so no embedding cache
    enc, _ = open_encoder(encoder, device=opts.device, batch_size=opts.batch_size, use_cache=False,
                          progress=opts.progress)
    if "text" not in set(getattr(enc, "modalities", ("image", "text"))):
        raise ConfigError(f"encoder {spec!r} has no text side; the stress suite encodes record texts", param="encoder")
    # only now that the dataset and the encoder are known to load: a failed start leaves no fingerprint behind
    write_run_json(out, "stress", {"fingerprint": fingerprint, "conditions": [c.id for c in conds]})
    outcome = StressOutcome(out, [CLEAN] + [c.id for c in conds], len(ds.queries), len(ds.records), ds.albums)

    # -- clean: queries and records
    zeros = ZeroRows()  # one warning per kind of text, after the last condition
    clean_texts = template.render_all(ds.records)
    sd.write_records(CLEAN, _record_rows(ds.records, clean_texts, template))
    q_saved = sd.load_vectors("queries")
    if q_saved is None or q_saved[0].shape[0] != len(ds.queries):
        say(f"encoding {len(ds.queries)} queries")
        q_vecs = _encode(enc, [q.question or "" for q in ds.queries], "queries", zeros)
        sd.save_vectors("queries", q_vecs)
        outcome.encoded["queries"] = len(ds.queries)
    else:
        q_vecs = q_saved[0]
    g_saved = sd.load_vectors(CLEAN)
    if g_saved is None or g_saved[0].shape[0] != len(ds.records):
        say(f"encoding {len(ds.records)} clean records")
        g_clean = _encode(enc, clean_texts, "record texts", zeros)
        sd.save_vectors(CLEAN, g_clean)
        outcome.encoded[CLEAN] = len(ds.records)
    else:
        g_clean = g_saved[0]

    index = AlbumIndex.build([ds.query_album(q) for q in ds.queries], [r.album for r in ds.records])
    col = {r.id: j for j, r in enumerate(ds.records)}
    gold = [[col[g] for g, v in ds.qrels.get(q.id, {}).items() if v > 0] for q in ds.queries]
    stats = {CLEAN: album_stats(q_vecs, g_clean, index, gold, metrics, set_threshold=opts.set_threshold)}
    per_cond: dict[str, dict[str, Any]] = {}
    clean_avail = field_availability(ds.records)

    # -- each condition: stress, re-encode the changed texts only
    for cond in conds:
        res: StressResult = apply_condition(ds.records, cond, opts.seed)
        texts = template.render_all(res.records)
        changed = np.asarray([j for j, (a, b) in enumerate(zip(clean_texts, texts)) if a != b], dtype=np.int64)
        saved = sd.load_vectors(cond.id, with_rows=True)
        if saved is not None and np.array_equal(saved[1], changed):
            vecs = saved[0]
        else:
            say(f"{cond.id}: encoding {changed.size} changed record(s)")
            vecs = _encode(enc, [texts[j] for j in changed], "record texts", zeros)
            sd.save_vectors(cond.id, vecs, changed)
            outcome.encoded[cond.id] = int(changed.size)
        g = g_clean.copy()
        if changed.size:
            g[changed] = vecs
        sd.write_records(cond.id, _record_rows(res.records, texts, template,
                                              res.donors if any(n == "caption_swap" for n, _ in cond.steps) else None))
        stats[cond.id] = album_stats(q_vecs, g, index, gold, metrics, set_threshold=opts.set_threshold)
        per_cond[cond.id] = {"result": res, "changed": int(changed.size), "condition": cond}

    zeros.warn()
    gone = sd.remove_other_records([CLEAN, *(c.id for c in conds)])
    if gone:
        say(f"removed the records files of conditions this run does not have: {', '.join(gone)}")

    # -- per-query table, paired summary
    qids = [q.id for q in ds.queries]
    values = {c: {m: _per_query(st[m]) for m in metrics} for c, st in stats.items()}
    write_combined_per_query({MODE: (qids, values)}, sd.per_query)
    summary = _summary(ds, index, conds, per_cond, stats, metrics, opts, clean_avail, template, spec)
    sd.write_summary(summary)
    outcome.summary = summary
    if opts.report:
        from ..render.stress import render_stress_report

        outcome.html = sd.write_report(render_stress_report(summary))
    outcome.elapsed_s = time.perf_counter() - t0
    return outcome


def _per_query(st) -> np.ndarray:
    num = np.asarray(st.num, dtype=np.float64)
    den = np.asarray(st.den, dtype=np.float64)
    return np.divide(num, den, out=np.full(num.shape, np.nan), where=den > 0)


def _levels(st, album_rows: list[np.ndarray], counted: np.ndarray) -> dict[str, Any]:
    """Micro (over queries) and macro (mean over the albums where the metric is defined) of one metric;
    ``n_counted``: the queries it counts (:func:`counted_rows`, as each condition's groups say: with ground
    truth for ranking metrics, every query for reject metrics)."""
    per = [float(np.sum(st.num[r])) / float(np.sum(st.den[r])) for r in album_rows if float(np.sum(st.den[r])) > 0]
    den = float(np.sum(st.den))
    return {"micro": float(np.sum(st.num)) / den if den > 0 else None, "macro": float(np.mean(per)) if per else None,
            "n_counted": int(len(counted)), "n_albums": len(per)}


def _summary(ds: AlbumDataset, index: AlbumIndex, conds: list[Condition], per_cond: dict, stats: dict,
             metrics: list[str], opts: StressOptions, clean_avail: dict, template: RecordTemplate, spec: str) -> dict:
    groups = group_rows([q.tags for q in ds.queries], index, SOURCES)
    n_pos = np.asarray([sum(1 for v in ds.qrels.get(q.id, {}).values() if v > 0) for q in ds.queries])
    n_zero = sum(1 for q in ds.queries if not ds.qrels.get(q.id))
    out: dict[str, Any] = {
        "dataset": str(ds.root), "format": ds.format, "encoder": spec, "mode": MODE,
        "modes_note": ("a record-field stress changes only the text a text encoder indexes (T→T: query text vs "
                       "record text); the photos' image embeddings are untouched, so image modes (T→I, I→I) "
                       "cannot move and are not run"),
        "record_template": template.source, "seed": int(opts.seed), "resamples": int(opts.resamples),
        "resample_by": opts.resample_by, "resample_by_requested": opts.resample_by, "ci_level": float(opts.ci),
        "metrics": metrics,
        "albums": list(index.albums), "n_albums": len(index.albums), "n_queries": len(ds.queries),
        "n_records": len(ds.records), "n_excluded_zero_gt": n_zero,
        "set_threshold": opts.set_threshold, "field_availability": {CLEAN: clean_avail},
        "notes": list(ds.notes), "conditions": {},
    }
    sizes = {a: int(c.size) for a, c in zip(index.albums, index.record_cols)}
    out["album_records"] = sizes
    smallest = min(sizes.values(), default=0)
    fixed = fixed_by_construction(metrics, smallest) if smallest else []
    out["fixed_metrics"] = fixed
    out["metric"] = headline_metric(metrics, fixed)
    if fixed:
        small = sorted((a for a, n in sizes.items() if n == smallest), key=album_sort_key)
        out["notes"].append(
            f"{', '.join(fixed)} cannot fall in album(s) {', '.join(small)} of {smallest} record(s): k is at least "
            f"the album's size, so every record is retrieved and the metric is fixed by construction there"
            + (" (in every album)" if max(sizes.values()) <= min(int(m.partition('@')[2]) for m in fixed) else "")
            + f"; the findings speak of {out['metric']}")
    # per group: the query rows of each of its albums, as positions within the group's rows
    group_albums = {g: [a for a in (np.flatnonzero(np.isin(rows, ar)) for ar in index.query_rows) if a.size]
                    for g, rows in groups.items()}
    out["clean"] = {g: {m: _levels(stats[CLEAN][m].subset(rows), group_albums[g], counted_rows(m, n_pos[rows]))
                        for m in metrics}
                    for g, rows in groups.items()}
    draws: dict = {}  # one bootstrap draw per (unit, group, size), shared by every condition and metric
    few = too_few_albums(len(index.albums)) if opts.resample_by == "album" else None
    if few:
        out["notes"].append(few)
        out["resample_by"] = "query"  # what was done; resample_by_requested keeps what was asked
    for cond in conds:
        info = per_cond[cond.id]
        res: StressResult = info["result"]
        if not info["changed"]:
            unwritten = [f for f in cond.fields if not template.writes(f)]
            why = (f"the record template {template.source!r} does not write {', '.join(unwritten)}"
                   if len(unwritten) == len(cond.fields) else
                   f"no record holds what it removes from {', '.join(cond.fields)} in a way the template writes")
            out["notes"].append(f"stress condition {cond.id!r} changed no record's text ({why}): every query ranks "
                                "as on the clean records, so its deltas are 0 by construction")
        body: dict[str, Any] = {
            "operators": [[n, v] for n, v in cond.steps], "fields": list(cond.fields),
            "changed_records": info["changed"], "field_availability": field_availability(res.records),
            "groups": {},
        }
        clean_chars = sum(len(r.caption or "") for r in ds.records)
        if clean_chars and any(n == "caption_truncate" for n, _ in cond.steps):
            # truncation keeps every caption present: its availability is the characters kept
            body["caption_chars_kept"] = sum(len(r.caption or "") for r in res.records) / clean_chars
        if res.swap_levels:
            # swapped: captions the swap really changed (a donor's caption can equal the record's own)
            body["caption_swap"] = {
                "donor_match": dict(res.swap_levels),
                "captions": sum(1 for r in ds.records if r.caption),
                "swapped": sum(1 for a, b in zip(ds.records, res.records) if a.caption and a.caption != b.caption),
            }
        for gname, rows in groups.items():
            album_rows = group_albums[gname]
            unit = opts.resample_by if gname in ("all",) or gname.startswith("source=") else "query"
            body["groups"][gname] = {
                m: paired_delta(stats[CLEAN][m].subset(rows), stats[cond.id][m].subset(rows), album_rows,
                                resample_by=unit, resamples=opts.resamples, seed=opts.seed, level=opts.ci,
                                key=gname, counted=counted_rows(m, n_pos[rows]), draws=draws)
                for m in metrics
            }
        out["conditions"][cond.id] = body
    return out
