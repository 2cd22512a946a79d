"""Fusion baselines against hand-computed values and loop transcriptions; learned and oracle baselines."""

from __future__ import annotations

import numpy as np
import pytest

from snapbench.core.ranking import first_positive_rank
from snapbench.core.seeding import derive_generator
from snapbench.fusion import (
    MetaFusion,
    PathScores,
    borda,
    comb_mnz,
    comb_sum,
    fusion_baselines,
    joint,
    joint_alpha,
    learned_fusion,
    minmax,
    moor,
    oracle_alpha,
    path_scores,
    rrf,
    text_share,
    wh_img,
    wh_uniform,
)

P1 = np.array([[0.9, 0.1, 0.5, 0.5]])
P2 = np.array([[0.2, 0.8, 0.2, 0.4]])
# ranks under the tie rule (score desc, column asc), worked out by hand:
# P1 -> [1, 4, 2, 3]; P2 -> [3, 1, 4, 2]


def test_rrf_hand_values():
    want = [1 / 61 + 1 / 63, 1 / 64 + 1 / 61, 1 / 62 + 1 / 64, 1 / 63 + 1 / 62]
    assert np.allclose(rrf([P1, P2])[0], want, rtol=0, atol=1e-15)
    assert np.allclose(rrf([P1, P2], k=0)[0], [1 + 1 / 3, 1 / 4 + 1, 1 / 2 + 1 / 4, 1 / 3 + 1 / 2])


def test_borda_hand_values():
    assert borda([P1, P2])[0].tolist() == [4.0, 3.0, 2.0, 3.0]


def test_combsum_combmnz_hand_values():
    assert np.allclose(minmax(P1)[0], [1, 0, 0.5, 0.5]) and np.allclose(minmax(P2)[0], [0, 1, 0, 1 / 3])
    assert np.allclose(comb_sum([P1, P2])[0], [1, 1, 0.5, 0.5 + 1 / 3])
    assert np.allclose(comb_mnz([P1, P2], depth=None)[0], [1, 1, 0.5, 2 * (0.5 + 1 / 3)])
    assert np.allclose(comb_mnz([P1, P2], depth=2)[0], [1, 1, 0.5, 1 / 3])
    assert np.array_equal(minmax(np.full((2, 3), 7.0)), np.zeros((2, 3)))


def _loop_ranks(row):
    order = sorted(range(len(row)), key=lambda j: (-row[j], j))
    ranks = [0] * len(row)
    for pos, j in enumerate(order, start=1):
        ranks[j] = pos
    return ranks


def test_rank_fusions_against_loop_transcriptions():
    rng = derive_generator("test-baselines-loops")
    mats = [np.round(rng.random((4, 25)), 1) for _ in range(3)]  # rounding makes ties
    N = 25
    for q in range(4):
        ranks = [_loop_ranks(m[q]) for m in mats]
        want_rrf = [sum(1.0 / (60 + r[j]) for r in ranks) for j in range(N)]
        want_borda = [sum(N - r[j] for r in ranks) for j in range(N)]
        mm = []
        for m in mats:
            lo, hi = min(m[q]), max(m[q])
            mm.append([(x - lo) / (hi - lo) for x in m[q]])
        want_mnz = []
        for j in range(N):
            hits = [i for i, r in enumerate(ranks) if r[j] <= 10]
            want_mnz.append(sum(mm[i][j] for i in hits) * len(hits))
        assert np.allclose(rrf(mats)[q], want_rrf, atol=1e-15)
        assert np.array_equal(borda(mats)[q], want_borda)
        assert np.allclose(comb_mnz(mats, depth=10)[q], want_mnz, atol=1e-12)


def test_joint_and_whitened_baselines():
    rng = derive_generator("test-baselines-emb")
    gI, gT = rng.standard_normal((30, 5)), rng.standard_normal((30, 5))
    qI, qT = rng.standard_normal((4, 5)), rng.standard_normal((4, 5))
    cos = lambda a, b: (a / np.linalg.norm(a, axis=1, keepdims=True)) @ (b / np.linalg.norm(b, axis=1, keepdims=True)).T
    assert np.allclose(joint(qI, qT, gI, gT), 0.5 * cos(qI, gI) + 0.5 * cos(qT, gT), atol=1e-14)
    assert np.allclose(joint_alpha(cos(qI, gI), cos(qT, gT), 0.8), 0.8 * cos(qI, gI) + 0.2 * cos(qT, gT))
    with pytest.raises(ValueError, match="alpha"):
        joint_alpha(P1, P2, 1.5)
    ps = path_scores(qI, qT, gI, gT)
    assert np.allclose(wh_uniform(ps), (ps.II + ps.TT + ps.IT + ps.TI) / 4)
    assert np.array_equal(wh_img(ps), ps.II)
    allb = fusion_baselines(ps, raw_paths=path_scores(qI, qT, gI, gT, whiten=False))
    assert set(allb) == {"joint", "comb_sum", "comb_mnz", "borda", "rrf", "wh_uniform", "wh_img"}
    assert all(v.shape == (4, 30) for v in allb.values())
    res = moor(qI, qT, gI, gT)
    assert np.allclose(text_share(res.weights), res.text_share)


def test_first_positive_rank_against_loops():
    rng = derive_generator("test-baselines-fpr")
    S = np.round(rng.random((6, 20)), 1)
    rel = [[3, 7], [0], [19, 2, 5], [], [4], [10, 11]]
    rows = np.concatenate([np.full(len(c), q) for q, c in enumerate(rel)]).astype(np.int64)
    order = np.argsort(rows, kind="stable")
    cols = np.concatenate([np.asarray(c, dtype=np.int64) for c in rel])
    got = first_positive_rank(S, rows[order], cols[order])
    for q in range(6):
        ranks = _loop_ranks(S[q])
        if rel[q]:
            assert got[q] == min(ranks[j] for j in rel[q])
        else:
            assert np.isnan(got[q])  # the one contract: no positive -> NaN


def test_oracle_alpha_hand_case():
    A = np.vstack([P1, P1, P1])
    B = np.vstack([P2, P2, P2])
    # query 0: positive col 1 ranks first iff alpha < 3/7 -> grid 0..0.4, closest to 0.5 is 0.4
    # query 1: positive col 0 ranks first iff alpha > 3/7 -> 0.45..1, closest to 0.5 is 0.5
    res = oracle_alpha(A, B, [[1], [0], []])
    assert res.alpha[0] == pytest.approx(0.4) and res.alpha[1] == pytest.approx(0.5) and np.isnan(res.alpha[2])
    assert res.rank[:2].tolist() == [1, 1] and np.isnan(res.rank[2])  # no positive -> NaN
    assert np.allclose(res.scores[0], 0.4 * P1[0] + 0.6 * P2[0])


def _learn_data(Q, N, seed):
    """Half the queries have their positive boosted in s^II, half in s^TT: the best path varies."""
    rng = derive_generator("test-learned", seed)
    paths = [rng.standard_normal((Q, N)) * 0.1 for _ in range(4)]
    rel = []
    good = rng.integers(0, 2, size=Q)  # 0 -> II, 1 -> TT
    for q in range(Q):
        pos = int(rng.integers(0, N))
        rel.append([pos])
        paths[int(good[q])][q, pos] += 0.6
    return PathScores(*paths), rel, good


def test_learned_refuses_overlap_and_fuses():
    pytest.importorskip("sklearn", reason="the learned baselines need scikit-learn (pip install 'snapbench[learned]')")
    tr, tr_rel, _ = _learn_data(80, 40, "train")
    ev, _, ev_good = _learn_data(40, 40, "eval")
    tr_ids = [f"t{i}" for i in range(80)]
    ev_ids = [f"e{i}" for i in range(40)]
    with pytest.raises(ValueError, match="overlap"):
        learned_fusion(tr, tr_rel, ev, train_query_ids=tr_ids, eval_query_ids=ev_ids[:39] + ["t5"])
    for model in ("lr", "gbm"):
        out = learned_fusion(tr, tr_rel, ev, train_query_ids=tr_ids, eval_query_ids=ev_ids, model=model, seed=3)
        assert out.weights.shape == (40, 4) and np.allclose(out.weights.sum(axis=1), 1)
        fused = sum(out.weights[:, j : j + 1] * ev.as_list()[j] for j in range(4))
        assert np.allclose(out.scores, fused)
        # the meta-learner picks up which path holds the signal
        right = out.weights[np.arange(40), np.where(ev_good == 0, 0, 1)]
        assert right.mean() > 0.6, model
    mf = MetaFusion("lr").fit(tr, tr_rel, tr_ids)
    with pytest.raises(ValueError, match="used for training"):
        mf.predict_weights(tr.rows(slice(0, 3)), tr_ids[:3])


def test_learned_single_class_and_bad_model():
    tr, tr_rel, good = _learn_data(20, 30, "single")
    rel = [[int(np.argmax(tr.II[q]))] for q in range(20)]  # the image path always ranks it first
    mf = MetaFusion("gbm").fit(tr, rel, [f"q{i}" for i in range(20)])
    w = mf.predict_weights(tr, [f"x{i}" for i in range(20)])
    assert np.array_equal(w, np.tile([1.0, 0, 0, 0], (20, 1)))
    with pytest.raises(ValueError, match="model"):
        MetaFusion("svm")
