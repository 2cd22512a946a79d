"""Every command that owns an output folder marks it (run.json "kind") and refuses a folder another
command wrote, so no command writes its files into another's outputs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from snapbench.cli import app

runner = CliRunner()
DEMO = Path(__file__).resolve().parents[1] / "snapbench" / "assets" / "demo"


@pytest.fixture()
def folders(tmp_path):
    """A diagnose folder, a moor SCORES_DIR and a corrupt folder made by the commands themselves."""
    imgs = tmp_path / "imgs"
    imgs.mkdir()
    for f in sorted((DEMO / "queries").glob("*.jpg"))[:3]:
        shutil.copy(f, imgs / f.name)
    assert runner.invoke(app, ["diagnose", str(imgs), "--out", str(tmp_path / "diag"), "--no-progress"]).exit_code == 0
    rng = np.random.default_rng(0)
    for name, rows in (("qI", 4), ("qT", 4), ("gI", 9), ("gT", 9)):
        np.save(tmp_path / f"{name}.npy", rng.standard_normal((rows, 6)))
    moor = ["moor", "--q-image", str(tmp_path / "qI.npy"), "--q-text", str(tmp_path / "qT.npy"),
            "--g-image", str(tmp_path / "gI.npy"), "--g-text", str(tmp_path / "gT.npy")]
    assert runner.invoke(app, [*moor, "--out", str(tmp_path / "fused")]).exit_code == 0
    r = runner.invoke(app, ["corrupt", str(DEMO / "queries.jsonl"), "--out", str(tmp_path / "corr"),
                            "--conditions", "img/low_light/s1", "--no-progress"])
    assert r.exit_code == 0, r.output
    return tmp_path, moor, imgs


def test_each_folder_says_which_command_wrote_it(folders):
    tmp, _, _ = folders
    kinds = {d: json.loads((tmp / d / "run.json").read_text())["kind"] for d in ("diag", "fused", "corr")}
    assert kinds == {"diag": "diagnose", "fused": "moor", "corr": "corrupt"}


@pytest.mark.parametrize("target", ["diag", "fused", "corr"])
def test_no_command_writes_into_another_commands_folder(folders, target):
    tmp, moor, imgs = folders
    out = tmp / target
    before = sorted(p.name for p in out.iterdir())
    attempts = {
        "diagnose": ["diagnose", str(imgs), "--out", str(out), "--no-progress"],
        "moor": [*moor, "--out", str(out)],
        "corrupt": ["corrupt", str(DEMO / "queries.jsonl"), "--out", str(out), "--conditions", "img/low_light/s1",
                    "--no-progress"],
    }
    owner = {"diag": "diagnose", "fused": "moor", "corr": "corrupt"}[target]
    for command, args in attempts.items():
        if command == owner:
            continue
        r = runner.invoke(app, args)
        assert r.exit_code == 2, (command, r.output)
        assert "error:" in r.output and str(out) in r.output
    assert sorted(p.name for p in out.iterdir()) == before


def test_a_report_goes_into_the_run_or_a_folder_of_its_own(folders):
    tmp, _, _ = folders
    from snapbench.report import build_report

    # a minimal run folder: the demo's own, built here quickly from the bundled assets
    run = tmp / "run"
    r = runner.invoke(app, ["run", str(DEMO / "queries.jsonl"), "--gallery", str(DEMO / "gallery.jsonl"),
                            "--qrels", str(DEMO / "qrels.json"), "-e", "toy", "--out", str(run),
                            "--conditions", "img/low_light/s1", "--resamples", "50", "--no-report", "--no-progress"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["report", str(run), "--out", str(tmp / "diag")])
    assert r.exit_code == 2 and "diagnose" in r.output
    res = build_report(run, tmp / "rep", formats=("html",))
    assert json.loads((res.out / "run.json").read_text())["kind"] == "report"
    assert json.loads((run / "run.json").read_text())["kind"] == "run"  # the run's own is untouched
