"""Each optional dependency, when missing, fails with a 'pip install snapbench[x]' hint."""

import importlib
import re
import sys

import numpy as np
import pytest

from snapbench.core.install_hint import install_hint
from snapbench.fusion import MetaFusion, MOORIndex, PathScores
from snapbench.store.arrays import load_matrix


def test_ann_without_faiss(hide_modules):
    rng = np.random.default_rng(0)
    index = MOORIndex().fit(rng.normal(size=(20, 4)), rng.normal(size=(20, 4)))
    hide_modules("faiss")
    with pytest.raises(ImportError, match=re.escape(install_hint("ann"))):
        index.build_ann()


def test_safetensors_without_the_package(hide_modules, tmp_path):
    f = tmp_path / "emb.safetensors"
    f.write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{}      ")
    hide_modules("safetensors", "safetensors.numpy")
    with pytest.raises(ImportError, match=re.escape(install_hint("safetensors"))):
        load_matrix(f, "g_image")


def test_learned_without_sklearn(hide_modules):
    rng = np.random.default_rng(0)
    paths = PathScores(*(rng.normal(size=(4, 6)) for _ in range(4)))
    hide_modules("sklearn")
    with pytest.raises(ImportError, match=re.escape(install_hint("learned"))):
        MetaFusion("lr").fit(paths, np.eye(4, 6), ["a", "b", "c", "d"])


def test_albumentations_without_the_package(monkeypatch, hide_modules):
    hide_modules("albumentations")
    monkeypatch.delitem(sys.modules, "snapbench.interop.albumentations", raising=False)
    with pytest.raises(ImportError, match=re.escape(install_hint("albumentations"))):
        importlib.import_module("snapbench.interop.albumentations")
    monkeypatch.delitem(sys.modules, "snapbench.interop.albumentations", raising=False)


def test_an_extra_that_is_installed_but_fails_to_import_says_why(monkeypatch, tmp_path):
    """A package that is there but cannot be imported because a dependency is missing: the message says
    it is installed, gives the import error, and the install command (which adds what the extra requires)."""
    from snapbench.core.install_hint import import_extra

    (tmp_path / "snapbench_broken_pkg.py").write_text("import snapbench_no_such_dependency\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ImportError) as info:
        import_extra("snapbench_broken_pkg", "report", "figures need it")
    assert str(info.value) == ("figures need it, which is installed but failed to import: No module named "
                               f"'snapbench_no_such_dependency' (the extra installs what it requires: "
                               f"{install_hint('report')})")
