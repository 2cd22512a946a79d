"""Small evaluated runs of several models on the same queries, for the compare tests."""

from __future__ import annotations

import numpy as np

from snapbench.compare import ModelValues
from snapbench.evaluate import EvaluationConfig, Labels, evaluate_conditions, evaluate_matrix

Q, N = 60, 40
CONDITIONS = [
    "clean",
    "img/compression/s1",
    "img/compression/s2",
    "img/mosaic/s1",
    "img/rotation/s2",
    "txt/char_add",
    "joint/compression+char_add/s1",
    "joint/compression+char_add/s2",
]
METRICS = ["hit@1", "hit@5", "recall@5", "ndcg@5", "mrr"]
RESAMPLES, SEED = 400, 7


def labels() -> Labels:
    rng = np.random.default_rng(3)
    gold = [[] if q < 4 else rng.choice(N, int(rng.integers(1, 4)), replace=False).tolist() for q in range(Q)]
    return Labels.from_lists(gold, N)


def scores(model: int, strength: float, fragility: float) -> dict[str, np.ndarray]:
    """Per condition a Q x N score matrix: positives lifted by the model's strength, less under
    corruption (the shift grows with the condition's index times the model's fragility)."""
    lab = labels()
    rel = np.zeros((Q, N))
    rel[lab.pos_rows, lab.items] = 1
    base = np.random.default_rng(100 + model).standard_normal((Q, N))
    out = {}
    for i, c in enumerate(CONDITIONS):
        noise = np.random.default_rng(1000 * model + i).standard_normal((Q, N))
        out[c] = base + 0.8 * noise + rel * (strength - fragility * 0.25 * i)
    return out


def evaluated(n_models: int = 3, metrics=METRICS, set_threshold=None):
    """(query ids, [(name, evals, report)]) with evals[c] the ConditionEval of each condition."""
    lab = labels()
    cfg = EvaluationConfig(metrics=metrics, resamples=RESAMPLES, seed=SEED, workers=1, set_threshold=set_threshold)
    runs = []
    for m in range(n_models):
        sc = scores(m, 2.0 + 0.3 * m, [1.0, 0.5, 1.6, 0.8][m % 4])
        evals = {c: evaluate_matrix(s, lab, cfg.metric_list(), set_threshold=set_threshold) for c, s in sc.items()}
        runs.append((f"model{m}", evals, evaluate_conditions(evals, lab, cfg).to_json()))
    return [f"q{q:02d}" for q in range(Q)], runs


def per_query(evals, metrics) -> dict[str, dict[str, np.ndarray]]:
    """What a run's per-query table holds: num/den per query, NaN where the query is not counted."""
    out = {}
    for c, ev in evals.items():
        out[c] = {}
        for m in metrics:
            num, den = ev.stats[m].num, ev.stats[m].den
            out[c][m] = np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)
    return out


def model_values(qids, runs, metrics=METRICS, mode="IT2IT") -> list[ModelValues]:
    return [ModelValues.from_values(name, qids, {mode: per_query(ev, metrics)}) for name, ev, _ in runs]
