r"""MOOR — Modality-anchored, Outlier-aware, Optimal Reweighting (SnapBench Algorithm 1, SPEC §9).

The algorithm, per query (q^I, q^T) against a gallery (G^I, G^T) of N items:

1. whitening (gallery statistics, :mod:`snapbench.fusion.whitening`):
   G~^I, q~^I with (μ^I, σ^I); G~^T, q~^T with (μ^T, σ^T); cross-whitened q^^I with (μ^T, σ^T) and
   q^^T with (μ^I, σ^I).  Whitening off: every vector is only L2-normalised and q^^I = q~^I, q^^T = q~^T.
2. four paths  s^II = G~^I q~^I,  s^TT = G~^T q~^T,  s^IT = G~^T q^^I,  s^TI = G~^I q^^T   (N-vectors).
3. gates  r_ab = Pearson(s^II, s^ab) over the gallery,  g_ab = gate(r_ab)  for ab in {TT, IT, TI}.
4. weights  w_II = Var(s^II),  w_ab = g_ab · Var(s^ab)   (population variances over the gallery).
5. fusion  s = Σ_p w_p s^p / Σ_p w_p;  if Σ_p w_p < eps_fusion then s = s^II.

Exact algebra used here (no Q x N matrix is needed for steps 3–4)
----------------------------------------------------------------
Write the whitened gallery rows as x_n = g~^I_n (image) and y_n = g~^T_n (text), their means
m_I = mean_n x_n, m_T = mean_n y_n, and the population covariance blocks (d x d, float64)

    C_II = mean_n (x_n − m_I)(x_n − m_I)ᵀ,  C_TT = mean_n (y_n − m_T)(y_n − m_T)ᵀ,
    C_IT = mean_n (x_n − m_I)(y_n − m_T)ᵀ.

Every path is linear in the gallery rows: s^ab_n = a · z^b_n with a query-side vector a and z^b_n the
row of modality b (a = q~^I, b = I for II; a = q~^T, b = T for TT; a = q^^I, b = T for IT;
a = q^^T, b = I for TI).  Hence, exactly,

    mean_n s^ab_n = a · m_b,
    Var(s^ab)     = mean_n (a·(z^b_n − m_b))² = aᵀ C_bb a,
    Cov(s^II, s^ab) = mean_n (q~^I·(x_n − m_I)) (a·(z^b_n − m_b)) = q~^Iᵀ C_Ib a,

with C_Ib = C_II for b = I and C_IT for b = T.  Concretely (five d x d products per query batch):

    Var_II = q~^Iᵀ C_II q~^I      Var_TT = q~^Tᵀ C_TT q~^T      Var_IT = q^^Iᵀ C_TT q^^I
    Var_TI = q^^Tᵀ C_II q^^T      Cov_TT = q~^Iᵀ C_IT q~^T      Cov_IT = q~^Iᵀ C_IT q^^I
    Cov_TI = q~^Iᵀ C_II q^^T      r_ab = Cov_ab / sqrt(Var_II · Var_ab).

The fused score is then one inner product in 2d dimensions.  Grouping the four paths by the gallery
modality they read,

    Σ_p w_p s^p_n = w_II q~^I·x_n + w_TI q^^T·x_n + w_TT q~^T·y_n + w_IT q^^I·y_n
                  = [w_II q~^I + w_TI q^^T , w_TT q~^T + w_IT q^^I] · [x_n | y_n],

so with the composed query vector

    u_q = [ (w_II q~^I + w_TI q^^T) , (w_TT q~^T + w_IT q^^I) ] / Σ_p w_p        (fallback: [q~^I, 0])

s^MOOR_n = u_q · [G~^I | G~^T]_n.  The gallery statistics (μ, σ, m, C) are computed once per gallery
(:class:`~snapbench.fusion.index.MOORIndex`, in ``index.py``); a query batch costs the whitening of its vectors, five (Q x d)·(d x d) products
and one (Q x 2d)·(2d x N) product — one plain retrieval over the concatenated gallery — or a streaming
/ approximate top-k search with u_q (:mod:`snapbench.fusion.search`).

Streaming without keeping the whitened gallery, the whitening is folded too: with ρ_n = 1/‖(g_n − μ)/σ‖
stored at fit time, u · g~_n = (u_I/σ_I)·(x_n − μ_I) ρ^I_n + (u_T/σ_T)·(y_n − μ_T) ρ^T_n, so a raw chunk
only needs a subtract-and-scale pass before the product.

Numerics
--------
* Gallery statistics stream in float64: per-dimension μ, σ with the chunk-merge (Chan et al.) update;
  m and C from a second pass over the whitened gallery, again merging per-chunk centred co-moments
  (no ``E[xxᵀ] − m mᵀ`` cancellation).  So the fit reads the gallery twice (plus once per search).
* ``dtype=float64`` (default of :func:`moor`) computes everything in float64 and matches a dense
  float64 transcription of the algorithm to ~1e-12.  ``dtype=float32`` keeps the statistics C, m in
  float64 but runs the query whitening, the five query-side products and the gallery product in
  float32 (≈2x faster, scores within ~1e-6 of float64).
* Constant paths.  A path is treated as constant (variance 0, r = 0, as the SPEC says) when
  ``Var ≤ CONST_RTOL · B_std · B_rms`` with ``CONST_RTOL = 1e-10``, where
  ``B_std = Σ_i |a_i| σ_i`` (σ_i = sqrt(C_bb[i,i])) and ``B_rms = Σ_i |a_i| rms_i``
  (rms_i = sqrt(C_bb[i,i] + m_b[i]²)) bound the path's standard deviation and root mean square
  over the gallery (|C_ij| ≤ σ_i σ_j).  The rounding error of the computed variance is at most of
  order d·2⁻⁵³·B_std·B_rms (centring leaves errors ~2⁻⁵³·rms in each coordinate, which enter C
  multiplied by the deviations), so the rule stays above rounding noise for d up to ~10⁴ while a path
  that carries signal — std/rms far above 1e-10 — is never zeroed.  It is scale-free and catches an
  exactly constant gallery (identical captions), whose covariance is pure rounding noise.  From
  scores (:func:`moor_from_scores`) B_std and B_rms are the exact std and rms of the score row, i.e.
  a path is constant when std(s) ≤ 1e-10 · rms(s).  N = 1 gives every variance 0 → r = 0, Σw = 0 →
  the s^II fallback.
* ``Σw < fusion_eps`` (default 1e-6, the SPEC's eps) → s^MOOR = s^II; the result's ``fallback`` flags
  those queries and their ``text_share`` is 0.
* All-zero whitened rows (e.g. the single row of a one-item gallery) stay zero instead of NaN
  (see :mod:`snapbench.fusion.whitening`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.errors import InputError
from ..core.targets import PATHS
from ._validate import as_matrix, check_same_dim
from .gates import GateLike, get_gate
from .whitening import Whitener

__all__ = [
    "CONST_RTOL",
    "DEFAULT_EPS",
    "DEFAULT_FUSION_EPS",
    "MOORResult",
    "MOORTopK",
    "PathScores",
    "fuse_stats",
    "gate_name",
    "moor_from_scores",
    "path_moments",
    "path_scores",
]

_TEXT_PATHS = ("TT", "IT", "TI")
DEFAULT_EPS = 1e-6
DEFAULT_FUSION_EPS = 1e-6
CONST_RTOL = 1e-10


@dataclass
class MOORResult:
    """MOOR output for Q queries.

    ``scores`` (Q x N fused scores; ``None`` when only weights or a top-k were asked for),
    ``weights`` (Q x 4, unnormalised, order II, TT, IT, TI), ``correlations`` (Q x 3: r_TT, r_IT, r_TI),
    ``variances`` (Q x 4 path variances over the gallery), ``text_share`` (Q,) =
    (w_TT + w_IT + w_TI) / Σw (0 where the fallback applied), ``fallback`` (Q,) bool: Σw < eps → s^II.
    """

    scores: np.ndarray | None
    weights: np.ndarray
    correlations: np.ndarray
    variances: np.ndarray
    text_share: np.ndarray
    fallback: np.ndarray
    gate: str = "bell"


@dataclass
class MOORTopK:
    """Top-k of MOOR: ``indices`` / ``scores`` (Q x k, best first, ties by gallery order) + ``result``
    (weights, correlations, ... with ``scores=None``)."""

    indices: np.ndarray
    scores: np.ndarray
    result: MOORResult


@dataclass
class PathScores:
    """The four path score matrices (each Q x N): s^II, s^TT, s^IT, s^TI."""

    II: np.ndarray
    TT: np.ndarray
    IT: np.ndarray
    TI: np.ndarray

    def __post_init__(self) -> None:
        arrays = {}
        for p in PATHS:
            arrays[p] = as_matrix(getattr(self, p), f"s_{p}")
            setattr(self, p, arrays[p])
        shapes = {p: a.shape for p, a in arrays.items()}
        if len(set(shapes.values())) != 1:
            desc = ", ".join(f"s_{p} {s}" for p, s in shapes.items())
            raise InputError(f"path score matrices differ in shape: {desc}")

    def as_list(self) -> list[np.ndarray]:
        return [self.II, self.TT, self.IT, self.TI]

    @property
    def shape(self) -> tuple[int, int]:
        return self.II.shape  # type: ignore[return-value]

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in PATHS:
            raise KeyError(name)
        return getattr(self, name)

    def rows(self, idx: Any) -> PathScores:
        return PathScores(self.II[idx], self.TT[idx], self.IT[idx], self.TI[idx])


# ---------------------------------------------------------------------------------------------------
# steps 3–5 from per-query statistics
# ---------------------------------------------------------------------------------------------------


def gate_name(gate: GateLike) -> str:
    return gate if isinstance(gate, str) else getattr(gate, "__name__", "custom")


def path_moments(s: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per row of a path score matrix: the mean (Q x 1), the centred scores, the population variance
    (two-pass: centre, then multiply) and the constant-path flag std(s) <= 1e-10 · rms(s)."""
    m = s.mean(axis=1, keepdims=True)
    c = s - m
    v = np.einsum("ij,ij->i", c, c) / s.shape[1]
    return m, c, v, v <= CONST_RTOL**2 * (v + m[:, 0] ** 2)


def fuse_stats(
    var: np.ndarray, cov: np.ndarray, const: np.ndarray, gate: GateLike, fusion_eps: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Gates, weights, text share and fallback from variances (Q x 4), covariances with s^II (Q x 3)
    and the constant-path flags (Q x 4)."""
    gate_fn = get_gate(gate)
    var = np.where(const, 0.0, np.maximum(var, 0.0))
    denom = np.sqrt(var[:, :1]) * np.sqrt(var[:, 1:])  # not sqrt(v·v): that overflows for |s| > ~1e77
    undefined = const[:, :1] | const[:, 1:] | ~(denom > 0)
    r = np.divide(cov, denom, out=np.zeros_like(cov), where=~undefined)
    r = np.clip(r, -1.0, 1.0)  # rounding can push |r| a hair past 1
    g = np.stack([gate_fn(r[:, j]) for j in range(3)], axis=1)
    weights = np.concatenate([var[:, :1], g * var[:, 1:]], axis=1)
    total = weights.sum(axis=1)
    fallback = ~(total >= fusion_eps)
    share = np.divide(weights[:, 1:].sum(axis=1), total, out=np.zeros_like(total), where=~fallback)
    return weights, r, var, share, fallback


def moor_from_scores(
    s_II: Any,
    s_TT: Any,
    s_IT: Any,
    s_TI: Any,
    *,
    gate: GateLike = "bell",
    fusion_eps: float = DEFAULT_FUSION_EPS,
    block: int = 256,
) -> MOORResult:
    """MOOR steps 3–5 on path score matrices you already have (each Q x N, same shape).

    Variances and correlations are computed per query over the N gallery columns in float64 (two-pass:
    centre, then multiply), in query blocks of ``block`` rows to bound temporaries.  A path is
    constant when std(s) ≤ 1e-10 · rms(s).  Returns a :class:`MOORResult` with ``.scores``.
    """
    paths = PathScores(s_II, s_TT, s_IT, s_TI)
    Q, N = paths.shape
    var = np.empty((Q, 4))
    cov = np.empty((Q, 3))
    const = np.empty((Q, 4), dtype=bool)
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported just below
        for b0 in range(0, Q, block):
            sl = slice(b0, b0 + block)
            centred = []
            for j, p in enumerate(PATHS):
                _, c, var[sl, j], const[sl, j] = path_moments(paths[p][sl])
                centred.append(c)
            for j in range(3):
                cov[sl, j] = np.einsum("ij,ij->i", centred[0], centred[j + 1]) / N
    if not (np.isfinite(var).all() and np.isfinite(cov).all()):
        q = int(np.argwhere(~(np.isfinite(var).all(1) & np.isfinite(cov).all(1)))[0][0])
        big = max(float(np.abs(paths[p][q]).max()) for p in PATHS)
        raise InputError(f"path scores of query row {q} are too large for float64 variances "
                         f"(largest |score| {big:.3g}); rescale the scores")
    weights, r, var, share, fallback = fuse_stats(var, cov, const, gate, fusion_eps)
    total = weights.sum(axis=1, keepdims=True)
    # weights are normalised before they multiply the scores: w·s would overflow first (w ~ s²)
    wn = weights / np.where(fallback[:, None], 1.0, total)
    scores = np.empty((Q, N))
    for b0 in range(0, Q, block):
        sl = slice(b0, b0 + block)
        acc = wn[sl, 0:1] * paths.II[sl]
        for j, p in enumerate(_TEXT_PATHS, start=1):
            acc += wn[sl, j : j + 1] * paths[p][sl]
        acc[fallback[sl]] = paths.II[sl][fallback[sl]]
        scores[sl] = acc
    return MOORResult(scores, weights, r, var, share, fallback, gate_name(gate))


# ---------------------------------------------------------------------------------------------------
# dense paths
# ---------------------------------------------------------------------------------------------------


def path_scores(
    q_image: Any,
    q_text: Any,
    g_image: Any,
    g_text: Any,
    *,
    whiten: bool = True,
    eps: float = DEFAULT_EPS,
) -> PathScores:
    """The four dense path matrices of MOOR step 2 (float64, whitened as in step 1 unless
    ``whiten=False``, then cosine similarities)."""
    gI = as_matrix(g_image, "g_image")
    gT = as_matrix(g_text, "g_text")
    qI = as_matrix(q_image, "q_image", allow_vector=True)
    qT = as_matrix(q_text, "q_text", allow_vector=True)
    check_same_dim({"q_image": qI, "q_text": qT, "g_image": gI, "g_text": gT})
    if gI.shape[0] != gT.shape[0]:
        raise InputError(f"gallery row counts differ: g_image has {gI.shape[0]} rows, g_text has {gT.shape[0]}")
    if qI.shape[0] != qT.shape[0]:
        raise InputError(f"query counts differ: q_image has {qI.shape[0]} rows, q_text has {qT.shape[0]}")
    wI = Whitener(eps=eps, enabled=whiten).fit(gI, name="g_image")
    wT = Whitener(eps=eps, enabled=whiten).fit(gT, name="g_text")
    GI, GT = wI.transform(gI), wT.transform(gT)
    tI, tT = wI.transform(qI), wT.transform(qT)
    hI, hT = (wT.transform(qI), wI.transform(qT)) if whiten else (tI, tT)
    return PathScores(tI @ GI.T, tT @ GT.T, hI @ GT.T, hT @ GI.T)
