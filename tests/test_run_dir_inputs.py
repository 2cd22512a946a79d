"""`snapbench report` (and `report --traffic`) given something that is not a run directory: one
`error:` line that says what the path is instead and what to give (found by a new-user trial).

The several-encoder run is written by the real `run_encoders`; the messages are checked through the
command line, where the user met them.
"""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from snapbench.cli import app
from snapbench.core.defaults import DEFAULT_DATA

runner = CliRunner()


@pytest.fixture(scope="module")
def multi(smoke_multi):
    """The session's smoke run of two encoders: multi/run.json lists them, multi/toy and multi/mirror are
    their run directories (read only)."""
    return smoke_multi


@pytest.fixture(scope="module")
def diag(tmp_path_factory):
    out = tmp_path_factory.mktemp("diag") / "d"
    r = runner.invoke(app, ["diagnose", str(DEFAULT_DATA), "--out", str(out), "--no-progress"])
    assert r.exit_code == 0, r.output
    return out


def _error(args: list[str]) -> str:
    r = runner.invoke(app, args)
    assert r.exit_code == 2, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit)  # no traceback
    lines = [line for line in r.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), r.output
    return lines[0]


def test_the_parent_folder_of_a_several_encoder_run_names_its_run_directories(multi):
    msg = _error(["report", str(multi)])
    assert "run of 2 encoders" in msg
    assert str(multi / "toy") in msg and str(multi / "mirror") in msg
    assert "no readable" not in msg


def test_report_traffic_on_the_parent_folder_says_the_same_without_a_parameter_prefix(multi, diag):
    msg = _error(["report", str(multi), "--traffic", str(diag)])
    assert "RUN_DIR" not in msg  # the path already names the argument
    assert msg.startswith(f"error: {multi}: is the folder of a run of 2 encoders")
    assert str(multi / "toy") in msg


def test_an_encoder_folder_of_that_run_is_a_run_directory(multi, tmp_path):
    r = runner.invoke(app, ["report", str(multi / "toy"), "--out", str(tmp_path / "rep"), "--formats", "md"])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "rep" / "tables").is_dir()


def test_a_file_is_named_as_a_file_not_as_a_missing_folder(tmp_path):
    f = tmp_path / "queries.jsonl"
    f.write_text('{"id": "q", "question": "what?"}\n', encoding="utf-8")
    msg = _error(["report", str(f)])
    assert msg == (f"error: {f}: is a file, not a snapbench run directory (the output folder of 'snapbench run' "
                   "or 'snapbench demo', with <MODE>/report.json)")
    assert "no such" not in msg
    assert "no such folder" in _error(["report", str(tmp_path / "nope")])


def test_another_commands_folder_is_named_by_its_command(diag):
    assert f"{diag}: holds the output of 'snapbench diagnose'" in _error(["report", str(diag)])


def test_a_run_interrupted_before_its_first_report_says_to_resume(multi, tmp_path):
    from snapbench.store import write_run_json

    run = tmp_path / "r"
    run.mkdir()
    write_run_json(run, "run", {"status": "running", "fingerprint": {}})
    assert "has not written any report yet" in _error(["report", str(run)])
