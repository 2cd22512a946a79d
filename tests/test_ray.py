"""The Ray engine against the local one: same results in the same order, for `run` and `corrupt`.

One local Ray instance with 2 CPUs serves the whole module (starting one takes seconds).  The
reference is always the local engine (a spawn process pool, or the plain in-process loop), an
independent code path that shares only the task function with Ray.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'snapbench[ray]'); the Ray engine is not tested")
pytestmark = pytest.mark.slow  # starts a local Ray (~10 s) and private ones; runs in CI, not in the fast tier

from snapbench.app.stages import RunOptions, run_benchmark  # noqa: E402
from snapbench.app.stages.sources import SourceTask, generate_sources  # noqa: E402
from snapbench.core.defaults import DEFAULT_DATA  # noqa: E402
from snapbench.core.errors import ConfigError  # noqa: E402
from snapbench.core.install_hint import install_hint  # noqa: E402
from snapbench.engines import ordered_map  # noqa: E402
from snapbench.models import get_encoder  # noqa: E402

HERE = Path(__file__).resolve().parent
CONDS = ["clean", "img/motion_blur/s2", "img/compression/s3", "txt/char_swap", "joint/compression+char_swap/s3"]
IMG_SOURCES = ("clean", "img/motion_blur/s2", "img/compression/s3")
TXT_SOURCES = ("clean", "txt/char_swap")


@pytest.fixture(scope="module", autouse=True)
def ray_tmpdir():
    """Every Ray this module starts (the session below, the private ones the engines start) keeps its
    session folders in a temporary folder removed afterwards, not in /tmp/ray.  Not under pytest's
    tmp_path: Ray's sockets live in it and a Unix socket path has at most 107 bytes."""
    before = os.environ.get("RAY_TMPDIR")
    folder = tempfile.mkdtemp(prefix="sbray-")
    os.environ["RAY_TMPDIR"] = folder
    try:
        yield folder
    finally:
        if ray.is_initialized():
            ray.shutdown()
        if before is None:
            os.environ.pop("RAY_TMPDIR", None)
        else:
            os.environ["RAY_TMPDIR"] = before
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module", autouse=True)
def ray_session(ray_tmpdir):
    """A local Ray with 2 CPUs for the module; its workers import this file (tests/) and snapbench."""
    if ray.is_initialized():
        ray.shutdown()
    before = os.environ.get("PYTHONPATH")
    # the raylet is started from this process and hands its environment to the workers
    os.environ["PYTHONPATH"] = os.pathsep.join([str(HERE), str(HERE.parent)] + ([before] if before else []))
    try:
        ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False)
    finally:
        if before is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = before
    yield
    ray.shutdown()


def demo_dataset():
    try:
        from snapbench.data import load_dataset
    except ImportError:  # the data loader is not merged yet: the same object, built by hand
        from snapbench.corruptions import load_manifest
        from snapbench.data.common import read_gallery_manifest

        qrels = {q: {g: 1.0 for g in gs} for q, gs in json.loads((DEFAULT_DATA / "qrels.json").read_text()).items()}
        return SimpleNamespace(
            name="demo", format="jsonl", root=DEFAULT_DATA, queries=load_manifest(DEFAULT_DATA / "queries.jsonl"),
            gallery=read_gallery_manifest(DEFAULT_DATA / "gallery.jsonl"), qrels=qrels, released=None, notes=[],
            has_query_images=True, has_gallery_images=True,
        )
    return load_dataset(DEFAULT_DATA)


def toy():
    enc = get_encoder("toy")
    enc.name, enc.modalities = "toy", frozenset({"image", "text"})
    return enc


def demo_tasks() -> list[SourceTask]:
    qs = demo_dataset().queries
    return [SourceTask(i, q.id, str(q.image), q.question, q.entity, 0, IMG_SOURCES, TXT_SOURCES, None) for i, q in enumerate(qs)]


def assert_same_sources(got, ref):
    assert [r.index for r in got] == [r.index for r in ref] == list(range(len(ref)))
    for a, b in zip(got, ref):
        assert a.texts == b.texts and a.skips == b.skips
        assert sorted(a.images) == sorted(b.images) == sorted(IMG_SOURCES)
        for k in a.images:
            assert a.images[k].dtype == b.images[k].dtype and np.array_equal(a.images[k], b.images[k]), (a.index, k)


# ---- picklable task functions (module level: Ray workers import this file) ---------------------------------


def square(x: int) -> int:
    return x * x


class FailOn:
    """Raises a SnapbenchError for one task (an error of the task itself, which Ray must not retry)."""

    def __init__(self, bad: int):
        self.bad = bad

    def __call__(self, x: int) -> int:
        if x == self.bad:
            raise ConfigError(f"task {x} is bad")
        return x


class KillFirstAttempt:
    """generate_sources, but the worker running a victim task dies (os._exit) on that task's first attempt.

    Every attempt leaves a file ``<index>.<attempt>`` in ``marks`` (O_EXCL creation, so attempts are
    counted exactly even across processes).
    """

    def __init__(self, marks: str, victims: tuple[int, ...]):
        self.marks, self.victims = marks, victims

    def __call__(self, task: SourceTask):
        n = 0
        while True:
            try:
                os.close(os.open(os.path.join(self.marks, f"{task.index}.{n}"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
                break
            except FileExistsError:
                n += 1
        if task.index in self.victims and n == 0:
            os._exit(1)  # the worker process dies without returning anything
        return generate_sources(task)


_STATE: dict[str, int] = {}


def set_offset(marks: str, offset: int) -> None:
    """Initializer: fails if run twice in one process (O_EXCL on a file named by the pid)."""
    os.close(os.open(os.path.join(marks, str(os.getpid())), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    _STATE["offset"] = offset


def add_offset(x: int) -> int:
    return x + _STATE["offset"]


# ---- ordered_map ---------------------------------------------------------------------------------------------


def test_ray_ordered_map_equals_local_in_task_order():
    tasks = demo_tasks()
    ref = list(ordered_map(generate_sources, tasks, engine="local", workers=1))
    got = list(ordered_map(generate_sources, tasks, engine="ray", workers=2, window=3))
    assert_same_sources(got, ref)
    # and the local pool, the third route, agrees
    assert_same_sources(list(ordered_map(generate_sources, tasks, engine="local", workers=2)), ref)
    assert list(ordered_map(square, range(40), engine="ray", workers=2)) == [x * x for x in range(40)]


@pytest.mark.parametrize("engine", ["local", "ray"])
def test_ordered_map_reads_tasks_lazily_within_the_window(engine):
    pulled = []

    def tasks():
        for i in range(1000):
            pulled.append(i)
            yield i

    it = ordered_map(square, tasks(), engine=engine, workers=2, window=3)
    assert [next(it) for _ in range(5)] == [0, 1, 4, 9, 16]
    assert len(pulled) <= 5 + 3  # never more than the window ahead of the consumer
    it.close()


@pytest.mark.parametrize("engine", ["local", "ray"])
def test_meanwhile_runs_once_on_either_engine(engine):
    calls = []
    got = list(ordered_map(square, range(7), engine=engine, workers=2, window=3, meanwhile=lambda: calls.append(1)))
    assert got == [x * x for x in range(7)] and calls == [1]


@pytest.mark.parametrize("engine", ["local", "ray"])
def test_the_initializer_runs_once_per_worker_process(engine, tmp_path):
    for run in range(2):  # a second map in the same (Ray) workers runs its own initializer again
        marks = tmp_path / f"m{run}"
        marks.mkdir()
        got = list(ordered_map(add_offset, range(30), engine=engine, workers=2, initializer=set_offset, initargs=(str(marks), 100 * run)))
        assert got == [100 * run + x for x in range(30)]
        pids = [int(p.name) for p in marks.iterdir()]
        assert 1 <= len(pids) and os.getpid() not in pids


def test_a_task_error_is_raised_as_itself_and_not_retried():
    with pytest.raises(ConfigError, match="task 5 is bad"):
        list(ordered_map(FailOn(5), range(12), engine="ray", workers=2))


def test_a_killed_worker_is_retried_to_the_same_results(tmp_path):
    tasks = demo_tasks()
    ref = list(ordered_map(generate_sources, tasks, engine="local", workers=1))
    marks = tmp_path / "marks"
    marks.mkdir()
    got = list(ordered_map(KillFirstAttempt(str(marks), (2, 7)), tasks, engine="ray", workers=2))
    assert_same_sources(got, ref)  # nothing lost, nothing twice, same bytes
    attempts = sorted(p.name for p in marks.iterdir())
    assert {"2.0", "2.1", "7.0", "7.1"} <= set(attempts)  # the victims died once and ran again
    assert [a for a in attempts if a.endswith(".0")] == sorted(f"{i}.0" for i in range(len(tasks)))


def test_missing_ray_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now raises ImportError
    with pytest.raises(ConfigError, match=re.escape(install_hint("ray"))):
        list(ordered_map(square, [1, 2], engine="ray", workers=2))


def test_run_with_ray_missing_fails_before_any_work(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ConfigError, match=re.escape(install_hint("ray"))):
        run_benchmark(demo_dataset(), toy(), tmp_path / "r", RunOptions(engine="ray", workers=2, progress=False, report=False))
    assert not (tmp_path / "r").exists()


def test_engine_options_are_checked():
    with pytest.raises(ConfigError, match="unknown engine 'spark'"):
        ordered_map(square, [1], engine="spark")
    with pytest.raises(ConfigError, match="only used by the ray engine"):
        ordered_map(square, [1], engine="local", address="auto")


# ---- snapbench run ------------------------------------------------------------------------------------------


def test_run_sources_from_ray_are_the_local_ones_and_writable():
    """Ray returns arrays as read-only views into its store; an encoder must get what the local pool gives."""
    from snapbench.app.stages.sources import iter_sources

    tasks = demo_tasks()[:4]
    got = list(iter_sources(tasks, 2, None, engine="ray"))
    assert_same_sources(got, [generate_sources(t) for t in tasks])
    assert all(img.flags.writeable for r in got for img in r.images.values())


def test_run_on_ray_gives_the_reports_of_the_local_engine(tmp_path, monkeypatch):
    import snapbench.engines.ray as ray_engine

    ray_maps = []
    real = ray_engine.ray_ordered_map

    def spy(*args, **kwargs):  # the real Ray engine, counted: the run must go through it
        ray_maps.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(ray_engine, "ray_ordered_map", spy)
    ds, enc = demo_dataset(), toy()
    base = dict(conditions=CONDS, joint=False, resamples=200, report=False, progress=False, use_cache=False, block_queries=4)
    ref = run_benchmark(ds, enc, tmp_path / "local", RunOptions(workers=2, **base))
    assert not ray_maps
    got = run_benchmark(ds, enc, tmp_path / "ray", RunOptions(workers=2, engine="ray", **base))
    assert [m["workers"] for m in ray_maps] == [2]
    assert got.modes == ref.modes == ["I2I", "T2T", "IT2IT", "I2IT", "T2IT", "MOOR"]
    assert set(got.reports) == set(ref.reports)
    for name in ref.reports:
        a = json.loads((tmp_path / "local" / name / "report.json").read_text())
        b = json.loads((tmp_path / "ray" / name / "report.json").read_text())
        assert a == b, name
        assert (tmp_path / "local" / name / "per_query.csv").read_bytes() == (tmp_path / "ray" / name / "per_query.csv").read_bytes()
    qdir = Path("embeddings") / "queries"
    npys = sorted(p.name for p in (tmp_path / "local" / qdir).glob("*.npy"))
    assert len(npys) == len(IMG_SOURCES) + len(TXT_SOURCES)
    for name in npys:
        assert (tmp_path / "local" / qdir / name).read_bytes() == (tmp_path / "ray" / qdir / name).read_bytes(), name


# ---- snapbench corrupt (once run_corruption takes an engine) ------------------------------------------------


def _run_corruption():
    from snapbench.app.corrupt import run_corruption

    return run_corruption


def _digests(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_corrupt_on_ray_writes_the_files_of_the_local_engine(tmp_path):
    run_corruption = _run_corruption()
    manifest = DEFAULT_DATA / "queries.jsonl"
    run_corruption(manifest, tmp_path / "local", conditions=CONDS, joint=False, workers=2, progress=False)
    run_corruption(manifest, tmp_path / "ray", conditions=CONDS, joint=False, workers=2, progress=False, engine="ray")
    a, b = _digests(tmp_path / "local"), _digests(tmp_path / "ray")
    assert "manifest.jsonl" in a and sum(k.endswith(".png") for k in a) >= 12 * 3
    assert set(a) == set(b)
    for name in a:
        if name == "run.json":  # may record how it was run; what was produced must not differ
            ra, rb = (json.loads((tmp_path / d / name).read_text()) for d in ("local", "ray"))
            for key in ("engine", "workers", "address"):
                ra.pop(key, None), rb.pop(key, None)
            assert ra == rb
        else:
            assert a[name] == b[name], name


def test_cli_engine_flags_are_checked(tmp_path):
    from typer.testing import CliRunner

    from snapbench.cli import app

    runner = CliRunner()
    args = ["run", str(DEFAULT_DATA), "-e", "toy", "--out", str(tmp_path / "o")]
    res = runner.invoke(app, args + ["--engine", "spark"])
    assert res.exit_code == 2 and "--engine: unknown engine 'spark'; known: local, ray" in res.output, res.output
    res = runner.invoke(app, args + ["--address", "auto"])
    assert res.exit_code == 2 and "--address 'auto' is only used by the ray engine (--engine is 'local')" in res.output, res.output
    assert not (tmp_path / "o").exists()


def test_without_a_session_a_private_ray_is_started_and_stopped():
    """Last in the module: it ends the module's session and starts Ray the way a plain run does."""
    ray.shutdown()
    # a builtin: this private instance's workers do not have tests/ on their path
    it = ordered_map(abs, range(0, -6, -1), engine="ray", workers=1)
    first = next(it)
    assert ray.is_initialized() and ray.cluster_resources().get("CPU") == 1  # sized by workers
    assert [first, *it] == [0, 1, 2, 3, 4, 5]
    assert not ray.is_initialized()  # the map started it, so the map stopped it
    # an address nobody answers at is refused in seconds (Ray alone would retry for minutes)
    with pytest.raises(ConfigError, match="no Ray cluster answers at address '127.0.0.1:1'"):
        list(ordered_map(abs, [1], engine="ray", workers=1, address="127.0.0.1:1"))
    assert not ray.is_initialized()


# ---- encoding on Ray actors ------------------------------------------------------------------------------


def test_an_actor_pool_encodes_what_the_driver_encodes():
    from snapbench.corruptions import load_image
    from snapbench.engines.ray import RayEncoderPool

    images = [load_image(p) for p in sorted((DEFAULT_DATA / "queries").iterdir())[:5]]
    texts = ["what is this?", "a photo of a cat", "which astronaut", "x", "a long question about a camera"]
    local = get_encoder("toy")
    pool = RayEncoderPool("toy", actors=1)
    try:
        assert pool.fingerprint == local.fingerprint and pool.modalities == frozenset({"image", "text"})
        assert np.array_equal(pool.encode_images(images), np.asarray(local.encode_images(images), np.float32))
        assert np.array_equal(pool.encode_texts(texts), np.asarray(local.encode_texts(texts), np.float32))
    finally:
        pool.close()


def test_run_encoding_on_ray_actors_gives_the_local_reports(tmp_path, monkeypatch):
    import snapbench.engines.ray as ray_encode

    pools = []
    real = ray_encode.RayEncoderPool

    class Spy(real):  # the real pool, recorded: the run must encode through it
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            pools.append(self)

    monkeypatch.setattr(ray_encode, "RayEncoderPool", Spy)
    base = dict(conditions=CONDS, joint=False, resamples=200, report=False, progress=False, use_cache=False)
    ds = demo_dataset()
    run_benchmark(ds, "toy", tmp_path / "local", RunOptions(**base))
    got = run_benchmark(ds, "toy", tmp_path / "ray", RunOptions(engine="ray", encoder_actors=1, **base))
    assert len(pools) == 1 and pools[0].actors == []  # used, then closed
    for name in got.reports:
        a = json.loads((tmp_path / "local" / name / "report.json").read_text())
        b = json.loads((tmp_path / "ray" / name / "report.json").read_text())
        assert a["conditions"] == b["conditions"] and a["paired"] == b["paired"], name


class KillOnce:
    """An image operator whose first call anywhere kills its worker process (a worker lost mid-run);
    every later call flips the image.  Picklable, so `corrupt` ships it to the workers."""

    def __init__(self, marks: str):
        self.marks = marks

    def __call__(self, image, params):
        mark = Path(self.marks) / "killed"
        if not mark.exists():
            mark.write_text("once")
            os._exit(1)
        return np.ascontiguousarray(image[:, ::-1])


def test_corrupt_on_ray_survives_a_killed_worker_without_losing_or_duplicating(tmp_path, monkeypatch):
    from snapbench.app.corrupt import run_corruption
    from snapbench.corruptions import register_image_operator

    # the operator is pickled by reference to this module: a Ray started for this test must find it
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(HERE), str(HERE.parent), os.environ.get("PYTHONPATH", "")]))
    from snapbench.corruptions.image import unregister_image_operator

    marks = tmp_path / "marks"
    marks.mkdir()
    register_image_operator("killonce", apply=KillOnce(str(marks)), grid={1: {}}, replace=True)
    try:
        conds = ["img/killonce/s1", "txt/char_swap"]
        run_corruption(DEFAULT_DATA / "queries.jsonl", tmp_path / "ray", conditions=conds, workers=2, engine="ray",
                       progress=False)
        assert (marks / "killed").exists()  # a worker did die
        run_corruption(DEFAULT_DATA / "queries.jsonl", tmp_path / "local", conditions=conds, progress=False)
    finally:
        unregister_image_operator("killonce")
    lines = (tmp_path / "ray" / "manifest.jsonl").read_text().splitlines()
    keys = [(json.loads(x)["id"], json.loads(x)["condition"]) for x in lines]
    assert len(keys) == len(set(keys)) == 12 * 3  # clean + 2 conditions, each once
    a, b = _digests(tmp_path / "local"), _digests(tmp_path / "ray")
    assert {k: v for k, v in a.items() if k != "run.json"} == {k: v for k, v in b.items() if k != "run.json"}
