"""`snapbench moor` end to end: embeddings or path scores in, SCORES_DIR / TREC runs / weights out."""

from __future__ import annotations

import csv

import numpy as np
import pytest
from typer.testing import CliRunner

from snapbench.cli import app
from snapbench.core.seeding import derive_generator
from snapbench.fusion import moor, moor_from_scores, path_scores

runner = CliRunner()


@pytest.fixture()
def emb(tmp_path):
    rng = derive_generator("test-cli-moor")
    gI = rng.standard_normal((50, 8)).astype(np.float32)
    gT = (gI + rng.standard_normal((50, 8))).astype(np.float32)
    qI = (gI[:6] + 0.3 * rng.standard_normal((6, 8))).astype(np.float32)
    qT = (gT[:6] + 0.3 * rng.standard_normal((6, 8))).astype(np.float32)
    for name, a in (("qI", qI), ("qT", qT), ("gI", gI), ("gT", gT)):
        np.save(tmp_path / f"{name}.npy", a)
    return tmp_path, (qI, qT, gI, gT)


def _args(d, *extra):
    return ["moor", "--q-image", str(d / "qI.npy"), "--q-text", str(d / "qT.npy"),
            "--g-image", str(d / "gI.npy"), "--g-text", str(d / "gT.npy"), *extra]


def test_embeddings_to_scores_dir(emb):
    d, (qI, qT, gI, gT) = emb
    r = runner.invoke(app, _args(d, "--out", str(d / "out"), "--condition", "img/motion_blur/s2"))
    assert r.exit_code == 0, r.output
    got = np.load(d / "out" / "img__motion_blur__s2.npy")
    assert np.abs(got - moor(qI, qT, gI, gT).scores).max() < 1e-12
    assert (d / "out" / "query_ids.txt").read_text().split() == [f"q{i}" for i in range(6)]
    assert len((d / "out" / "gallery_ids.txt").read_text().split()) == 50
    rows = list(csv.DictReader(open(d / "out" / "moor_weights" / "img__motion_blur__s2.csv")))
    assert len(rows) == 6 and rows[0]["query_id"] == "q0"
    w = np.array([[float(row[k]) for k in ("w_II", "w_TT", "w_IT", "w_TI")] for row in rows])
    assert np.allclose(w, moor(qI, qT, gI, gT).weights, rtol=1e-12)
    # only condition .npy files at the top level: the folder stays a valid SCORES_DIR
    assert sorted(p.name for p in (d / "out").glob("*.npy")) == ["img__motion_blur__s2.npy"]


def test_options_no_whiten_gate_topk_and_ids(emb):
    d, (qI, qT, gI, gT) = emb
    (d / "qids.txt").write_text("".join(f"query{i}\n" for i in range(6)))
    (d / "gids.txt").write_text("".join(f"item{i}\n" for i in range(50)))
    r = runner.invoke(app, _args(d, "--out", str(d / "o2"), "--no-whiten", "--gate", "linear", "--topk", "3",
                                 "--chunk-size", "7", "--query-ids", str(d / "qids.txt"),
                                 "--gallery-ids", str(d / "gids.txt"), "--dtype", "float64"))
    assert r.exit_code == 0, r.output
    dense = moor(qI, qT, gI, gT, whiten=False, gate="linear").scores
    lines = (d / "o2" / "clean.trec").read_text().splitlines()
    assert len(lines) == 18
    for q in range(6):
        want = sorted(range(50), key=lambda j: (-dense[q, j], j))[:3]
        got = [ln.split() for ln in lines[3 * q : 3 * q + 3]]
        assert [g[0] for g in got] == [f"query{q}"] * 3
        assert [g[2] for g in got] == [f"item{j}" for j in want]
        assert [int(g[3]) for g in got] == [1, 2, 3]
        assert np.allclose([float(g[4]) for g in got], dense[q, want], atol=1e-12)


def test_paths_dir_flat_and_subfolders(emb):
    d, (qI, qT, gI, gT) = emb
    ps = path_scores(qI, qT, gI, gT)
    ps2 = path_scores(qI[::-1], qT, gI, gT)
    flat, sub = d / "flat", d / "sub"
    flat.mkdir()
    for p in ("II", "TT", "IT", "TI"):
        np.save(flat / f"clean.{p}.npy", getattr(ps, p))
        np.save(flat / f"txt__char_swap.{p}.npy", getattr(ps2, p))
        (sub / p).mkdir(parents=True)
        np.save(sub / p / "clean.npy", getattr(ps, p))
    (flat / "query_ids.txt").write_text("".join(f"a{i}\n" for i in range(6)))
    for src in (flat, sub):
        out = d / f"out_{src.name}"
        r = runner.invoke(app, ["moor", "--paths-dir", str(src), "--out", str(out), "--weights-format", "npy"])
        assert r.exit_code == 0, r.output
        want = moor_from_scores(ps.II, ps.TT, ps.IT, ps.TI)
        assert np.array_equal(np.load(out / "clean.npy"), want.scores)
        assert np.array_equal(np.load(out / "moor_weights" / "clean.npy"), want.weights)
    assert (d / "out_flat" / "txt__char_swap.npy").exists()
    assert (d / "out_flat" / "query_ids.txt").read_text().split()[0] == "a0"


def test_cli_errors_name_the_file(emb, tmp_path):
    d, (qI, qT, gI, gT) = emb
    bad = qT.copy()
    bad[1, 1] = np.nan
    np.save(d / "qT.npy", bad)
    r = runner.invoke(app, _args(d, "--out", str(d / "o")))
    assert r.exit_code != 0 and "qT.npy" in r.output and "non-finite" in r.output
    # the README's form, as every other one-file error of moor: "error: <file>: <flag>: <problem>"
    assert f"error: {d / 'qT.npy'}: --q-text: non-finite value nan at row 1, column 1" in r.output, r.output
    np.save(d / "qT.npy", qT[:, :5])
    r = runner.invoke(app, _args(d, "--out", str(d / "o")))
    assert r.exit_code != 0 and "--q-text" in r.output and "qT.npy" in r.output
    np.save(d / "qT.npy", qT)
    r = runner.invoke(app, ["moor", "--q-image", str(d / "qI.npy"), "--out", str(d / "o")])
    assert r.exit_code != 0 and "--q-text" in r.output
    r = runner.invoke(app, _args(d, "--out", str(d / "o"), "--ann"))
    assert r.exit_code != 0 and "--topk" in r.output
    (d / "pd").mkdir()
    np.save(d / "pd" / "clean.II.npy", np.zeros((2, 3)))
    r = runner.invoke(app, ["moor", "--paths-dir", str(d / "pd"), "--out", str(d / "o")])
    assert r.exit_code != 0 and "TT" in r.output
    r = runner.invoke(app, _args(d, "--out", str(d / "o"), "--gate", "cosine"))
    assert r.exit_code != 0 and "unknown gate" in r.output
    (d / "gI.npy").unlink()
    r = runner.invoke(app, _args(d, "--out", str(d / "o")))
    assert r.exit_code != 0 and "gI.npy" in r.output


def test_safetensors_input(emb):
    safetensors = pytest.importorskip("safetensors.numpy")
    d, (qI, qT, gI, gT) = emb
    safetensors.save_file({"image": qI, "text": qT}, str(d / "q.safetensors"))
    safetensors.save_file({"emb": gI}, str(d / "gI.safetensors"))
    r = runner.invoke(app, ["moor", "--q-image", str(d / "q.safetensors") + "#image", "--q-text",
                            str(d / "q.safetensors") + "#text", "--g-image", str(d / "gI.safetensors"),
                            "--g-text", str(d / "gT.npy"), "--out", str(d / "st")])
    assert r.exit_code == 0, r.output
    assert np.abs(np.load(d / "st" / "clean.npy") - moor(qI, qT, gI, gT).scores).max() < 1e-12
    r = runner.invoke(app, ["moor", "--q-image", str(d / "q.safetensors"), "--q-text", str(d / "qT.npy"),
                            "--g-image", str(d / "gI.npy"), "--g-text", str(d / "gT.npy"), "--out", str(d / "st2")])
    assert r.exit_code != 0 and "image, text" in r.output


def test_help_lists_options():
    r = runner.invoke(app, ["moor", "--help"])
    assert r.exit_code == 0
    for opt in ("--paths-dir", "--no-whiten", "--gate", "--topk", "--chunk-size", "--ann", "--out"):
        assert opt in r.output


def test_outputs_are_written_atomically(emb, monkeypatch):
    # a write that dies half-way must leave the previous output intact, never a truncated .npy
    d, _ = emb
    out = d / "atomic"
    out.mkdir()
    old = np.arange(6.0).reshape(2, 3)
    np.save(out / "clean.npy", old)

    def dying_write_array(fp, array, *args, **kwargs):
        fp.write(b"\x93NUMPY partial")
        raise OSError("disk full")

    monkeypatch.setattr(np.lib.format, "write_array", dying_write_array)
    r = runner.invoke(app, _args(d, "--out", str(out)))
    assert r.exit_code != 0
    monkeypatch.undo()
    assert np.array_equal(np.load(out / "clean.npy"), old)
    assert sorted(p.name for p in out.iterdir() if p.name.endswith(".tmp")) == []


def test_out_that_is_a_file_and_bad_condition_are_clean_errors(emb):
    d, _ = emb
    (d / "taken").write_text("not a folder")
    r = runner.invoke(app, _args(d, "--out", str(d / "taken")))
    assert r.exit_code == 2, r.output
    assert "error:" in r.output and "taken" in r.output and "Traceback" not in r.output
    # the output folder must stay readable by `snapbench evaluate`: the stem has to be a condition id
    r = runner.invoke(app, _args(d, "--out", str(d / "o"), "--condition", "bogus/x"))
    assert r.exit_code == 2 and "--condition" in r.output and "not a condition id" in r.output
    assert not (d / "o" / "bogus__x.npy").exists()
    r = runner.invoke(app, _args(d, "--out", str(d / "o"), "--condition", "txt__char_swap"))
    assert r.exit_code == 0, r.output
    assert (d / "o" / "txt__char_swap.npy").exists()


def test_outputs_get_the_usual_file_mode(emb):
    # atomic writes must not turn outputs private (mkstemp's 0o600): same mode as a plain open()
    d, _ = emb
    r = runner.invoke(app, _args(d, "--out", str(d / "mode")))
    assert r.exit_code == 0, r.output
    (d / "plain").write_text("x")
    want = (d / "plain").stat().st_mode & 0o777
    for f in ("clean.npy", "query_ids.txt", "gallery_ids.txt", "moor_weights/clean.csv"):
        assert (d / "mode" / f).stat().st_mode & 0o777 == want, f


def _encode_layout(root, rng, Q=6, N=40, d=8):
    """The folder layout `snapbench encode` writes: OUT/embeddings/*.npy plus OUT/query_ids.txt etc."""
    emb_dir = root / "embeddings"
    emb_dir.mkdir(parents=True)
    gI = rng.standard_normal((N, d)).astype(np.float32)
    gT = (gI + rng.standard_normal((N, d))).astype(np.float32)
    np.save(emb_dir / "gallery.image.npy", gI)
    np.save(emb_dir / "gallery.text.npy", gT)
    queries = {}
    for stem in ("clean", "img__motion_blur__s2", "txt__typo"):
        qI = (gI[:Q] + 0.4 * rng.standard_normal((Q, d))).astype(np.float32)
        qT = (gT[:Q] + 0.4 * rng.standard_normal((Q, d))).astype(np.float32)
        np.save(emb_dir / f"{stem}.image.npy", qI)
        np.save(emb_dir / f"{stem}.text.npy", qT)
        queries[stem] = (qI, qT)
    (root / "query_ids.txt").write_text("".join(f"Q{i}\n" for i in range(Q)))
    (root / "gallery_ids.txt").write_text("".join(f"G{i}\n" for i in range(N)))
    return emb_dir, gI, gT, queries


def test_embeddings_dir_fuses_every_condition_with_one_fit(tmp_path):
    emb_dir, gI, gT, queries = _encode_layout(tmp_path / "enc", derive_generator("test-cli-moor", "emb-dir"))
    r = runner.invoke(app, ["moor", "--embeddings-dir", str(emb_dir), "--out", str(tmp_path / "fused")])
    assert r.exit_code == 0, r.output
    for stem, (qI, qT) in queries.items():
        got = np.load(tmp_path / "fused" / f"{stem}.npy")
        assert np.abs(got - moor(qI, qT, gI, gT).scores).max() < 1e-12, stem
        assert stem in r.output
        rows = list(csv.DictReader(open(tmp_path / "fused" / "moor_weights" / f"{stem}.csv")))
        assert [row["query_id"] for row in rows] == [f"Q{i}" for i in range(6)]
    # ids come from encode's OUT (the parent of the embeddings folder)
    assert (tmp_path / "fused" / "gallery_ids.txt").read_text().split() == [f"G{i}" for i in range(40)]
    # the output is a SCORES_DIR that `snapbench evaluate` reads
    qrels = {f"Q{i}": [f"G{i}"] for i in range(6)}
    import json

    (tmp_path / "qrels.json").write_text(json.dumps(qrels))
    r = runner.invoke(app, ["evaluate", str(tmp_path / "fused"), "--qrels", str(tmp_path / "qrels.json"),
                            "--resamples", "200", "--out", str(tmp_path / "report.json")])
    assert r.exit_code == 0, r.output
    assert set(json.loads((tmp_path / "report.json").read_text())["conditions"]) >= {"img/motion_blur/s2", "txt/typo"}


def test_embeddings_dir_errors(tmp_path):
    emb_dir, *_ = _encode_layout(tmp_path / "enc", derive_generator("test-cli-moor", "emb-dir-bad"))
    out = str(tmp_path / "o")
    r = runner.invoke(app, ["moor", "--embeddings-dir", str(emb_dir), "--condition", "txt/typo", "--out", out])
    assert r.exit_code == 2 and "--condition" in r.output
    r = runner.invoke(app, ["moor", "--embeddings-dir", str(emb_dir), "--paths-dir", str(emb_dir), "--out", out])
    assert r.exit_code == 2 and "not several" in r.output
    # a stray pair whose name is no condition id would make the output unreadable for `evaluate`
    for suffix in ("image", "text"):
        np.save(emb_dir / f"backup.{suffix}.npy", np.zeros((6, 8), dtype=np.float32))
    r = runner.invoke(app, ["moor", "--embeddings-dir", str(emb_dir), "--out", out])
    assert r.exit_code == 2 and "backup.image.npy" in r.output and "not a condition id" in r.output
    assert not (tmp_path / "o" / "clean.npy").exists()  # refused before any work
    for suffix in ("image", "text"):
        (emb_dir / f"backup.{suffix}.npy").rename(emb_dir / f"img__compression__s01.{suffix}.npy")
    r = runner.invoke(app, ["moor", "--embeddings-dir", str(emb_dir), "--out", out])
    assert r.exit_code == 2 and "'img__compression__s1'" in r.output and "s01" in r.output
    for suffix in ("image", "text"):
        (emb_dir / f"img__compression__s01.{suffix}.npy").unlink()
    (emb_dir / "txt__typo.text.npy").unlink()
    r = runner.invoke(app, ["moor", "--embeddings-dir", str(emb_dir), "--out", out])
    assert r.exit_code == 2 and "txt__typo.text.npy" in r.output
    np.save(emb_dir / "txt__typo.text.npy", np.zeros((5, 8), dtype=np.float32))
    r = runner.invoke(app, ["moor", "--embeddings-dir", str(emb_dir), "--out", out])
    assert r.exit_code == 2 and "txt__typo.image.npy" in r.output and "(5, 8)" in r.output
    (emb_dir / "gallery.text.npy").unlink()
    r = runner.invoke(app, ["moor", "--embeddings-dir", str(emb_dir), "--out", out])
    assert r.exit_code == 2 and "gallery.text.npy" in r.output


def test_ann_run_reports_recall_against_exact_moor(tmp_path):
    from snapbench.core.ranking import topk, topk_overlap
    from snapbench.fusion.search import ann_available

    if not ann_available():
        pytest.skip("faiss not installed")
    import json

    rng = derive_generator("test-cli-moor", "ann")
    emb_dir, gI, gT, queries = _encode_layout(tmp_path / "enc", rng, Q=12, N=600, d=16)
    out = tmp_path / "ann"
    r = runner.invoke(app, ["moor", "--embeddings-dir", str(emb_dir), "--topk", "5", "--ann", "--ann-check", "100",
                            "--out", str(out)])
    assert r.exit_code == 0, r.output
    report = json.loads((out / "ann_recall.json").read_text())
    assert set(report) == set(queries)
    for stem, (qI, qT) in queries.items():
        # recompute from the written run and the dense exact scores: same number
        exact = topk(moor(qI, qT, gI, gT).scores, 5).indices
        approx = np.full((12, 5), -1)
        for line in (out / f"{stem}.trec").read_text().splitlines():
            qid, _, gid, rank, *_ = line.split()
            approx[int(qid[1:]), int(rank) - 1] = int(gid[1:])
        assert report[stem] == {"k": 5, "queries": 12, "topk_overlap": pytest.approx(topk_overlap(exact, approx, 5)),
                                "measure": "share of the exact MOOR top-k that the approximate search returned",
                                "rows": list(range(12))}
        assert f"ANN top-5 overlap {report[stem]['topk_overlap']:.4f}" in r.output
    runs = []
    for name in ("ann4", "ann4-again"):
        r = runner.invoke(app, ["moor", "--embeddings-dir", str(emb_dir), "--topk", "5", "--ann", "--ann-check", "4",
                                "--out", str(tmp_path / name)])
        assert r.exit_code == 0, r.output
        runs.append(json.loads((tmp_path / name / "ann_recall.json").read_text()))
    assert runs[0] == runs[1]  # the sampled rows are seeded
    for entry in runs[0].values():
        assert entry["queries"] == 4 and entry["rows"] == sorted(set(entry["rows"])) and max(entry["rows"]) < 12
    # a rerun without --ann drops the recall entries of the conditions it rewrote (no stale numbers)
    r = runner.invoke(app, ["moor", "--embeddings-dir", str(emb_dir), "--topk", "5", "--out", str(tmp_path / "ann4")])
    assert r.exit_code == 0, r.output
    assert not (tmp_path / "ann4" / "ann_recall.json").exists()
    r = runner.invoke(app, ["moor", "--embeddings-dir", str(emb_dir), "--topk", "5", "--ann-check", "3", "--out", str(out)])
    assert r.exit_code == 2 and "--ann-check" in r.output


def test_ann_recall_counts_misses():
    # the recall helper against a deliberately damaged approximate result: the expected value is known
    from snapbench.app.moor import ann_topk_overlap
    from snapbench.fusion import MOORIndex

    rng = derive_generator("test-cli-moor", "recall-helper")
    gI, gT = rng.standard_normal((80, 6)), rng.standard_normal((80, 6))
    qI, qT = rng.standard_normal((10, 6)), rng.standard_normal((10, 6))
    index = MOORIndex().fit(gI, gT)
    approx = index.topk(qI, qT, 5).indices.copy()
    approx[0, :2] = -1        # two misses
    approx[3, 4] = approx[3, 0]  # a duplicate counts once: one miss
    approx[7] = approx[7][::-1]  # order does not matter
    got = ann_topk_overlap(index, qI, qT, approx, 5, 100, "clean")
    assert got["queries"] == 10 and got["rows"] == list(range(10))
    assert got["topk_overlap"] == pytest.approx(1 - 3 / 50)
    part = ann_topk_overlap(index, qI, qT, approx, 5, 4, "clean")
    misses = {0: 2, 3: 1}
    assert part["topk_overlap"] == pytest.approx(1 - sum(misses.get(r, 0) for r in part["rows"]) / 20)


def test_paths_dir_overflow_error_names_condition_and_files(tmp_path):
    rng = derive_generator("test-cli-moor", "paths-overflow")
    d = tmp_path / "paths"
    d.mkdir()
    for p in ("II", "TT", "IT", "TI"):
        np.save(d / f"txt__typo.{p}.npy", rng.standard_normal((4, 9)) * (1e160 if p == "TT" else 1.0))
    r = runner.invoke(app, ["moor", "--paths-dir", str(d), "--out", str(tmp_path / "o")])
    assert r.exit_code == 2 and "'txt__typo'" in r.output and "txt__typo.TT.npy" in r.output and "too large" in r.output


def test_exact_rerun_drops_stale_ann_recall_entries(tmp_path):
    import json

    rng = derive_generator("test-cli-moor", "stale-recall")
    d = tmp_path / "paths"
    d.mkdir()
    for p in ("II", "TT", "IT", "TI"):
        np.save(d / f"clean.{p}.npy", rng.standard_normal((4, 9)))
    out = tmp_path / "o"
    out.mkdir()
    # entries as an earlier --ann run would have left them: one for a condition rewritten now, one not
    (out / "ann_recall.json").write_text(json.dumps({"clean": {"k": 5, "queries": 4, "recall": 0.5, "rows": [0, 1, 2, 3]},
                                                     "txt__typo": {"k": 5, "queries": 4, "recall": 0.75, "rows": [0, 1, 2, 3]}}))
    r = runner.invoke(app, ["moor", "--paths-dir", str(d), "--topk", "5", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert set(json.loads((out / "ann_recall.json").read_text())) == {"txt__typo"}


def test_text_file_given_as_npy_is_named_not_called_pickled(emb):
    d, _ = emb
    (d / "gI.npy").write_text("0.1 0.2 0.3\n0.4 0.5 0.6\n", encoding="utf-8")
    r = runner.invoke(app, _args(d, "--out", str(d / "o")))
    assert r.exit_code == 2
    assert "gI.npy" in r.output and "not a .npy file" in r.output
    assert "pickle" not in r.output.lower()


def test_rerun_in_another_format_leaves_one_file_per_condition(emb):
    """moor --topk into the folder of a dense run (and back): evaluate must still read the folder."""
    from snapbench.app.evaluate import evaluate_directory
    from snapbench.evaluate import EvaluationConfig

    d, _ = emb
    out = d / "fused"
    qrels = d / "qrels.json"
    qrels.write_text('{"q0": ["g0"], "q1": ["g1"], "q2": ["g2"], "q3": ["g3"], "q4": ["g4"], "q5": ["g5"]}')
    cfg = EvaluationConfig(ks=(1,), resamples=20)
    for extra, present, absent in ((["--weights-format", "npy"], "clean.npy", "clean.trec"),
                                   (["--topk", "5"], "clean.trec", "clean.npy"),
                                   ([], "clean.npy", "clean.trec")):
        r = runner.invoke(app, _args(d, "--out", str(out), *extra))
        assert r.exit_code == 0, r.output
        assert (out / present).is_file() and not (out / absent).exists(), extra
        assert len(list((out / "moor_weights").glob("clean.*"))) == 1
        evaluate_directory(out, qrels, cfg)  # one file per condition: no "two files name one condition"


def test_a_run_folders_embeddings_are_refused_with_what_to_do(smoke_run, tmp_path):
    """A `snapbench run` keeps its embeddings in a layout of its own (queries/, a sharded gallery): moor
    names the run and what to do instead, rather than a missing file."""
    for given in (smoke_run / "embeddings", smoke_run / "embeddings" / "queries", smoke_run):
        r = runner.invoke(app, ["moor", "--embeddings-dir", str(given), "--out", str(tmp_path / "o")])
        assert r.exit_code == 2, r.output
        text = " ".join(r.output.split())
        assert "the output folder of 'snapbench run'" in text
        assert "not an EMBEDDINGS_DIR" in text and str(smoke_run / "MOOR" / "report.json") in text
        assert "'snapbench encode CORRUPTED --gallery GALLERY --out ENC'" in text
        assert "--embeddings-dir ENC/embeddings" in text
        assert not (tmp_path / "o").exists()


def test_mismatched_query_shapes_name_the_rule_they_break(emb):
    """Trial 3: '--q-image (qI.npy) has shape (5, 8), --q-text (qT.npy) has shape (5, 6)' listed the shapes
    without the rule (one dimension for both sides? one row per query?)."""
    d, (qI, qT, gI, gT) = emb
    cases = [
        (qT[:, :6], "--q-text (" + str(d / "qT.npy") + ") has shape (6, 6): the image and text embeddings must share"),
        (qT[:5], "has shape (5, 8): the two need the same number of rows: one per query"),
    ]
    for bad, words in cases:
        np.save(d / "qT.npy", bad)
        r = runner.invoke(app, _args(d, "--out", str(d / "out")))
        assert r.exit_code == 2 and words in " ".join(r.output.split()), r.output
    np.save(d / "qT.npy", qT[:, :6])
    np.save(d / "qI.npy", qI[:, :6])
    r = runner.invoke(app, _args(d, "--out", str(d / "out")))
    assert r.exit_code == 2 and "the gallery has dim 8: the queries' embeddings must have the gallery's dimension" in " ".join(r.output.split()), r.output
