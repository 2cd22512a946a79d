"""`run`, `encode` and the embedding cache as a new user meets them: each case was a traceback or a silent
surprise before issue #15 (every test here fails on 5ab252f) and is now right or loud.

Through the command line (what users run); the shared-memory cases through real processes and signals.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from snapbench.app.corrupt import run_corruption
from snapbench.cli import app
from snapbench.core.defaults import DEFAULT_DATA

runner = CliRunner()
FAST = ["--resamples", "100", "--no-report", "--no-progress"]
SHM = Path("/dev/shm")

ENCODERS = """
import numpy as np
from snapbench.models import get_encoder

class TwoSpaces:
    '''Image and text embeddings of different sizes (two separate models, no shared space).'''
    name = fingerprint = "two-spaces"
    modalities = frozenset({"image", "text"})

    def encode_images(self, images):
        return np.stack([np.asarray(im, dtype=np.float32).reshape(-1, 3).mean(axis=0).repeat(3)[:8] for im in images])

    def encode_texts(self, texts):
        return np.asarray([[len(t), t.count("a"), t.count("e"), 1.0] for t in texts], dtype=np.float32)

class Boom:
    name = fingerprint = "boom"
    modalities = frozenset({"image", "text"})

    def encode_images(self, images):
        raise RuntimeError("CUDA out of memory")

    def encode_texts(self, texts):
        return np.ones((len(texts), 4), np.float32)

class NotANumber:
    name = fingerprint = "not-a-number"
    modalities = frozenset({"image", "text"})

    def encode_images(self, images):
        return np.ones((len(images), 4), np.float32)

    def encode_texts(self, texts):
        return np.full((len(texts), 4), np.nan, np.float32)

class Heavy:
    '''A model worth caching (not cheap): the toy features under another identity.'''
    name = fingerprint = "heavy-v1"
    modalities = frozenset({"image", "text"})

    def __init__(self):
        self.inner = get_encoder("toy")

    def encode_images(self, images):
        return self.inner.encode_images(images)

    def encode_texts(self, texts):
        return self.inner.encode_texts(texts)
"""


@pytest.fixture
def encoders(tmp_path, monkeypatch):
    (tmp_path / "snapbench_newuser_enc.py").write_text(ENCODERS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    yield "snapbench_newuser_enc"
    sys.modules.pop("snapbench_newuser_enc", None)


@pytest.fixture(scope="module")
def corrupted(tmp_path_factory):
    out = tmp_path_factory.mktemp("c") / "c"
    run_corruption(DEFAULT_DATA / "queries.jsonl", out, conditions=["img/motion_blur/s2", "txt/char_swap"], progress=False)
    return out


def _encode(corrupted, out, *args):
    return runner.invoke(app, ["encode", str(corrupted), "--gallery", str(DEFAULT_DATA / "gallery.jsonl"),
                               "--out", str(out), "--no-progress", "--no-cache", *args])


def test_encode_with_separate_image_and_text_spaces_writes_the_same_space_paths(encoders, corrupted, tmp_path):
    r = _encode(corrupted, tmp_path / "e", "--encoder", f"{encoders}:TwoSpaces")
    assert r.exit_code == 0, r.output
    assert "paths II, TT ->" in r.output and "retrieval modes these paths give: I2I, T2T, IT2IT" in r.output
    assert "skipped paths: IT, TI (the image and text embeddings differ in size (8 vs 4): no shared space)" in r.output
    files = sorted(p.name for p in (tmp_path / "e" / "paths").glob("clean.*.npy"))
    assert files == ["clean.II.npy", "clean.TT.npy"]
    assert np.load(tmp_path / "e" / "paths" / "clean.II.npy").shape == (12, 33)


def test_an_encoder_that_raises_is_the_same_clean_error_in_encode_and_run(encoders, corrupted, tmp_path):
    r = _encode(corrupted, tmp_path / "e", "--encoder", f"{encoders}:Boom")
    assert r.exit_code == 2, r.output
    assert r.output.startswith("error: the encoder failed on a batch of 32 gallery images: RuntimeError: CUDA out of memory")
    r = runner.invoke(app, ["run", str(DEFAULT_DATA), "-e", f"{encoders}:Boom", "--out", str(tmp_path / "r"),
                            "--conditions", "clean", *FAST])
    assert r.exit_code == 2 and "error: the encoder failed on a batch of 32 gallery images: RuntimeError: CUDA out of memory" in r.output


def test_nan_embeddings_name_the_batch_like_a_raising_encoder(encoders, corrupted, tmp_path):
    """Was "encoder 'not-a-number': encode_texts returned NaN or infinite values", no batch named."""
    want = ("error: encoder 'not-a-number': encode_texts returned NaN or infinite values for a batch of 32 "
            "gallery captions")
    r = _encode(corrupted, tmp_path / "e", "--encoder", f"{encoders}:NotANumber")
    assert r.exit_code == 2 and r.output.startswith(want), r.output
    r = runner.invoke(app, ["run", str(DEFAULT_DATA), "-e", f"{encoders}:NotANumber", "--out", str(tmp_path / "r"),
                            "--conditions", "clean", "--no-cache", *FAST])
    assert r.exit_code == 2 and want in r.output, r.output


def test_encode_with_an_unknown_condition_is_a_clean_error(corrupted, tmp_path):
    r = _encode(corrupted, tmp_path / "e", "--conditions", "bogus")
    assert r.exit_code == 2 and r.output.startswith("error: --conditions: not a condition id: 'bogus'"), r.output
    r = _encode(corrupted, tmp_path / "e", "--conditions", "txt/char_add")
    assert r.exit_code == 2, r.output
    assert r.output == (f"error: --conditions: unknown condition 'txt/char_add' in {corrupted} (did you mean "
                        "'txt/char_swap'?); known: clean, img/motion_blur/s2, txt/char_swap\n"), r.output
    assert not (tmp_path / "e").exists()  # refused before the encoder is opened or the folder made


def test_every_query_image_missing_is_a_warning_and_a_text_only_run(tmp_path):
    data = tmp_path / "demo"
    shutil.copytree(DEFAULT_DATA, data)
    lines = [json.loads(x) for x in (data / "queries.jsonl").read_text().splitlines()]
    for q in lines:
        q["image"] = "photos/" + q["image"]  # a wrong folder: no file is found
    (data / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in lines))
    r = runner.invoke(app, ["run", str(data), "-e", "toy", "--out", str(tmp_path / "o"), "--conditions", "clean,txt/char_swap", *FAST])
    assert r.exit_code == 0, r.output
    warning = [ln for ln in r.output.splitlines() if ln.startswith("warning: ")]
    assert warning == [f"warning: none of the 12 query image files exists (first: {data / 'photos' / lines[0]['image'][7:]}): "
                       "modes that need query images are skipped"]
    assert json.loads((tmp_path / "o" / "run.json").read_text())["modes"] == ["T2T", "T2IT"]


def test_messages_name_flags_not_python_parameters(tmp_path):
    (tmp_path / "q").mkdir()
    shutil.copy(DEFAULT_DATA / "queries.jsonl", tmp_path / "q" / "queries.jsonl")
    r = runner.invoke(app, ["run", str(tmp_path / "q" / "queries.jsonl"), "-e", "toy", "--out", str(tmp_path / "o"), *FAST])
    assert r.exit_code == 2 and "no gallery: give one with --gallery" in r.output and "gallery=" not in r.output, r.output
    args = ["run", str(DEFAULT_DATA), "-e", "toy", "--out", str(tmp_path / "o2"), "--conditions", "clean", *FAST]
    assert runner.invoke(app, args).exit_code == 0
    r = runner.invoke(app, [*args, "--seed", "1"])
    assert r.exit_code == 2 and "seed 0 (this run: 1)" in r.output and "or --force to discard it" in r.output, r.output
    assert "force=True" not in r.output and "force (--force)" not in r.output


def _cache_run(tmp_path, cache_env, *args):
    env = {**os.environ, "SNAPBENCH_CACHE": str(cache_env), "PYTHONPATH": os.pathsep.join(
        [str(tmp_path), str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH", "")])}
    out = tmp_path / f"o{len(list(tmp_path.glob('o*')))}"
    return subprocess.run([sys.executable, "-m", "snapbench", "run", str(DEFAULT_DATA), "--out", str(out),
                           "--conditions", "clean", *FAST, *args], capture_output=True, text=True, env=env, cwd=tmp_path)


@pytest.mark.slow
def test_the_cache_is_said_once_settable_and_skipped_for_the_cheap_toy(encoders, tmp_path):
    env_cache = tmp_path / "env-cache"
    r = _cache_run(tmp_path, env_cache, "-e", "toy")
    assert r.returncode == 0, r.stderr
    assert not env_cache.exists() and "embedding cache" not in r.stderr  # toy: computing beats reading back
    r = _cache_run(tmp_path, env_cache, "-e", f"{encoders}:Heavy")
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("embedding cache") == 1 and f"embedding cache: {env_cache}" in r.stderr
    assert list(env_cache.rglob("*.npy"))  # SNAPBENCH_CACHE sets the folder
    flag_cache = tmp_path / "flag-cache"
    r = _cache_run(tmp_path, env_cache, "-e", "toy", "--cache-dir", str(flag_cache))
    assert r.returncode == 0, r.stderr
    assert f"embedding cache: {flag_cache}" in r.stderr and list(flag_cache.rglob("*.npy"))  # asked for: cached


SLOW = """
import time
from snapbench.models import get_encoder

class Slow:
    name = fingerprint = "slow-toy"
    modalities = frozenset({"image", "text"})

    def __init__(self):
        self.inner = get_encoder("toy")

    def encode_images(self, xs):
        time.sleep(0.2 * len(xs))
        return self.inner.encode_images(xs)

    def encode_texts(self, xs):
        return self.inner.encode_texts(xs)
"""


def _blocks(pid: int) -> list[Path]:
    return [p for p in SHM.iterdir() if p.name.startswith(f"snapbench{pid}_")]


@pytest.mark.slow
@pytest.mark.skipif(not SHM.is_dir(), reason="no /dev/shm")
@pytest.mark.parametrize("how", ["ctrl-c", "sigterm"])
def test_an_interrupted_run_with_workers_leaves_no_shared_memory(tmp_path, how):
    (tmp_path / "snapbench_slow_shm.py").write_text(SLOW)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-m", "snapbench", "run", str(DEFAULT_DATA), "-e", "snapbench_slow_shm:Slow",
                             "--out", str(tmp_path / "o"), "--workers", "2", "--no-report", "--no-progress", "--no-cache"],
                            env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        # the encoder is slow: the workers' results (one block per query, recycled) queue up
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and proc.poll() is None and len(_blocks(proc.pid)) < 3:
            time.sleep(0.05)
        assert len(_blocks(proc.pid)) >= 3, "no blocks were seen"
        if how == "ctrl-c":
            os.killpg(proc.pid, signal.SIGINT)  # what a terminal sends: the whole process group
        else:
            proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
        # SIGTERM stops a run like Ctrl-C: the same line, the shell's status for the signal
        assert proc.returncode == (130 if how == "ctrl-c" else 143), err
        assert b"interrupted; rerun the same command to resume" in err, err
        assert _blocks(proc.pid) == [], f"{len(_blocks(proc.pid))} blocks left"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        for p in _blocks(proc.pid):
            p.unlink()


@pytest.mark.skipif(not SHM.is_dir(), reason="no /dev/shm")
def test_blocks_of_a_killed_run_are_freed_by_the_next_command_of_any_kind(tmp_path):
    from multiprocessing import shared_memory

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    block = shared_memory.SharedMemory(name=f"snapbench{int(dead.stdout)}_{'cd' * 6}", create=True, size=4096)
    block.close()
    try:
        r = subprocess.run([sys.executable, "-m", "snapbench", "corrupt", str(DEFAULT_DATA / "queries.jsonl"), "--out",
                            str(tmp_path / "c"), "--conditions", "txt/char_swap", "--workers", "1", "--no-progress"],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert not (SHM / block.name.lstrip("/")).exists()
    finally:
        if (SHM / block.name.lstrip("/")).exists():
            block.unlink()


ZERO_ENC = """import numpy as np
class ZeroVec:
    modalities = frozenset({"image", "text"})
    def encode_texts(self, t):
        return np.zeros((len(t), 4), np.float32)
    def encode_images(self, ims):
        out = np.ones((len(ims), 4), np.float32)
        out[0] = 0.0  # one zero row per batch
        return out
"""


def test_all_zero_embeddings_are_a_warning_in_run_and_encode(tmp_path, monkeypatch):
    """Counted in the shared encoding stage: one `warning:` per kind of item, with the count."""
    from typer.testing import CliRunner

    from snapbench.cli import app
    from snapbench.core.defaults import DEFAULT_DATA

    (tmp_path / "zero_enc.py").write_text(ZERO_ENC)
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    n_gallery = len((DEFAULT_DATA / "gallery.jsonl").read_text().splitlines())
    r = runner.invoke(app, ["run", str(DEFAULT_DATA), "-e", "zero_enc:ZeroVec", "--out", "r", "--resamples", "100",
                            "--no-report", "--no-progress", "--no-cache", "--batch-size", "4",
                            "--conditions", "clean,txt/char_swap"])
    assert r.exit_code == 0, r.output
    warned = [ln for ln in r.output.splitlines() if "all-zero embeddings" in ln]
    assert all(ln.startswith("warning: the encoder returned all-zero embeddings for ") for ln in warned), warned
    assert f"for {n_gallery} of {n_gallery} gallery captions" in r.output
    assert f"for {-(-n_gallery // 4)} of {n_gallery} gallery images" in r.output  # the first row of each batch of 4
    assert "of 24 questions" in r.output and len(warned) == 4  # 12 queries x (clean, char_swap)
    r = runner.invoke(app, ["corrupt", str(DEFAULT_DATA / "queries.jsonl"), "--out", "c", "--conditions", "clean",
                            "--no-progress"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["encode", "c", "--gallery", str(DEFAULT_DATA / "gallery.jsonl"), "--out", "e",
                            "--encoder", "zero_enc:ZeroVec", "--no-cache", "--no-progress"])
    assert r.exit_code == 0, r.output
    assert "warning: the encoder returned all-zero embeddings for 12 of 12 questions" in r.output
    assert f"warning: the encoder returned all-zero embeddings for {n_gallery} of {n_gallery} gallery captions" in r.output


def test_a_resume_refusal_names_flags_and_words_not_fingerprint_keys(tmp_path):
    """Trial 3: 'different severity_target "ssim=..." (this run: null)', 'measure false (this run: null)'."""
    from snapbench.cli import app as cli

    demo = Path(__file__).resolve().parents[1] / "snapbench" / "assets" / "demo"
    base = ["run", str(demo / "queries.jsonl"), "-e", "toy", "--out", str(tmp_path / "r"), "--no-progress",
            "--conditions", "img/low_light/s1", "--modes", "I2I", "--resamples", "10", "--no-report"]
    first = CliRunner().invoke(cli, [*base, "--severity-target", "ssim=0.9,0.75,0.6", "--no-measure"])
    assert first.exit_code == 0, first.output
    r = CliRunner().invoke(cli, base)
    assert r.exit_code == 2, r.output
    assert '--severity-target "ssim=0.9,0.75,0.6" (this run: none)' in r.output, r.output
    assert "measuring: off (--no-measure) (this run: on, the default)" in r.output, r.output
    assert "null" not in r.output and "severity_target" not in r.output, r.output


def test_run_without_a_shared_space_names_every_skipped_target(encoders, tmp_path):
    """Trial 3: the note named I2IT, T2IT, MOOR; the fusion baselines went unnamed."""
    r = runner.invoke(app, ["run", str(DEFAULT_DATA), "-e", f"{encoders}:TwoSpaces", "--out", str(tmp_path / "o"),
                            "--conditions", "clean,txt/char_swap", *FAST])
    assert r.exit_code == 0, r.output
    assert ("differ in size (8 vs 4): I2IT, T2IT, MOOR, fusion/comb_sum, fusion/rrf need a shared space and "
            "are skipped") in r.output, r.output
    made = sorted(p.parent.relative_to(tmp_path / "o").as_posix() for p in (tmp_path / "o").rglob("report.json"))
    assert made == ["I2I", "IT2IT", "T2T"]


def test_a_cache_dir_that_is_a_file_is_refused_before_any_work_in_run_and_encode(corrupted, tmp_path):
    """Was "the encoder failed on a batch of 16 gallery images: NotADirectoryError" after the corruption."""
    (tmp_path / "afile").write_text("not a folder\n")
    for cache, says in ((tmp_path / "afile", "(a file is there)"), (tmp_path / "afile" / "sub", f"({tmp_path / 'afile'} is a file)")):
        want = f"error: {cache}: --cache-dir is not a folder {says}"
        r = runner.invoke(app, ["run", str(DEFAULT_DATA), "-e", "toy", "--out", str(tmp_path / "o"),
                                "--conditions", "txt/char_add", "--cache-dir", str(cache), *FAST])
        assert r.exit_code == 2 and want in r.output, r.output
        assert not (tmp_path / "o").exists()  # refused before the run folder or a corruption is made
        r = runner.invoke(app, ["encode", str(corrupted), "--gallery", str(DEFAULT_DATA / "gallery.jsonl"),
                                "--out", str(tmp_path / "e"), "--no-progress", "--cache-dir", str(cache)])
        assert r.exit_code == 2 and want in r.output, r.output
        assert not (tmp_path / "e").exists()


@pytest.mark.parametrize("device", ["tpu", "gpu", "cuda1", "CUDA", "cuda:x"])
def test_a_device_that_is_no_torch_device_is_refused_up_front_even_for_toy(corrupted, tmp_path, device):
    """Was exit 0 with no word: toy ignores the device, so the typo went unnoticed."""
    hint = {"tpu": "xla", "gpu": "cuda", "cuda1": "cuda", "CUDA": "cuda", "cuda:x": "cuda"}.get(device)
    want = f"error: --device: unknown torch device {device!r}" + (f" (did you mean {hint!r}" if hint else "")
    r = runner.invoke(app, ["encode", str(corrupted), "--gallery", str(DEFAULT_DATA / "gallery.jsonl"),
                            "--out", str(tmp_path / "e"), "--no-progress", "--device", device])
    assert r.exit_code == 2 and want in r.output, r.output
    assert not (tmp_path / "e").exists()
    r = runner.invoke(app, ["run", str(DEFAULT_DATA), "-e", "toy", "--out", str(tmp_path / "o"),
                            "--conditions", "clean", "--device", device, *FAST])
    assert r.exit_code == 2 and want in r.output, r.output
    assert not (tmp_path / "o").exists()


def test_the_device_check_agrees_with_torch():
    """torch.device's own parser is the reference (npu needs torch_npu loaded, so it is left out)."""
    torch = pytest.importorskip("torch")
    from snapbench.core.errors import ConfigError
    from snapbench.models.device import check_device

    for device in ["cpu", "cuda", "cuda:0", "cuda:12", "mps", "xpu:1", "xla", "hpu", "meta", "tpu", "gpu", "cuda1",
                   "CUDA", "cuda:", "cuda:-1", "cuda:x", ":0", "", "cpu:0:1", "cuda 0"]:
        try:
            torch.device(device)
            ok = True
        except (RuntimeError, TypeError):
            ok = False
        try:
            check_device(device)
            ours = True
        except ConfigError:
            ours = False
        assert ours == ok, device


def test_nan_embeddings_of_an_encoder_given_as_an_object_are_refused(tmp_path):
    """An encoder object given to the library is not wrapped (built-in adapters are not either): its NaN
    rows used to become zero vectors that score 0 silently.  Refused where every encoder is called,
    naming the encoder and the batch."""
    from snapbench.app.stages import RunOptions, run_benchmark
    from snapbench.core.errors import ConfigError

    class HalfBroken:
        name = fingerprint = "half-broken-v1"
        modalities = frozenset({"image", "text"})

        def encode_images(self, images):
            return np.ones((len(images), 4), np.float32)

        def encode_texts(self, texts):
            out = np.ones((len(texts), 4), np.float32)
            out[0, 2] = np.inf
            return out

    with pytest.raises(ConfigError, match=r"^encoder 'half-broken-v1': encode_texts returned NaN or infinite values "
                                          r"for a batch of \d+ gallery captions"):
        run_benchmark(DEFAULT_DATA, HalfBroken(), tmp_path / "r",
                      RunOptions(conditions=["clean"], resamples=100, report=False, progress=False))


def test_the_embedding_cache_keeps_no_nan_embedding(encoders, tmp_path):
    """A refused NaN row kept in the cache would come back after the model is fixed (same fingerprint)."""
    cache = tmp_path / "cache"
    r = runner.invoke(app, ["run", str(DEFAULT_DATA), "-e", f"{encoders}:NotANumber", "--out", str(tmp_path / "r"),
                            "--conditions", "clean", "--cache-dir", str(cache), *FAST])
    assert r.exit_code == 2 and "returned NaN or infinite values" in r.output, r.output
    images = list((cache).rglob("image/**/*.npy"))
    assert images, sorted(cache.rglob("*"))  # the finite image embeddings were cached
    assert not list(cache.rglob("text/**/*.npy"))  # the NaN text ones were not
    assert all(np.isfinite(np.load(f)).all() for f in images)
