"""Every versioned JSON artifact is checked on read, by one rule: a file whose schema_version is not the
one this snapbench reads is refused with the file named (never read by guesswork)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from snapbench.app.compare import CompareOptions, compare_runs
from snapbench.core.errors import InputError
from snapbench.store.compare import read_compare_json
from snapbench.store.folders import SCHEMA_VERSIONS, read_run_json
from snapbench.store.rundir import read_report


def _bump(path: Path, *keys: str) -> None:
    """Raise the schema_version at ``keys`` (a path into the JSON object) by one, in place."""
    obj = json.loads(path.read_text())
    inner = obj
    for k in keys:
        inner = inner[k]
    inner["schema_version"] += 1
    path.write_text(json.dumps(obj))


def test_the_table_names_what_the_writers_write(smoke_run: Path) -> None:
    run = json.loads((smoke_run / "run.json").read_text())
    report = json.loads((smoke_run / "T2T" / "report.json").read_text())
    assert run["schema_version"] == SCHEMA_VERSIONS["run.json"]
    assert report["meta"]["schema_version"] == SCHEMA_VERSIONS["report.json"]


def test_run_json_of_another_version_is_refused(smoke_run: Path, tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    shutil.copy(smoke_run / "run.json", folder / "run.json")
    assert read_run_json(folder, kind="run")["kind"] == "run"  # the copy reads
    _bump(folder / "run.json")
    assert read_run_json(folder)["kind"] == "run"  # what the folder is can still be told (and said)
    with pytest.raises(InputError, match=r"run\.json: has schema_version 3; this snapbench reads run\.json of "
                                         r"schema_version 2"):
        read_run_json(folder, kind="run")


def test_report_json_of_another_version_is_refused(smoke_run: Path, tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    shutil.copy(smoke_run / "T2T" / "report.json", path)
    assert read_report(path).meta.schema_version == SCHEMA_VERSIONS["report.json"]
    _bump(path, "meta")
    with pytest.raises(InputError, match="report.json: has schema_version"):
        read_report(path)


def test_compare_json_of_another_version_is_refused(smoke_multi: Path, tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    compare_runs([smoke_multi / "toy", smoke_multi / "mirror"], out,
                 CompareOptions(modes=["T2T"], metrics=["hit@1"], resamples=200, formats=["md"]))
    assert read_compare_json(out / "compare.json")["schema_version"] == SCHEMA_VERSIONS["compare.json"]
    _bump(out / "compare.json")
    with pytest.raises(InputError, match="compare.json: has schema_version"):
        read_compare_json(out / "compare.json")
