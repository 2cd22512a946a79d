"""`snapbench compare` refuses runs whose severities mean different corruptions: another severity
target (``run --severity-target``), or a target against the grid's own knob values -- the same way
it refuses another severity grid.  Runs that agree are compared."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from snapbench.cli import app
from snapbench.core.defaults import DEFAULT_DATA

runner = CliRunner()
CONDS = "clean,img/compression/s1,img/rotation/s2,txt/char_add"


def _run(out, *extra):
    r = runner.invoke(app, ["run", str(DEFAULT_DATA / "queries.jsonl"), "-e", "toy", "--out", str(out),
                            "--conditions", CONDS, "--resamples", "100", "--no-report", "--no-progress",
                            "--no-cache", *extra])
    assert r.exit_code == 0, r.output


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("tgt")
    _run(root / "ssim", "--severity-target", "ssim=0.9,0.75,0.6")
    _run(root / "ssim2", "--severity-target", "ssim=0.9,0.75,0.6")
    _run(root / "psnr", "--severity-target", "psnr=30,25,20")
    _run(root / "grid")
    _run(root / "grid2")
    return root


def _compare(runs, tmp_path, a, b):
    return runner.invoke(app, ["compare", str(runs / a), str(runs / b), "--name", a, "--name", b,
                               "--out", str(tmp_path / "o"), "--formats", "md", "--no-progress"])


@pytest.mark.parametrize("a, b, said", [
    ("psnr", "ssim", ("with the severity target psnr=30,25,20", "with the severity target ssim=0.9,0.75,0.6")),
    ("grid", "ssim", ("with the grid's knob values (no severity target)", "with the severity target ssim=0.9,0.75,0.6")),
    ("ssim", "grid", ("with the severity target ssim=0.9,0.75,0.6", "with the grid's knob values (no severity target)")),
])
def test_another_severity_target_is_refused(runs, tmp_path, a, b, said):
    r = _compare(runs, tmp_path, a, b)
    assert r.exit_code == 2, r.output
    assert r.output.startswith("error: the runs cannot be compared, they differ in their conditions: ")
    first, second = said
    assert f"'{a}' ({runs / a}) generated its variants {first}, '{b}' ({runs / b}) {second}" in r.output
    # the example id is one of these runs' conditions (trial finding: img/compression/s2, which they lack)
    example = re.search(r"one condition id, such as (\S+), names a different corruption in each", r.output)
    assert example and example.group(1) in [c for c in CONDS.split(",") if c.startswith("img/")], r.output
    assert "Traceback" not in r.output and not (tmp_path / "o" / "compare.json").exists()


@pytest.mark.parametrize("a, b", [("ssim", "ssim2"), ("grid", "grid2")])
def test_the_same_severities_are_compared(runs, tmp_path, a, b):
    r = _compare(runs, tmp_path, a, b)
    assert r.exit_code == 0, r.output
    assert (tmp_path / "o" / "compare.json").is_file()
