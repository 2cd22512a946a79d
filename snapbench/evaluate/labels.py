"""Relevance labels as a sparse query x gallery matrix: what every metric reads."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..core.errors import InputError

__all__ = ["Labels"]


@dataclass(frozen=True)
class Labels:
    """Relevance labels as a sparse query x gallery matrix (CSR; only grades > 0 are stored).

    ``indptr`` (Q + 1), ``items`` (column indices, ascending within a row) and ``grades`` (float).
    """

    n_queries: int
    n_items: int
    indptr: np.ndarray
    items: np.ndarray
    grades: np.ndarray

    @classmethod
    def from_lists(
        cls, gold: Sequence[Iterable[int] | Mapping[int, float]], n_items: int
    ) -> Labels:
        """From one entry per query: an iterable of positive column indices (grade 1) or a mapping
        column -> grade.  Grades <= 0 are non-relevant and dropped; duplicates are an error."""
        indptr = [0]
        items: list[int] = []
        grades: list[float] = []
        for q, g in enumerate(gold):
            pairs = sorted(g.items()) if isinstance(g, Mapping) else sorted((int(j), 1.0) for j in g)
            cols = [int(j) for j, _ in pairs]
            if len(set(cols)) != len(cols):
                raise InputError(f"query row {q}: duplicate gallery index in labels", param="gold")
            for j, grade in pairs:
                if not 0 <= int(j) < n_items:
                    raise InputError(f"query row {q}: gallery index {j} outside 0..{n_items - 1}", param="gold")
                if float(grade) > 0:
                    items.append(int(j))
                    grades.append(float(grade))
            indptr.append(len(items))
        return cls(
            len(gold),
            int(n_items),
            np.asarray(indptr, dtype=np.int64),
            np.asarray(items, dtype=np.int64),
            np.asarray(grades, dtype=np.float64),
        )

    @classmethod
    def from_dense(cls, relevance: np.ndarray) -> Labels:
        """From a dense (Q, N) matrix of grades (values <= 0 are non-relevant)."""
        rel = np.asarray(relevance, dtype=np.float64)
        rows, cols = np.nonzero(rel > 0)
        indptr = np.zeros(rel.shape[0] + 1, dtype=np.int64)
        np.add.at(indptr, rows + 1, 1)
        return cls(rel.shape[0], rel.shape[1], np.cumsum(indptr), cols.astype(np.int64), rel[rows, cols])

    @property
    def n_pos(self) -> np.ndarray:
        """Number of positives per query."""
        return np.diff(self.indptr)

    @property
    def graded(self) -> bool:
        return bool(self.grades.size) and bool(np.any(self.grades != 1.0))

    @property
    def pos_rows(self) -> np.ndarray:
        return np.repeat(np.arange(self.n_queries, dtype=np.int64), self.n_pos)

    def rows(self, start: int, stop: int) -> Labels:
        """The labels of query rows ``start:stop`` (renumbered from 0)."""
        a, b = self.indptr[start], self.indptr[stop]
        return Labels(
            stop - start, self.n_items, self.indptr[start : stop + 1] - a, self.items[a:b], self.grades[a:b]
        )

    def select(self, rows: np.ndarray) -> Labels:
        """The labels of the given query rows, in that order (renumbered from 0)."""
        rows = np.asarray(rows, dtype=np.int64)
        lo, hi = self.indptr[rows], self.indptr[rows + 1]
        take = np.concatenate([np.arange(a, b) for a, b in zip(lo, hi)]) if rows.size else np.zeros(0, np.int64)
        indptr = np.concatenate([[0], np.cumsum(hi - lo)]).astype(np.int64)
        return Labels(rows.size, self.n_items, indptr, self.items[take].astype(np.int64), self.grades[take])

    def lookup(self, idx: np.ndarray) -> np.ndarray:
        """Grades of the items ``idx`` (Q, K) of each query row; 0 for non-relevant or ``-1`` slots."""
        idx = np.asarray(idx, dtype=np.int64)
        out = np.zeros(idx.shape, dtype=np.float64)
        if self.items.size == 0 or idx.size == 0:
            return out
        n = self.n_items
        keys = self.pos_rows * n + self.items  # globally sorted: rows ascending, columns ascending
        q = np.arange(idx.shape[0], dtype=np.int64)[:, None]
        want = q * n + idx
        pos = np.searchsorted(keys, want).clip(max=keys.size - 1)
        hit = (keys[pos] == want) & (idx >= 0)
        out[hit] = self.grades[pos[hit]]
        return out

    def ideal(self, k: int) -> np.ndarray:
        """(Q, k) grades of each query sorted descending and cut at k (zero-padded): the IDCG list."""
        out = np.zeros((self.n_queries, k), dtype=np.float64)
        if self.items.size == 0 or k == 0:
            return out
        rows = self.pos_rows
        order = np.lexsort((-self.grades, rows))
        rank = np.arange(self.items.size) - self.indptr[rows[order]]
        keep = rank < k
        out[rows[order][keep], rank[keep]] = self.grades[order][keep]
        return out
