"""docs/run.md's Python section: what run_benchmark returns, as the docs say it (trial finding: the
example showed ``res.reports["IT2IT"]`` as if it were a report; it is the path of report.json)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from snapbench.app.stages import RunOptions, run_benchmark
from snapbench.core.defaults import DEFAULT_DATA
from snapbench.store.rundir import read_report

ROOT = Path(__file__).resolve().parents[1]


def _python_section() -> str:
    text = (ROOT / "docs" / "run.md").read_text()
    return text.split("\n## Python\n", 1)[1].split("\n## ", 1)[0]


def test_reports_are_paths_read_with_read_report_and_a_reused_run_has_no_timings(tmp_path):
    opts = RunOptions(conditions=["clean", "txt/char_swap"], resamples=50, report=False, progress=False,
                      use_cache=False)
    res = run_benchmark(DEFAULT_DATA, "toy", tmp_path / "run", opts)
    path = res.reports["IT2IT"]
    assert isinstance(path, Path) and path == tmp_path / "run" / "IT2IT" / "report.json"
    on_disk = json.loads(path.read_text())
    assert read_report(path).n_queries == on_disk["n_queries"]
    assert res.timings  # computed: timed
    again = run_benchmark(DEFAULT_DATA, "toy", tmp_path / "run", opts)
    assert again.reused and again.timings == {}
    # the docs say so, and read the report with the public reader
    doc = _python_section()
    assert "from snapbench.store.rundir import read_report" in doc
    assert re.search(r"read_report\(res\.reports\[\"IT2IT\"\]\)", doc)
    assert re.search(r"read_report\(both\.runs\[\"toy\"\]\.reports\[\"MOOR\"\]\)", doc)
    assert re.search(r"`timings` is empty \(`\{\}`\) when the call found the folder's run already\s+complete", doc)
