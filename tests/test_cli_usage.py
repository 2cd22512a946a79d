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
    assert res.exit_code == 2 and "Missing argument 'QUERIES'" in res.output, res.output
