"""Ranking, top-k and metric tests, cross-checked against ir_measures (trec_eval) and ranx.

Ties: ir_measures/trec_eval break equal scores by document id (descending) and ranx by its own
internal order, so feeding them tied scores would compare tie rules, not metrics.  Where the data
has ties we therefore hand the references *distinct* integer scores that encode our documented rule
independently of our code: ref = score * N + (N - 1 - column) -- higher score first, then lower
column first.  Scores are small integers so this is exact in float64.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from snapbench.evaluate import (
    Labels,
    first_positive_rank,
    parse_metrics,
    query_stats,
    reject_counts,
    reject_scores,
    set_scores,
    streaming_topk,
    topk_indices,
)
from snapbench.evaluate.metrics import QueryStat

N_Q, N_G = 40, 60


def _data(seed: int, *, ties: bool, graded: bool = False):
    rng = np.random.default_rng(seed)
    if ties:
        scores = rng.integers(0, 6, size=(N_Q, N_G)).astype(np.float64)  # heavy ties everywhere
    else:
        scores = rng.standard_normal((N_Q, N_G))
    rel = np.zeros((N_Q, N_G))
    for q in range(N_Q):
        if q % 7 == 3:
            continue  # zero-GT query
        n = rng.integers(1, 6)
        cols = rng.choice(N_G, n, replace=False)
        rel[q, cols] = rng.integers(1, 4, n) if graded else 1
        if rng.random() < 0.5:  # planted: some positives get boosted scores
            scores[q, cols[0]] += 3 if ties else 2.0
    return scores, rel


def _reference_order(scores: np.ndarray) -> np.ndarray:
    return np.argsort(-scores, axis=1, kind="stable")


# ------------------------------------------------------------------------------ top-k
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64, np.uint8])
@pytest.mark.parametrize("k", [1, 2, 5, 17, 59, 60, 75])
def test_topk_equals_stable_argsort_with_ties(dtype, k):
    rng = np.random.default_rng(k)
    s = rng.integers(0, 4, size=(30, 60)).astype(dtype)  # many ties at every k-boundary
    got = topk_indices(s, k)
    ref = _reference_order(s.astype(np.float64))[:, :k]
    assert got.shape == (30, k)
    np.testing.assert_array_equal(got[:, : min(k, 60)], ref)
    if k > 60:
        assert (got[:, 60:] == -1).all()


@pytest.mark.parametrize("levels", [None, 400, 3])
@pytest.mark.parametrize("k", [1, 7, 20, 50])
def test_topk_large_gallery_equals_stable_argsort(levels, k):
    """Large galleries take the chunk-maxima candidate filter (or fall back under massive ties)."""
    rng = np.random.default_rng(k)
    s = rng.standard_normal((40, 3000)) if levels is None else rng.integers(0, levels, (40, 3000)).astype(float)
    s[::2, ::97] = s.max()  # 31 exact ties at the very top of every other row
    s[1::4, 5::301] = np.sort(s[1::4], axis=1)[:, -k - 1 : -k]  # ties right at the k-boundary
    np.testing.assert_array_equal(topk_indices(s, k), _reference_order(s)[:, :k])
    np.testing.assert_array_equal(topk_indices(s.astype(np.float32), k), _reference_order(s.astype(np.float32))[:, :k])


def test_topk_boundary_ties_are_resolved_by_column():
    s = np.array([[1.0, 5.0, 3.0, 3.0, 3.0, 0.0, 3.0]])
    # sorted: col1 (5), then the 3s at cols 2,3,4,6 in column order
    np.testing.assert_array_equal(topk_indices(s, 3), [[1, 2, 3]])
    np.testing.assert_array_equal(topk_indices(s, 4), [[1, 2, 3, 4]])
    # -0.0 and 0.0 are equal scores
    z = np.array([[0.0, -0.0, 0.0]])
    np.testing.assert_array_equal(topk_indices(z, 2), [[0, 1]])


@pytest.mark.parametrize("chunk", [1, 3, 7, 16, 60, 1000])
@pytest.mark.parametrize("k", [1, 5, 20, 61])
def test_streaming_topk_equals_dense(tmp_path, chunk, k):
    rng = np.random.default_rng(chunk * 100 + k)
    s = rng.integers(0, 5, size=(25, 60)).astype(np.float32)
    path = tmp_path / "s.npy"
    np.save(path, s)
    mm = np.load(path, mmap_mode="r")
    dense = topk_indices(s, k)
    idx, vals = streaming_topk(mm, k, chunk=chunk)
    np.testing.assert_array_equal(idx, dense)
    ok = dense >= 0
    np.testing.assert_array_equal(vals[ok], np.take_along_axis(s, np.maximum(dense, 0), 1)[ok])
    assert np.isnan(vals[~ok]).all()
    # the score-function form
    idx2, _ = streaming_topk(lambda a, b: s[:, a:b], k, chunk=chunk, n_items=60)
    np.testing.assert_array_equal(idx2, dense)


def test_first_positive_rank_matches_full_sort():
    s, rel = _data(3, ties=True)
    lab = Labels.from_dense(rel)
    got = first_positive_rank(s, lab.pos_rows, lab.items)
    order = _reference_order(s)
    for q in range(N_Q):
        pos = np.flatnonzero(rel[q] > 0)
        if pos.size == 0:
            assert np.isnan(got[q])
        else:
            ranks = np.flatnonzero(np.isin(order[q], pos))
            assert got[q] == ranks[0] + 1


# ------------------------------------------------------------------------------ labels
def test_labels_lookup_and_ideal_match_dense():
    _, rel = _data(5, ties=False, graded=True)
    lab = Labels.from_dense(rel)
    rng = np.random.default_rng(0)
    idx = rng.integers(-1, N_G, size=(N_Q, 9))
    want = np.where(idx >= 0, np.take_along_axis(rel, np.maximum(idx, 0), 1), 0)
    np.testing.assert_array_equal(lab.lookup(idx), want)
    ideal = -np.sort(-rel, axis=1)[:, :4]
    np.testing.assert_array_equal(lab.ideal(4), ideal)
    lab2 = Labels.from_lists([{int(j): rel[q, j] for j in np.flatnonzero(rel[q])} for q in range(N_Q)], N_G)
    np.testing.assert_array_equal(lab2.lookup(idx), want)
    assert lab.graded and lab2.graded


def test_parse_metrics():
    assert parse_metrics("hit,mrr", (1, 5)) == ["hit@1", "hit@5", "mrr"]
    assert parse_metrics("recall@3,ndcg@2,mrr@10,reject", (1,)) == [
        "recall@3", "ndcg@2", "mrr@10", "reject_precision", "reject_recall", "reject_f1"]
    assert parse_metrics(None, (1, 10))[:2] == ["hit@1", "hit@10"]
    with pytest.raises(ValueError, match="unknown metric"):
        parse_metrics("precision@5")


# ------------------------------------------------------------------------------ vs references
def _ours(scores, rel, metrics):
    lab = Labels.from_dense(rel)
    idx = topk_indices(scores, 20)
    fr = first_positive_rank(scores, lab.pos_rows, lab.items)
    return query_stats(idx, fr, lab, metrics), lab


def _to_ref(scores, rel, *, distinct: bool):
    qrels, run = {}, {}
    n = scores.shape[1]
    for q in range(scores.shape[0]):
        if not (rel[q] > 0).any():
            continue  # the references score zero-GT queries 0 or drop them; we exclude them (tested below)
        qrels[f"q{q}"] = {f"d{j}": int(rel[q, j]) for j in np.flatnonzero(rel[q] > 0)}
        ref = scores[q] * n + (n - 1 - np.arange(n)) if distinct else scores[q]
        run[f"q{q}"] = {f"d{j}": float(ref[j]) for j in range(n)}
    return qrels, run


@pytest.mark.parametrize("ties,graded", [(False, False), (True, False), (True, True), (False, True)])
def test_metrics_equal_ir_measures_per_query(ties, graded):
    ir_measures = pytest.importorskip("ir_measures")
    from ir_measures import RR, R, Success, nDCG

    scores, rel = _data(11 + ties + 2 * graded, ties=ties, graded=graded)
    ks = (1, 5, 10, 20)
    metrics = parse_metrics("hit,recall,ndcg,mrr", ks)
    ours, lab = _ours(scores, rel, metrics)
    qrels, run = _to_ref(scores, rel, distinct=ties)
    measures = [Success @ k for k in ks] + [R @ k for k in ks] + [nDCG @ k for k in ks] + [RR]
    names = {str(Success @ k): f"hit@{k}" for k in ks}
    names |= {str(R @ k): f"recall@{k}" for k in ks}
    names |= {str(nDCG @ k): f"ndcg@{k}" for k in ks}
    names[str(RR)] = "mrr"
    seen = 0
    for m in ir_measures.iter_calc(measures, qrels, run):
        q = int(m.query_id[1:])
        name = names[str(m.measure)]
        assert ours[name].den[q] == 1.0
        assert ours[name].num[q] == pytest.approx(m.value, abs=1e-12), (name, q)
        seen += 1
    assert seen == len(measures) * len(qrels)
    # zero-GT queries are excluded (den 0), and counted
    zero = lab.n_pos == 0
    assert zero.sum() == N_Q - len(qrels) > 0
    for s in ours.values():
        assert (s.den[zero] == 0).all()


@pytest.mark.skipif(
    not os.environ.get("SNAPBENCH_RANX"),
    reason="ranx's cold numba JIT takes ~100 s on 2 cores; set SNAPBENCH_RANX=1 to run "
    "(bench/bench_evaluate.py also checks ranx per query on 1,000 x 10,000)",
)
def test_hit_rate_equals_ranx():
    """ranx's hit_rate is SnapBench's R@k.  Every metric is checked against ir_measures above;
    ranx is the second, opt-in reference because of its JIT cost."""
    ranx = pytest.importorskip("ranx")
    scores, rel = _data(21, ties=True)
    ours, _ = _ours(scores, rel, ["hit@5"])
    qrels, run = _to_ref(scores, rel, distinct=True)
    rq = ranx.Qrels(qrels)
    res = ranx.evaluate(rq, ranx.Run(run), "hit_rate@5", return_mean=False)
    rows = [int(q[1:]) for q in rq.keys()]  # per-query results come in ranx's query order
    assert 0 < res.mean() < 1
    np.testing.assert_array_equal(ours["hit@5"].num[rows], res)


def test_metrics_by_hand():
    # gallery of 5; query 0 positives {1, 3} with grades 2, 1; query 1 zero-GT
    s = np.array([[0.9, 0.8, 0.7, 0.6, 0.1], [0.5, 0.4, 0.3, 0.2, 0.1]])
    lab = Labels.from_lists([{1: 2.0, 3: 1.0}, []], 5)
    ms = ["hit@1", "hit@2", "recall@2", "recall@4", "ndcg@2", "mrr", "mrr@1"]
    st = query_stats(topk_indices(s, 5), first_positive_rank(s, lab.pos_rows, lab.items), lab, ms)
    v = {m: st[m].num[0] for m in ms}
    assert v["hit@1"] == 0 and v["hit@2"] == 1
    assert v["recall@2"] == 0.5 and v["recall@4"] == 1.0
    idcg = 2 + 1 / np.log2(3)
    assert v["ndcg@2"] == pytest.approx((2 / np.log2(3)) / idcg)
    assert v["mrr"] == 0.5 and v["mrr@1"] == 0.0
    assert all(st[m].den[1] == 0 for m in ms)
    st0 = query_stats(topk_indices(s, 5), first_positive_rank(s, lab.pos_rows, lab.items), lab, ["hit@2"],
                      include_zero_gt=True)
    assert st0["hit@2"].value == 0.5  # zero-GT counted as 0


# ------------------------------------------------------------------------------ set / reject
def _reject(pred_sizes, gold_sizes):
    c = reject_counts(np.asarray(pred_sizes) == 0, np.asarray(gold_sizes) == 0)
    return reject_scores(c["a"].sum(), c["b"].sum(), c["c"].sum()), {k: int(v.sum()) for k, v in c.items()}


def test_reject_metrics_hand_cases():
    # gold empty for q0,q1,q2; prediction empty for q0, q3  -> A=1 (q0), B=1 (q3), C=2 (q1,q2), D=1 (q4)
    r, c = _reject([0, 2, 1, 0, 3], [0, 0, 0, 4, 1])
    assert c == {"a": 1, "b": 1, "c": 2, "d": 1}
    assert r["reject_precision"] == pytest.approx(1 / 2)
    assert r["reject_recall"] == pytest.approx(1 / 3)
    assert r["reject_f1"] == pytest.approx(2 / (2 + 1 + 2))


def test_reject_metrics_all_empty_and_none_empty():
    # every prediction empty (always rejects): A = #zero-GT, B = #normal, C = 0
    r, _ = _reject([0, 0, 0, 0], [0, 0, 3, 1])
    assert r == {"reject_precision": 0.5, "reject_recall": 1.0, "reject_f1": pytest.approx(2 * 2 / (4 + 2))}
    # no prediction empty (never rejects): A = B = 0 -> precision 0/0 undefined (NaN), recall 0
    r, _ = _reject([1, 2, 3, 4], [0, 0, 3, 1])
    assert np.isnan(r["reject_precision"]) and r["reject_recall"] == 0.0 and r["reject_f1"] == 0.0
    # no zero-GT query and no rejection: all three undefined
    r, _ = _reject([1, 2], [1, 1])
    assert all(np.isnan(v) for v in r.values())
    # all gold empty, all rejected: perfect
    r, _ = _reject([0, 0], [0, 0])
    assert r == {"reject_precision": 1.0, "reject_recall": 1.0, "reject_f1": 1.0}


def test_set_metrics_hand_cases_and_reject_stats():
    v = set_scores(tp=[2, 0, 0, 1], pred_size=[4, 0, 3, 1], gold_size=[2, 5, 2, 4])
    np.testing.assert_allclose(v["set_precision"], [0.5, 0.0, 0.0, 1.0])
    np.testing.assert_allclose(v["set_recall"], [1.0, 0.0, 0.0, 0.25])
    np.testing.assert_allclose(v["set_f1"], [2 * 0.5 / 1.5, 0.0, 0.0, 2 * 0.25 / 1.25])
    # through query_stats: the same numbers as ratios of sums, zero-GT excluded from set metrics
    lab = Labels.from_lists([[0, 1], [2], []], 4)
    st = query_stats(np.zeros((3, 1), dtype=np.int64), np.array([1.0, 1.0, np.nan]), lab,
                     ["set_precision", "reject_precision", "reject_recall", "reject_f1"],
                     pred_size=np.array([3, 0, 0]), tp=np.array([2, 0, 0]))
    assert st["set_precision"].value == pytest.approx((2 / 3 + 0) / 2)
    # A = 1 (q2), B = 1 (q1), C = 0
    assert st["reject_precision"].value == 0.5 and st["reject_recall"].value == 1.0
    assert st["reject_f1"].value == pytest.approx(2 / 3)
    assert isinstance(st["reject_f1"], QueryStat)


@pytest.mark.parametrize("workers,block_rows", [(1, 256), (2, 7)])
def test_evaluate_matrix_blocks_threads_and_first_rank(workers, block_rows):
    """evaluate_matrix (row blocks, threads, top-k shortcut for the first-positive rank) agrees with a
    full stable argsort of every row and with the single-pass metrics."""
    from snapbench.evaluate import evaluate_matrix

    scores, rel = _data(31, ties=True)
    lab = Labels.from_dense(rel)
    ms = parse_metrics("hit,recall,ndcg,mrr", (1, 5, 10))
    ev = evaluate_matrix(scores, lab, ms, workers=workers, block_rows=block_rows)
    order = _reference_order(scores)
    for q in range(N_Q):
        pos = np.flatnonzero(rel[q] > 0)
        want = np.flatnonzero(np.isin(order[q], pos))[0] + 1 if pos.size else np.nan
        np.testing.assert_equal(ev.first_rank[q], want)
    assert np.nanmax(ev.first_rank) > 10  # some first positives lie beyond the top-k list
    ref = query_stats(order[:, :10], ev.first_rank, lab, ms)
    for m in ms:
        np.testing.assert_allclose(ev.stats[m].num, ref[m].num, atol=1e-12)


def test_modes_by_hand():
    from snapbench.core.targets import MODES, compose

    ii = np.array([[0.9, 0.1], [0.2, 0.8]])
    tt = np.array([[0.0, 1.0], [0.9, 0.1]])
    it = np.array([[0.5, 0.4], [0.1, 0.3]])
    ti = np.array([[0.3, 0.2], [0.6, 0.0]])
    paths = {"II": ii, "TT": tt, "IT": it, "TI": ti}
    np.testing.assert_allclose(compose("IT2IT", paths), [[0.45, 0.55], [0.55, 0.45]])
    np.testing.assert_allclose(compose("I2IT", paths), [[0.7, 0.25], [0.15, 0.55]])
    np.testing.assert_allclose(compose("T2IT", paths), [[0.15, 0.6], [0.75, 0.05]])
    np.testing.assert_array_equal(compose("T2T", {"TT": tt}), tt)
    np.testing.assert_array_equal(compose("I2I", {"II": ii}), ii)
    assert set(MODES) == {"I2I", "T2T", "IT2IT", "I2IT", "T2IT"}
    with pytest.raises(ValueError, match="needs path"):
        compose("I2IT", {"II": ii})
    with pytest.raises(ValueError, match=r"mode I2IT: path shapes differ \(2, 1\) vs \(2, 2\)"):
        compose("i2it", {"II": ii, "IT": it[:, :1]})


@pytest.mark.parametrize("n", [4, 200])
def test_topk_refuses_nan_scores(n):
    """A NaN has no place in a ranking: argpartition would return duplicate or arbitrary columns."""
    s = np.linspace(0, 1, 2 * n).reshape(2, n)
    s[1, 1] = np.nan
    for k in (1, 2, n):
        with pytest.raises(ValueError, match="NaN"):
            topk_indices(s, k)
    with pytest.raises(ValueError, match="NaN"):
        streaming_topk(s, 2, chunk=3)
    assert np.array_equal(topk_indices(np.where(np.isnan(s), -np.inf, s), n)[1, -1], 1)  # inf is fine


# ------------------------------------------------------------------------------ the metric-family table
def test_metric_names_are_looked_up_in_one_table():
    from snapbench.core.errors import ConfigError
    from snapbench.evaluate import METRIC_FAMILIES
    from snapbench.evaluate.metrics import is_binary_metric, metric_family, ranking_depth

    assert METRIC_FAMILIES.names() == ["hit", "recall", "ndcg", "mrr", "set_precision", "set_recall", "set_f1",
                                       "reject_precision", "reject_recall", "reject_f1", "overlap", "rbo", "flip"]
    assert parse_metrics("hit,mrr,mrr@3,set", ks=(1, 2)) == ["hit@1", "hit@2", "mrr", "mrr@3", "set_precision",
                                                             "set_recall", "set_f1"]
    assert [is_binary_metric(m) for m in ("hit@3", "recall@3", "mrr", "bogus")] == [True, False, False, False]
    assert metric_family("ndcg@7").name == "ndcg" and ranking_depth(["hit@5", "mrr@50", "ndcg@7"]) == 7
    for bad, msg in (("ndgc@10", r"unknown metric 'ndgc@10' \(did you mean 'ndcg'\?\); known: hit\[@k\], recall"),
                     ("set_f1@3", "set_f1 takes no @k"), ("hit@0", "k must be >= 1"),
                     ("precision", "known: .*reject_f1, .*flip\\[@k\\], or the groups 'set', 'reject'")):
        with pytest.raises(ConfigError, match=msg) as exc:
            parse_metrics(bad)
        assert exc.value.param == "metrics"


def test_a_registered_metric_family_is_evaluated_everywhere():
    """An extension point: a family added to the table is parsed, computed per query and reported."""
    from snapbench.evaluate import METRIC_FAMILIES, EvaluationConfig, MetricFamily, evaluate_conditions, evaluate_matrix
    from snapbench.evaluate.metrics import QueryStat as QS

    # "top2": 1 when the first positive is at rank 1 or 2 (= hit@2), written as its own family
    fam = MetricFamily("top2", lambda x, k: QS((x.first_rank <= 2) * x.inc, x.inc), counts="ranking", binary=True)
    METRIC_FAMILIES.register("top2", fam)
    try:
        scores, rel = _data(3, ties=False)
        labels = Labels.from_dense(rel)
        ev = {c: evaluate_matrix(scores + 0.3 * i * np.random.default_rng(i).standard_normal(scores.shape), labels,
                                 ["top2", "hit@2"]) for i, c in enumerate(("clean", "txt/char_add"))}
        rep = evaluate_conditions(ev, labels, EvaluationConfig(metrics="top2,hit@2", resamples=100, workers=1))
        for c in ev:
            assert rep.conditions[c]["top2"] == pytest.approx(rep.conditions[c]["hit@2"], abs=1e-12)
        assert rep.paired["txt/char_add"]["top2"].ci == rep.paired["txt/char_add"]["hit@2"].ci
    finally:
        METRIC_FAMILIES.unregister("top2")
