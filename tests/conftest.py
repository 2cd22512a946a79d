"""Shared fixtures of the test suite.

Builders of inputs live in importable modules beside the tests (pytest puts this folder on
``sys.path``): :mod:`query_sets` (query sets from real photos), :mod:`data_fixtures` (dataset
releases on disk), :mod:`compare_helpers`, :mod:`diagnose_photos`, :mod:`measure_reference`,
:mod:`proc_helpers`, :mod:`import_graph` (the package's import graph read from the source).  The
fixtures here are the ones tests of several modules share.  Tests slower than ~10 s are marked
``slow`` (registered in pyproject.toml; CI runs every test).
"""

from __future__ import annotations

import contextlib
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


@pytest.fixture(scope="module")
def user_code() -> contextlib.AbstractContextManager:
    """:func:`importable`, for fixtures of any scope: ``with user_code(folder, "my_encoder"): ...``."""
    return importable

