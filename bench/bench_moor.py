"""MOOR speed and memory, measured side by side in one run; writes bench/RESULTS_moor.md.

(a) Q = 1,145, N = 9,085, d = 768 (SnapBench's size), structured-random embeddings: a dense float64
    transcription in the authors' style (four Q x N float64 path matrices) vs snapbench's MOORIndex
    (gallery fitted once, then one composed 2d query vector per query), float64 and float32, plus the
    one-shot time including the fit; same top-10 checked.
(b) N = 1,000,000 (float32 .npy files on disk, ~6 GB, generated in chunks and deleted afterwards),
    Q = 1,145 top-10: one plain top-10 inner-product search over the same 2d-dim gallery (same reader,
    chunking and top-k code) vs MOOR's streaming top-10 (on-the-fly whitening, and from the whitened
    cache written during the fit); fit time; peak memory per worker process (VmHWM) and the
    tracemalloc peak of the search.
(c) FAISS ANN (HNSW and IVF) over the whitened 2d gallery at N = 200,000 (a prefix of (b)'s gallery):
    build time, query time, recall@10 against exact MOOR.

Usage: python bench/bench_moor.py [--n-large 1000000] [--n-ann 200000] [--dir /tmp/snapbench_bench]
       [--skip-large] [--skip-ann] [--reuse-large]
Raw numbers go to RESULTS_moor.json next to the .md; --reuse-large re-renders skipped parts from it.
The machine is shared: every timing is the minimum of repeats where affordable.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import resource
import shutil
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _machine import machine, reference_primitives  # noqa: E402  (bench/ is on sys.path when run as a script)

from snapbench.core.ranking import StreamingTopK, topk  # noqa: E402
from snapbench.core.ranking import topk_overlap as recall_at_k  # noqa: E402  (ANN recall@10 = overlap with exact)
from snapbench.core.seeding import derive_generator  # noqa: E402
from snapbench.fusion import MOORIndex  # noqa: E402
from snapbench.fusion.search import NpyRowReader  # noqa: E402

D = 768
Q = 1145
N_SMALL = 9085
K_CLUSTERS = 512
BLOCK = 8192  # generation block (independent of the search chunk size)


# ---------------------------------------------------------------------------------------------------
# structured-random data: clustered, anisotropic, offset, image/text correlated at the cluster level
# ---------------------------------------------------------------------------------------------------


class World:
    def __init__(self, seed: int = 0, d: int = D) -> None:
        rng = derive_generator("bench-moor", seed, "world")
        self.seed, self.d = seed, d
        self.cI = rng.standard_normal((K_CLUSTERS, d)).astype(np.float32)
        self.cT = (0.6 * self.cI + 0.8 * rng.standard_normal((K_CLUSTERS, d))).astype(np.float32)
        self.oI = (1.5 * rng.standard_normal(d)).astype(np.float32)
        self.oT = (1.5 * rng.standard_normal(d)).astype(np.float32)
        self.sI = np.exp(0.5 * rng.standard_normal(d)).astype(np.float32)
        self.sT = np.exp(0.5 * rng.standard_normal(d)).astype(np.float32)

    def gallery_block(self, b: int, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        rng = derive_generator("bench-moor", self.seed, "gallery", b)
        c = rng.integers(0, K_CLUSTERS, size=n)
        gI = self.oI + self.sI * (self.cI[c] + 0.9 * rng.standard_normal((n, self.d), dtype=np.float32))
        gT = self.oT + self.sT * (self.cT[c] + 1.0 * rng.standard_normal((n, self.d), dtype=np.float32))
        return gI.astype(np.float32), gT.astype(np.float32), c

    def gallery(self, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        parts = [self.gallery_block(b, min(BLOCK, n - b * BLOCK)) for b in range((n + BLOCK - 1) // BLOCK)]
        return tuple(np.concatenate(p) for p in zip(*parts))  # type: ignore[return-value]

    def queries(self, clusters: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        rng = derive_generator("bench-moor", self.seed, "queries")
        n = clusters.size
        qI = self.oI + self.sI * (self.cI[clusters] + 0.9 * rng.standard_normal((n, self.d), dtype=np.float32))
        # coarse, noisier question text
        qT = self.oT + self.sT * (self.cT[clusters] + 1.6 * rng.standard_normal((n, self.d), dtype=np.float32))
        return qI.astype(np.float32), qT.astype(np.float32)


# ---------------------------------------------------------------------------------------------------
# the authors' style: dense float64, four Q x N matrices
# ---------------------------------------------------------------------------------------------------


def authors_style(qI, qT, gI, gT, eps=1e-6, fusion_eps=1e-6):
    qI, qT, gI, gT = (np.asarray(a, dtype=np.float64) for a in (qI, qT, gI, gT))

    def wh(x, mu, sd):
        z = (x - mu) / sd
        return z / np.linalg.norm(z, axis=1, keepdims=True)

    muI, sdI = gI.mean(0), gI.std(0) + eps
    muT, sdT = gT.mean(0), gT.std(0) + eps
    GI, GT = wh(gI, muI, sdI), wh(gT, muT, sdT)
    sII = wh(qI, muI, sdI) @ GI.T
    sTT = wh(qT, muT, sdT) @ GT.T
    sIT = wh(qI, muT, sdT) @ GT.T
    sTI = wh(qT, muI, sdI) @ GI.T

    def pearson(a, b):
        a = a - a.mean(1, keepdims=True)
        b = b - b.mean(1, keepdims=True)
        return (a * b).sum(1) / np.sqrt((a * a).sum(1) * (b * b).sum(1))

    w = [sII.var(1)]
    for s in (sTT, sIT, sTI):
        r = pearson(sII, s)
        w.append(np.maximum(0, r) ** 2 * np.maximum(0, 1 - r) ** 2 * s.var(1))
    W = np.stack(w, 1)
    tot = W.sum(1, keepdims=True)
    fused = (W[:, 0:1] * sII + W[:, 1:2] * sTT + W[:, 2:3] * sIT + W[:, 3:4] * sTI) / tot
    fb = tot[:, 0] < fusion_eps
    fused[fb] = sII[fb]
    return fused, W


def peak_rss_mb() -> float:
    """VmHWM of this process: unlike ru_maxrss it is not inherited from the parent across exec."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def traced_peak(fn):
    tracemalloc.start()
    tracemalloc.reset_peak()
    out = fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak, out


def top10_agreement(ref_scores, idx):
    want = topk(ref_scores, 10).indices
    same = np.all(want == idx, axis=1)
    near_tie = 0
    for q in np.flatnonzero(~same):
        # differences explained by near-ties: the reference scores of both lists agree to 1e-5
        a = np.sort(ref_scores[q, want[q]])
        b = np.sort(ref_scores[q, idx[q]])
        near_tie += bool(np.abs(a - b).max() < 1e-5)
    return int(same.sum()), int(near_tie)


def part_a(reps: int = 3) -> dict:
    w = World(0)
    gI, gT, _ = w.gallery(N_SMALL)
    qc = derive_generator("bench-moor", 0, "qclusters").integers(0, K_CLUSTERS, size=Q)
    qI, qT = w.queries(qc)
    res: dict = {"Q": Q, "N": N_SMALL, "d": D}
    index = {dt: MOORIndex(dtype=dt).fit(gI, gT) for dt in ("float64", "float32")}
    for ix in index.values():
        ix.query(qI[:8], qT[:8])  # warm-up
    # interleave the repeats so that every method sees the same background load
    timings: dict[str, list[float]] = {}
    outs: dict = {}

    def timed(key, fn):
        t = time.perf_counter()
        out = fn()
        timings.setdefault(key, []).append(time.perf_counter() - t)
        outs[key] = out

    # the floor of any exact method: the composed (Q x 2d) x (2d x N) product, and the per-query statistics
    U32, _ = index["float32"].query_vectors(qI, qT)
    G32 = index["float32"].gallery_
    buf = {dt: np.empty((Q, N_SMALL), dtype=dt) for dt in index}
    for _ in range(reps):
        timed("direct", lambda: authors_style(qI, qT, gI, gT))
        timed("float32/gemm_floor", lambda: U32 @ G32.T)
        timed("float32/stats", lambda: index["float32"].explain(qI, qT))
        for dt in ("float64", "float32"):
            timed(f"{dt}/query_dense", lambda: index[dt].query(qI, qT))
            timed(f"{dt}/query_dense_out", lambda: index[dt].query(qI, qT, out=buf[dt]))
            timed(f"{dt}/query_top10", lambda: index[dt].topk(qI, qT, 10))
            timed(f"{dt}/one_shot", lambda: MOORIndex(dtype=dt).fit(gI, gT).query(qI, qT))
            timed(f"{dt}/fit", lambda: MOORIndex(dtype=dt).fit(gI, gT))
    best = {k: min(v) for k, v in timings.items()}
    ref, refW = outs["direct"]
    res["direct_s"] = best["direct"]
    res["direct_all_s"] = timings["direct"]
    res["direct_peak_mb"] = traced_peak(lambda: authors_style(qI, qT, gI, gT))[0] / 2**20
    res["text_share_mean"] = float((refW[:, 1:].sum(1) / refW.sum(1)).mean())
    res["gemm_floor_s"] = best["float32/gemm_floor"]
    res["stats_f32_s"] = best["float32/stats"]
    res["primitives_ms"], res["anchor_factor"] = reference_primitives()
    for dt in ("float64", "float32"):
        out, top = outs[f"{dt}/query_dense"], outs[f"{dt}/query_top10"]
        peak = traced_peak(lambda: index[dt].query(qI, qT))[0] / 2**20
        same, near = top10_agreement(ref, top.indices)
        res[dt] = {
            "fit_s": best[f"{dt}/fit"],
            "query_dense_s": best[f"{dt}/query_dense"],
            "query_dense_all_s": timings[f"{dt}/query_dense"],
            "query_dense_out_s": best[f"{dt}/query_dense_out"],
            # the repeats are interleaved, so each one's ratio compares runs under the same background load
            "ratio_per_repeat": [x / y for x, y in zip(timings["direct"], timings[f"{dt}/query_dense"])],
            "query_top10_s": best[f"{dt}/query_top10"],
            "one_shot_s": best[f"{dt}/one_shot"],
            "query_peak_mb": peak,
            "max_abs_diff": float(np.abs(out.scores - ref).max()),
            "weights_max_rel_diff": float((np.abs(out.weights - refW) / np.abs(refW).max(1, keepdims=True)).max()),
            "top10_identical": same,
            "top10_differ_near_tie": near,
        }
    return res


# ---------------------------------------------------------------------------------------------------
# (b) large gallery, in worker processes (a clean peak RSS each)
# ---------------------------------------------------------------------------------------------------


def generate_large(n: int, d_dir: Path) -> tuple[Path, Path, Path, Path]:
    d_dir.mkdir(parents=True, exist_ok=True)
    pI, pT = d_dir / "gI.npy", d_dir / "gT.npy"
    w = World(0)
    mI = np.lib.format.open_memmap(pI, mode="w+", dtype=np.float32, shape=(n, D))
    mT = np.lib.format.open_memmap(pT, mode="w+", dtype=np.float32, shape=(n, D))
    for b in range((n + BLOCK - 1) // BLOCK):
        s = b * BLOCK
        gi, gt, _ = w.gallery_block(b, min(BLOCK, n - s))
        mI[s : s + gi.shape[0]] = gi
        mT[s : s + gt.shape[0]] = gt
    mI.flush()
    mT.flush()
    del mI, mT
    qc = derive_generator("bench-moor", 0, "qclusters").integers(0, K_CLUSTERS, size=Q)
    qI, qT = w.queries(qc)
    np.save(d_dir / "qI.npy", qI)
    np.save(d_dir / "qT.npy", qT)
    return pI, pT, d_dir / "qI.npy", d_dir / "qT.npy"


def plain_search(args, qI, qT):
    """One plain top-10 inner-product search of [q^I | q^T] over the raw [G^I | G^T] (same reader,
    chunking, float32 GEMM and streaming top-k as MOOR)."""
    U = np.concatenate([qI / np.linalg.norm(qI, axis=1, keepdims=True), qT / np.linalg.norm(qT, axis=1, keepdims=True)], 1)
    U = U.astype(np.float32)
    rI, rT = NpyRowReader(args.gI), NpyRowReader(args.gT)
    d = rI.shape[1]
    acc = StreamingTopK(U.shape[0], 10)
    buf = None
    for (start, ci), (_, ct) in zip(rI.chunks(args.chunk), rT.chunks(args.chunk)):
        n = ci.shape[0]
        if buf is None:
            buf = np.empty((n, 2 * d), dtype=np.float32)
        z = buf[:n]
        z[:, :d] = ci
        z[:, d:] = ct
        acc.push(U @ z.T, start)
    return acc.result()


def worker_plain(args) -> dict:
    qI, qT = np.load(args.qI), np.load(args.qT)
    tracemalloc.start()
    t = time.perf_counter()
    out = plain_search(args, qI, qT)
    el = time.perf_counter() - t
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {"search_s": el, "tracemalloc_peak_mb": peak / 2**20,
            "ru_maxrss_mb": peak_rss_mb(), "top1_sample": out.indices[:3, 0].tolist()}


def worker_moor(args) -> dict:
    qI, qT = np.load(args.qI), np.load(args.qT)
    cache = Path(args.dir) / "whitened.npy"
    index = MOORIndex(dtype=np.float32, chunk_size=args.chunk, keep_gallery=False, cache_path=cache)
    t = time.perf_counter()
    index.fit(args.gI, args.gT)
    fit_s = time.perf_counter() - t
    rss_fit = peak_rss_mb()
    out = {"fit_s": fit_s, "ru_maxrss_after_fit_mb": rss_fit}
    # on-the-fly whitening from the raw files (no cache): a second index sharing the fitted state
    index.cache_path = None
    tracemalloc.start()
    t = time.perf_counter()
    top = index.topk(qI, qT, 10)
    out["search_s"] = time.perf_counter() - t
    out["tracemalloc_peak_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    index.cache_path = cache
    t = time.perf_counter()
    top_c = index.topk(qI, qT, 10)
    out["search_cached_s"] = time.perf_counter() - t
    out["cached_same_top10_rows"] = int(np.all(top.indices == top_c.indices, axis=1).sum())
    out["cached_recall@10"] = recall_at_k(top, top_c)
    t = time.perf_counter()
    index.explain(qI, qT)
    out["query_stats_s"] = time.perf_counter() - t
    out["ru_maxrss_mb"] = peak_rss_mb()
    # interleaved repeats in this process: the machine is shared, so compare minima taken side by side
    reps: dict[str, list[float]] = {"plain": [], "moor": [out["search_s"]], "moor_cached": [out["search_cached_s"]]}
    for _ in range(args.reps_large):
        t = time.perf_counter()
        plain_search(args, qI, qT)
        reps["plain"].append(time.perf_counter() - t)
        index.cache_path = None
        t = time.perf_counter()
        index.topk(qI, qT, 10)
        reps["moor"].append(time.perf_counter() - t)
        index.cache_path = cache
        t = time.perf_counter()
        index.topk(qI, qT, 10)
        reps["moor_cached"].append(time.perf_counter() - t)
    out["interleaved"] = reps
    out["text_share_mean"] = float(top.result.text_share.mean())
    np.save(Path(args.dir) / "moor_top10.npy", top.indices)
    return out


def worker_ann(args) -> dict:
    qI, qT = np.load(args.qI), np.load(args.qT)
    n = args.n_ann
    gI = np.load(args.gI, mmap_mode="r")[:n]
    gT = np.load(args.gT, mmap_mode="r")[:n]
    index = MOORIndex(dtype=np.float32, chunk_size=args.chunk, keep_gallery=True).fit(np.asarray(gI), np.asarray(gT))
    t = time.perf_counter()
    exact = index.topk(qI, qT, 10)
    out: dict = {"N": n, "exact_search_s": time.perf_counter() - t}
    for kind, params in (("hnsw", {}), ("ivf", {})):
        t = time.perf_counter()
        ann = index.build_ann(kind, **params)
        build = time.perf_counter() - t
        t = time.perf_counter()
        approx = index.topk(qI, qT, 10, ann=True)
        q_s = time.perf_counter() - t
        desc = ("HNSWFlat M=32 efConstruction=100 efSearch=128" if kind == "hnsw"
                else f"IVFFlat nlist={ann.nlist} nprobe={ann.index.nprobe}")
        out[kind] = {"index": desc, "build_s": build, "search_s": q_s, "recall@10": recall_at_k(exact, approx.indices)}
    out["ru_maxrss_mb"] = peak_rss_mb()
    return out


def run_worker(kind: str, paths, args) -> dict:
    cmd = [sys.executable, __file__, "--worker", kind, "--gI", str(paths[0]), "--gT", str(paths[1]), "--qI", str(paths[2]),
           "--qT", str(paths[3]), "--chunk", str(args.chunk), "--dir", str(args.dir), "--n-ann", str(args.n_ann),
           "--reps-large", str(args.reps_large)]
    print("  running", kind, flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"worker {kind} failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------------------------------
# report
# ---------------------------------------------------------------------------------------------------


READING_B = [
    "(b) asks for <= 1.2x a plain top-10 search: the raw-gallery MOOR search adds one subtract-and-scale pass per chunk (whitening folded into the query, stored row norms) to the same product; the cached search reads one whitened file instead of two raw ones.",
    "float32 mode rounds scores at ~1e-7 (column 'max abs diff'); float64 matches the reference to ~1e-15.",
]


def cpu_flags() -> set[str]:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def reading_a(a: dict) -> str:
    r = a["float32"]
    measured = a["direct_s"] / min(r["query_dense_s"], r["query_dense_out_s"])
    ceiling = a["direct_s"] / a["gemm_floor_s"]
    flags = cpu_flags()
    simd = [f for f in ("avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "avx_vnni", "amx_bf16") if f in flags]
    per = sorted(r["ratio_per_repeat"])
    median = per[len(per) // 2] if len(per) % 2 else (per[len(per) // 2 - 1] + per[len(per) // 2]) / 2
    measured = min(measured, median)
    text = (
        f"(a) asks for >= 10x with the gallery fitted once. Measured: {a['direct_s'] / r['query_dense_s']:.1f}x "
        f"best vs best (fresh result array), {a['direct_s'] / r['query_dense_out_s']:.1f}x into a reused buffer; "
        f"per interleaved repeat {', '.join(f'{x:.1f}' for x in r['ratio_per_repeat'])}x (median {median:.1f}x). "
        "Any exact method "
        "must compute the composed product (1,145 x 1,536) x (1,536 x 9,085) = 32 GFLOP plus the per-query "
        f"statistics (6.8 GFLOP). That product alone took {a['gemm_floor_s']:.3f} s in this run "
        f"({2 * 1145 * 1536 * 9085 / a['gemm_floor_s'] / 1e9:.0f} GFLOP/s; CPU SIMD flags: "
        f"{', '.join(simd) or 'unknown'}), i.e. {ceiling:.1f}x the direct transcription with zero time for "
        f"everything else; the statistics took another {a['stats_f32_s']:.3f} s. "
    )
    if measured >= 10:
        text += "The target is met in this run (best-vs-best and median per-repeat ratio both >= 10x)."
    elif ceiling < 10 or a["direct_s"] / (a["gemm_floor_s"] + a["stats_f32_s"]) < 10:
        narrow = [f for f in ("avx512_bf16", "avx512_vnni", "avx_vnni", "amx_bf16") if f in flags]
        text += ("So in this run 10x was out of reach for an exact method: the product plus the statistics "
                 f"alone allow {a['direct_s'] / (a['gemm_floor_s'] + a['stats_f32_s']):.1f}x. "
                 + ("This CPU has no bf16 or int8 dot-product instructions, so float32 is the narrowest type with "
                    "fast GEMM here; " if not narrow else f"(This CPU lists {', '.join(narrow)}: a bf16/int8 GEMM "
                    "might go lower, at the cost of exactness.) ")
                 + "a triangular (Cholesky) route to the statistics was measured no faster with numpy's BLAS.")
    else:
        text += "The floor allows 10x; the rest of the gap is query whitening, composition and allocation."
    return text + " The dense reference needs 64 GFLOP in float64 plus ~10 passes over Q x N float64 matrices."


def render(a: dict | None, b: dict | None, c: dict | None, notes: list[str]) -> str:
    L = ["# MOOR benchmark", "", f"Machine: {machine()}  ", f"Date: {_dt.date.today().isoformat()}  ",
         "Command: `python bench/bench_moor.py` (all numbers from one run; times are the best of repeats where "
         "repeated; the machine was shared with other jobs, so absolute times are noisy — ratios measured "
         "side by side are the point).", ""]
    if a:
        L += ["## (a) SnapBench size: Q = 1,145, N = 9,085, d = 768", "",
              "Structured-random embeddings (512 clusters, anisotropic per-dimension scales, non-zero offsets, "
              "image/text correlated per cluster; queries are fresh samples of a gallery cluster with a noisier text).", "",
              "| method | time | speed-up vs direct | peak traced memory | max abs diff vs direct | top-10 identical |",
              "|---|---:|---:|---:|---:|---:|",
              f"| direct dense float64 (authors' style, four Q x N matrices) | {a['direct_s']:.3f} s | 1.0x | {a['direct_peak_mb']:.0f} MB | — | — |"]
        for dt in ("float64", "float32"):
            r = a[dt]
            tie = f" ({r['top10_differ_near_tie']} of the rest differ only by near-ties < 1e-5)" if r["top10_identical"] < a["Q"] else ""
            L.append(f"| MOORIndex {dt}, fitted once: dense scores | {r['query_dense_s']:.3f} s | "
                     f"{a['direct_s'] / r['query_dense_s']:.1f}x | {r['query_peak_mb']:.0f} MB | {r['max_abs_diff']:.1e} | "
                     f"{r['top10_identical']}/{a['Q']}{tie} |")
            L.append(f"| MOORIndex {dt}, fitted once: streaming top-10 | {r['query_top10_s']:.3f} s | "
                     f"{a['direct_s'] / r['query_top10_s']:.1f}x | | | |")
            L.append(f"| MOORIndex {dt}, one shot (fit + dense scores) | {r['one_shot_s']:.3f} s | "
                     f"{a['direct_s'] / r['one_shot_s']:.1f}x | | | |")
            L.append(f"| (fit alone, {dt}) | {r['fit_s']:.3f} s | | | | |")
            L.append(f"| MOORIndex {dt}, fitted once: dense scores into a reused buffer (`query(..., out=buf)`) | "
                     f"{r['query_dense_out_s']:.3f} s | {a['direct_s'] / r['query_dense_out_s']:.1f}x | | | |")
        L.append(f"| floor: the composed product alone, (1,145 x 1,536) x (1,536 x 9,085) in float32 | "
                 f"{a['gemm_floor_s']:.3f} s | {a['direct_s'] / a['gemm_floor_s']:.1f}x (ceiling of any exact float32 method) | | | |")
        L.append(f"| per-query statistics alone (query whitening + five (1,145 x 768) x (768 x 768) products, float32) | "
                 f"{a['stats_f32_s']:.3f} s | | | | |")
        prim = "; ".join(f"{k} {v:.1f} ms" for k, v in a["primitives_ms"].items())
        f = a["anchor_factor"]
        L += ["", f"Anchor: SPEC §9 measured the authors' release at ~2.1 s on the anchor machine. SPEC §2's reference "
              f"primitives timed in this run ({prim}; anchor 16 and 19 ms) put this machine at {f:.2f}x the anchor's "
              f"time (single-thread primitives, so only a rough guide for this 2-thread BLAS workload): about "
              f"{2.1 * f:.1f} s for the authors' release here, {2.1 * f / a['float32']['query_dense_s']:.1f}x the fitted "
              f"float32 MOOR. The direct transcription above, timed side by side, is the measured reference."]
        L += ["", f"Weights agree with the direct computation to a relative {a['float64']['weights_max_rel_diff']:.1e} (float64) / "
              f"{a['float32']['weights_max_rel_diff']:.1e} (float32). Mean text-path share on this data: {a['text_share_mean']:.3f}.", ""]
    if b:
        p1, m = b["plain1"], b["moor"]
        il = m["interleaved"]
        plain_all = [p1["search_s"]] + il["plain"]
        plain, moor_fly, moor_cached = min(plain_all), min(il["moor"]), min(il["moor_cached"])
        fmt = lambda xs: ", ".join(f"{x:.1f}" for x in xs)  # noqa: E731
        L += [f"## (b) Large gallery: N = {b['N']:,}, d = 768, Q = 1,145, top-10", "",
              f"Gallery: two float32 `.npy` files ({b['size_gb']:.1f} GB together) on local disk (page cache warm after "
              f"generation), read in chunks of {b['chunk']} rows with `readinto` into reused buffers. "
              "Plain = one top-10 inner-product search of [q^I | q^T] (L2-normalised) over the raw concatenated "
              "gallery [G^I | G^T], with the same reader, chunking, float32 GEMM and exact streaming top-k as MOOR. "
              "The first plain search and the MOOR worker run in fresh processes (peak memory = VmHWM, the peak "
              "resident set; traced = tracemalloc peak of the search); the MOOR worker then repeats plain, MOOR and "
              "MOOR-from-cache searches interleaved, and the table compares the minima (all runs listed).", "",
              "| step | time (min) | all runs | vs plain search | peak memory |", "|---|---:|---|---:|---:|",
              f"| plain top-10 search | {plain:.1f} s | {fmt(plain_all)} | 1.00x | peak RSS {p1['ru_maxrss_mb']:.0f} MB, traced {p1['tracemalloc_peak_mb']:.0f} MB |",
              f"| MOOR top-10, raw chunks (whitening folded into the query, stored row norms) | {moor_fly:.1f} s | {fmt(il['moor'])} | {moor_fly / plain:.2f}x | traced {m['tracemalloc_peak_mb']:.0f} MB |",
              f"| MOOR top-10 from the whitened cache written by the fit | {moor_cached:.1f} s | {fmt(il['moor_cached'])} | {moor_cached / plain:.2f}x | |",
              f"| MOOR fit (2 passes: μ/σ, then whitened mean + 2d x 2d co-moment in float64; writes the cache) | {m['fit_s']:.1f} s | | | peak RSS {m['ru_maxrss_after_fit_mb']:.0f} MB |",
              f"| (MOOR per-query statistics alone, Q = 1,145) | {m['query_stats_s']:.2f} s | | | |",
              f"| whole MOOR worker (fit + all searches) | | | | peak RSS {m['ru_maxrss_mb']:.0f} MB |", "",
              f"The two MOOR searches (float32 on raw chunks vs the cache written from the float64 whitening) return "
              f"identical top-10 lists for {m['cached_same_top10_rows']} of 1,145 queries (recall@10 between them "
              f"{m['cached_recall@10']:.4f}). Mean text share {m['text_share_mean']:.3f}. "
              "The dense authors'-style computation would need four 1,145 x 1,000,000 float64 matrices (36.6 GB).", ""]
    if c:
        L += [f"## (c) Approximate search (FAISS) at N = {c['N']:,}", "",
              f"Prefix of (b)'s gallery; exact streaming MOOR top-10 took {c['exact_search_s']:.1f} s. "
              "Recall@10 = mean |ANN top-10 ∩ exact top-10| / 10 over the 1,145 queries.", "",
              "| index | build | search (1,145 queries) | recall@10 |", "|---|---:|---:|---:|"]
        for kind in ("hnsw", "ivf"):
            r = c[kind]
            L.append(f"| {r['index']} | {r['build_s']:.1f} s | {r['search_s']:.2f} s | {r['recall@10']:.3f} |")
        L += ["", f"Worker peak RSS: {c['ru_maxrss_mb']:.0f} MB.", ""]
    reading = ([reading_a(a)] if a else []) + (READING_B if b else READING_B[1:])
    L += ["## Reading the numbers", ""] + [f"- {r}" for r in reading] + [""]
    if notes:
        L += ["## Notes", ""] + [f"- {n}" for n in notes] + [""]
    return "\n".join(L)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", default=None)
    ap.add_argument("--gI"), ap.add_argument("--gT"), ap.add_argument("--qI"), ap.add_argument("--qT")
    ap.add_argument("--chunk", type=int, default=8192)
    ap.add_argument("--dir", default="/tmp/snapbench_bench")
    ap.add_argument("--n-large", type=int, default=1_000_000)
    ap.add_argument("--n-ann", type=int, default=200_000)
    ap.add_argument("--skip-large", action="store_true")
    ap.add_argument("--skip-ann", action="store_true")
    ap.add_argument("--reuse-large", action="store_true",
                    help="with --skip-large/--skip-ann: render (b)/(c) from the previous run's RESULTS_moor.json")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--reps-large", type=int, default=2, help="interleaved plain/MOOR repeats at N = 1M")
    ap.add_argument("--out", default=str(ROOT / "bench" / "RESULTS_moor.md"))
    args = ap.parse_args()
    if args.worker:
        fn = {"plain": worker_plain, "moor": worker_moor, "ann": worker_ann}[args.worker]
        print(json.dumps(fn(args)))
        return
    notes: list[str] = [f"load average at start: {', '.join(f'{x:.1f}' for x in os.getloadavg())} (2 cores, shared with other jobs)"]
    print("(a) SnapBench size", flush=True)
    a = part_a(args.reps)
    print(json.dumps(a, indent=1), flush=True)
    b = c = None
    d_dir = Path(args.dir)
    try:
        if not (args.skip_large and args.skip_ann):
            n_gen = max(args.n_large if not args.skip_large else 0, args.n_ann if not args.skip_ann else 0)
            need = 2 * n_gen * D * 4 * (2 if not args.skip_large else 1)
            free = shutil.disk_usage(d_dir.parent if d_dir.parent.exists() else "/").free
            if free < need * 1.2:
                raise SystemExit(f"not enough disk in {d_dir.parent}: need {need / 1e9:.1f} GB, have {free / 1e9:.1f} GB")
            print(f"generating N={n_gen} gallery in {d_dir}", flush=True)
            t = time.perf_counter()
            paths = generate_large(n_gen, d_dir)
            notes.append(f"generating the {n_gen:,}-row gallery (both modalities) took {time.perf_counter() - t:.0f} s")
            if not args.skip_large:
                b = {"N": n_gen, "chunk": args.chunk, "size_gb": 2 * n_gen * D * 4 / 2**30}
                b["plain1"] = run_worker("plain", paths, args)
                b["moor"] = run_worker("moor", paths, args)
                print(json.dumps(b, indent=1), flush=True)
            if not args.skip_ann:
                c = run_worker("ann", paths, args)
                print(json.dumps(c, indent=1), flush=True)
    finally:
        if d_dir.exists() and d_dir.name.startswith("snapbench_bench"):
            shutil.rmtree(d_dir)
    notes.append(f"load average at the end: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    raw = Path(args.out).with_suffix(".json")
    today = _dt.date.today().isoformat()
    for part in (a, b, c):
        if part is not None:
            part.setdefault("date", today)
    if args.reuse_large and raw.exists():
        # (b) and (c) take ~20 minutes: keep an earlier run's numbers (same N only), say so in the notes
        old = json.loads(raw.read_text(encoding="utf-8"))
        for key, want in (("b", args.n_large), ("c", args.n_ann)):
            prev = old.get(key)
            if (b if key == "b" else c) is not None or not prev:
                continue
            if prev.get("N") != want:
                notes.append(f"({key}) not reused: the earlier run had N = {prev.get('N')}, this one asks for {want}")
                continue
            notes.append(f"({key}) reused from the run of {prev.get('date', '?')} (--reuse-large)")
            if key == "b":
                b = prev
            else:
                c = prev
    raw.write_text(json.dumps({"a": a, "b": b, "c": c}, indent=1), encoding="utf-8")
    Path(args.out).write_text(render(a, b, c, notes), encoding="utf-8")
    print("wrote", args.out)


if __name__ == "__main__":
    main()
