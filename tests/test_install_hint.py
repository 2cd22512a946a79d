"""Every missing-extra hint is a ``pip install`` command for the way snapbench is installed.

The installations are made by pip itself (``pip install --target``, editable and not, from a small
copy of this checkout), so the metadata read is what pip really writes; the expected commands are
written out here from the folders the test made.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from snapbench.core.install_hint import Installation, install_hint, installation

REPO = Path(__file__).resolve().parents[1]


def _checkout(tmp_path: Path, name: str = "snap bench's co") -> Path:
    # a copy of the project's packaging files and an empty package: enough for pip to install it
    co = tmp_path / name
    (co / "snapbench").mkdir(parents=True)
    for f in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(REPO / f, co / f)
    (co / "snapbench" / "__init__.py").write_text("")
    return co


def _pip_install(target: Path, *args: str) -> metadata.Distribution:
    # offline and without build isolation: the build backend must be in this environment already
    pytest.importorskip("setuptools", minversion="77", reason="building snapbench offline needs setuptools>=77 here")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                    "--no-index", "--target", str(target), *args], check=True, capture_output=True)
    (dist,) = [d for d in metadata.distributions(path=[str(target)]) if d.metadata["Name"] == "snapbench"]
    return dist


def test_this_checkout_gets_an_editable_install_of_itself():
    # the tests run the snapbench of this repository: its hint installs this checkout
    assert install_hint("report") == f"pip install -e '{REPO}[report]'"
    assert install_hint(["models", "report"]) == f"pip install -e '{REPO}[models,report]'"


def test_the_installed_snapbench_of_this_environment(tmp_path):
    # the metadata pip wrote when this environment was made (scripts/test.sh: pip install -e '.[test]')
    dist = metadata.distribution("snapbench")
    direct = json.loads(dist.read_text("direct_url.json") or "{}")
    if not direct.get("dir_info", {}).get("editable"):
        pytest.skip(f"snapbench is not an editable install here ({direct or 'no direct_url.json'})")
    checkout = Path(direct["url"].removeprefix("file://"))
    # read as if the running code were the installed copy (not this source tree)
    how = installation(dist, source_root=tmp_path)
    assert how.kind == "checkout" and Path(how.location) == checkout
    assert install_hint("models", how=how) == f"pip install -e '{checkout}[models]'"
    assert "models" in how.requirements and any(r.startswith("torch") for r in how.requirements["models"])


def test_a_real_editable_install(tmp_path):
    co = _checkout(tmp_path)
    dist = _pip_install(tmp_path / "site", "-e", str(co))
    assert json.loads(dist.read_text("direct_url.json"))["dir_info"] == {"editable": True}
    # whether the running code sits in the checkout or is found through pip's editable finder
    for root in (co, tmp_path / "site"):
        how = installation(dist, source_root=root)
        assert how.kind == "checkout" and how.location == str(co)
        hint = install_hint("report", how=how)
        assert hint == "pip install -e '" + str(co).replace("'", "'\"'\"'") + "[report]'"
    # the command is one pip accepts: installing it (without dependencies) gives the extra's metadata
    args = shlex.split(hint)
    assert args[:3] == ["pip", "install", "-e"]
    again = _pip_install(tmp_path / "site2", *args[2:])
    assert "extra == \"report\"" in " ".join(again.requires or [])


def test_a_real_install_from_a_folder_and_after_the_folder_is_gone(tmp_path):
    co = _checkout(tmp_path, "co")
    dist = _pip_install(tmp_path / "site", str(co))
    how = installation(dist, source_root=tmp_path / "site")
    assert how == Installation("folder", str(co), how.requirements)
    assert install_hint("report", how=how) == f"pip install '{co}[report]'"
    shutil.rmtree(co)
    # nothing to reinstall from: the extra's own requirements, read from the installed metadata
    gone = installation(dist, source_root=tmp_path / "site")
    assert gone.kind == "unknown"
    assert install_hint("report", how=gone) == "pip install 'matplotlib>=3.7' 'pyarrow>=14'"
    assert install_hint(["ann", "report"], how=gone) == "pip install 'faiss-cpu>=1.8' 'matplotlib>=3.7' 'pyarrow>=14'"


def _dist_with(tmp_path: Path, direct_url: dict | None) -> metadata.Distribution:
    info = tmp_path / "snapbench-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.4\nName: snapbench\nVersion: 0.1.0\n"
                                   "Provides-Extra: report\nRequires-Dist: matplotlib>=3.7; extra == \"report\"\n")
    if direct_url is not None:
        (info / "direct_url.json").write_text(json.dumps(direct_url))
    return metadata.PathDistribution(info)


def test_git_wheel_and_index_installs(tmp_path):
    site = tmp_path / "site"
    git = {"url": "https://example.org/me/snapbench.git",
           "vcs_info": {"vcs": "git", "commit_id": "a" * 40, "requested_revision": "main"}}
    (tmp_path / "g").mkdir()
    how = installation(_dist_with(tmp_path / "g", git), source_root=site)
    assert install_hint("models", how=how) == (
        f"pip install 'snapbench[models] @ git+https://example.org/me/snapbench.git@{'a' * 40}'")
    wheel = {"url": "https://example.org/snapbench-0.1.0-py3-none-any.whl", "archive_info": {}}
    (tmp_path / "w").mkdir()
    how = installation(_dist_with(tmp_path / "w", wheel), source_root=site)
    assert install_hint("report", how=how) == (
        "pip install 'snapbench[report] @ https://example.org/snapbench-0.1.0-py3-none-any.whl'")
    (tmp_path / "i").mkdir()
    how = installation(_dist_with(tmp_path / "i", None), source_root=site)
    assert how.kind == "index" and install_hint("report", how=how) == "pip install 'snapbench[report]'"


def test_the_cli_prints_the_hint_of_this_installation(monkeypatch, tmp_path):
    # a missing extra on the command line: exit 2 and this checkout's command, no traceback
    from typer.testing import CliRunner

    from snapbench.cli import app
    from snapbench.diagnose import text

    q = tmp_path / "q.txt"
    q.write_text("wher is the eifel tower\n")
    text._spellchecker_words.cache_clear()
    monkeypatch.setitem(sys.modules, "spellchecker", None)
    try:
        res = CliRunner().invoke(app, ["diagnose", str(q), "--out", str(tmp_path / "o")])
    finally:
        text._spellchecker_words.cache_clear()
    assert res.exit_code == 2 and f"pip install -e '{REPO}[diagnose]'" in res.output, res.output
    assert "Traceback" not in res.output


def _without_torch(monkeypatch) -> None:
    """This interpreter as one where torch is not installed (find_spec is how the hint asks)."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))


def test_an_extra_that_needs_torch_installs_the_tested_cpu_build_first(monkeypatch):
    """An unpinned torch is a multi-GB CUDA build: where torch is missing, the hint of an extra that
    requires it (read from the distribution's own requirements) installs the pinned build first."""
    how = Installation("checkout", "/src/snapbench", {"models": ["torch>=2.2", "transformers>=4.41"],
                                                      "report": ["matplotlib>=3.7"], "torchlike": ["torchx>=1"]})
    _without_torch(monkeypatch)
    assert install_hint("models", how=how) == "pip install torch==2.13.0 && pip install -e '/src/snapbench[models]'"
    assert install_hint(["report", "models"], how=how).startswith("pip install torch==2.13.0 && ")
    assert install_hint("report", how=how) == "pip install -e '/src/snapbench[report]'"
    assert install_hint("torchlike", how=how) == "pip install -e '/src/snapbench[torchlike]'"  # not torch itself
    # without metadata (a source tree on PYTHONPATH) the extras known to pull torch
    bare = Installation("checkout", "/src/snapbench", {})
    assert install_hint("models", how=bare).startswith("pip install torch==2.13.0 && ")


def test_where_torch_is_installed_the_hint_adds_only_the_extra():
    pytest.importorskip("torch")
    how = Installation("checkout", "/src/snapbench", {"models": ["torch>=2.2"]})
    assert install_hint("models", how=how) == "pip install -e '/src/snapbench[models]'"


def test_the_openclip_hint_keeps_the_installed_torch():
    """torchvision pins one exact torch and pip picks the newest torchvision: the plain openclip hint
    would replace the installed torch with the newest (CUDA) one.  Read from this environment's real
    metadata: the hint names the installed torch's version."""
    pytest.importorskip("torch")
    torch = metadata.version("torch")
    assert install_hint("openclip") == f"pip install -e '{REPO}[openclip]' torch=={torch}"
    assert install_hint(["models", "openclip"]) == f"pip install -e '{REPO}[models,openclip]' torch=={torch}"
    assert install_hint("models") == f"pip install -e '{REPO}[models]'"  # torch>=2.2: pip keeps the installed one
    how = Installation("checkout", "/src/snapbench", {"openclip": ["open_clip_torch>=2.24"]})
    assert install_hint("openclip", how=how) == f"pip install -e '/src/snapbench[openclip]' torch=={torch}"


def test_the_openclip_hint_without_torch_pins_the_tested_build(monkeypatch):
    _without_torch(monkeypatch)
    how = Installation("checkout", "/src/snapbench", {"openclip": ["open_clip_torch>=2.24"]})
    assert install_hint("openclip", how=how) == "pip install -e '/src/snapbench[openclip]' torch==2.13.0"
    bare = Installation("checkout", "/src/snapbench", {})
    assert install_hint("openclip", how=bare) == "pip install -e '/src/snapbench[openclip]' torch==2.13.0"


def _package(root: Path, name: str, body: str, *, version: str | None = None, requires: str = "") -> None:
    (root / name).mkdir(parents=True)
    (root / name / "__init__.py").write_text(body)
    if version is not None:
        info = root / f"{name}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n{requires}")


def _import_error(module: str) -> str:
    import importlib

    from snapbench.core.errors import ConfigError
    from snapbench.core.install_hint import import_extra

    importlib.invalidate_caches()
    with pytest.raises(ConfigError) as info:
        import_extra(module, "report", "figures need the Python package 'x'", error=ConfigError)
    return str(info.value)


def test_an_installed_package_that_fails_to_import_is_not_sent_to_pip(monkeypatch, tmp_path):
    _package(tmp_path, "snapbench_t_broken", "raise RuntimeError('boom at import')\n")
    _package(tmp_path, "snapbench_t_badname", "from json import no_such_name\n")
    _package(tmp_path, "snapbench_t_needsdep", "import snapbench_t_absent_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    hint = install_hint("report")
    msg = _import_error("snapbench_t_broken")
    assert msg == ("figures need the Python package 'x', which is installed but failed to import: "
                   "RuntimeError: boom at import"), msg
    msg = _import_error("snapbench_t_badname")
    assert msg.startswith("figures need the Python package 'x', which is installed but failed to import: cannot import "
                          "name 'no_such_name'") and "pip install" not in msg, msg
    # a dependency of it missing: the extra's command installs what it requires
    msg = _import_error("snapbench_t_needsdep")
    assert "installed but failed to import: No module named 'snapbench_t_absent_dependency'" in msg and hint in msg
    # the package itself missing: the install command, as before
    assert _import_error("snapbench_t_not_installed") == f"figures need the Python package 'x': {hint}"


@pytest.mark.parametrize("mismatched", [True, False])
def test_a_torchvision_made_for_another_torch_is_named(monkeypatch, tmp_path, mismatched):
    pytest.importorskip("torch")
    torch = metadata.version("torch")
    pin = "9.9.9" if mismatched else torch.split("+")[0]
    # a torchvision whose import fails the way a build for another torch does, and a package importing it
    _package(tmp_path, "torchvision", "raise RuntimeError('operator torchvision::nms does not exist')\n",
             version="0.99.0", requires=f"Requires-Dist: torch=={pin}\nRequires-Dist: numpy\n")
    _package(tmp_path, "snapbench_t_clip", "import torchvision\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "torchvision", raising=False)
    msg = _import_error("snapbench_t_clip")
    assert msg.startswith("figures need the Python package 'x', which is installed but failed to import: "
                          "RuntimeError: operator torchvision::nms does not exist (torchvision 0.99.0 "), msg
    if mismatched:
        assert f"torchvision 0.99.0 requires torch==9.9.9, but torch {torch} is installed" in msg
    else:
        assert f"torchvision 0.99.0 is installed beside torch {torch}" in msg
    assert "pip install" not in msg


def test_the_docs_give_the_tested_torch_install_and_the_read_only_load_image():
    """README's tested torch install (scripts/test.sh's command) is the one docs/interop.md gives; the
    CPU wheel index is said to be the PyPI-on-Linux case.  load_image's array is read-only, and the docs
    where load_image is described say so with the copy idiom."""
    import re

    from snapbench.corruptions import load_image

    tested = re.search(r'pip install -q "(torch==[\d.]+)"', (REPO / "scripts" / "test.sh").read_text()).group(1)
    readme, interop = (REPO / "README.md").read_text(), (REPO / "docs" / "interop.md").read_text()
    assert f"pip install {tested}" in readme and f"`pip install {tested}`, what scripts/test.sh runs" in interop
    for text in (readme, interop):  # the index URL only with the case it applies to
        for m in re.finditer(r"--index-url https://download\.pytorch\.org/whl/cpu", text):
            assert "PyPI" in text[max(0, m.start() - 300):m.end() + 300]
    img = load_image(REPO / "snapbench" / "assets" / "demo" / "queries" / "astronaut.jpg")
    assert not img.flags.writeable
    for doc in ("interop.md", "corruptions.md"):
        text = (REPO / "docs" / doc).read_text()
        assert "read-only" in text and "torch.from_numpy(load_image(" in text and ".copy())" in text, doc


def test_an_open_clip_encoder_without_torch_names_the_openclip_extra(monkeypatch):
    """The torch check runs before the open_clip import: its hint must install what open_clip needs
    ([openclip], torch pinned), not the models extra, which holds no open_clip_torch."""
    from snapbench.core.errors import ConfigError
    from snapbench.models.adapters import HFEncoder, OpenClipEncoder

    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` fails as where it is not installed
    with pytest.raises(ConfigError, match="needs the Python package 'torch'") as caught:
        OpenClipEncoder("ViT-B-32")
    assert install_hint("openclip") in str(caught.value) and "[openclip]" in str(caught.value)
    with pytest.raises(ConfigError) as caught:
        HFEncoder("openai/clip-vit-base-patch32")
    assert install_hint("models") in str(caught.value)
