"""The engines' ``meanwhile`` hook: the caller's own work runs once, while the first window of tasks is
in the workers' hands; `snapbench run` encodes the gallery there."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest
from proc_helpers import spawned_children

from snapbench.app.stages import RunOptions, run_benchmark
from snapbench.core.errors import InputError
from snapbench.engines import ordered_map
from snapbench.store import RunDir

SHM = Path("/dev/shm")


@pytest.fixture(scope="module")
def demo() -> Path:
    from snapbench.core.defaults import DEFAULT_DATA

    return Path(DEFAULT_DATA)


def mark_started(task: tuple[str, int]) -> int:
    """A task that leaves a file saying it ran (in a worker process), then returns its number squared."""
    folder, n = task
    Path(folder, f"{n}.started").write_text(str(os.getpid()))
    return n * n


def _wait_for(path_glob: Path, timeout_s: float = 120.0) -> list[Path]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = sorted(path_glob.parent.glob(path_glob.name))
        if found:
            return found
        time.sleep(0.02)
    return []


def test_meanwhile_runs_once_while_the_workers_run_the_first_tasks(tmp_path):
    seen: list[list[Path]] = []

    def meanwhile() -> None:
        # only returns early if a worker ran a task while this runs: called before the tasks were
        # handed out, it would wait the whole timeout and see nothing
        seen.append(_wait_for(tmp_path / "*.started"))

    out = list(ordered_map(mark_started, [(str(tmp_path), n) for n in range(9)], workers=2, meanwhile=meanwhile))
    assert out == [n * n for n in range(9)]
    assert len(seen) == 1 and seen[0], "meanwhile did not overlap the workers' tasks"
    assert {int(p.read_text()) for p in seen[0]} - {os.getpid()}, "the tasks it saw ran in this process"


@pytest.mark.parametrize("n_tasks", [0, 1, 3])
def test_meanwhile_runs_once_with_fewer_tasks_than_the_window(tmp_path, n_tasks):
    calls = []
    out = list(ordered_map(mark_started, [(str(tmp_path), n) for n in range(n_tasks)], workers=2, window=4,
                           meanwhile=lambda: calls.append(1)))
    assert out == [n * n for n in range(n_tasks)] and calls == [1]


def test_inline_meanwhile_runs_before_the_first_task(tmp_path):
    order: list[str] = []

    def task(n: int) -> int:
        order.append(f"task {n}")
        return n

    assert list(ordered_map(task, range(3), workers=1, meanwhile=lambda: order.append("meanwhile"))) == [0, 1, 2]
    assert order == ["meanwhile", "task 0", "task 1", "task 2"]


def test_an_error_in_meanwhile_stops_the_map_and_its_workers(tmp_path):
    class Boom(Exception):
        pass

    def meanwhile() -> None:
        raise Boom("gallery failed")

    with pytest.raises(Boom, match="gallery failed"):
        list(ordered_map(mark_started, [(str(tmp_path), n) for n in range(50)], workers=2, window=4, meanwhile=meanwhile))
    deadline = time.monotonic() + 30
    while spawned_children(os.getpid()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert spawned_children(os.getpid()) == []
    # the queued tasks were cancelled: at most the window (and the tasks the workers had taken) ran
    assert len(list(tmp_path.glob("*.started"))) <= 6


def _blocks() -> list[str]:
    return sorted(p.name for p in SHM.iterdir() if p.name.startswith(f"snapbench{os.getpid()}_")) if SHM.is_dir() else []


def _bad_gallery(demo: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the demo set whose fourth gallery image is not an image."""
    import shutil

    data = Path(shutil.copytree(demo, tmp_path / "data"))
    broken = sorted((data / "gallery").iterdir())[3]
    broken.write_bytes(b"not an image")
    return data, broken


@pytest.mark.parametrize("workers", [1, 2])
def test_a_gallery_error_while_the_workers_run_is_the_same_error_and_leaves_nothing(demo, tmp_path, workers):
    data, broken = _bad_gallery(demo, tmp_path)
    opts = RunOptions(workers=workers, conditions=["clean", "img/motion_blur/s1", "img/compression/s2"],
                      report=False, progress=False, use_cache=False)
    with pytest.raises(InputError) as err:
        run_benchmark(data, "toy", tmp_path / f"o{workers}", opts)
    assert broken.name in str(err.value)
    assert _blocks() == []
    assert spawned_children(os.getpid()) == []
    # no query block was recorded as done (the gallery failed before the first result was taken)
    log = RunDir(tmp_path / f"o{workers}").blocks_log
    assert not log.exists() or log.read_text() == ""


@pytest.mark.slow
def test_run_with_the_gallery_overlapped_equals_the_inline_run(demo, tmp_path):
    """The gallery encoded while two workers corrupt: the same embeddings and reports as one process."""
    opts = dict(conditions=["clean", "img/motion_blur/s2", "txt/char_swap", "joint/compression+char_swap/s3"],
                report=False, progress=False, use_cache=False, modes=["I2I", "IT2IT"])
    run_benchmark(demo, "toy", tmp_path / "one", RunOptions(workers=1, **opts))
    two = run_benchmark(demo, "toy", tmp_path / "two", RunOptions(workers=2, **opts))
    files = sorted(p.relative_to(tmp_path / "one") for p in (tmp_path / "one").rglob("*.npy"))
    assert files and files == sorted(p.relative_to(tmp_path / "two") for p in (tmp_path / "two").rglob("*.npy"))
    for f in files:
        assert np.array_equal(np.load(tmp_path / "one" / f), np.load(tmp_path / "two" / f)), f
    for mode in ("I2I", "IT2IT"):
        assert (tmp_path / "one" / mode / "report.json").read_bytes() == (tmp_path / "two" / mode / "report.json").read_bytes()
    assert two.timings["meanwhile_s"] > 0 and two.timings["wait_s"] >= 0


SLOW_GALLERY = """
import os, time
from snapbench.models import get_encoder

class SlowImages:
    name = fingerprint = "slow-images-toy"
    modalities = frozenset({"image", "text"})

    def __init__(self):
        self.inner = get_encoder("toy")

    def encode_images(self, xs):
        time.sleep(float(os.environ.get("SLOW_S", "0")) * len(xs))
        return self.inner.encode_images(xs)

    def encode_texts(self, xs):
        return self.inner.encode_texts(xs)
"""


@pytest.mark.slow
@pytest.mark.skipif(not SHM.is_dir(), reason="no /dev/shm")
def test_ctrl_c_in_the_gallery_while_the_workers_run_stops_cleanly_and_resumes(demo, tmp_path):
    import signal
    import subprocess
    import sys

    (tmp_path / "slow_images.py").write_text(SLOW_GALLERY)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    out = tmp_path / "o"
    cmd = [sys.executable, "-m", "snapbench", "run", str(demo), "-e", "slow_images:SlowImages", "--out", str(out),
           "--workers", "2", "--conditions", "clean,img/motion_blur/s1", "--no-report", "--no-progress", "--no-cache"]
    proc = subprocess.Popen(cmd, env={**env, "SLOW_S": "2"}, start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    blocks = lambda: [p for p in SHM.iterdir() if p.name.startswith(f"snapbench{proc.pid}_")]  # noqa: E731
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and proc.poll() is None and not blocks():
            time.sleep(0.05)
        # a worker has handed a query back while the main process is still in the gallery's first batch
        assert blocks(), f"no query was corrupted while the gallery was encoded (rc {proc.poll()})"
        assert not RunDir(out).gallery_embedding("image").exists()  # still in the gallery
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 130, err
        assert b"interrupted; rerun the same command to resume" in err, err
        assert blocks() == [] and not list(SHM.glob(f"snapbench{proc.pid}_*"))
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    again = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert (out / "I2I" / "report.json").is_file()
