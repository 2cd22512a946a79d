"""Every command that owns an output folder marks it (run.json "kind") and refuses a folder another
command wrote, so no command writes its files into another's outputs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from snapbench.cli import app

runner = CliRunner()
DEMO = Path(__file__).resolve().parents[1] / "snapbench" / "assets" / "demo"


@pytest.fixture()
def folders(tmp_path):
    """A diagnose folder, a moor SCORES_DIR and a corrupt folder made by the commands themselves."""
    imgs = tmp_path / "imgs"
    imgs.mkdir()
    for f in sorted((DEMO / "queries").glob("*.jpg"))[:3]:
        shutil.copy(f, imgs / f.name)
    assert runner.invoke(app, ["diagnose", str(imgs), "--out", str(tmp_path / "diag"), "--no-progress"]).exit_code == 0
    rng = np.random.default_rng(0)
    for name, rows in (("qI", 4), ("qT", 4), ("gI", 9), ("gT", 9)):
        np.save(tmp_path / f"{name}.npy", rng.standard_normal((rows, 6)))
    moor = ["moor", "--q-image", str(tmp_path / "qI.npy"), "--q-text", str(tmp_path / "qT.npy"),
            "--g-image", str(tmp_path / "gI.npy"), "--g-text", str(tmp_path / "gT.npy")]
    assert runner.invoke(app, [*moor, "--out", str(tmp_path / "fused")]).exit_code == 0
    r = runner.invoke(app, ["corrupt", str(DEMO / "queries.jsonl"), "--out", str(tmp_path / "corr"),
                            "--conditions", "img/low_light/s1", "--no-progress"])
    assert r.exit_code == 0, r.output
    return tmp_path, moor, imgs


def test_each_folder_says_which_command_wrote_it(folders):
    tmp, _, _ = folders
    kinds = {d: json.loads((tmp / d / "run.json").read_text())["kind"] for d in ("diag", "fused", "corr")}
    assert kinds == {"diag": "diagnose", "fused": "moor", "corr": "corrupt"}


@pytest.mark.parametrize("target", ["diag", "fused", "corr"])
def test_no_command_writes_into_another_commands_folder(folders, target):
    tmp, moor, imgs = folders
    out = tmp / target
    before = sorted(p.name for p in out.iterdir())
    attempts = {
        "diagnose": ["diagnose", str(imgs), "--out", str(out), "--no-progress"],
        "moor": [*moor, "--out", str(out)],
        "corrupt": ["corrupt", str(DEMO / "queries.jsonl"), "--out", str(out), "--conditions", "img/low_light/s1",
                    "--no-progress"],
    }
    owner = {"diag": "diagnose", "fused": "moor", "corr": "corrupt"}[target]
    for command, args in attempts.items():
        if command == owner:
            continue
        r = runner.invoke(app, args)
        assert r.exit_code == 2, (command, r.output)
        assert "error:" in r.output and str(out) in r.output
    assert sorted(p.name for p in out.iterdir()) == before


@pytest.mark.parametrize("target", ["diag", "fused", "corr"])
def test_another_commands_folder_is_refused_before_the_dataset_or_a_model_is_opened(folders, target, monkeypatch):
    """run, demo, encode and compare claim --out first: the refusal comes before a missing input is
    noticed and before an encoder module is imported (one that fails loudly when it is)."""
    tmp, _, _ = folders
    (tmp / "loud_enc_t7.py").write_text("raise RuntimeError('the encoder module was imported')\n")
    monkeypatch.syspath_prepend(str(tmp))
    out = tmp / target
    owner = {"diag": "diagnose", "fused": "moor", "corr": "corrupt"}[target]
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    missing = str(tmp / "no_such_dataset")
    attempts = [  # (the command named in the refusal, its command line)
        ("run", ["run", missing, "-e", "loud_enc_t7:Enc", "--out", str(out), "--no-progress"]),
        ("run", ["run", missing, "-e", "loud_enc_t7:Enc", "-e", "toy", "--out", str(out), "--no-progress"]),
        ("demo", ["demo", "--data", missing, "--out", str(out), "--no-progress"]),  # named as typed, writes a run
        ("encode", ["encode", str(tmp / "corr"), "--gallery", missing, "-e", "loud_enc_t7:Enc", "--out", str(out)]),
        ("compare", ["compare", missing, missing + "2", "--out", str(out), "--no-progress"]),
    ]
    for kind, args in attempts:
        r = runner.invoke(app, args)
        assert r.exit_code == 2, (args, r.output)
        assert f"holds the output of 'snapbench {owner}', not of 'snapbench {kind}'" in r.output, (args, r.output)
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before
    # the same commands into a new folder fail on what the refusal came before: the encoder's import
    r = runner.invoke(app, ["run", str(DEMO), "-e", "loud_enc_t7:Enc", "--out", str(tmp / "new"), "--no-progress"])
    assert r.exit_code == 2 and "the encoder module was imported" in r.output, r.output


def test_a_run_of_several_encoders_claims_each_encoder_folder_first(tmp_path, monkeypatch):
    (tmp_path / "loud_enc_t8.py").write_text("raise RuntimeError('the encoder module was imported')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "o"
    (out / "b").mkdir(parents=True)
    (out / "b" / "run.json").write_text(json.dumps({"kind": "corrupt", "schema_version": 2}))
    r = runner.invoke(app, ["run", str(tmp_path / "no_such_dataset"), "-e", "toy", "-e", "loud_enc_t8:Enc",
                            "--name", "a", "--name", "b", "--out", str(out), "--no-progress"])
    assert r.exit_code == 2, r.output
    assert f"error: {out / 'b'} holds the output of 'snapbench corrupt', not of 'snapbench run'" in r.output, r.output
    assert sorted(p.name for p in out.iterdir()) == ["b"]  # folder a, claimed before b, was removed again


@pytest.mark.slow
def test_a_report_goes_into_the_run_or_a_folder_of_its_own(folders, smoke_run):
    tmp, _, _ = folders
    from snapbench.render import build_report

    run = tmp / "run"
    shutil.copytree(smoke_run, run)  # a finished run without its report: the session's smoke run
    r = runner.invoke(app, ["report", str(run), "--out", str(tmp / "diag")])
    assert r.exit_code == 2 and "diagnose" in r.output
    res = build_report(run, tmp / "rep", formats=("html",))
    assert json.loads((res.out / "run.json").read_text())["kind"] == "report"
    assert json.loads((run / "run.json").read_text())["kind"] == "run"  # the run's own is untouched
    # a folder of the user's own: the report adds its files and removes none of theirs
    paper = tmp / "paper"
    (paper / "tables").mkdir(parents=True)
    (paper / "figures").mkdir()
    (paper / "tables" / "results.tex").write_text("\\begin{tabular}{l}\\end{tabular}\n")
    (paper / "figures" / "teaser.png").write_bytes(b"\x89PNG not really")
    res = build_report(run, paper, formats=("md", "tex", "png"))
    assert (paper / "tables" / "results.tex").is_file() and (paper / "figures" / "teaser.png").is_file()
    assert any(f.suffix == ".tex" for f in res.files)
    # its own report folder: a table an earlier report wrote that this one does not is removed
    stale = tmp / "rep" / "tables" / "gone_delta.md"
    stale.parent.mkdir(parents=True, exist_ok=True)
    stale.write_text("old\n")
    build_report(run, tmp / "rep", formats=("md",))
    assert not stale.exists()


# ---- an --out that is a file; a failed command leaves no empty output folder ----------------------


def _out_commands(tmp: Path, moor: list[str], imgs: Path, out: Path) -> dict[str, list[str]]:
    """Every command with an output folder, each given a valid input and ``out``."""
    return {
        "corrupt": ["corrupt", str(DEMO / "queries.jsonl"), "--out", str(out), "--no-progress"],
        "encode": ["encode", str(tmp / "corr"), "--gallery", str(DEMO / "gallery.jsonl"), "-e", "toy",
                   "--out", str(out)],
        "run": ["run", str(DEMO / "queries.jsonl"), "-e", "toy", "--out", str(out), "--no-progress"],
        "demo": ["demo", "--out", str(out), "--no-progress"],
        "diagnose": ["diagnose", str(imgs), "--out", str(out), "--no-progress"],
        "moor": [*moor, "--out", str(out)],
    }


def test_an_out_that_is_a_file_is_refused_the_same_way_by_every_command(folders):
    tmp, moor, imgs = folders
    afile = tmp / "afile"
    afile.write_text("mine")
    for out in (afile, afile / "sub"):
        for command, args in _out_commands(tmp, moor, imgs, out).items():
            r = runner.invoke(app, args)
            assert r.exit_code == 2, (command, r.output)
            assert f"error: {afile}: exists and is not a folder (choose a folder for the outputs)" in r.output, \
                (command, r.output)
    assert afile.read_text() == "mine"


@pytest.mark.parametrize("bad", [["-e", "toyy"], ["-e", "nosuchmod_t3:Enc"], ["-e", "toy", "--severity-target",
                                                                               "ssim=0.9,0.75"]])
def test_a_run_that_fails_validation_leaves_no_output_folder(tmp_path, bad):
    out = tmp_path / "new" / "run"
    r = runner.invoke(app, ["run", str(DEMO / "queries.jsonl"), *bad, "--out", str(out), "--no-progress"])
    assert r.exit_code == 2 and "error:" in r.output, r.output
    assert not (tmp_path / "new").exists()


def test_a_failed_command_keeps_a_folder_that_existed_or_holds_files(tmp_path):
    existing = tmp_path / "existing"
    existing.mkdir()
    r = runner.invoke(app, ["run", str(DEMO / "queries.jsonl"), "-e", "toyy", "--out", str(existing)])
    assert r.exit_code == 2 and existing.is_dir()
    from snapbench.store.atomic import owning_output_dirs, prepare_output_dir

    with pytest.raises(RuntimeError), owning_output_dirs():
        (prepare_output_dir(tmp_path / "made") / "a.txt").write_text("x")
        prepare_output_dir(tmp_path / "empty", "sub")
        raise RuntimeError
    assert (tmp_path / "made" / "a.txt").exists() and not (tmp_path / "empty").exists()


def test_nearest_existing_walks_up_to_the_first_existing_path(tmp_path):
    """The one walk check_output_file and check_cache_dir share."""
    from snapbench.store.atomic import nearest_existing

    (tmp_path / "d").mkdir()
    (tmp_path / "f").write_text("x")
    assert nearest_existing(tmp_path / "d") == tmp_path / "d"
    assert nearest_existing(tmp_path / "d" / "x" / "y") == tmp_path / "d"
    assert nearest_existing(tmp_path / "f" / "sub") == tmp_path / "f"  # a file above: found, not walked past


_HOLDER = """
import sys
from snapbench.store.atomic import owning_output_dirs
from snapbench.store.folders import claim_output_dir
with owning_output_dirs():
    claim_output_dir(sys.argv[1], "corrupt")
    print("held", flush=True)
    sys.stdin.read()  # until the test closes the pipe or kills this process
"""


def test_a_folder_another_command_is_writing_is_refused_until_it_ends(tmp_path):
    """Two processes, one output folder: the second command is refused before any work; once the first
    is gone (here killed -9: the lock goes with the process) the folder is usable again."""
    import os
    import subprocess
    import sys

    out = tmp_path / "out"
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(out)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        args = ["corrupt", str(DEMO / "queries.jsonl"), "--out", str(out), "--conditions", "clean", "--no-progress"]
        r = runner.invoke(app, args)
        assert r.exit_code == 2, r.output
        assert f"error: {out} is in use by another snapbench command" in r.output
        assert not (out / "manifest.jsonl").exists()
        (out / "manifest.jsonl").write_text("")  # a folder in the making, as the reader would find it
        (out / "run.json").write_text('{"kind": "corrupt", "schema_version": 2}')
        # and a command reading it meanwhile (encode of the corrupt folder, a report, an evaluation of a
        # folder inside it) is told to wait, instead of reading a part of it
        for reader in (["encode", str(out), "-e", "toy", "--out", str(tmp_path / "enc"), "--gallery",
                        str(DEMO / "gallery.jsonl"), "--no-progress"],
                       ["report", str(out)], ["evaluate", str(out / "images"), "--qrels", str(DEMO / "qrels.json")]):
            r = runner.invoke(app, reader)
            assert r.exit_code == 2, (reader, r.output)
            assert "is being written by another snapbench command, still running" in r.output, (reader, r.output)
        assert not (tmp_path / "enc").exists()
        (out / "manifest.jsonl").unlink()
        (out / "run.json").unlink()
    finally:
        holder.kill()
        holder.wait()
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    assert (out / "manifest.jsonl").is_file()
    r = runner.invoke(app, args)  # the same process again, after its own command ended: resumes
    assert r.exit_code == 0, r.output


def test_remove_stale_removes_what_this_run_did_not_write(tmp_path):
    """The one stale-file step of every command: files and folders among the candidates that were not
    written go, the written ones and anything not a candidate stay, emptied folders go when named."""
    from snapbench.store.folders import remove_stale

    (tmp_path / "tables").mkdir()
    old, new, other = tmp_path / "tables" / "old.md", tmp_path / "tables" / "new.md", tmp_path / "tables" / "x.tex"
    for f in (old, new, other):
        f.write_text("x")
    target = tmp_path / "I2I"
    target.mkdir()
    (target / "report.json").write_text("{}")
    (tmp_path / "records").mkdir()
    gone = remove_stale([old, new, target, tmp_path / "never.md"], [new],
                        empty_dirs=[tmp_path / "records", tmp_path / "tables"])
    assert gone == sorted([old, target])
    assert new.exists() and other.exists() and not old.exists() and not target.exists()
    assert not (tmp_path / "records").exists() and (tmp_path / "tables").is_dir()  # not empty: kept
