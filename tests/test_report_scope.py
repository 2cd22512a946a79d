"""A text-only run's report says once what does not apply and why, and shows no "not found" boxes
for files that cannot exist (the image modes, MOOR, joint conditions, the contact sheet)."""

from __future__ import annotations

import html
import json
import re
import shutil

import pytest

from snapbench.app.stages import RunOptions, run_benchmark
from snapbench.core.defaults import DEFAULT_DATA
from snapbench.render import build_report

CONDS = ["clean", "img/compression/s1", "txt/char_swap", "txt/char_add", "joint/compression+char_add/s1"]


def _text_only_data(tmp_path):
    # the demo set without any image: queries are questions, the gallery is captions
    root = tmp_path / "data"
    root.mkdir()
    for name in ("queries.jsonl", "gallery.jsonl"):
        rows = [json.loads(line) for line in (DEFAULT_DATA / name).read_text().splitlines() if line.strip()]
        (root / name).write_text("".join(json.dumps({k: v for k, v in r.items() if k != "image"}) + "\n" for r in rows))
    shutil.copy(DEFAULT_DATA / "qrels.json", root / "qrels.json")
    return root / "queries.jsonl"


@pytest.fixture(scope="module")
def text_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("scope")
    logged: list[str] = []
    run_benchmark(_text_only_data(tmp), "toy", tmp / "run",
                  RunOptions(conditions=CONDS, resamples=100, progress=False, use_cache=False), log=logged.append)
    return tmp / "run", logged


def _summary_rows(page: str) -> list[tuple[str, str]]:
    return [(html.unescape(k), html.unescape(v)) for k, v in re.findall(r"<dt>(.*?)</dt><dd>(.*?)</dd>", page)]


def test_a_text_only_report_has_no_not_found_boxes(text_run):
    run, logged = text_run
    page = (run / "report.html").read_text(encoding="utf-8")
    assert json.loads((run / "run.json").read_text())["modes"] == ["T2T"]  # the run really is text-only
    assert 'class="missing"' not in page
    assert "not found" not in page and "in run.json" not in page  # no hand-editing advice
    assert 'id="contact-sheet"' not in page
    assert not any("contact sheet" in line for line in logged), logged


def test_what_does_not_apply_is_said_once_with_the_runs_reasons(text_run):
    run, _ = text_run
    rows = _summary_rows((run / "report.html").read_text(encoding="utf-8"))
    said = [v for k, v in rows if k == "not in this run"]
    assert len(said) == 1, rows
    text = said[0]
    for part in ("I→I, IT→IT, I→IT, T→IT", "MOOR", "coarse-text drag", "the image conditions", "additivity",
                 "contact sheet", "the queries have no image", "nothing is missing"):
        assert part in text, (part, text)
    # the run's own reasons are quoted there, and not repeated as separate notes
    notes = json.loads((run / "run.json").read_text())["notes"]
    skip_notes = [n for n in notes if n.startswith("modes skipped")]
    assert skip_notes and all(n.rstrip(".") in text for n in skip_notes)
    assert not any(k == "note" and v in skip_notes for k, v in rows)


def test_a_folder_without_run_json_still_names_what_it_did_not_find(text_run, tmp_path):
    # no record of what the run set out to do: absence stays a "not found", as before
    run, _ = text_run
    copy = tmp_path / "copy"
    shutil.copytree(run, copy)
    (copy / "run.json").unlink()
    build_report(copy, formats=["html"])
    page = (copy / "report.html").read_text(encoding="utf-8")
    assert "not in this run" not in page
    assert "text-path share: MOOR/text_share.json not found" in page
