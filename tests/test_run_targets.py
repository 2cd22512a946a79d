"""A run folder holds exactly the targets its run.json lists: a rerun with other --modes removes the
earlier run's target folders, and the report shows run.json's targets (with their tables and figures)."""

from __future__ import annotations

import json
import re
import shutil

import pytest
from typer.testing import CliRunner

from snapbench.cli import app
from snapbench.core.defaults import DEFAULT_DATA
from snapbench.render import build_report

runner = CliRunner()
BASE = ["--resamples", "100", "--no-progress", "--no-cache", "--conditions", "clean,txt/char_swap,img/motion_blur/s2"]
ALL = {"I2I", "T2T", "IT2IT", "I2IT", "T2IT", "MOOR"}


def _modes_in_page(folder):
    return set(re.findall(r'id="mode-([A-Z0-9]+)"', (folder / "report.html").read_text(encoding="utf-8")))


def _run(out, *extra):
    r = runner.invoke(app, ["run", str(DEFAULT_DATA), "-e", "toy", "--out", str(out), *BASE, *extra])
    assert r.exit_code == 0, r.output
    return r


@pytest.mark.slow
def test_a_rerun_with_fewer_modes_leaves_only_its_targets(tmp_path):
    out = tmp_path / "r"
    _run(out, "--no-report")
    assert {p.name for p in out.iterdir() if (p / "report.json").is_file()} == ALL
    r = _run(out, "--modes", "it2it")
    assert "removed I2I, T2T, I2IT, T2IT" in r.output
    assert json.loads((out / "run.json").read_text())["modes"] == ["IT2IT", "MOOR"]
    assert {p.name for p in out.iterdir() if (p / "report.json").is_file()} == {"IT2IT", "MOOR"}
    assert _modes_in_page(out) == {"IT2IT", "MOOR"}
    assert not [f.name for f in (out / "tables").iterdir() if f.name.startswith(("I2I_", "T2T_", "I2IT_", "T2IT_"))]
    # the drag figure compares with I→I, which this run does not have: no figure of the earlier run is left
    assert not (out / "figures" / "drag.png").exists()


@pytest.mark.slow
def test_the_report_shows_the_modes_run_json_lists(tmp_path):
    out = tmp_path / "r"
    _run(out, "--modes", "it2it")
    before = {f.name for f in (out / "tables").iterdir()}
    # a mode folder run.json does not list (copied in by hand, or left by an older snapbench)
    shutil.copytree(out / "IT2IT", out / "T2T")
    rep = json.loads((out / "T2T" / "report.json").read_text())
    rep["meta"]["mode"] = "T2T"
    (out / "T2T" / "report.json").write_text(json.dumps(rep))
    res = build_report(out)
    assert _modes_in_page(out) == {"IT2IT", "MOOR"}
    assert any("T2T is not one of the modes run.json lists" in n for n in res.notes["run"])
    assert {f.name for f in (out / "tables").iterdir()} == before
