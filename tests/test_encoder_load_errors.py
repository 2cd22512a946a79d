"""Every failure to load a model or import a user's encoder module is one line,
`error: encoder 'SPEC': ...`, exit status 2 — never a traceback (nothing is downloaded here)."""

from __future__ import annotations

import shutil

import pytest
from typer.testing import CliRunner

from snapbench.cli import app
from snapbench.core.defaults import DEFAULT_DATA
from snapbench.core.errors import ConfigError
from snapbench.models import load_encoder

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

runner = CliRunner()
FAST = ["--resamples", "100", "--no-report", "--no-progress", "--no-cache", "--conditions", "clean"]


def _photos(tmp_path):
    """A folder that exists but holds photos, not a model (what the trial passed as `hf:photos`)."""
    photos = tmp_path / "photos"
    photos.mkdir()
    shutil.copy(next(DEFAULT_DATA.rglob("*.jpg")), photos / "a.jpg")
    return photos


def _one_error_line(r, spec):
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output and r.exception is None or isinstance(r.exception, SystemExit)
    lines = [ln for ln in r.output.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and lines[0].startswith(f"error: encoder {spec!r}: "), r.output
    return lines[0]


@pytest.mark.parametrize("adapter", ["hf", "sentence-transformers"])
def test_a_folder_that_is_not_a_model_is_one_error_line(tmp_path, monkeypatch, adapter):
    pytest.importorskip("sentence_transformers") if adapter == "sentence-transformers" else None
    _photos(tmp_path)
    monkeypatch.chdir(tmp_path)
    spec = f"{adapter}:photos"
    r = runner.invoke(app, ["run", str(DEFAULT_DATA), "-e", spec, "--out", "o", "--device", "cpu", *FAST])
    line = _one_error_line(r, spec)
    assert "cannot load a model from the folder 'photos'" in line and "Unrecognized model" in line


def test_encode_says_the_same(tmp_path, monkeypatch):
    _photos(tmp_path)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "manifest.jsonl").write_text('{"id": "q", "condition": "clean", "path": null, "question": "a dog"}\n')
    (tmp_path / "g.jsonl").write_text('{"id": "g", "caption": "a cat"}\n')
    r = runner.invoke(app, ["encode", "c", "--gallery", "g.jsonl", "--out", "o", "--encoder", "hf:photos", "--device", "cpu"])
    assert "cannot load a model from the folder 'photos'" in _one_error_line(r, "hf:photos")


def test_a_path_that_does_not_exist_is_no_such_model_folder(tmp_path):
    spec = f"hf:{tmp_path / 'nonexistent' / 'model'}"
    r = runner.invoke(app, ["run", str(DEFAULT_DATA), "-e", spec, "--out", str(tmp_path / "o"), "--device", "cpu", *FAST])
    line = _one_error_line(r, spec)
    assert line.endswith(f"no such model folder {str(tmp_path / 'nonexistent' / 'model')!r}")
    assert "Repo id" not in r.output


def test_a_user_module_with_a_syntax_error_is_one_error_line(tmp_path, monkeypatch):
    (tmp_path / "enc_syntax.py").write_text("import numpy as np\ndef broken(:\n")
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, ["run", str(DEFAULT_DATA), "-e", "enc_syntax:E", "--out", "o", *FAST])
    line = _one_error_line(r, "enc_syntax:E")
    assert "importing 'enc_syntax' failed: SyntaxError: invalid syntax (enc_syntax.py, line 2)" in line


def test_a_user_constructor_that_raises_is_one_error_line(tmp_path, monkeypatch):
    (tmp_path / "boom_lines_enc.py").write_text("class Boom:\n    def __init__(self):\n        raise ValueError('weights\\nfile missing')\n")
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, ["run", str(DEFAULT_DATA), "-e", "boom_lines_enc:Boom", "--out", "o", *FAST])
    assert _one_error_line(r, "boom_lines_enc:Boom").endswith("building it failed: ValueError: weights")


def _no_download(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("the loader ran although the name was refused up front")
    monkeypatch.setattr(transformers.AutoModel, "from_pretrained", refuse)


def test_an_unknown_hub_name_is_refused_at_once_without_retries(monkeypatch):
    import huggingface_hub
    from huggingface_hub.errors import RepositoryNotFoundError

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    calls = []

    def model_info(repo, timeout=None):
        calls.append((repo, timeout))
        # built without __init__: its signature (an HTTP response of whichever HTTP library) varies by version
        exc = RepositoryNotFoundError.__new__(RepositoryNotFoundError)
        Exception.__init__(exc, f"404 Client Error: Repository Not Found for url: .../{repo}")
        raise exc
    monkeypatch.setattr(huggingface_hub, "model_info", model_info)
    _no_download(monkeypatch)
    with pytest.raises(ConfigError, match=r"^encoder 'hf:nobody/snapbench-no-such-model': no model "
                                          r"'nobody/snapbench-no-such-model' on the Hugging Face Hub"):
        load_encoder("hf:nobody/snapbench-no-such-model", device="cpu")
    assert calls == [("nobody/snapbench-no-such-model", 10.0)]  # one request, with a timeout


def test_an_unreachable_hub_is_one_error_at_once(monkeypatch):
    import huggingface_hub

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)

    def model_info(repo, timeout=None):
        raise ConnectionError("Name or service not known")
    monkeypatch.setattr(huggingface_hub, "model_info", model_info)
    _no_download(monkeypatch)
    with pytest.raises(ConfigError, match=r"the Hugging Face Hub cannot be reached to download it \(ConnectionError: Name "
                                          r"or service not known\); give the path of a local copy"):
        load_encoder("hf:nobody/snapbench-no-such-model", device="cpu")
