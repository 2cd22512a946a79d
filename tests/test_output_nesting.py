"""No command writes its output folder inside another command's (snapbench.store.claim_output_dir).

Found by a new-user trial: ``snapbench report w1c --out w1c/IT2IT`` wrote 93 files into the run's IT2IT
folder (its per_query.csv replaced by the run-wide table, a run.json of kind report dropped in), and
``compare``/``report`` of that run failed afterwards.  Every command is tried against a run's target
folder and a subfolder of a corrupt folder; the expected refusals are written out word for word.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from snapbench.cli import app
from snapbench.core.defaults import DEFAULT_DATA
from snapbench.core.errors import ConfigError
from snapbench.store import claim_output_dir

runner = CliRunner()


@pytest.fixture(scope="module")
def made(smoke_run, tmp_path_factory):
    """A finished run (no report; a copy of the session's smoke run), a corrupt folder, moor's embeddings
    and a folder of photos."""
    tmp = tmp_path_factory.mktemp("nest")
    shutil.copytree(smoke_run, tmp / "run")
    r = runner.invoke(app, ["corrupt", str(DEFAULT_DATA / "queries.jsonl"), "--out", str(tmp / "corr"),
                            "--conditions", "img/low_light/s1", "--no-progress"])
    assert r.exit_code == 0, r.output
    rng = np.random.default_rng(0)
    for name, rows in (("qI", 4), ("qT", 4), ("gI", 9), ("gT", 9)):
        np.save(tmp / f"{name}.npy", rng.standard_normal((rows, 6)))
    imgs = tmp / "imgs"
    imgs.mkdir()
    for f in sorted((DEFAULT_DATA / "queries").glob("*.jpg"))[:2]:
        shutil.copy(f, imgs / f.name)
    return tmp


def _commands(tmp: Path, out: Path) -> dict[str, list[str]]:
    """Every command with an output folder, each with valid inputs, writing to ``out``."""
    moor = ["moor", "--q-image", str(tmp / "qI.npy"), "--q-text", str(tmp / "qT.npy"),
            "--g-image", str(tmp / "gI.npy"), "--g-text", str(tmp / "gT.npy")]
    return {
        "corrupt": ["corrupt", str(DEFAULT_DATA / "queries.jsonl"), "--out", str(out), "--conditions",
                    "img/low_light/s1", "--no-progress"],
        "encode": ["encode", str(tmp / "corr"), "--gallery", str(DEFAULT_DATA / "gallery.jsonl"), "-e", "toy",
                   "--out", str(out)],
        "run": ["run", str(DEFAULT_DATA), "-e", "toy", "--conditions", "clean", "--out", str(out), "--no-progress"],
        "demo": ["demo", "--out", str(out), "--no-progress"],
        "diagnose": ["diagnose", str(tmp / "imgs"), "--out", str(out), "--no-progress"],
        "moor": [*moor, "--out", str(out)],
        "compare": ["compare", str(tmp / "run"), str(tmp / "run"), "--name", "a", "--name", "b", "--out", str(out),
                    "--no-progress"],
        "report": ["report", str(tmp / "run"), "--out", str(out), "--formats", "md"],
    }


def _files(folder: Path) -> dict[Path, bytes]:
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _error(args: list[str]) -> str:
    r = runner.invoke(app, args)
    assert r.exit_code == 2, (args, r.output)
    assert r.exception is None or isinstance(r.exception, SystemExit), (args, r.output)  # no traceback
    text = " ".join(r.output.split())
    return text[text.index("error: "):]


@pytest.mark.parametrize(("owner", "inside"), [("run", "run/IT2IT"), ("run", "run/fusion/new"),
                                               ("corrupt", "corr/images"), ("corrupt", "corr/new")])
def test_every_command_refuses_an_out_inside_another_output_folder(made, owner, inside):
    parent = made / inside.split("/")[0]
    out = made / inside
    existed = out.exists()
    before = _files(parent)
    for command, args in _commands(made, out).items():
        hint = " (or, without --out, the run folder itself)" if (command, owner) == ("report", "run") else ""
        expected = (f"error: {out} is inside {parent}, the output folder of 'snapbench {owner}' (see its run.json); "
                    f"the output of 'snapbench {command}' goes to a folder of its own: use one outside {parent}{hint}")
        assert _error(args) == expected, command
    assert _files(parent) == before  # nothing written, nothing replaced
    assert out.exists() == existed  # nor a folder made in it


def test_the_trials_relative_paths_are_named_as_given(made, monkeypatch):
    monkeypatch.chdir(made)
    msg = _error(["report", "run", "--out", "run/IT2IT"])
    assert msg == ("error: run/IT2IT is inside run, the output folder of 'snapbench run' (see its run.json); the "
                   "output of 'snapbench report' goes to a folder of its own: use one outside run (or, without "
                   "--out, the run folder itself)")


def test_a_copied_target_folder_is_not_an_output_folder(made):
    copied = made / "copied_it2it"
    shutil.copytree(made / "run" / "IT2IT", copied)
    before = _files(copied)
    for command in ("report", "run", "moor"):
        msg = _error(_commands(made, copied)[command])
        assert msg == (f"error: {copied} is the folder of one target of a run (it holds report.json and no run.json, "
                       f"like RUN/IT2IT), not an output folder of 'snapbench {command}'; use a new output folder")
    assert _files(copied) == before


def test_a_report_still_goes_into_a_new_folder_or_the_run_itself(made):
    r = runner.invoke(app, _commands(made, made / "rep")["report"])
    assert r.exit_code == 0, r.output
    assert json.loads((made / "rep" / "run.json").read_text())["kind"] == "report"


def test_a_run_of_several_encoders_owns_its_encoder_folders(tmp_path):
    """The one exception: OUT/<name> within OUT, claimed by the run of several encoders that owns OUT."""
    out = tmp_path / "runs"
    out.mkdir()
    (out / "run.json").write_text(json.dumps({"kind": "run", "schema_version": 2, "encoder_runs": []}))
    assert claim_output_dir(out / "a", "run", within=out) is None and (out / "a").is_dir()
    with pytest.raises(ConfigError, match=r"runs/b is inside .*runs, the output folder of 'snapbench run'"):
        claim_output_dir(out / "b", "run")
    with pytest.raises(ConfigError, match="output folder of 'snapbench run'"):  # only `within` itself is exempt
        claim_output_dir(out / "a" / "deeper", "run", within=out / "a")
    assert not (out / "b").exists()
