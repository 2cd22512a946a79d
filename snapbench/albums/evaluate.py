"""Per-album retrieval and the paired statistics of a stress condition against the clean records.

* **Retrieval**: each query ranks only its own album's records (cosine similarity of the query text
  and the record text); metrics come from :func:`snapbench.evaluate.condition.evaluate_matrix`, album
  by album, and are put back in query order.
* **Micro** = the metric over queries (Σnum/Σden over every counted query); **macro** = the mean over
  albums of each album's micro value (PAL-Bench's macro over users; an album where the metric is
  undefined -- no query with ground truth -- is left out).
* **Paired CI** of the delta (stressed - clean): ``resample_by="query"`` resamples the counted
  queries (:func:`snapbench.evaluate.paired.bootstrap_counts`, as ``snapbench evaluate``) and gives a
  CI for the micro delta; ``resample_by="album"`` resamples albums (PAL-Bench: 10^4 user-level
  resamples) and gives CIs for both micro and macro deltas.  With fewer than
  :data:`MIN_ALBUMS` albums an album bootstrap's interval rests on the spread of a handful of units:
  too narrow (it holds the true change less often than its level says) and lumpy (3 albums: 10
  distinct multisets), so it is not computed: the CI falls back to resampling queries and the result
  says so (``resampled``, ``note``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..core.vectors import l2_normalize
from ..evaluate.condition import evaluate_matrix
from ..evaluate.labels import Labels
from ..evaluate.metrics import QueryStat, safe_ratio
from ..evaluate.paired import bootstrap_counts, bootstrap_values, percentile_ci

__all__ = ["MIN_ALBUMS", "RESAMPLE_UNITS", "AlbumIndex", "album_stats", "fixed_by_construction", "headline_metric",
           "paired_delta", "too_few_albums"]

#: Fewest albums an album-level bootstrap is computed for (below it the CI resamples queries).
MIN_ALBUMS = 10
RESAMPLE_UNITS: tuple[str, ...] = ("album", "query")


def too_few_albums(n_albums: int) -> str | None:
    """The plain words when ``n_albums`` are too few to resample albums, else ``None``."""
    if n_albums >= MIN_ALBUMS:
        return None
    albums = f"{n_albums} album" + ("" if n_albums == 1 else "s")
    return (f"{albums} {'is' if n_albums == 1 else 'are'} too few to resample albums (an album bootstrap needs at "
            f"least {MIN_ALBUMS}: its interval would rest on the spread of only {albums}, so it would come out too "
            "narrow, holding the true change less often than its level says, and lumpy, from few distinct "
            "resamples): the CIs resample queries instead, and no CI is given for the macro delta")


def fixed_by_construction(metrics: Sequence[str], min_records: int) -> list[str]:
    """The hit@k and recall@k of ``metrics`` that cannot move in the smallest album: with k at least
    its number of records every record is retrieved, so every query with ground truth scores 1 there
    whatever the stress (ndcg@k still moves: the order within the k counts)."""
    out = []
    for m in metrics:
        fam, _, k = m.partition("@")
        if fam in ("hit", "recall") and k.isdigit() and int(k) >= min_records:
            out.append(m)
    return out


def headline_metric(metrics: Sequence[str], fixed: Sequence[str] = ()) -> str:
    """The metric findings speak of: recall@10 (PhotoBench's) when evaluated and able to move, else
    hit@1, else the first recall@k, else the first metric that can move (``fixed``: those that cannot)."""
    free = [m for m in metrics if m not in set(fixed)] or list(metrics)
    for m in ("recall@10", "hit@1", *[m for m in free if m.startswith("recall@")], *free):
        if m in free:
            return m
    return free[0]


@dataclass(frozen=True)
class AlbumIndex:
    """Which query rows and record columns belong to each album (in album order)."""

    albums: tuple[str, ...]
    query_rows: tuple[np.ndarray, ...]
    record_cols: tuple[np.ndarray, ...]
    query_album: np.ndarray  # album number of each query row

    @classmethod
    def build(cls, query_albums: Sequence[str], record_albums: Sequence[str]) -> AlbumIndex:
        albums = tuple(dict.fromkeys(record_albums))
        qa = np.asarray([albums.index(a) for a in query_albums], dtype=np.int64)
        ra = np.asarray([albums.index(a) for a in record_albums], dtype=np.int64)
        return cls(albums, tuple(np.flatnonzero(qa == i) for i in range(len(albums))),
                   tuple(np.flatnonzero(ra == i) for i in range(len(albums))), qa)


def album_stats(q_vecs: np.ndarray, g_vecs: np.ndarray, index: AlbumIndex, gold: Sequence[Sequence[int]],
                metrics: Sequence[str], *, set_threshold: float | None = None) -> dict[str, QueryStat]:
    """Per-query :class:`QueryStat` of ``metrics`` (query order), each query ranking only its album.

    ``gold[i]``: the record columns relevant to query i (global column numbers, in its album)."""
    q = l2_normalize(np.asarray(q_vecs, dtype=np.float32))
    g = l2_normalize(np.asarray(g_vecs, dtype=np.float32))
    n_q = q.shape[0]
    num = {m: np.zeros(n_q) for m in metrics}
    den = {m: np.zeros(n_q) for m in metrics}
    for a, rows, cols in zip(index.albums, index.query_rows, index.record_cols):
        if not rows.size:
            continue
        local = {int(c): j for j, c in enumerate(cols)}
        labels = Labels.from_lists([[local[int(c)] for c in gold[r]] for r in rows], len(cols))
        scores = q[rows] @ g[cols].T
        ev = evaluate_matrix(scores.astype(np.float64), labels, metrics, name=f"album {a}",
                             set_threshold=set_threshold)
        for m in metrics:
            num[m][rows] = ev.stats[m].num
            den[m][rows] = ev.stats[m].den
    return {m: QueryStat(num[m], den[m]) for m in metrics}


def _album_values(st: QueryStat, rows: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    return (np.array([st.num[r].sum() for r in rows], dtype=np.float64),
            np.array([st.den[r].sum() for r in rows], dtype=np.float64))


def _macro(num: np.ndarray, den: np.ndarray) -> float:
    ok = den > 0
    return float(np.mean(num[ok] / den[ok])) if ok.any() else float("nan")


def paired_delta(clean: QueryStat, stressed: QueryStat, album_rows: Sequence[np.ndarray], *, resample_by: str,
                 resamples: int, seed: int, level: float, key: str, counted: np.ndarray | None = None,
                 draws: dict | None = None) -> dict:
    """Clean, stressed and delta (stressed - clean), micro and macro, with the CI(s) (module docstring).

    ``album_rows``: the query rows of each album (within the rows of ``clean``/``stressed``);
    ``counted``: the rows the metric counts, which a query bootstrap resamples
    (:func:`snapbench.evaluate.metrics.counted_rows`: every query for reject metrics); default the
    rows with a non-zero denominator.  ``draws``: a dict the caller keeps across calls, so conditions and
    metrics that resample the same number of units with the same key share one draw (computed once)."""
    draws = {} if draws is None else draws

    def counts(n: int, unit: str) -> np.ndarray:
        k = (unit, key, n)
        if k not in draws:
            draws[k] = bootstrap_counts(n, resamples, seed, key=f"{unit}:{key}")
        return draws[k]

    cn, cd = _album_values(clean, album_rows)
    sn, sd = _album_values(stressed, album_rows)
    out: dict = {
        "clean": safe_ratio(float(cn.sum()), float(cd.sum())),
        "stressed": safe_ratio(float(sn.sum()), float(sd.sum())),
        "clean_macro": _macro(cn, cd),
        "stressed_macro": _macro(sn, sd),
    }
    out["delta"] = out["stressed"] - out["clean"]
    out["delta_macro"] = out["stressed_macro"] - out["clean_macro"]
    n_albums = int(sum(1 for d in cd if d > 0))
    out["n_queries"] = int(len(clean.den))
    rows = np.flatnonzero(np.asarray(clean.den) > 0) if counted is None else np.asarray(counted, dtype=np.int64)
    out["n_counted"] = int(rows.size)  # the queries the metric counts (and a query bootstrap resamples)
    out["n_albums"] = n_albums
    out["resample_by"] = resample_by
    note = too_few_albums(n_albums) if resample_by == "album" else None
    if resample_by == "album" and note is None:
        w = counts(len(album_rows), "albums")
        with np.errstate(invalid="ignore", divide="ignore"):
            micro = (w @ sn) / (w @ sd) - (w @ cn) / (w @ cd)
            ok = cd > 0
            val_c = np.where(ok, cn / np.where(ok, cd, 1), 0.0)
            val_s = np.where(ok, sn / np.where(ok, sd, 1), 0.0)
            wk = w * ok
            macro = (wk @ (val_s - val_c)) / wk.sum(axis=1)
        lo, hi = percentile_ci(np.stack([micro, macro], axis=1), level)
        out["ci"] = [float(lo[0]), float(hi[0])]
        out["ci_macro"] = [float(lo[1]), float(hi[1])]
        out["resampled"] = "album"
    else:
        if rows.size:
            w = counts(rows.size, "queries")
            vals = bootstrap_values([clean, stressed], w, rows)
            lo, hi = percentile_ci(vals[:, 1] - vals[:, 0], level)
            out["ci"] = [float(lo), float(hi)]
        else:
            out["ci"] = None
        out["ci_macro"] = None
        out["resampled"] = "query"
    if note:
        out["note"] = note
    return out


def group_rows(query_tags: Sequence[Mapping], index: AlbumIndex, sources: Sequence[str]) -> dict[str, np.ndarray]:
    """The report's groups: ``all``, ``source=<S>`` for each PhotoBench source type present, ``album=<A>``."""
    n = len(query_tags)
    out = {"all": np.arange(n)}
    for s in sources:
        r = np.flatnonzero([t.get("source") == s for t in query_tags])
        if r.size:
            out[f"source={s}"] = r
    for a, rows in zip(index.albums, index.query_rows):
        if rows.size:
            out[f"album={a}"] = rows
    return out


