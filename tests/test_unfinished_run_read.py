"""A run stopped mid-evaluation (run.json status "running", some reports written, fusion/ missing) is
read by `snapbench report` and `snapbench compare` with a warning on the terminal and a note in the
report page / compare.json that the run is unfinished and how to finish it; a finished run has none."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from snapbench.cli import app

runner = CliRunner()


@pytest.fixture
def stopped(smoke_run, tmp_path):
    """A copy of the session's smoke run of toy as a run stopped before its fusion baselines: run.json
    back to status "running", fusion/ removed (the copy: the shared run stays as it is)."""
    run = tmp_path / "toy"
    shutil.copytree(smoke_run, run)
    assert (run / "fusion").is_dir()  # the smoke run has fusion baselines: removing them is the point
    shutil.rmtree(run / "fusion")
    cfg = json.loads((run / "run.json").read_text())
    assert cfg["status"] == "complete"
    cfg["status"] = "running"
    (run / "run.json").write_text(json.dumps(cfg))
    return run


def _warning_lines(output: str) -> list[str]:
    return [ln for ln in output.splitlines() if ln.startswith("warning:")]


def _says_unfinished(text: str, run) -> bool:
    flat = " ".join(text.split())
    return (str(run) in flat and "unfinished run" in flat and "status 'running'" in flat
            and "rerun 'snapbench run' with the same arguments" in flat)


def test_report_of_a_stopped_run_warns_and_notes_it(stopped, tmp_path):
    out = tmp_path / "rep"
    r = runner.invoke(app, ["report", str(stopped), "--out", str(out), "--formats", "html"])
    assert r.exit_code == 0, r.output
    assert any(_says_unfinished(ln, stopped) for ln in _warning_lines(r.output)), r.output
    page = (out / "report.html").read_text()
    assert "unfinished" in page and _says_unfinished(page.replace("&#x27;", "'"), stopped)


def test_compare_with_a_stopped_run_warns_and_notes_it(stopped, smoke_run, tmp_path):
    out = tmp_path / "cmp"
    r = runner.invoke(app, ["compare", str(stopped), str(smoke_run), "--name", "stopped", "--name", "done",
                            "--out", str(out), "--no-progress", "--formats", "md"])
    assert r.exit_code == 0, r.output
    assert any(_says_unfinished(ln, stopped) for ln in _warning_lines(r.output)), r.output
    notes = json.loads((out / "compare.json").read_text())["notes"]
    assert any(_says_unfinished(n, stopped) for n in notes)
    assert not any(str(smoke_run) in n and "unfinished" in n for n in notes)  # the finished one is not named


def test_a_finished_run_is_not_called_unfinished(smoke_run, tmp_path):
    r = runner.invoke(app, ["report", str(smoke_run), "--out", str(tmp_path / "rep"), "--formats", "html"])
    assert r.exit_code == 0, r.output
    assert "unfinished" not in r.output
    assert "unfinished" not in (tmp_path / "rep" / "report.html").read_text()
