"""Shared fixtures of the test suite.

Builders of inputs live in importable modules beside the tests (pytest puts this folder on
``sys.path``): :mod:`query_sets` (query sets from real photos), :mod:`data_fixtures` (dataset
releases on disk), :mod:`compare_helpers`, :mod:`diagnose_photos`, :mod:`measure_reference`,
:mod:`proc_helpers`, :mod:`import_graph` (the package's import graph read from the source).  The
fixtures here are the ones tests of several modules share, among them the session's smoke run
(:mod:`smoke`: one `snapbench run` of the demo, built once and read by the run, report and compare
tests).  Tests of 2 s or more are marked ``slow`` (registered in pyproject.toml):
``pytest -m "not slow"`` is the fast tier a developer runs every few minutes; CI runs every test.
"""

from __future__ import annotations

import contextlib
import hashlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def importable(folder: Path, *modules: str) -> Iterator[None]:
    """Make the modules a test wrote into ``folder`` (a user's encoder, a plugin) importable by name,
    as a user's ``PYTHONPATH`` would; forget them afterwards so the next test starts clean."""
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(folder))
        try:
            yield
        finally:
            for name in modules:
                sys.modules.pop(name, None)


@pytest.fixture(scope="session")
def user_code() -> contextlib.AbstractContextManager:
    """:func:`importable`, for fixtures of any scope: ``with user_code(folder, "my_encoder"): ...``."""
    return importable


@pytest.fixture(scope="session")
def demo():
    """The bundled demo dataset, loaded (12 queries, 33 gallery items)."""
    from snapbench.core.defaults import DEFAULT_DATA
    from snapbench.data import load_dataset

    return load_dataset(DEFAULT_DATA)


@pytest.fixture(scope="session")
def smoke(tmp_path_factory) -> Iterator[Path]:
    """The session's smoke run (see :mod:`smoke`): ``multi/`` is one `snapbench run` of toy and the
    mirror model on the demo, ``multi/toy`` and ``multi/mirror`` its run folders.  Read only: a test
    that changes a run copies it into its ``tmp_path`` first (checked when the session ends: a changed
    file is an error)."""
    from smoke import MIRROR_MODULE, MIRROR_SPEC, smoke_options, write_mirror

    from snapbench.app.stages import run_encoders
    from snapbench.core.defaults import DEFAULT_DATA

    root = tmp_path_factory.mktemp("smoke")
    write_mirror(root / "code")
    with importable(root / "code", MIRROR_MODULE):
        run_encoders(DEFAULT_DATA, ["toy", MIRROR_SPEC], root / "multi", smoke_options(), names=["toy", "mirror"])
    before = _digests(root / "multi")
    yield root
    changed = sorted(set(before.items()) ^ set(_digests(root / "multi").items()))
    assert not changed, f"a test changed the shared smoke run (copy it into tmp_path first): {changed[:5]}"


def _digests(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="session")
def smoke_multi(smoke) -> Path:
    """The smoke run's folder of two encoders (run.json listing ``toy`` and ``mirror``)."""
    return smoke / "multi"


@pytest.fixture(scope="session")
def smoke_run(smoke) -> Path:
    """The smoke run's toy folder: a run directory, the same as `snapbench run` of toy alone."""
    return smoke / "multi" / "toy"



@pytest.fixture
def hide_modules(monkeypatch):
    """``hide_modules("faiss", ...)``: make ``import faiss`` raise ImportError for this test (a missing extra)."""

    def hide(*names: str) -> None:
        for name in names:
            monkeypatch.setitem(sys.modules, name, None)

    return hide
