"""What every command says about itself: usage lines and the interrupt message (cli.guarded)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from snapbench.cli import app

runner = CliRunner()

USAGE = {
    "corrupt": "[OPTIONS] INPUT", "preview": "[OPTIONS] IMAGE", "encode": "[OPTIONS] CORRUPTED",
    "evaluate": "[OPTIONS] SCORES_DIR", "additivity": "[OPTIONS] SOURCE", "moor": "[OPTIONS]",
    "run": "[OPTIONS] DATASET", "report": "[OPTIONS] RUN_DIR", "compare": "[OPTIONS] RUN_DIR...",
    "diagnose": "[OPTIONS] QUERIES", "conditions": "[OPTIONS]", "demo": "[OPTIONS]",
}


@pytest.mark.parametrize("command", sorted(USAGE))
def test_usage_lines_name_arguments_in_capitals(command) -> None:
    res = runner.invoke(app, [command, "--help"])
    assert res.exit_code == 0, res.output
    usage = res.output.splitlines()[0]
    assert usage.endswith(f"{command} {USAGE[command]}"), usage
    assert "{" not in usage and "}" not in usage


def test_a_missing_argument_is_named_as_in_the_usage_line() -> None:
    res = runner.invoke(app, ["diagnose"])
    assert res.exit_code == 2, res.output
    assert res.output.startswith("error: QUERIES: required, not given; usage: ") and res.output.rstrip().endswith(
        "diagnose [OPTIONS] QUERIES"), res.output
    res = runner.invoke(app, ["stress", "x", "-e", "toy", "--out", "o"])  # a required flag (trial 2)
    assert res.exit_code == 2 and res.output.startswith("error: --stress: required, not given; usage: "), res.output
    assert "Usage:" not in res.output and "Error:" not in res.output


def _interrupt(*args, **kwargs):
    raise KeyboardInterrupt


def test_an_interrupted_diagnose_says_nothing_was_written_and_leaves_no_folder(tmp_path, monkeypatch) -> None:
    import snapbench.app.diagnose as diagnose_run

    qs = tmp_path / "qs.txt"
    qs.write_text("What is this temple?\n", encoding="utf-8")
    monkeypatch.setattr(diagnose_run, "_diagnose_all", _interrupt)
    out = tmp_path / "new" / "diag"
    res = runner.invoke(app, ["diagnose", str(qs), "--out", str(out), "--no-progress"])
    assert res.exit_code == 130 and "interrupted; nothing was written" in res.output, res.output
    assert "resume" not in res.output and not out.exists()
    out.mkdir(parents=True)  # a folder the user made is kept
    res = runner.invoke(app, ["diagnose", str(qs), "--out", str(out), "--no-progress"])
    assert res.exit_code == 130 and out.is_dir()


def test_an_interrupted_run_says_how_to_resume(tmp_path, monkeypatch) -> None:
    import snapbench.app.stages as pipeline

    monkeypatch.setattr(pipeline, "run_benchmark", _interrupt)
    res = runner.invoke(app, ["run", "demo", "--encoder", "toy", "--out", str(tmp_path / "r")])
    assert res.exit_code == 130, res.output
    assert "interrupted; rerun the same command to resume" in res.output


def test_an_interrupted_report_does_not_promise_a_resume(tmp_path, monkeypatch) -> None:
    import snapbench.render as report

    monkeypatch.setattr(report, "build_report", _interrupt)
    res = runner.invoke(app, ["report", str(tmp_path), "--out", str(tmp_path / "rep")])
    assert res.exit_code == 130, res.output
    assert "does not resume" in res.output and "rerun the same command to resume" not in res.output


def _commands() -> list[str]:
    from typer.main import get_command

    return sorted(get_command(app).commands)


@pytest.mark.parametrize("command", _commands())
def test_help_texts_are_plain_without_markup_escapes(command) -> None:
    """Help is shown without rich markup (rich_markup_mode=None), so an escape such as 'snapbench\\[ann]'
    would reach the reader as written; every command, the ones added later included."""
    res = runner.invoke(app, [command, "--help"], env={"COLUMNS": "400"})
    assert res.exit_code == 0, res.output
    assert "\\" not in res.output, [line for line in res.output.splitlines() if "\\" in line]
    if command == "moor":
        assert "snapbench[ann]" in res.output and "snapbench[safetensors]" in res.output
    if command == "evaluate":
        assert "{query_id: [gallery_id, ...]}" in res.output
