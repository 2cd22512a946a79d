"""snapbench's own output folders given where a dataset or a query set is expected: every command says
what the folder is and what to pass instead (exit 2, one error line), and reads nothing of it."""

from __future__ import annotations

import shutil

import pytest
from typer.testing import CliRunner

from snapbench.app.stages import RunOptions, run_benchmark
from snapbench.cli import app
from snapbench.core.defaults import DEFAULT_DATA
from snapbench.core.errors import InputError
from snapbench.store import find_output_folder, refuse_output_folder

runner = CliRunner()


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("outs")
    run = root / "run"
    run_benchmark(DEFAULT_DATA, "toy", run, RunOptions(conditions=["clean", "txt/char_swap"], resamples=100, report=False,
                                                       progress=False, use_cache=False))
    # what the report leaves in a run folder: figures (images a folder reader would take for queries)
    (run / "figures").mkdir()
    first = sorted((DEFAULT_DATA / "queries").iterdir())[:3]
    for i, img in enumerate(first):
        shutil.copy(img, run / "figures" / f"fig{i}{img.suffix}")
    corrupt = root / "corrupt"
    r = runner.invoke(app, ["corrupt", str(DEFAULT_DATA / "queries.jsonl"), "--out", str(corrupt), "--conditions",
                            "img/motion_blur/s1,txt/char_swap", "--no-progress"])
    assert r.exit_code == 0, r.output
    return root


def _fails(args, *expected):
    r = runner.invoke(app, args)
    assert r.exit_code == 2, r.output
    assert r.output.startswith("error: ") and len(r.output.strip().splitlines()) == 1, r.output
    for e in expected:
        assert e in r.output, r.output
    return r.output


def test_diagnose_of_a_run_folder_says_it_is_a_run_and_names_its_dataset(outputs, tmp_path):
    _fails(["diagnose", str(outputs / "run"), "--out", str(tmp_path / "d"), "--no-progress"],
           "is the output folder of 'snapbench run'", "not a query set",
           f"pass the dataset the run was made from: {DEFAULT_DATA.resolve()}")
    assert not (tmp_path / "d" / "diagnose.csv").exists()


@pytest.mark.parametrize("inner", ["figures", "IT2IT", "T2T/report.json"])
def test_diagnose_of_something_inside_a_run_folder_says_so(outputs, tmp_path, inner):
    _fails(["diagnose", str(outputs / "run" / inner), "--out", str(tmp_path / "d"), "--no-progress"],
           f"is inside {outputs / 'run'}, the output folder of 'snapbench run'", "not a query set")


def test_diagnose_still_reads_a_corrupt_output(outputs, tmp_path):
    r = runner.invoke(app, ["diagnose", str(outputs / "corrupt"), "--out", str(tmp_path / "d"), "--no-progress"])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "d" / "diagnose.csv").is_file()


@pytest.mark.parametrize("given", ["corrupt", "corrupt/manifest.jsonl"])
def test_run_on_a_corrupt_output_says_it_is_corrupts_output(outputs, tmp_path, given):
    out = tmp_path / "o"
    _fails(["run", str(outputs / given), "-e", "toy", "--out", str(out), "--no-progress"],
           "the output folder of 'snapbench corrupt'", "not a dataset", "pass the dataset or query manifest",
           "'snapbench encode'")
    assert not (out / "embeddings").exists()


def test_corrupt_of_its_own_manifest_is_refused(outputs, tmp_path):
    _fails(["corrupt", str(outputs / "corrupt" / "manifest.jsonl"), "--out", str(tmp_path / "c"), "--no-progress"],
           f"is inside {outputs / 'corrupt'}, the output folder of 'snapbench corrupt'", "not a query manifest")
    assert not (tmp_path / "c" / "manifest.jsonl").exists()


def test_run_and_demo_on_a_run_folder_name_the_dataset(outputs, tmp_path):
    _fails(["run", str(outputs / "run"), "-e", "toy", "--out", str(tmp_path / "o"), "--no-progress"],
           "is the output folder of 'snapbench run'", f"the run was made from: {DEFAULT_DATA.resolve()}")
    _fails(["demo", "--data", str(outputs / "run"), "--out", str(tmp_path / "d"), "--no-progress"],
           "is the output folder of 'snapbench run'", "not a dataset")


def test_a_several_encoder_run_names_the_dataset_of_its_runs(tmp_path):
    from snapbench.app.stages import run_encoders

    out = tmp_path / "multi"
    run_encoders(DEFAULT_DATA, ["toy", "toy"], out, RunOptions(conditions=["clean", "txt/char_swap"], resamples=100,
                                                                report=False, progress=False, use_cache=False),
                 names=["a", "b"])
    _fails(["diagnose", str(out), "--out", str(tmp_path / "d"), "--no-progress"],
           "is the output folder of 'snapbench run'", f"the run was made from: {DEFAULT_DATA.resolve()}")


def test_the_library_check_knows_what_a_folder_is(outputs, tmp_path):
    assert find_output_folder(DEFAULT_DATA) is None
    assert find_output_folder(tmp_path) is None
    found = find_output_folder(outputs / "run" / "figures" / "fig0.jpg")
    assert found is not None and (found.folder, found.kind, found.itself) == (outputs / "run", "run", False)
    refuse_output_folder(outputs / "corrupt", "a query set", accept=("corrupt",))  # accepted: no error
    with pytest.raises(InputError, match="the output folder of 'snapbench corrupt'"):
        refuse_output_folder(outputs / "corrupt", "a dataset")


def test_encode_and_moor_say_a_run_folder_is_a_run(outputs, tmp_path):
    gallery = DEFAULT_DATA / "gallery.jsonl"
    _fails(["encode", str(outputs / "run"), "--gallery", str(gallery), "--out", str(tmp_path / "e"), "--no-progress"],
           "is the output folder of 'snapbench run'", "not the output folder of 'snapbench corrupt' (no manifest.jsonl)")
    _fails(["moor", "--paths-dir", str(outputs / "run"), "--out", str(tmp_path / "m")],
           "holds no path score files", "is the output folder of 'snapbench run'", "'snapbench encode' writes them")
