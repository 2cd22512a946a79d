"""Streaming / dense / ANN top-k against a plain Python sort with the tie rule (score desc, column asc)."""

from __future__ import annotations

import numpy as np
import pytest

from snapbench.core.ranking import StreamingTopK, TopK, rank_matrix, topk, topk_overlap
from snapbench.core.seeding import derive_generator
from snapbench.fusion import MOORIndex, moor
from snapbench.fusion.search import GallerySource, NpyRowReader, ann_available
from snapbench.store import write_trec_run


def _ref_topk(S, k):
    idx, val = [], []
    for row in S:
        order = sorted(range(len(row)), key=lambda j: (-row[j], j))[:k]
        idx.append(order)
        val.append([row[j] for j in order])
    return np.array(idx), np.array(val)


def _tied_scores(Q, N, levels, seed):
    return derive_generator("test-search", seed).integers(0, levels, size=(Q, N)).astype(np.float64)


@pytest.mark.parametrize("chunk", [1, 3, 7, 50, 1000])
@pytest.mark.parametrize("k", [1, 5, 12])
def test_streaming_equals_sorted_with_ties(chunk, k):
    S = _tied_scores(6, 97, levels=4, seed=f"{chunk}-{k}")  # heavy ties at every boundary
    want_i, want_v = _ref_topk(S, k)
    got = topk(S, k, chunk_size=chunk)
    assert np.array_equal(got.indices, want_i) and np.array_equal(got.scores, want_v)


def test_streaming_adversarial_orders_and_small_gallery():
    S = np.tile(np.arange(60, dtype=np.float64), (3, 1))  # ascending: every chunk beats the last
    S[1] = S[1][::-1]
    S[2] = 0.0  # all tied
    for chunk in (1, 4, 60):
        got = topk(S, 5, chunk_size=chunk)
        want_i, want_v = _ref_topk(S, 5)
        assert np.array_equal(got.indices, want_i) and np.array_equal(got.scores, want_v)
    for chunk in (None, 2):
        small = topk(S[:, :3], 10, chunk_size=chunk)  # k > gallery: padded with -1 / NaN, like every TopK
        assert small.indices.shape == small.scores.shape == (3, 10)
        assert np.array_equal(small.indices[:, :3], _ref_topk(S[:, :3], 10)[0])
        assert (small.indices[:, 3:] == -1).all() and np.isnan(small.scores[:, 3:]).all()


def test_streaming_float32_negative_zero_and_errors():
    S = np.array([[0.0, -0.0, 1.0, -0.0, 0.0]], dtype=np.float32)
    got = topk(S, 4, chunk_size=2)
    assert got.indices.tolist() == [[2, 0, 1, 3]]
    acc = StreamingTopK(2, 3)
    with pytest.raises(ValueError, match="NaN"):
        acc.push(np.array([[1.0, np.nan], [0.0, 1.0]]), 0)
    acc = StreamingTopK(1, 3)
    acc.push(np.zeros((1, 4)), 0)
    with pytest.raises(ValueError, match="increasing column order"):
        acc.push(np.zeros((1, 4)), 2)
    with pytest.raises(ValueError, match="k must be"):
        StreamingTopK(1, 0)


def test_rank_matrix_tie_rule():
    S = np.array([[0.5, 0.9, 0.5, 0.1], [1.0, 1.0, 1.0, 1.0]])
    assert rank_matrix(S).tolist() == [[2, 1, 3, 4], [1, 2, 3, 4]]


def _emb(Q=8, N=300, d=16, seed="e"):
    rng = derive_generator("test-search-emb", seed)
    gI = rng.standard_normal((N, d)).astype(np.float32)
    gT = (gI + rng.standard_normal((N, d))).astype(np.float32)
    qI = gI[:Q] + 0.3 * rng.standard_normal((Q, d)).astype(np.float32)
    qT = gT[:Q] + 0.3 * rng.standard_normal((Q, d)).astype(np.float32)
    return qI, qT, gI, gT


def test_moor_topk_streaming_equals_dense(tmp_path):
    qI, qT, gI, gT = _emb()
    dense = moor(qI, qT, gI, gT).scores
    want_i, want_v = _ref_topk(dense, 10)
    np.save(tmp_path / "gI.npy", gI)
    np.save(tmp_path / "gT.npy", gT)
    for index in (
        MOORIndex(chunk_size=37).fit(gI, gT),  # in memory
        MOORIndex(chunk_size=37).fit(str(tmp_path / "gI.npy"), str(tmp_path / "gT.npy")),  # streamed from disk
    ):
        got = index.topk(qI, qT, 10)
        assert np.array_equal(got.indices, want_i)
        assert np.abs(got.scores - want_v).max() < 1e-12
        assert got.result.scores is None and got.result.weights.shape == (8, 4)


def test_moor_topk_duplicate_gallery_rows_tie_by_column():
    qI, qT, gI, gT = _emb(N=40, seed="dup")
    gI = np.concatenate([gI, gI[:5]])
    gT = np.concatenate([gT, gT[:5]])
    index = MOORIndex(chunk_size=9).fit(gI, gT)
    got = index.topk(qI, qT, 45)
    dense = index.scores(qI, qT)
    want_i, _ = _ref_topk(dense, 45)
    assert np.array_equal(got.indices, want_i)
    for q in range(qI.shape[0]):
        pos = {j: p for p, j in enumerate(got.indices[q])}
        for j in range(5):  # the duplicate (column 40 + j) always follows its original (column j)
            assert pos[j] < pos[40 + j]


def test_npy_reader_and_gallery_source_errors(tmp_path):
    a = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.save(tmp_path / "a.npy", a)
    r = NpyRowReader(tmp_path / "a.npy", "g_image")
    assert np.array_equal(np.concatenate([c.copy() for _, c in r.chunks(3)]), a)
    np.save(tmp_path / "f.npy", np.asfortranarray(a))
    assert np.array_equal(np.concatenate([c for _, c in NpyRowReader(tmp_path / "f.npy").chunks(3)]), a)
    raw = (tmp_path / "a.npy").read_bytes()
    (tmp_path / "t.npy").write_bytes(raw[:-5])
    with pytest.raises(ValueError, match="t.npy"):
        list(NpyRowReader(tmp_path / "t.npy", "g_text").chunks(2))
    np.save(tmp_path / "v.npy", np.arange(3.0))
    with pytest.raises(ValueError, match="g_image.*v.npy.*shape"):
        NpyRowReader(tmp_path / "v.npy", "g_image")
    with pytest.raises(ValueError, match="not found"):
        NpyRowReader(tmp_path / "missing.npy", "g_image")
    np.save(tmp_path / "b.npy", a[:3])
    with pytest.raises(ValueError, match="row counts differ"):
        GallerySource.from_any(str(tmp_path / "a.npy"), str(tmp_path / "b.npy"))


def test_write_trec_run(tmp_path):
    res = TopK(indices=np.array([[2, 0], [1, 2]]), scores=np.array([[0.5, 0.25], [1.0, -0.125]]))
    write_trec_run(tmp_path / "r.trec", ["q1", "q2"], ["a", "b", "c"], *res, tag="x")
    lines = (tmp_path / "r.trec").read_text().splitlines()
    assert lines == ["q1 Q0 c 1 0.5 x", "q1 Q0 a 2 0.25 x", "q2 Q0 b 1 1.0 x", "q2 Q0 c 2 -0.125 x"]
    with pytest.raises(ValueError, match="whitespace"):
        write_trec_run(tmp_path / "r.trec", ["q 1", "q2"], ["a", "b", "c"], *res)


def test_write_trec_run_skips_empty_ann_slots(tmp_path):
    # every TopK (ANNIndex.search included) marks empty slots with index -1 and score NaN: not written
    res = TopK(indices=np.array([[1, -1], [0, 2]]), scores=np.array([[0.5, np.nan], [0.75, 0.25]]))
    write_trec_run(tmp_path / "r.trec", ["q1", "q2"], ["a", "b", "c"], *res, tag="x")
    assert (tmp_path / "r.trec").read_text().splitlines() == ["q1 Q0 b 1 0.5 x", "q2 Q0 a 1 0.75 x", "q2 Q0 c 2 0.25 x"]


def test_write_trec_run_is_atomic(tmp_path):
    # a failure half-way leaves the previous run file untouched
    (tmp_path / "r.trec").write_text("old\n")

    class DyingIds(list):
        def __getitem__(self, i):
            if i == 2:
                raise RuntimeError("interrupted")
            return list.__getitem__(self, i)

    res = TopK(indices=np.array([[0, 1], [1, 2]]), scores=np.array([[0.5, 0.25], [1.0, -0.125]]))
    with pytest.raises(RuntimeError):
        write_trec_run(tmp_path / "r.trec", ["q1", "q2"], DyingIds(["a", "b", "c"]), *res)
    assert (tmp_path / "r.trec").read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["r.trec"]


def test_topk_overlap():
    exact = np.array([[1, 2, 3], [4, 5, 6]])
    approx = np.array([[3, 2, 9], [7, 8, 9]])
    assert topk_overlap(exact, approx) == pytest.approx((2 / 3 + 0) / 2)
    assert topk_overlap(exact, approx, k=1) == 0.0
    # empty (-1) slots never count as found
    assert topk_overlap(np.array([[1, -1]]), np.array([[1, -1]])) == pytest.approx(0.5)


@pytest.mark.slow
@pytest.mark.skipif(not ann_available(), reason="faiss not installed")
@pytest.mark.parametrize("kind", ["hnsw", "ivf"])
def test_ann_recall_against_exact(kind):
    qI, qT, gI, gT = _emb(Q=30, N=2000, d=16, seed="ann")
    index = MOORIndex(chunk_size=500).fit(gI, gT)
    exact = index.topk(qI, qT, 10)
    params = {"nlist": 16, "nprobe": 16} if kind == "ivf" else {}
    index.build_ann(kind, **params)
    approx = index.topk(qI, qT, 10, ann=True)
    assert approx.indices.shape == (30, 10)
    assert topk_overlap(exact.indices, approx.indices) >= 0.9
    # approximate scores are inner products with the same composed query vectors
    assert np.abs(approx.scores[:, 0] - exact.scores[:, 0]).max() < 1e-4
