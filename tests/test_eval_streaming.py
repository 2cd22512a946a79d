"""Evaluating column chunks (gallery shards) equals evaluating the whole matrix: the same top-k with
the same tie rule, the same first-positive ranks, the same per-query metric values."""

from __future__ import annotations

import numpy as np
import pytest

from snapbench.evaluate import evaluate_matrix
from snapbench.evaluate.metrics import Labels
from snapbench.evaluate.streaming import evaluate_column_chunks

METRICS = ["hit@1", "hit@5", "recall@5", "ndcg@10", "mrr", "set_precision", "set_recall", "set_f1"]


def _case(seed: int, q: int = 40, n: int = 53):
    rng = np.random.default_rng(seed)
    scores = rng.integers(0, 6, size=(q, n)).astype(np.float64)  # many ties, on purpose
    gold = []
    for i in range(q):
        k = int(rng.integers(0, 4))  # zero-GT queries included
        gold.append({int(c): float(rng.integers(1, 3)) for c in rng.choice(n, size=k, replace=False)})
    return scores, Labels.from_lists(gold, n)


@pytest.mark.parametrize("chunk", [1, 7, 53, 100])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_chunks_equal_the_whole_matrix(seed, chunk):
    scores, labels = _case(seed)

    def chunks():
        for a in range(0, scores.shape[1], chunk):
            yield a, scores[:, a : a + chunk]

    ref = evaluate_matrix(scores, labels, METRICS, set_threshold=3.0)
    got = evaluate_column_chunks(chunks, labels, METRICS, set_threshold=3.0)
    assert np.array_equal(np.nan_to_num(ref.first_rank, nan=-1), np.nan_to_num(got.first_rank, nan=-1))
    for m in METRICS:
        assert np.array_equal(ref.stats[m].num, got.stats[m].num), m
        assert np.array_equal(ref.stats[m].den, got.stats[m].den), m


def test_chunks_out_of_order_or_incomplete_are_refused():
    scores, labels = _case(3)
    with pytest.raises(ValueError, match="in order"):
        evaluate_column_chunks(lambda: [(10, scores[:, 10:]), (0, scores[:, :10])], labels, ["hit@1"])
    with pytest.raises(ValueError, match="cover 50 gallery items"):
        evaluate_column_chunks(lambda: [(0, scores[:, :50])], labels, ["hit@1"])
