"""Worker processes: run-time registrations reach them, they die with their parent, Ctrl-C says how
to resume, and a worker count below 1 is refused."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from proc_helpers import alive, spawned_children
from query_sets import snapbench_cmd, tree
from query_sets import square_photo_set as make_queries
from typer.testing import CliRunner

from snapbench.app.corrupt import run_corruption
from snapbench.cli import app
from snapbench.core.errors import ConfigError
from snapbench.corruptions.image import (
    register_image_operator,
    unregister_image_operator,
)
from snapbench.corruptions.text import register_text_operator, unregister_text_operator

runner = CliRunner()


class Stripes:
    """A picklable callable-object image operator: seeded horizontal stripes of one colour."""

    def __init__(self, colour: tuple[int, int, int]) -> None:
        self.colour = colour

    def __call__(self, image: np.ndarray, params: dict) -> np.ndarray:
        out = image.copy()
        out[params["offset"] :: params["period"]] = self.colour
        return out


class StripesSample:
    def __call__(self, rng: np.random.Generator, level: dict, shape: tuple[int, int]) -> dict:
        return {"period": int(level["period"]), "offset": int(rng.integers(0, level["period"]))}


class Shout:
    """A picklable callable-object text operator: the entity in capitals."""

    def __call__(self, text: str, span: tuple[int, int], rng) -> tuple[str, dict]:
        s, e = span
        return text[:s] + text[s:e].upper() + text[e:], {"how": "upper"}


@pytest.fixture
def runtime_operators():
    register_image_operator("stripes_test", apply=Stripes((255, 0, 255)), sample=StripesSample(),
                            grid={1: {"period": 9}, 2: {"period": 5}})
    register_text_operator("shout_test", random=False)(Shout())
    yield
    unregister_image_operator("stripes_test")
    unregister_text_operator("shout_test")


def test_operators_registered_at_run_time_reach_the_workers(runtime_operators, tmp_path: Path) -> None:
    queries = make_queries(tmp_path / "qs", 4)
    conds = "img/stripes_test/s1,img/stripes_test/s2,txt/shout_test,joint/stripes_test+shout_test/s2,img/cropping/s1"
    outs = {}
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        res = runner.invoke(app, ["corrupt", str(queries), "--out", str(out), "--conditions", conds,
                                  "--workers", str(workers), "--no-progress", "--seed", "4"])
        assert res.exit_code == 0, res.output
        assert "skipped: 0" in res.output, res.output
        outs[workers] = tree(out)
    assert outs[1] == outs[2]
    lines = [json.loads(x) for x in (tmp_path / "w2" / "manifest.jsonl").read_text().splitlines()]
    shout = next(x for x in lines if x["condition"] == "txt/shout_test")
    assert shout["question"] == "What is this PHOTO?"
    # the stripes really are in the written file (the operator ran in a worker, not a stand-in)
    from snapbench.corruptions import load_image

    stripes = next(x for x in lines if x["condition"] == "img/stripes_test/s2")
    img = load_image(tmp_path / "w2" / stripes["path"])
    rows = np.where(np.all(img == (255, 0, 255), axis=(1, 2)))[0]
    assert len(rows) >= 96 // 5 and set(np.diff(rows)) == {5}


def _closure_operator():
    def apply(image, params):
        return image[::-1].copy()

    return apply


def test_an_unpicklable_registration_is_a_clear_error_with_workers(tmp_path: Path) -> None:
    register_image_operator("flip_closure_test", apply=_closure_operator(), grid={1: {}})
    try:
        queries = make_queries(tmp_path / "qs", 2)
        with pytest.raises(ConfigError, match=r"flip_closure_test.*cannot be sent to worker processes.*set workers to 1"):
            run_corruption(queries, tmp_path / "o", conditions=["img/flip_closure_test/s1"], workers=2, progress=False)
        # one process needs no pickling
        s = run_corruption(queries, tmp_path / "o1", conditions=["img/flip_closure_test/s1"], workers=1, progress=False)
        assert s.written == 4
    finally:
        unregister_image_operator("flip_closure_test")


def test_workers_below_one_are_refused(tmp_path: Path) -> None:
    queries = make_queries(tmp_path / "qs", 1)
    for bad in (0, -2):
        with pytest.raises(ConfigError, match=r"workers: must be an integer >= 1"):
            run_corruption(queries, tmp_path / "o", workers=bad, progress=False)
        res = runner.invoke(app, ["corrupt", str(queries), "--out", str(tmp_path / "o"), "--workers", str(bad)])
        assert res.exit_code == 2 and res.output.startswith("error: --workers: must be an integer >= 1"), res.output
    assert not (tmp_path / "o").exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_kill_9_of_the_parent_leaves_no_worker_behind(tmp_path: Path) -> None:
    queries = make_queries(tmp_path / "qs", 24, size=256)
    proc = subprocess.Popen(
        snapbench_cmd() + ["corrupt", str(queries), "--out", str(tmp_path / "o"), "--workers", "2", "--no-progress"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            workers = spawned_children(proc.pid)
            if len(workers) >= 2 and (tmp_path / "o" / "manifest.jsonl").exists():
                break
            time.sleep(0.05)
        assert proc.poll() is None and len(workers) == 2, "the run ended before the workers could be seen"
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
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="POSIX signals")
def test_ctrl_c_prints_the_command_that_resumes(tmp_path: Path) -> None:
    queries = make_queries(tmp_path / "qs", 24, size=256)
    out = tmp_path / "o"
    args = ["corrupt", str(queries), "--out", str(out), "--seed", "5",
            "--conditions", "img/low_light/s3,joint/scribble+char_swap/s2", "--workers", "2", "--no-progress"]
    proc = subprocess.Popen(snapbench_cmd() + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    manifest = out / "manifest.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if manifest.exists() and manifest.read_bytes().count(b"\n") >= 5:
            break
        time.sleep(0.02)
    assert proc.poll() is None, "the run ended before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    lines = err.splitlines()
    i = next(k for k, ln in enumerate(lines) if "to resume, run:" in ln)
    resume = shlex.split(lines[i + 1])
    assert resume[:2] == ["snapbench", "corrupt"] and "--force" not in resume
    assert resume[2:] == args[1:], resume  # the same input, folder, seed, workers, conditions
    res = subprocess.run(snapbench_cmd() + resume[1:], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    reused = int(res.stdout.split("reused: ")[1].split()[0])
    assert reused > 0
    assert len(manifest.read_text().splitlines()) == 24 * 5  # clean, low_light, scribble, char_swap, joint


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="POSIX signals")
@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP"])
def test_sigterm_and_sighup_to_the_process_group_stop_like_ctrl_c(tmp_path: Path, sig: str) -> None:
    """Trial 3: SIGTERM printed no resume line, and Python's resource tracker warned of leaked
    semaphores (the workers died with the signal, the parent without shutting its pool down)."""
    queries = make_queries(tmp_path / "qs", 24, size=256)
    out = tmp_path / "o"
    args = ["corrupt", str(queries), "--out", str(out), "--conditions", "img/low_light/s3,joint/scribble+char_swap/s2",
            "--workers", "2", "--no-progress"]
    proc = subprocess.Popen(snapbench_cmd() + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    manifest = out / "manifest.jsonl"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if manifest.exists() and manifest.read_bytes().count(b"\n") >= 5 and len(spawned_children(proc.pid)) == 2:
                break
            time.sleep(0.02)
        assert proc.poll() is None, "the run ended before it could be interrupted"
        os.killpg(proc.pid, getattr(signal, sig))  # what a shell or a closed terminal sends: the whole group
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 128 + getattr(signal, sig), err
    assert "interrupted: the outputs finished so far are kept in" in err and "to resume, run:" in err, err
    assert "leaked" not in err and "Traceback" not in err and "resource_tracker" not in err, err


def _interrupt_twice(args: list[str], manifest: Path, at_lines: int, gap_s: float) -> subprocess.CompletedProcess:
    """Start ``snapbench corrupt`` in its own process group; once ``manifest`` has ``at_lines`` lines, send
    SIGINT to the command and then to its whole group ``gap_s`` later: what ``timeout -s INT`` does, and what
    a Ctrl-C pressed twice does.  Returns the finished process, or fails when it has not exited 30 s later."""
    proc = subprocess.Popen(snapbench_cmd() + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if manifest.exists() and manifest.read_bytes().count(b"\n") >= at_lines:
                break
            time.sleep(0.01)
        assert proc.poll() is None, "the run ended before it could be interrupted; make the query set larger"
        os.kill(proc.pid, signal.SIGINT)
        time.sleep(gap_s)
        os.killpg(proc.pid, signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail(f"still running 30 s after SIGINT at {at_lines} manifest lines (gap {gap_s} s)")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="POSIX signals")
def test_sigint_twice_at_any_point_exits_130_and_the_reruns_resume(tmp_path: Path) -> None:
    """Trial 5: `timeout -s INT 7 snapbench corrupt big.jsonl --workers 2` printed the resume line and then
    hung forever in 3 of 8 tries.  The second SIGINT (timeout sends one to the command, then one to its
    group) interrupted the pool's shutdown while it joined its manager thread; Python 3.11 then takes
    that still running thread for stopped, exits without waiting for it, and the workers never get the
    message to stop.  Every interrupted run must exit 130 promptly, and the reruns must end with the
    manifest of an uninterrupted run."""
    queries = make_queries(tmp_path / "qs", 14, size=512)
    per_query = 54  # the default conditions
    full = tmp_path / "full"
    res = subprocess.run(snapbench_cmd() + ["corrupt", str(queries), "--out", str(full), "--workers", "2", "--no-progress"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    out = tmp_path / "o"
    args = ["corrupt", str(queries), "--out", str(out), "--workers", "2", "--no-progress"]
    manifest = out / "manifest.jsonl"
    done = 0
    for queries_more, gap_s in [(1, 0.0), (2, 0.02), (2, 0.1), (3, 0.0)]:  # each rerun resumes the last one
        res = _interrupt_twice(args, manifest, done + queries_more * per_query, gap_s)
        assert res.returncode == 130, res.stderr
        assert "to resume, run:" in res.stderr and "Traceback" not in res.stderr, res.stderr
        done = manifest.read_bytes().count(b"\n")
    res = subprocess.run(snapbench_cmd() + args, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert f"reused: {done}" in res.stdout
    assert manifest.read_bytes() == (full / "manifest.jsonl").read_bytes()
    assert tree(out / "images") == tree(full / "images")


KILLED_MID_SEND = """
import concurrent.futures as cf, multiprocessing, sys, time
from snapbench.engines.local import _shut_down

def preempted_after_the_header():
    from multiprocessing import connection
    send = connection.Connection._send
    def _send(self, buf, write=None):
        send(self, buf)
        if len(buf) == 4:  # the length header of a message over 16 KiB, written before its body
            time.sleep(120)  # a loaded machine runs other processes here
    connection.Connection._send = _send

def big(_):
    return b"x" * 40000

if __name__ == "__main__":
    pool = cf.ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn"),
                                  initializer=preempted_after_the_header)
    futures = [pool.submit(big, i) for i in range(6)]
    time.sleep(3)  # a worker has sent the header of its result
    t0 = time.monotonic()
    _shut_down(pool, futures, grace_s=1.0)
    print(f"shut down in {time.monotonic() - t0:.1f} s", flush=True)
"""


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="POSIX pipes")
def test_a_worker_killed_while_it_sends_its_result_does_not_hang_the_shutdown(tmp_path: Path) -> None:
    """CI under heavy load: `corrupt --workers 2` was still running 30 s after a double SIGINT.  A worker
    killed after the grace period while it sent a result left half a message in the result pipe; the
    pool's manager thread waited for the rest forever (the parent holds the pipe's write end too), and
    the shutdown that joins it with it."""
    script = tmp_path / "killed_mid_send.py"
    script.write_text(KILLED_MID_SEND, encoding="utf-8")
    try:
        res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("the shutdown hung on a worker killed in the middle of sending its result")
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr, res.stderr  # Python 3.11's broken-pool path raised on a cancelled future
    assert float(res.stdout.split()[3]) < 15, res.stdout  # 1 s of grace, then the kill


LIVE_SEMAPHORE = """
import multiprocessing, sys, time
from snapbench.engines.shm import named_semaphores
with named_semaphores():
    lock = multiprocessing.get_context("spawn").Lock()
print("ready", flush=True)
time.sleep(120)
"""


def _pool_semaphores(pid: int) -> list[Path]:
    return sorted(Path("/dev/shm").glob(f"sem.mp-snapbench{pid}-*"))


@pytest.mark.slow
@pytest.mark.skipif(not Path("/dev/shm").is_dir(), reason="no /dev/shm")
def test_kill_9_of_the_process_group_leaves_no_semaphore_after_the_next_command(tmp_path: Path) -> None:
    """Trial 3: kill -9 of the group (the resource tracker too) left 5 /dev/shm/sem.mp-* per run."""
    queries = make_queries(tmp_path / "qs", 24, size=256)
    proc = subprocess.Popen(snapbench_cmd() + ["corrupt", str(queries), "--out", str(tmp_path / "o"), "--workers", "2",
                                               "--no-progress"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None and len(spawned_children(proc.pid)) < 2:
            time.sleep(0.05)
        assert proc.poll() is None, "the run ended before it could be killed"
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        left = _pool_semaphores(proc.pid)
        assert len(left) == 5, left  # the pool's queues: named after the killed process
        # a live process's semaphores are never touched: another process holds one, named the same way
        live = subprocess.Popen([sys.executable, "-c", LIVE_SEMAPHORE], stdout=subprocess.PIPE, text=True)
        try:
            assert live.stdout.readline().strip() == "ready"
            assert len(_pool_semaphores(live.pid)) == 1
            r = subprocess.run(snapbench_cmd() + ["conditions"], capture_output=True, text=True, timeout=120)
            assert r.returncode == 0, r.stderr
            assert _pool_semaphores(proc.pid) == []
            assert len(_pool_semaphores(live.pid)) == 1
        finally:
            live.kill()
            live.wait()
            for p in _pool_semaphores(live.pid):
                p.unlink()
    finally:
        for p in _pool_semaphores(proc.pid):
            p.unlink()


def test_docs_show_the_main_guard_wherever_a_library_call_uses_workers() -> None:
    """Trial 3: `run_corruption(m, out, seed=3, workers=4)` pasted into a plain script crashed with
    BrokenProcessPool (spawned workers import the script again); every example must show the guard."""
    import re

    root = Path(__file__).resolve().parents[1]
    unguarded = []
    for doc in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        text = doc.read_text(encoding="utf-8")
        blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
        inline = re.findall(r"`([^`\n]*\(.*?\bworkers=\d+[^`\n]*)`", text)
        for code in blocks:
            if re.search(r"(?<!num_)workers=([2-9]|\d\d)", code) and 'if __name__ == "__main__":' not in code:
                unguarded.append((doc.name, code.strip().splitlines()[0]))
        for code in inline:  # an inline call with workers > 1 needs a guarded example in the same file
            if re.search(r"(?<!num_)workers=([2-9]|\d\d)", code) and 'if __name__ == "__main__":' not in text:
                unguarded.append((doc.name, code))
    assert unguarded == []
