"""A run interrupted while it writes its report gets the report when it is run again."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from snapbench.cli import app
from snapbench.core.defaults import DEFAULT_DATA

runner = CliRunner()
CONDS = "img/defocus_blur/s2,txt/char_swap"


def _run(out: Path, *extra: str):
    return runner.invoke(app, ["run", str(DEFAULT_DATA), "-e", "toy", "--out", str(out), "--conditions", CONDS,
                               "--resamples", "100", "--no-progress", *extra])


def _files(out: Path) -> dict[str, str]:
    skip = {"figures", "tables"}  # PDFs carry a creation date; the rest must be equal
    return {str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(out.rglob("*"))
            if p.is_file() and not (p.parts[len(out.parts)] in skip and p.suffix == ".pdf")}


@pytest.mark.slow
def test_a_run_interrupted_in_its_report_stage_is_finished_by_the_rerun(tmp_path, monkeypatch):
    ref = tmp_path / "ref"
    assert _run(ref).exit_code == 0
    out = tmp_path / "cut"
    build = sys.modules["snapbench.render.build"]
    real = build._per_query_files

    def interrupted(*a, **kw):
        raise KeyboardInterrupt  # Ctrl-C while the report's files are written

    monkeypatch.setattr(build, "_per_query_files", interrupted)
    r = _run(out)
    assert r.exit_code == 130, r.output
    assert not (out / "report.html").exists() and not (out / "per_query.csv").exists()
    monkeypatch.setattr(build, "_per_query_files", real)
    r = _run(out)
    assert r.exit_code == 0, r.output
    assert "the report was not finished" in r.output
    assert (out / "report.html").is_file() and (out / "per_query.csv").is_file()
    assert _files(out) == _files(ref)
    # complete and reported: a third run reads it back and writes nothing
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()}
    r = _run(out)
    assert r.exit_code == 0 and "not finished" not in r.output
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()} == before


@pytest.mark.slow
@pytest.mark.parametrize("first", [["--no-report"]])
def test_a_run_made_without_its_report_gets_it_when_asked(tmp_path, first):
    out = tmp_path / "o"
    assert _run(out, *first).exit_code == 0
    assert not (out / "report.html").exists()
    r = _run(out)
    assert r.exit_code == 0, r.output
    assert (out / "report.html").is_file()
