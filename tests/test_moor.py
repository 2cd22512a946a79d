"""MOOR against a literal, dense float64 transcription of SPEC §9 / Algorithm 1 written here.

The reference below deliberately follows the text step by step (per-query loops, np.corrcoef, np.var)
and shares no code with snapbench.fusion.  Conventions it fixes that the SPEC leaves implicit (and the
library documents): an all-zero whitened row stays zero when L2-normalised, and a path whose score
vector is exactly constant gets r = 0.
"""

from __future__ import annotations

import numpy as np
import pytest

from snapbench.core.seeding import derive_generator
from snapbench.fusion import MOORIndex, moor, moor_from_scores, path_scores

TOL = 1e-6


# --------------------------------------------------------------------------------------------------
# the independent reference
# --------------------------------------------------------------------------------------------------


def _ref_gate(name, r):
    if name == "bell":
        return max(0.0, r) ** 2 * max(0.0, 1.0 - r) ** 2
    if name == "linear":
        return max(0.0, r)
    if name == "sigmoid":
        return 1.0 / (1.0 + np.exp(-10.0 * (r - 0.5)))
    if name == "inverse_bell":
        return 1.0 / 16.0 - max(0.0, r) ** 2 * max(0.0, 1.0 - r) ** 2
    if name == "pure_r2":
        return max(0.0, r) ** 2
    if name == "none":
        return 1.0
    raise AssertionError(name)


def _ref_whiten(v, mu, sd):
    z = (np.asarray(v, dtype=np.float64) - mu) / sd
    n = np.sqrt(np.sum(z * z))
    return z / n if n > 0 else np.zeros_like(z)


def _ref_pearson(a, b):
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        return 0.0  # "a constant path gets r = 0"
    return float(np.corrcoef(a, b)[0, 1])


def reference_moor(qI, qT, gI, gT, *, whiten=True, gate="bell", eps=1e-6, fusion_eps=1e-6):
    qI, qT, gI, gT = (np.asarray(a, dtype=np.float64) for a in (qI, qT, gI, gT))
    d = gI.shape[1]
    if whiten:
        muI, sdI = gI.mean(axis=0), gI.std(axis=0) + eps
        muT, sdT = gT.mean(axis=0), gT.std(axis=0) + eps
    else:
        muI = muT = np.zeros(d)
        sdI = sdT = np.ones(d)
    GI = np.array([_ref_whiten(g, muI, sdI) for g in gI])
    GT = np.array([_ref_whiten(g, muT, sdT) for g in gT])
    scores, weights, corrs = [], [], []
    for q in range(qI.shape[0]):
        tI = _ref_whiten(qI[q], muI, sdI)
        tT = _ref_whiten(qT[q], muT, sdT)
        hI = _ref_whiten(qI[q], muT, sdT)  # cross-whitened: image query with text statistics
        hT = _ref_whiten(qT[q], muI, sdI)
        s = {"II": GI @ tI, "TT": GT @ tT, "IT": GT @ hI, "TI": GI @ hT}
        w = {"II": np.var(s["II"])}
        r = {}
        for ab in ("TT", "IT", "TI"):
            r[ab] = _ref_pearson(s["II"], s[ab])
            w[ab] = _ref_gate(gate, r[ab]) * np.var(s[ab])
        total = sum(w.values())
        if total < fusion_eps:
            fused = s["II"]
        else:
            fused = sum(w[p] * s[p] for p in ("II", "TT", "IT", "TI")) / total
        scores.append(fused)
        weights.append([w["II"], w["TT"], w["IT"], w["TI"]])
        corrs.append([r["TT"], r["IT"], r["TI"]])
    return np.array(scores), np.array(weights), np.array(corrs)


# --------------------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------------------


def _data(Q=9, N=60, d=12, *, seed="moor", coupling=1.0, offset=0.3):
    """Correlated image/text embeddings so the text paths carry signal (r well inside (0, 1))."""
    rng = derive_generator("test-moor", seed, Q, N, d)
    A = rng.standard_normal((d, d)) / np.sqrt(d)
    gI = rng.standard_normal((N, d)) + offset
    gT = coupling * gI @ A + rng.standard_normal((N, d))
    items = rng.integers(0, N, size=Q)
    qI = gI[items] + 0.7 * rng.standard_normal((Q, d))
    qT = gT[items] + 0.9 * rng.standard_normal((Q, d))
    return qI, qT, gI, gT


def _check(res, qI, qT, gI, gT, *, corr=True, **kw):
    ref_s, ref_w, ref_r = reference_moor(qI, qT, gI, gT, **kw)
    assert res.scores.shape == ref_s.shape
    assert np.abs(res.scores - ref_s).max() <= TOL
    # relative agreement, with an absolute floor far below fusion_eps for near-constant paths whose
    # variance the covariance route rounds to 0 (they cannot change the fused scores)
    assert np.abs(res.weights - ref_w).max() <= 1e-6 * float(np.abs(ref_w).max()) + 1e-12
    if corr:
        assert np.abs(res.correlations - ref_r).max() <= 1e-6
    return ref_s, ref_w, ref_r


# --------------------------------------------------------------------------------------------------
# equality with the transcription
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("gate", ["bell", "linear", "sigmoid", "inverse_bell", "pure_r2", "none"])
@pytest.mark.parametrize("whiten", [True, False])
def test_matches_direct_formula(gate, whiten):
    qI, qT, gI, gT = _data(seed=gate)
    res = moor(qI, qT, gI, gT, whiten=whiten, gate=gate)
    _, ref_w, ref_r = _check(res, qI, qT, gI, gT, whiten=whiten, gate=gate)
    # the data really exercises fusion: text paths correlate and receive weight
    assert (ref_r > 0.2).any() and (ref_w[:, 1:] > 0).any()
    tot = ref_w.sum(axis=1)
    assert np.allclose(res.text_share, ref_w[:, 1:].sum(axis=1) / tot)


def test_text_share_and_weights_order():
    qI, qT, gI, gT = _data(Q=20, seed="share")
    res = moor(qI, qT, gI, gT)
    assert res.weights.shape == (20, 4) and res.correlations.shape == (20, 3) and res.text_share.shape == (20,)
    assert ((res.text_share > 0) & (res.text_share < 1)).any()
    assert not res.fallback.any()
    # column order II, TT, IT, TI: w_II is the variance of s^II
    ps = path_scores(qI, qT, gI, gT)
    assert np.allclose(res.weights[:, 0], ps.II.var(axis=1), rtol=1e-9)


def test_single_query_and_1d_query():
    qI, qT, gI, gT = _data(Q=1, seed="q1")
    res = moor(qI, qT, gI, gT)
    _check(res, qI, qT, gI, gT)
    res1 = moor(qI[0], qT[0], gI, gT)
    assert np.array_equal(res1.scores, res.scores)


def test_constant_text_gallery_gets_zero_gate():
    qI, qT, gI, gT = _data(seed="const")
    gT = np.tile(gT[:1], (gT.shape[0], 1))  # every caption identical -> s^TT and s^IT constant
    for whiten in (True, False):
        res = moor(qI, qT, gI, gT, whiten=whiten)
        _check(res, qI, qT, gI, gT, whiten=whiten)
        assert np.all(res.correlations[:, 0] == 0) and np.all(res.correlations[:, 1] == 0)
        assert np.all(res.weights[:, 1] == 0) and np.all(res.weights[:, 2] == 0)


@pytest.mark.parametrize("queries_share_constant", [True, False])
def test_zero_variance_dimensions(queries_share_constant):
    qI, qT, gI, gT = _data(seed=f"zv{queries_share_constant}")
    for g in (gI, gT):
        g[:, [0, 5]] = 0.25
    if queries_share_constant:
        qI[:, [0, 5]] = 0.25
        qT[:, [0, 5]] = 0.25
    for whiten in (True, False):
        res = moor(qI, qT, gI, gT, whiten=whiten)
        _check(res, qI, qT, gI, gT, whiten=whiten, corr=queries_share_constant or not whiten)
        assert np.isfinite(res.scores).all()


def test_one_item_gallery_falls_back():
    qI, qT, gI, gT = _data(Q=4, N=1, seed="n1")
    for whiten in (True, False):
        res = moor(qI, qT, gI, gT, whiten=whiten)
        _check(res, qI, qT, gI, gT, whiten=whiten)
        assert res.fallback.all() and np.all(res.correlations == 0) and np.all(res.text_share == 0)


def test_small_total_weight_falls_back_to_image_path():
    qI, qT, gI, gT = _data(seed="eps")
    # unwhitened, nearly identical gallery rows: every path variance is tiny -> Σw < 1e-6
    base = derive_generator("eps-base").standard_normal(gI.shape[1])
    jitter = derive_generator("eps-jitter").standard_normal(gI.shape) * 1e-5
    gI2, gT2 = base + jitter, base[::-1] + jitter[:, ::-1]
    res = moor(qI, qT, gI2, gT2, whiten=False)
    _check(res, qI, qT, gI2, gT2, whiten=False)
    ps = path_scores(qI, qT, gI2, gT2, whiten=False)
    assert res.fallback.all()
    assert np.abs(res.scores - ps.II).max() <= 1e-12
    # a large fusion_eps forces the fallback on ordinary data too
    res = moor(qI, qT, gI, gT, fusion_eps=10.0)
    ref_s, _, _ = reference_moor(qI, qT, gI, gT, fusion_eps=10.0)
    assert res.fallback.all() and np.abs(res.scores - ref_s).max() <= TOL


def test_whitening_off_cross_queries_equal_plain():
    qI, qT, gI, gT = _data(seed="nowhiten")
    index = MOORIndex(whiten=False).fit(gI, gT)
    st = index._prepare(qI, qT)
    assert np.array_equal(st.hI, st.tI) and np.array_equal(st.hT, st.tT)
    cos = (qI / np.linalg.norm(qI, axis=1, keepdims=True)) @ (gI / np.linalg.norm(gI, axis=1, keepdims=True)).T
    assert np.abs(path_scores(qI, qT, gI, gT, whiten=False).II - cos).max() < 1e-12


def test_large_scale_offsets_keep_precision():
    # embeddings far from the origin with a small spread: the covariance route must not cancel
    qI, qT, gI, gT = _data(Q=6, N=80, d=10, seed="offset", offset=0.0)
    qI, qT, gI, gT = (a * 1e-3 + 50.0 for a in (qI, qT, gI, gT))
    for whiten in (True, False):
        res = moor(qI, qT, gI, gT, whiten=whiten)
        _check(res, qI, qT, gI, gT, whiten=whiten, corr=whiten)


# --------------------------------------------------------------------------------------------------
# from scores, fitted index, streaming fit
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("gate", ["bell", "linear", "none"])
def test_from_scores_equals_embedding_path(gate):
    qI, qT, gI, gT = _data(Q=15, seed=f"fs{gate}")
    res = moor(qI, qT, gI, gT, gate=gate)
    ps = path_scores(qI, qT, gI, gT)
    res2 = moor_from_scores(ps.II, ps.TT, ps.IT, ps.TI, gate=gate)
    assert np.abs(res.scores - res2.scores).max() <= 1e-10
    assert np.allclose(res.weights, res2.weights, rtol=1e-8, atol=1e-300)
    assert np.allclose(res.correlations, res2.correlations, atol=1e-9)
    assert np.array_equal(res.fallback, res2.fallback)
    ref_s, _, _ = reference_moor(qI, qT, gI, gT, gate=gate)
    assert np.abs(res2.scores - ref_s).max() <= TOL


def test_from_scores_constant_and_single_column():
    rng = derive_generator("fs-const")
    s = rng.standard_normal((5, 30))
    const = np.full((5, 30), 0.3)
    res = moor_from_scores(s, const, s * 0.5 + rng.standard_normal((5, 30)), const)
    assert np.all(res.correlations[:, [0, 2]] == 0) and np.all(res.weights[:, [1, 3]] == 0)
    one = moor_from_scores(s[:, :1], s[:, :1], s[:, :1], s[:, :1])
    assert one.fallback.all() and np.array_equal(one.scores, s[:, :1])


def test_index_fitted_once_serves_batches_and_gates():
    qI, qT, gI, gT = _data(Q=12, seed="index")
    index = MOORIndex().fit(gI, gT)
    # the covariance blocks are those of the whitened gallery (population covariance)
    ps_gallery = np.concatenate([index.whitener_image.transform(gI), index.whitener_text.transform(gT)], axis=1)
    C = np.cov(ps_gallery, rowvar=False, ddof=0)
    d = gI.shape[1]
    assert np.allclose(index.cov_ii, C[:d, :d], atol=1e-14) and np.allclose(index.cov_it, C[:d, d:], atol=1e-14)
    full = moor(qI, qT, gI, gT)
    a = index.scores(qI[:5], qT[:5])
    b = index.scores(qI[5:], qT[5:])
    assert np.abs(np.vstack([a, b]) - full.scores).max() <= 1e-12
    assert np.allclose(index.weights(qI, qT), full.weights, rtol=1e-12, atol=0)
    lin = index.query(qI, qT, gate="linear")
    ref_s, _, _ = reference_moor(qI, qT, gI, gT, gate="linear")
    assert np.abs(lin.scores - ref_s).max() <= TOL
    # the composed 2d query vector reproduces the fused scores
    u, _ = index.query_vectors(qI, qT)
    assert np.abs(u @ ps_gallery.T - full.scores).max() <= 1e-12


def test_streaming_fit_equals_in_memory(tmp_path):
    qI, qT, gI, gT = _data(Q=7, N=53, seed="stream")
    ref = MOORIndex().fit(gI, gT)
    np.save(tmp_path / "gI.npy", gI.astype(np.float64))
    np.save(tmp_path / "gT.npy", gT.astype(np.float64))
    variants = {
        "npy": MOORIndex(chunk_size=7).fit(str(tmp_path / "gI.npy"), str(tmp_path / "gT.npy")),
        "memmap": MOORIndex(chunk_size=5).fit(np.load(tmp_path / "gI.npy", mmap_mode="r"), np.load(tmp_path / "gT.npy", mmap_mode="r")),
        "callable": MOORIndex(chunk_size=4).fit(lambda: ((gI[i : i + 11], gT[i : i + 11]) for i in range(0, 53, 11))),
        "cache": MOORIndex(chunk_size=6, cache_path=tmp_path / "white.npy", keep_gallery=False).fit(
            str(tmp_path / "gI.npy"), str(tmp_path / "gT.npy")
        ),
    }
    want = ref.query(qI, qT)
    for name, idx in variants.items():
        assert idx.gallery_ is None, name
        assert np.allclose(idx.cov_tt, ref.cov_tt, atol=1e-14, rtol=1e-12), name
        assert np.allclose(idx.whitener_image.scale_, ref.whitener_image.scale_, rtol=1e-12), name
        got = idx.query(qI, qT)
        assert np.abs(got.scores - want.scores).max() <= 1e-12, name
    assert (tmp_path / "white.npy").exists()


def test_failed_refit_keeps_the_whitened_cache(tmp_path):
    # the cache is renamed into place only after a successful fit: a refit that dies in its second
    # pass must not leave rows of the new gallery in the file the (still old) index searches
    qI, qT, gI, gT = _data(Q=5, N=40, seed="cache")
    cache = tmp_path / "white.npy"
    index = MOORIndex(chunk_size=8, cache_path=cache, keep_gallery=False).fit(gI, gT)
    before = index.topk(qI, qT, k=5)
    passes = []

    def dying_source():
        passes.append(1)
        for i in range(0, 40, 8):
            if len(passes) == 2 and i == 16:
                raise OSError("read error")
            yield -gI[i : i + 8], -gT[i : i + 8]

    with pytest.raises(OSError):
        index.fit(dying_source)
    after = index.topk(qI, qT, k=5)
    assert np.array_equal(after.indices, before.indices) and np.array_equal(after.scores, before.scores)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["white.npy"]


def test_float32_mode_close_to_float64():
    qI, qT, gI, gT = _data(Q=10, N=200, d=32, seed="f32")
    r64 = moor(qI, qT, gI, gT)
    r32 = moor(qI, qT, gI, gT, dtype=np.float32)
    assert r32.scores.dtype == np.float32
    assert np.abs(r32.scores - r64.scores).max() < 1e-5
    assert np.allclose(r32.weights, r64.weights, rtol=1e-4)


# --------------------------------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------------------------------


def test_bad_inputs_raise_naming_the_argument(tmp_path):
    qI, qT, gI, gT = _data(seed="bad")
    bad = qI.copy()
    bad[2, 3] = np.nan
    with pytest.raises(ValueError, match="q_image.*row 2"):
        moor(bad, qT, gI, gT)
    bad = gT.copy()
    bad[7, 0] = np.inf
    with pytest.raises(ValueError, match="g_text.*row 7"):
        moor(qI, qT, gI, bad)
    with pytest.raises(ValueError, match="q_text"):
        moor(qI, qT[:, :5], gI, gT)
    with pytest.raises(ValueError, match="query counts differ"):
        moor(qI, qT[:3], gI, gT)
    with pytest.raises(ValueError, match="row counts differ"):
        moor(qI, qT, gI, gT[:10])
    with pytest.raises(ValueError, match="dimensions differ"):
        moor(qI, qT, gI, gT[:, :4])
    with pytest.raises(ValueError, match="g_image.*empty"):
        moor(qI, qT, gI[:0], gT[:0])
    with pytest.raises(ValueError, match="q_image.*empty"):
        moor(qI[:0], qT[:0], gI, gT)
    with pytest.raises(ValueError, match="unknown gate"):
        moor(qI, qT, gI, gT, gate="gaussian")
    with pytest.raises(ValueError, match="s_TT"):
        moor_from_scores(gI @ gI.T, np.full_like(gI @ gI.T, np.nan), gI @ gI.T, gI @ gI.T)
    g = gT.copy()
    g[40, 1] = np.nan
    np.save(tmp_path / "gI.npy", gI)
    np.save(tmp_path / "gT.npy", g)
    with pytest.raises(ValueError, match=r"gT\.npy.*row 40"):
        MOORIndex(chunk_size=16).fit(str(tmp_path / "gI.npy"), str(tmp_path / "gT.npy"))
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match="obj.npy"):
        MOORIndex().fit(str(tmp_path / "obj.npy"), str(tmp_path / "gT.npy"))


# --------------------------------------------------------------------------------------------------
# magnitudes far from 1: no silent zero vectors, no silent NaN
# --------------------------------------------------------------------------------------------------


def _scaled_case(scale, in_dtype, d=8, seed="magnitude"):
    scaled = tuple((a * scale).astype(in_dtype) for a in _data(Q=5, N=40, d=d, seed=seed))
    return tuple(a.astype(np.float64) / scale for a in scaled), scaled  # (what was given, back at unit scale)


# (scale, input dtype): float32 inputs up to 2e37 (whose squares and, at d = 768, norms overflow
# float32), float64 inputs far outside float32's range (overflow to inf, or flush to 0, when cast)
MAGNITUDES = [(1e-30, np.float32), (1e19, np.float32), (1e36, np.float32), (2e37, np.float32),
              (1e-45, np.float64), (1e100, np.float64), (1e300, np.float64)]


@pytest.mark.parametrize("scale,in_dtype", MAGNITUDES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("d", [8, 768])
def test_unwhitened_scores_do_not_depend_on_magnitude(scale, in_dtype, dtype, d):
    # without whitening every vector is only L2-normalised, so scaling all embeddings changes nothing:
    # the result equals the unit-scale transcription, never zeros or NaN
    unit, scaled = _scaled_case(scale, in_dtype, d=d)
    res = moor(*scaled, whiten=False, dtype=dtype)
    ref_s, _, _ = reference_moor(*unit, whiten=False)
    assert np.abs(res.scores - ref_s).max() < (1e-5 if dtype == np.float32 else 1e-9)


@pytest.mark.parametrize("scale,in_dtype", [m for m in MAGNITUDES if 1 < m[0] < 1e150])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_whitened_scores_at_large_magnitudes(scale, in_dtype, dtype):
    # (x - μ) / (σ + 1e-6) is scale-free once σ >> 1e-6; at unit scale the eps itself moves scores ~1e-7
    unit, scaled = _scaled_case(scale, in_dtype, d=768)
    res = moor(*scaled, dtype=dtype)
    assert np.abs(res.scores - reference_moor(*unit)[0]).max() < 1e-5


def test_values_no_dtype_can_handle_raise_naming_the_input(tmp_path):
    unit, scaled = _scaled_case(1e200, np.float64)
    qI, qT, gI, gT = unit
    with pytest.raises(ValueError, match="g_text.*too large to standardise"):
        moor(qI, qT, gI, gT * 1e200)
    q = qT * 0.1
    q[2] = np.where(np.arange(q.shape[1]) % 2, 1.7e308, -1.7e308)  # finite, but (x - μ) / σ with σ ~ 0.1 is not
    for dtype in (np.float64, np.float32):
        with pytest.raises(ValueError, match="q_text: row 2 overflows float64"):
            moor(qI * 0.1, q, gI * 0.1, gT * 0.1, dtype=dtype)
    # a float32 index streaming the raw gallery folds (x - μ)·ρ in float32: out-of-range values are refused
    for name, arr in (("big", gI.astype(np.float32) * 2e37), ("tiny", gI * 1e-45)):
        np.save(tmp_path / f"{name}.npy", arr)
        np.save(tmp_path / f"{name}_t.npy", arr)
        with pytest.raises(ValueError, match=rf"{name}(_t)?\.npy.*(float32 index streaming|dtype='float64')"):
            MOORIndex(dtype=np.float32, whiten=False).fit(str(tmp_path / f"{name}.npy"), str(tmp_path / f"{name}_t.npy"))
        # in float64, or kept in memory, the same files work
        ok = MOORIndex(dtype=np.float64, whiten=False).fit(str(tmp_path / f"{name}.npy"), str(tmp_path / f"{name}_t.npy"))
        top = ok.topk(qI, qT, 3)
        kept = MOORIndex(dtype=np.float32, whiten=False, keep_gallery=True).fit(str(tmp_path / f"{name}.npy"), str(tmp_path / f"{name}_t.npy"))
        ref = reference_moor(qI, qT, gI, gI, whiten=False)[0]
        assert np.abs(kept.query(qI, qT).scores - ref).max() < 1e-5
        assert np.abs(np.take_along_axis(ref, top.indices, 1) - np.sort(ref, 1)[:, ::-1][:, :3]).max() < 1e-9


def test_l2_normalize_extreme_rows():
    from snapbench.fusion.whitening import l2_normalize

    x = np.array([[1.5e308, 1.5e308], [3e-320, 4e-320], [0.0, 0.0], [3.0, 4.0]])
    out = l2_normalize(x)
    assert np.allclose(out[0], [2**-0.5, 2**-0.5]) and np.allclose(out[1], [0.6, 0.8], atol=1e-3)
    assert np.array_equal(out[2], [0, 0]) and np.allclose(out[3], [0.6, 0.8])
    f = np.array([[2e37] * 768, [1e-40] * 4 + [0] * 764], dtype=np.float32)
    out = l2_normalize(f)
    assert out.dtype == np.float32 and np.isfinite(out).all()
    assert np.allclose(np.linalg.norm(out.astype(np.float64), axis=1), 1.0, atol=1e-6)


def test_from_scores_large_magnitudes():
    rng = derive_generator("test-moor", "scores-magnitude")
    S = [rng.standard_normal((5, 40)) + (0.5 * j) * rng.standard_normal((5, 1)) for j in range(4)]
    S[1] = S[1] + 0.8 * S[0]
    ref = moor_from_scores(*S)
    for scale in (1e60, 1e100, 1e150):
        res = moor_from_scores(*(s * scale for s in S))
        assert np.isfinite(res.scores).all()
        # correlations are scale-free and the fused score scales with the inputs (w ~ s² used to overflow)
        assert np.abs(res.correlations - ref.correlations).max() < 1e-12
        assert np.abs(res.scores / scale - ref.scores).max() < 1e-12
    with pytest.raises(ValueError, match="query row 0.*too large"):
        moor_from_scores(*(s * 1e160 for s in S))


def test_query_into_a_reused_buffer(tmp_path):
    qI, qT, gI, gT = _data(Q=7, N=50, d=9, seed="out-buffer")
    for dtype in (np.float64, np.float32):
        for source in ("memory", "disk"):
            if source == "disk":
                np.save(tmp_path / "gI.npy", gI)
                np.save(tmp_path / "gT.npy", gT)
                index = MOORIndex(dtype=dtype, chunk_size=16).fit(str(tmp_path / "gI.npy"), str(tmp_path / "gT.npy"))
            else:
                index = MOORIndex(dtype=dtype).fit(gI, gT)
            buf = np.full((7, 50), np.nan, dtype=dtype)
            for rows in (slice(0, 7), slice(None, None, -1)):  # two "states" through one buffer
                res = index.query(qI[rows], qT[rows], out=buf)
                assert res.scores is buf
                assert np.array_equal(buf, index.query(qI[rows], qT[rows]).scores)
    index = MOORIndex().fit(gI, gT)
    for bad in (np.empty((7, 49)), np.empty((7, 50), dtype=np.float32), np.empty((50, 7)).T):
        with pytest.raises(ValueError, match="out: expected"):
            index.query(qI, qT, out=bad)
    frozen = np.empty((7, 50))
    frozen.setflags(write=False)
    with pytest.raises(ValueError, match=r"read-only"):
        index.query(qI, qT, out=frozen)


def test_unwhitened_fit_of_huge_values_is_quiet_and_exact(recwarn):
    # the running mean/std overflow at ~1e154 but are unused without whitening: no warning, exact scores
    import warnings

    qI, qT, gI, gT = _data(Q=4, N=30, d=6, seed="huge-unwhitened")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        index = MOORIndex(whiten=False, chunk_size=7).fit(gI * 1e200, gT * 1e200)
        res = index.query(qI * 1e200, qT * 1e200)
    assert np.abs(res.scores - reference_moor(qI, qT, gI, gT, whiten=False)[0]).max() < 1e-12


def test_eps_zero_with_a_constant_dimension_names_the_cause():
    qI, qT, gI, gT = _data(Q=4, N=30, d=6, seed="eps0")
    gI = gI.copy()
    gI[:, 2] = 3.0
    with pytest.raises(ValueError, match=r"g_image: \(x - μ\) / σ is undefined in dimension 2.*eps=0.0"):
        moor(qI, qT, gI, gT, eps=0.0)
