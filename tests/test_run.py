"""`snapbench run` end to end: equal to the step-by-step route, resumable, paired, bounded in memory.

The step-by-step route (corrupt to PNG files -> encode -> evaluate --mode / MOORIndex) is an
independent second code path: it writes and decodes real files, composes modes from saved path
matrices and reads everything back through the evaluator's file readers.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from proc_helpers import alive, spawned_children
from smoke import SMOKE_CONDITIONS, smoke_options

from snapbench.app.stages import run_benchmark
from snapbench.core.defaults import DEFAULT_DATA
from snapbench.core.errors import ConfigError, InputError
from snapbench.models import get_encoder

CONDS = SMOKE_CONDITIONS


def _values(report: dict) -> dict:
    return {c: {m: v for m, v in vals.items()} for c, vals in report["conditions"].items()}


def _labelled(table: dict) -> dict:
    """``{condition: {metric: x}}`` without the label-free stability measures."""
    return {c: {m: v for m, v in vals.items() if m.split("@")[0] not in ("overlap", "rbo", "flip")}
            for c, vals in table.items()}


def test_run_equals_the_stepwise_route(smoke_run, tmp_path):
    from snapbench.app.corrupt import run_corruption
    from snapbench.app.encode import encode_corrupted
    from snapbench.app.evaluate import evaluate_directory
    from snapbench.evaluate import EvaluationConfig
    from snapbench.fusion import MOORIndex

    out = smoke_run
    assert json.loads((out / "run.json").read_text())["modes"] == ["I2I", "T2T", "IT2IT", "I2IT", "T2IT", "MOOR"]
    run_corruption(DEFAULT_DATA / "queries.jsonl", tmp_path / "c", conditions=CONDS, progress=False)
    enc = encode_corrupted(tmp_path / "c", DEFAULT_DATA / "gallery.jsonl", get_encoder("toy"), tmp_path / "e")
    cfg = EvaluationConfig(seed=0, resamples=200)
    qrels = DEFAULT_DATA / "qrels.json"
    for mode in ("I2I", "T2T", "IT2IT", "I2IT", "T2IT"):
        ref = evaluate_directory(tmp_path / "e" / "paths", qrels, cfg, mode=mode).to_json()
        got = json.loads((out / mode / "report.json").read_text())
        assert _values(got) == _values(ref), mode
        assert got["paired"] == ref["paired"], mode
        assert got["additivity"] == ref["additivity"], mode
    # MOOR: fused scores from encode's embeddings, saved as a SCORES_DIR and evaluated from files
    emb = tmp_path / "e" / "embeddings"
    index = MOORIndex().fit(np.load(emb / "gallery.image.npy"), np.load(emb / "gallery.text.npy"))
    mdir = tmp_path / "m"
    mdir.mkdir()
    for name in ("query_ids.txt", "gallery_ids.txt"):
        (mdir / name).write_bytes((tmp_path / "e" / name).read_bytes())
    for cond in enc.conditions:
        stem = cond.replace("/", "__")
        np.save(mdir / f"{stem}.npy", index.scores(np.load(emb / f"{stem}.image.npy"), np.load(emb / f"{stem}.text.npy")))
    ref = evaluate_directory(mdir, qrels, cfg).to_json()
    got = json.loads((out / "MOOR" / "report.json").read_text())
    assert _values(got) == _values(ref)
    share = json.loads((out / "MOOR" / "text_share.json").read_text())
    assert set(share) == set(CONDS) and all(0 <= v <= 1 for v in share.values())


def test_run_writes_per_query_values_that_average_to_the_report(smoke_run):
    out = smoke_run
    import csv

    rows = list(csv.DictReader((out / "T2T" / "per_query.csv").open()))
    rep = json.loads((out / "T2T" / "report.json").read_text())
    for cond in CONDS:
        vals = [float(r["value"]) for r in rows if r["condition"] == cond and r["metric"] == "hit@1" and r["value"]]
        assert np.mean(vals) == pytest.approx(rep["conditions"][cond]["hit@1"], abs=1e-12)
    assert rep["coarse_text_drag"]["value"] == pytest.approx(
        rep["conditions"]["clean"]["hit@1"] - json.loads((out / "I2I" / "report.json").read_text())["conditions"]["clean"]["hit@1"]
    )


class _CrashingToy:
    """The toy encoder, failing after ``budget`` image batches (a crash mid-run)."""

    def __init__(self, budget: int):
        self.inner = get_encoder("toy")
        self.name, self.fingerprint, self.modalities = "toy", "toy", frozenset({"image", "text"})
        self.budget = budget

    def encode_images(self, images):
        self.budget -= 1
        if self.budget < 0:
            raise RuntimeError("simulated crash")
        return self.inner.encode_images(images)

    def encode_texts(self, texts):
        return self.inner.encode_texts(texts)


@pytest.mark.slow
def test_a_crashed_run_resumes_to_the_same_reports(demo, tmp_path):
    opts = smoke_options(block_queries=4, batch_size=8)
    ref_enc = _CrashingToy(10**9)
    ref = run_benchmark(demo, ref_enc, tmp_path / "ref", opts)
    ref_calls = 10**9 - ref_enc.budget
    with pytest.raises(InputError, match="encoder failed .* simulated crash") as err:
        run_benchmark(demo, _CrashingToy(ref_calls - 2), tmp_path / "r", opts)  # dies in the last block
    assert isinstance(err.value.__cause__, RuntimeError)
    log = (tmp_path / "r" / "embeddings" / "queries" / "blocks.jsonl").read_text().splitlines()
    assert 0 < len(log) < 3  # some blocks finished, not all
    calls = _CrashingToy(10**9)
    run_benchmark(demo, calls, tmp_path / "r", opts)
    # only the unfinished blocks were encoded again (the gallery and finished blocks were not)
    assert 0 < 10**9 - calls.budget <= 2
    for name in ref.reports:
        a = json.loads((tmp_path / "ref" / name / "report.json").read_text())
        b = json.loads((tmp_path / "r" / name / "report.json").read_text())
        assert _values(a) == _values(b) and a["paired"] == b["paired"], name


@pytest.mark.slow
def test_workers_do_not_change_results(demo, smoke_run, tmp_path):
    out = smoke_run
    run_benchmark(demo, "toy", tmp_path / "w2", smoke_options(workers=2))
    for mode in ("IT2IT", "MOOR"):
        a = json.loads((out / mode / "report.json").read_text())
        b = json.loads((tmp_path / "w2" / mode / "report.json").read_text())
        assert _values(a) == _values(b) and a["paired"] == b["paired"]


def test_a_different_seed_in_the_same_folder_is_refused(demo, tmp_path):
    run_benchmark(demo, "toy", tmp_path / "o", smoke_options(conditions=["clean", "txt/char_swap"]))
    with pytest.raises(ConfigError, match="seed"):
        run_benchmark(demo, "toy", tmp_path / "o", smoke_options(conditions=["clean", "txt/char_swap"], seed=1))


@pytest.mark.slow
def test_peak_memory_does_not_grow_with_the_gallery_beyond_its_embeddings(demo, tmp_path):
    """Gallery x 1 vs x 8 (the same photos under new ids): the extra peak is bounded by a small
    multiple of the extra embeddings, not by Q x N matrices or decoded gallery images."""
    from dataclasses import replace

    def grown(factor: int):
        gal = [replace(g, id=f"{g.id}~{k}") for k in range(factor) for g in demo.gallery]
        qrels = {q: {f"{g}~0": r for g, r in rel.items()} for q, rel in demo.qrels.items()}
        return replace(demo, gallery=gal, qrels=qrels)

    peaks = {}
    for factor in (1, 8):
        ds = grown(factor)
        tracemalloc.start()
        run_benchmark(ds, "toy", tmp_path / f"g{factor}", smoke_options(conditions=["clean", "img/motion_blur/s1"]))
        peaks[factor] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    n_extra = 7 * len(demo.gallery)
    emb_bytes = n_extra * 2 * 256 * 4  # image + text embeddings, toy d = 256, float32
    one_image = 512 * 512 * 3
    assert peaks[8] - peaks[1] < 8 * emb_bytes + 4 * one_image, peaks


@pytest.mark.slow
def test_a_killed_cli_run_resumes_to_the_same_report(tmp_path):
    """kill -9 of `snapbench run` mid-way, then the same command again: same report as in one go."""
    mod = tmp_path / "slow_enc.py"
    mod.write_text(
        "import time\nfrom snapbench.models import get_encoder\n"
        "class Slow:\n"
        "    name = fingerprint = 'slow-toy'\n"
        "    modalities = frozenset({'image', 'text'})\n"
        "    def __init__(self):\n        self.inner = get_encoder('toy')\n"
        "    def encode_images(self, xs):\n        time.sleep(0.05 * len(xs)); return self.inner.encode_images(xs)\n"
        "    def encode_texts(self, xs):\n        return self.inner.encode_texts(xs)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}

    def cmd(out):
        return [sys.executable, "-m", "snapbench", "run", str(DEFAULT_DATA), "--encoder", "slow_enc:Slow", "--out", str(out),
                "--conditions", ",".join(CONDS), "--no-joint", "--resamples", "200", "--no-report", "--no-progress",
                "--no-cache", "--batch-size", "4", "--block-queries", "4"]

    subprocess.run(cmd(tmp_path / "ref"), check=True, env=env, capture_output=True)
    proc = subprocess.Popen(cmd(tmp_path / "k"), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    log = tmp_path / "k" / "embeddings" / "queries" / "blocks.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline and not (log.exists() and log.read_text().strip()):
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    subprocess.run(cmd(tmp_path / "k"), check=True, env=env, capture_output=True)
    for mode in ("IT2IT", "MOOR"):
        a = json.loads((tmp_path / "ref" / mode / "report.json").read_text())
        b = json.loads((tmp_path / "k" / mode / "report.json").read_text())
        assert _values(a) == _values(b) and a["paired"] == b["paired"]


@pytest.mark.slow
def test_workers_leave_no_shared_memory_and_stale_blocks_are_freed(demo, tmp_path):
    from multiprocessing import shared_memory

    from snapbench.engines.shm import remove_stale_shared

    shm = Path("/dev/shm")
    if not shm.is_dir():
        pytest.skip("no /dev/shm")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    block = shared_memory.SharedMemory(name=f"snapbench{int(dead.stdout)}_{'ab' * 6}", create=True, size=16)
    block.close()
    run_benchmark(demo, "toy", tmp_path / "w", smoke_options(workers=2, conditions=["clean", "img/motion_blur/s1"]))
    names = {p.name for p in shm.iterdir()}
    assert block.name.lstrip("/") not in names  # the dead run's block was freed
    assert not [n for n in names if n.startswith(f"snapbench{os.getpid()}_")]  # this run left none
    assert remove_stale_shared() == 0


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_kill_9_of_a_run_leaves_no_worker_behind(tmp_path):
    """`snapbench run --workers 2` killed with -9: its corruption workers exit with it."""

    (tmp_path / "slow_enc2.py").write_text(
        "import time\nfrom snapbench.models import get_encoder\n"
        "class Slow:\n    name = fingerprint = 'slow'\n    modalities = frozenset({'image', 'text'})\n"
        "    def __init__(self):\n        self.inner = get_encoder('toy')\n"
        "    def encode_images(self, xs):\n        time.sleep(0.2 * len(xs)); return self.inner.encode_images(xs)\n"
        "    def encode_texts(self, xs):\n        return self.inner.encode_texts(xs)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-m", "snapbench", "run", str(DEFAULT_DATA), "-e", "slow_enc2:Slow",
                             "--out", str(tmp_path / "o"), "--workers", "2", "--no-report", "--no-progress", "--no-cache"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers = []
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None and len(workers) < 2:
            workers = spawned_children(proc.pid)
            time.sleep(0.05)
        assert proc.poll() is None and len(workers) == 2, "the run ended before its workers could be seen"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(alive(p) for p in workers):
            time.sleep(0.1)
        assert not [p for p in workers if alive(p)], "workers outlived their killed parent"
    finally:
        for p in workers:
            if alive(p):
                os.kill(p, signal.SIGKILL)


@pytest.mark.slow
def test_a_sharded_gallery_gives_the_in_memory_reports_and_resumes_per_shard(demo, smoke_run, tmp_path):
    """Gallery embeddings in shards of 7 items, scores streamed shard by shard (modes and MOOR):
    the same numbers as the in-memory run; a crash while encoding the gallery keeps finished shards."""
    out = smoke_run
    opts = smoke_options(gallery_shard_rows=7)
    res = run_benchmark(demo, "toy", tmp_path / "s", opts)
    assert res.modes == ["I2I", "T2T", "IT2IT", "I2IT", "T2IT", "MOOR"] and "fusion/rrf" not in res.reports
    for name in res.reports:
        a = json.loads((out / name / "report.json").read_text())
        b = json.loads((tmp_path / "s" / name / "report.json").read_text())
        # the labelled metrics are equal to the last bit; the label-free stability measures read the
        # ranking down to depth 100, where the toy encoder's near-tied scores may order differently
        # between the streamed and the in-memory products (1-ulp rounding; the tie rule itself is
        # the same: test_ranking), so they are equal within a few queries' worth
        assert _labelled(a["conditions"]) == _labelled(b["conditions"]), name
        assert _labelled(a["paired"]) == _labelled(b["paired"]), name
        for c, vals in a["conditions"].items():
            for m, v in vals.items():
                assert b["conditions"][c][m] == pytest.approx(v, abs=0.02), (name, c, m)
    shards = sorted((tmp_path / "s" / "embeddings" / "gallery").glob("*.image.npy"))
    assert len(shards) == -(-len(demo.gallery) // 7)

    enc = _CrashingToy(2)  # dies on the third gallery batch: two shards of images are finished
    with pytest.raises(InputError, match="simulated crash"):
        run_benchmark(demo, enc, tmp_path / "k", smoke_options(gallery_shard_rows=7, batch_size=7))
    done = sorted((tmp_path / "k" / "embeddings" / "gallery").glob("*.image.npy"))
    assert len(done) == 2
    before = [p.stat().st_mtime_ns for p in done]
    again = _CrashingToy(10**9)
    run_benchmark(demo, again, tmp_path / "k", smoke_options(gallery_shard_rows=7, batch_size=7))
    assert [p.stat().st_mtime_ns for p in done] == before  # finished shards were not encoded again
    a = json.loads((tmp_path / "s" / "MOOR" / "report.json").read_text())
    b = json.loads((tmp_path / "k" / "MOOR" / "report.json").read_text())
    assert _values(a) == _values(b)


@pytest.mark.slow
def test_a_run_stopped_while_writing_its_report_resumes_to_the_same_run_json(demo, tmp_path, monkeypatch):
    """Ctrl-C after run.json says "complete" (while the report is written), then the same run again:
    its run.json is the uninterrupted run's, stability_vs_loss included (the reused run records it)."""
    from snapbench.app.stages import report as stage

    opts = smoke_options(report=True)
    run_benchmark(demo, "toy", tmp_path / "ref", opts)
    ref = json.loads((tmp_path / "ref" / "run.json").read_text())
    assert "stability_vs_loss" in ref  # the demo's labels: the measure is recorded in one go

    def stop(*_a, **_k):
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(stage, "_build_html", stop)
        with pytest.raises(KeyboardInterrupt):
            run_benchmark(demo, "toy", tmp_path / "r", opts)
    stopped = json.loads((tmp_path / "r" / "run.json").read_text())
    assert stopped["status"] == "complete" and not (tmp_path / "r" / "report.html").exists()
    run_benchmark(demo, "toy", tmp_path / "r", opts)
    again = json.loads((tmp_path / "r" / "run.json").read_text())
    assert again == ref
    assert json.loads((tmp_path / "r" / "stability.json").read_text()) == again["stability_vs_loss"]
