"""Learned meta-fusion baselines LR-Meta and GBM-Meta (the ``learned`` extra).

What they learn: **per-query fusion weights** (not per-pair relevance).  Each query is described by
15 features of its four path score vectors over the gallery — for every path p in (II, TT, IT, TI):
the score std, the z-score of the top score ``(max − mean)/std`` and the top-1/top-2 margin in std
units — plus the Pearson correlations r_TT, r_IT, r_TI with s^II (0 for constant paths).  The
training label is the path that alone ranks the query's first positive highest (ties → the earlier
path in II, TT, IT, TI, so the image anchor wins ties).  A classifier (``lr``: standardised
``LogisticRegression``; ``gbm``: ``HistGradientBoostingClassifier``) predicts class probabilities,
which are used as the fusion weights: ``s = Σ_p P(p | query) · s^p`` (weights sum to 1; a class never
seen in training gets weight 0; if training holds a single class, that path gets weight 1).

Never on the test queries: :meth:`MetaFusion.fit` records the training query ids and
:meth:`MetaFusion.predict_weights` / :func:`learned_fusion` raise ``ValueError`` if any evaluated
query id was used for training.  Randomness (GBM's internal validation split) comes from
``snapbench.core.seeding.derive_generator("meta-fusion", model, seed)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.errors import InputError
from ..core.install_hint import import_extra
from ..core.ranking import first_positive_rank
from ..core.seeding import derive_generator
from ..core.targets import PATHS
from .baselines import relevance_matrix
from .moor import PathScores, path_moments

__all__ = ["LearnedResult", "MetaFusion", "learned_fusion"]


def _import_sklearn():
    import_extra("sklearn", "learned", "the learned baselines need scikit-learn")


def _meta_features(paths: PathScores) -> np.ndarray:
    """(Q x 15) per-query features described in the module docstring."""
    feats = []
    S = paths.as_list()
    centred = []
    stds = []
    for s in S:
        m, c, var, const = path_moments(s)  # constant paths as in moor_from_scores
        sd = np.where(const, 0.0, np.sqrt(var))
        safe = np.where(sd > 0, sd, 1.0)
        if s.shape[1] >= 2:
            top2 = -np.partition(-s, 1, axis=1)[:, :2]
        else:
            top2 = np.repeat(s[:, :1], 2, axis=1)
        z_top = np.where(sd > 0, (top2[:, 0] - m[:, 0]) / safe, 0.0)
        margin = np.where(sd > 0, (top2[:, 0] - top2[:, 1]) / safe, 0.0)
        feats += [sd, z_top, margin]
        centred.append(c)
        stds.append(sd)
    for j in range(1, 4):
        den = stds[0] * stds[j]
        cov = np.einsum("ij,ij->i", centred[0], centred[j]) / S[0].shape[1]
        feats.append(np.divide(cov, den, out=np.zeros_like(cov), where=den > 0))
    return np.stack(feats, axis=1)


def _best_path_labels(paths: PathScores, relevance: Any) -> np.ndarray:
    """Index (0..3 for II, TT, IT, TI) of the single path ranking the first positive highest; -1 for
    queries without positives."""
    R = relevance_matrix(relevance, paths.shape)
    pos = np.nonzero(R)
    ranks = np.stack([first_positive_rank(s, *pos) for s in paths.as_list()], axis=1)
    labels = np.argmin(np.nan_to_num(ranks, nan=np.inf), axis=1)  # first minimum: II wins ties
    return np.where(R.any(axis=1), labels, -1)


@dataclass
class LearnedResult:
    """Fused ``scores`` (Q x N) and per-query ``weights`` (Q x 4, rows sum to 1)."""

    scores: np.ndarray
    weights: np.ndarray


def _ids(ids: Sequence[Any], n: int, name: str) -> list[str]:
    out = [str(i) for i in ids]
    if len(out) != n:
        raise InputError(f"{name}: {len(out)} ids for {n} queries")
    if len(set(out)) != len(out):
        raise InputError(f"{name}: query ids repeat")
    return out


class MetaFusion:
    """LR-Meta (``model="lr"``) or GBM-Meta (``model="gbm"``): learned per-query fusion weights."""

    def __init__(self, model: str = "lr", *, seed: int = 0, **params: Any) -> None:
        if model not in ("lr", "gbm"):
            raise InputError(f"model must be 'lr' or 'gbm', got {model!r}")
        self.model = model
        self.seed = int(seed)
        self.params = params
        self.train_ids_: set[str] = set()
        self._clf: Any = None
        self._classes: np.ndarray | None = None

    def fit(self, paths: PathScores, relevance: Any, query_ids: Sequence[Any]) -> MetaFusion:
        """Fit on training queries (their path scores, relevance and ids)."""
        _import_sklearn()
        ids = _ids(query_ids, paths.shape[0], "train query_ids")
        y = _best_path_labels(paths, relevance)
        keep = y >= 0
        if not keep.any():
            raise InputError("no training query has a positive: cannot learn fusion weights")
        X = _meta_features(paths)[keep]
        y = y[keep]
        self.train_ids_ = set(ids)
        classes = np.unique(y)
        self._classes = classes
        if classes.size == 1:
            self._clf = None  # a single class: that path gets all the weight
            return self
        rng = derive_generator("meta-fusion", self.model, self.seed)
        if self.model == "lr":
            from sklearn.linear_model import LogisticRegression
            from sklearn.pipeline import make_pipeline
            from sklearn.preprocessing import StandardScaler

            params = {"max_iter": 2000, **self.params}
            self._clf = make_pipeline(StandardScaler(), LogisticRegression(**params))
        else:
            from sklearn.ensemble import HistGradientBoostingClassifier

            params = {"random_state": int(rng.integers(2**31 - 1)), **self.params}
            self._clf = HistGradientBoostingClassifier(**params)
        self._clf.fit(X, y)
        return self

    def predict_weights(self, paths: PathScores, query_ids: Sequence[Any]) -> np.ndarray:
        """(Q x 4) fusion weights for evaluation queries; raises if any id was a training query."""
        if self._classes is None:
            raise RuntimeError("MetaFusion is not fitted")
        ids = _ids(query_ids, paths.shape[0], "eval query_ids")
        overlap = sorted(self.train_ids_.intersection(ids))
        if overlap:
            shown = ", ".join(overlap[:5]) + (" ..." if len(overlap) > 5 else "")
            raise InputError(f"{len(overlap)} evaluation queries were used for training: {shown}")
        W = np.zeros((paths.shape[0], 4))
        if self._clf is None:
            W[:, int(self._classes[0])] = 1.0
            return W
        proba = self._clf.predict_proba(_meta_features(paths))
        W[:, self._clf.classes_.astype(int)] = proba
        return W

    def fuse(self, paths: PathScores, query_ids: Sequence[Any]) -> LearnedResult:
        W = self.predict_weights(paths, query_ids)
        scores = sum(W[:, j : j + 1] * paths[p] for j, p in enumerate(PATHS))
        return LearnedResult(np.asarray(scores, dtype=np.float64), W)


def learned_fusion(
    train_paths: PathScores,
    train_relevance: Any,
    eval_paths: PathScores,
    *,
    train_query_ids: Sequence[Any],
    eval_query_ids: Sequence[Any],
    model: str = "lr",
    seed: int = 0,
    **params: Any,
) -> LearnedResult:
    """Fit LR-Meta / GBM-Meta on the training queries and fuse the evaluation queries.

    Raises ``ValueError`` if the two id sets overlap (checked before any fitting).
    """
    tr = _ids(train_query_ids, train_paths.shape[0], "train_query_ids")
    ev = _ids(eval_query_ids, eval_paths.shape[0], "eval_query_ids")
    overlap = sorted(set(tr) & set(ev))
    if overlap:
        shown = ", ".join(overlap[:5]) + (" ..." if len(overlap) > 5 else "")
        raise InputError(f"train and eval queries overlap ({len(overlap)}): {shown}")
    if train_paths.shape[1] != eval_paths.shape[1]:
        raise InputError(f"train and eval scores cover different galleries ({train_paths.shape[1]} vs {eval_paths.shape[1]} columns)")
    mf = MetaFusion(model, seed=seed, **params).fit(train_paths, train_relevance, tr)
    return mf.fuse(eval_paths, ev)
