"""The shared lower layers: snapbench.store (file contracts) and snapbench.core.ranking (one tie rule,
one TopK, one first-positive rank), against plain-Python references and real files."""

from __future__ import annotations

import json

import numpy as np
import pytest

from snapbench.core.errors import InputError
from snapbench.core.ranking import StreamingTopK, first_positive_rank, streaming_topk, topk, topk_indices
from snapbench.core.seeding import derive_generator
from snapbench.store import find_embeddings, find_path_scores, read_ids, read_trec_run, write_ids, write_trec_run
from snapbench.store.jsonl import read_manifest, read_skips
from snapbench.store.trec import write_qrels


def _ref_order(row):
    return sorted(range(len(row)), key=lambda j: (-row[j], j))


# ------------------------------------------------------------------------------------------ manifest
def test_manifest_truncated_last_line_is_dropped_elsewhere_an_error(tmp_path):
    good = [{"id": "a", "condition": "clean"}, {"id": "a", "condition": "txt/char_swap"}]
    text = "".join(json.dumps(x) + "\n" for x in good)
    (tmp_path / "manifest.jsonl").write_text(text + '{"id": "b", "condi')  # killed mid-write
    assert read_manifest(tmp_path) == good
    (tmp_path / "manifest.jsonl").write_text('{"id": "b", "condi\n' + text)
    with pytest.raises(InputError, match="line 1 is not a valid manifest record"):
        read_manifest(tmp_path)
    # a complete last line lacking the required keys is treated like a cut one (it can only be the last write)
    (tmp_path / "manifest.jsonl").write_text(text + '{"id": "b"}\n')
    assert read_manifest(tmp_path) == good
    assert read_skips(tmp_path) == []  # no skips.jsonl: nothing skipped
    (tmp_path / "skips.jsonl").write_text('{"id": "x", "condition": null, "reason": "bad image"}\n{"id"')
    assert read_skips(tmp_path) == [{"id": "x", "condition": None, "reason": "bad image"}]
    with pytest.raises(InputError, match="no manifest.jsonl"):
        read_manifest(tmp_path / "nowhere")


# ------------------------------------------------------------------------------------------ ids
def test_ids_round_trip_and_errors(tmp_path):
    write_ids(tmp_path / "ids.txt", ["a", "b c", "é"])
    assert read_ids(tmp_path / "ids.txt") == ["a", "b c", "é"]
    (tmp_path / "dup.txt").write_text("a\nb\na\n")
    with pytest.raises(InputError, match="duplicate id 'a' on lines 1 and 3"):
        read_ids(tmp_path / "dup.txt")
    with pytest.raises(InputError, match="file not found"):
        read_ids(tmp_path / "none.txt")
    with pytest.raises(ValueError):
        write_ids(tmp_path / "bad.txt", ["a\nb"])


# ------------------------------------------------------------------------------------------ folders
def test_path_scores_both_layouts_and_embeddings(tmp_path):
    flat, sub = tmp_path / "flat", tmp_path / "sub"
    flat.mkdir()
    for p in ("II", "TT", "IT", "TI"):
        np.save(flat / f"clean.{p}.npy", np.zeros((2, 3)))
        (sub / p).mkdir(parents=True)
        np.save(sub / p / "clean.npy", np.zeros((2, 3)))
    assert set(find_path_scores(flat, complete=True)["clean"]) == {"II", "TT", "IT", "TI"}
    assert set(find_path_scores(sub, complete=True)["clean"]) == {"II", "TT", "IT", "TI"}
    np.save(sub / "clean.II.npy", np.zeros((2, 3)))
    with pytest.raises(InputError, match="both as flat files and in"):
        find_path_scores(sub)
    (flat / "clean.TI.npy").unlink()
    assert set(find_path_scores(flat)["clean"]) == {"II", "TT", "IT"}  # modes need only some paths
    with pytest.raises(InputError, match="lacks the TI path"):
        find_path_scores(flat, complete=True)
    emb = tmp_path / "emb"
    emb.mkdir()
    for stem in ("gallery", "clean"):
        for m in ("image", "text"):
            np.save(emb / f"{stem}.{m}.npy", np.zeros((2, 4)))
    gallery, conds = find_embeddings(emb)
    assert [g.name for g in gallery] == ["gallery.image.npy", "gallery.text.npy"] and list(conds) == ["clean"]


# ------------------------------------------------------------------------------------------ TREC
def test_trec_run_round_trip_is_exact_for_float32_and_float64(tmp_path):
    rng = derive_generator("test-layout", "trec")
    for dtype in (np.float32, np.float64):
        s = rng.standard_normal((3, 7)).astype(dtype) * 1e-3
        top = topk(s, 4)
        write_trec_run(tmp_path / "r.run", ["q0", "q1", "q2"], [f"g{j}" for j in range(7)], *top)
        idx, sc = read_trec_run(tmp_path / "r.run", ["q0", "q1", "q2"], [f"g{j}" for j in range(7)])
        assert np.array_equal(idx, top.indices)
        assert np.array_equal(sc.astype(dtype), top.scores)  # the one float format reads back exactly
    write_qrels(tmp_path / "q.txt", {"q0": ["g1", "g2"], "q1": {"g3": 2}})
    assert (tmp_path / "q.txt").read_text() == "q0 0 g1 1\nq0 0 g2 1\nq1 0 g3 2\n"


# ------------------------------------------------------------------------------------------ ranking
@pytest.mark.parametrize("k", [1, 3, 9, 15])
def test_exact_and_streaming_topk_agree_with_a_sort_including_inf_and_padding(k):
    rng = derive_generator("test-ranking", k)
    s = rng.integers(0, 3, size=(5, 9)).astype(np.float64)  # heavy ties
    s[0, 4] = np.inf
    s[1, :] = -np.inf
    s[2, 7] = -np.inf
    want = [_ref_order(row)[:k] for row in s]
    kk = min(k, 9)
    dense = topk(s, k)
    for got in (dense, topk(s, k, chunk_size=2), streaming_topk(s, k, chunk=4)):
        assert got.indices.shape == (5, k)
        assert got.indices[:, :kk].tolist() == want
        assert (got.indices[:, kk:] == -1).all() and np.isnan(got.scores[:, kk:]).all()
        assert np.array_equal(got.scores[:, :kk], np.take_along_axis(s, got.indices[:, :kk], 1))
    assert topk_indices(s, kk).tolist() == want


def test_nan_is_refused_everywhere():
    s = np.zeros((2, 50))
    s[1, 37] = np.nan
    for call in (lambda: topk(s, 3), lambda: topk(s, 3, chunk_size=10), lambda: streaming_topk(s, 3, chunk=7),
                 lambda: topk_indices(s, 49)):
        with pytest.raises(InputError, match="NaN"):
            call()
    acc = StreamingTopK(2, 3)
    acc.push(np.zeros((2, 5)))
    with pytest.raises(InputError, match="NaN"):
        acc.push(s[:, :40])


def test_first_positive_rank_contract():
    rng = derive_generator("test-ranking", "fpr")
    s = np.round(rng.random((4, 12)), 1)
    rel = [[3, 7], [], [0, 11], [5]]
    rows = np.array([q for q, c in enumerate(rel) for _ in c])
    cols = np.array([j for c in rel for j in c])
    got = first_positive_rank(s, rows, cols)
    for q in range(4):
        order = _ref_order(s[q])
        if rel[q]:
            assert got[q] == 1 + min(order.index(j) for j in rel[q])
        else:
            assert np.isnan(got[q])  # no positive: NaN, never 0
