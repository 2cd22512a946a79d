"""A compare into a folder a compare wrote leaves none of the previous compare's files it does not
write itself (other metrics, targets or formats, an interrupted compare, a run.json of an older
snapbench), and never touches a file compare does not write.  The expected folder is that of the
same compare into a fresh folder."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import snapbench.app.compare as write_mod
from snapbench.app.compare import CompareOptions, compare_runs
from snapbench.cli import app

runner = CliRunner()


@pytest.fixture(scope="module")
def run(smoke_run):
    """The session's smoke run of toy (read only: every compare here writes into tmp_path)."""
    return smoke_run


def _compare(run, out, *extra):
    r = runner.invoke(app, ["compare", str(run), str(run), "--name", "a", "--name", "b", "--out", str(out),
                            "--no-progress", "--formats", "md,csv,png", *extra])
    assert r.exit_code == 0, r.output
    return r


def _files(folder):
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def _same_as_fresh(folder, fresh):
    assert _files(folder) == _files(fresh)


@pytest.mark.slow
def test_a_narrower_compare_removes_what_it_does_not_write(run, tmp_path):
    _compare(run, tmp_path / "o", "--metrics", "all")
    assert len(list((tmp_path / "o" / "tables").iterdir())) > 100
    (tmp_path / "o" / "tables" / "my_notes.md").write_text("mine")
    r = _compare(run, tmp_path / "o", "--modes", "IT2IT", "--formats", "md")
    _compare(run, tmp_path / "fresh", "--modes", "IT2IT", "--formats", "md")
    assert "removed" in r.output
    (tmp_path / "o" / "tables" / "my_notes.md").unlink()  # the user's file stays; the rest is compare's
    _same_as_fresh(tmp_path / "o", tmp_path / "fresh")
    body = json.loads((tmp_path / "o" / "run.json").read_text())
    assert body["status"] == "complete" and body["files"] == _files(tmp_path / "o")


def test_an_interrupted_compare_is_cleaned_up_by_the_next(run, tmp_path, monkeypatch):
    def interrupted(*_a, **_k):
        raise KeyboardInterrupt

    monkeypatch.setattr(write_mod, "_write_figures", interrupted)  # after the records and tables
    with pytest.raises(KeyboardInterrupt):
        compare_runs([run, run], tmp_path / "o", CompareOptions(names=["a", "b"], metrics="all", formats=["md"]))
    assert json.loads((tmp_path / "o" / "run.json").read_text())["status"] == "writing"
    assert len(list((tmp_path / "o" / "tables").iterdir())) > 100
    monkeypatch.undo()
    _compare(run, tmp_path / "o", "--modes", "T2T")
    _compare(run, tmp_path / "fresh", "--modes", "T2T")
    _same_as_fresh(tmp_path / "o", tmp_path / "fresh")


def test_a_hand_edited_file_list_removes_nothing_outside_the_folder(run, tmp_path):
    _compare(run, tmp_path / "o", "--modes", "T2T")
    (tmp_path / "keep.txt").write_text("not compare's")
    rj = tmp_path / "o" / "run.json"
    body = json.loads(rj.read_text())
    body["files"] += ["../keep.txt", str(tmp_path / "keep.txt")]
    rj.write_text(json.dumps(body))
    _compare(run, tmp_path / "o", "--modes", "T2T")
    assert (tmp_path / "keep.txt").read_text() == "not compare's"
