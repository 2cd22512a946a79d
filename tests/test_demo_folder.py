"""`snapbench demo --out DIR` replaces only its own earlier output; anyone else's run is refused."""

from __future__ import annotations

import json

import pytest
from smoke import FAST
from typer.testing import CliRunner

from snapbench.app.stages import RunOptions, run_benchmark
from snapbench.cli import app
from snapbench.core.defaults import DEFAULT_DATA
from snapbench.data import load_dataset
from snapbench.store.folders import holds_a_demo

runner = CliRunner()


def test_demo_refuses_a_folder_holding_someone_elses_run(tmp_path):
    out = tmp_path / "victim"
    r = runner.invoke(app, ["run", str(DEFAULT_DATA), "-e", "toy", "--out", str(out), "--conditions", "clean,txt/char_swap", *FAST])
    assert r.exit_code == 0, r.output
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    r = runner.invoke(app, ["demo", "--out", str(out), "--no-progress", "--resamples", "100"])
    assert r.exit_code == 2, r.output
    assert "error:" in r.output and "--force" in r.output
    after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before  # nothing of the run was touched


def test_demo_refuses_another_commands_folder(tmp_path):
    out = tmp_path / "c"
    out.mkdir()
    (out / "run.json").write_text(json.dumps({"kind": "corrupt", "schema_version": 1, "seed": 0, "grid": {}}))
    r = runner.invoke(app, ["demo", "--out", str(out), "--no-progress", "--resamples", "100", "--force"])
    assert r.exit_code == 2 and "snapbench corrupt" in r.output


def test_demo_names_itself_when_it_refuses_a_folder(tmp_path):
    """Trial 4: `demo --out diag` said "not of 'snapbench run'"; the command the user typed is demo."""
    out = tmp_path / "diag"
    out.mkdir()
    (out / "run.json").write_text(json.dumps({"kind": "diagnose", "schema_version": 2}))
    r = runner.invoke(app, ["demo", "--out", str(out), "--no-progress"])
    assert r.exit_code == 2, r.output
    assert " ".join(r.output.split()) == (f"error: {out} holds the output of 'snapbench diagnose', not of "
                                          "'snapbench demo' (see its run.json); use a new output folder")


def _run_json(folder, body):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "run.json").write_text(json.dumps(body))
    return folder


def test_which_folders_hold_a_demo(tmp_path):
    assert not holds_a_demo(tmp_path / "absent")
    assert not holds_a_demo(_run_json(tmp_path / "empty", {}))
    assert holds_a_demo(_run_json(tmp_path / "new", {"kind": "run", "command": "demo", "encoder": "toy"}))
    # a run of the demo's data and encoder that run.json does not record as the demo's is someone's run
    assert not holds_a_demo(_run_json(tmp_path / "run_on_demo_data", {"kind": "run", "dataset": "snapbench demo (jsonl)",
                                                                       "encoder": "toy", "fingerprint": {}}))
    assert not holds_a_demo(_run_json(tmp_path / "run", {"kind": "run", "dataset": "snapbench demo (jsonl)",
                                                          "encoder": "hf:x", "fingerprint": {}}))


@pytest.mark.slow
def test_demo_replaces_its_own_earlier_output(tmp_path):
    out = tmp_path / "d"
    # an earlier (smaller) demo in the folder: a different fingerprint that `run` would refuse
    run_benchmark(load_dataset(DEFAULT_DATA), "toy", out, RunOptions(conditions=["clean"], resamples=100, report=False,
                                                                     progress=False, command="demo"))
    assert json.loads((out / "run.json").read_text())["command"] == "demo"
    r = runner.invoke(app, ["demo", "--out", str(out), "--no-progress", "--resamples", "100"])
    assert r.exit_code == 0, r.output
    meta = json.loads((out / "run.json").read_text())
    assert meta["command"] == "demo" and len(meta["conditions"]) == 72
