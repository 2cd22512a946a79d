"""Each optional dependency, when missing, fails with a 'pip install snapbench[x]' hint."""

import importlib
import re
import sys

import numpy as np
import pytest

from snapbench.core.install_hint import install_hint
from snapbench.fusion import MetaFusion, MOORIndex, PathScores
from snapbench.store.arrays import load_matrix


def _hide(monkeypatch, *names):
    for name in names:
        monkeypatch.setitem(sys.modules, name, None)  # makes `import name` raise ImportError


def test_ann_without_faiss(monkeypatch):
    rng = np.random.default_rng(0)
    index = MOORIndex().fit(rng.normal(size=(20, 4)), rng.normal(size=(20, 4)))
    _hide(monkeypatch, "faiss")
    with pytest.raises(ImportError, match=re.escape(install_hint("ann"))):
        index.build_ann()


def test_safetensors_without_the_package(monkeypatch, tmp_path):
    f = tmp_path / "emb.safetensors"
    f.write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{}      ")
    _hide(monkeypatch, "safetensors", "safetensors.numpy")
    with pytest.raises(ImportError, match=re.escape(install_hint("safetensors"))):
        load_matrix(f, "g_image")


def test_learned_without_sklearn(monkeypatch):
    rng = np.random.default_rng(0)
    paths = PathScores(*(rng.normal(size=(4, 6)) for _ in range(4)))
    _hide(monkeypatch, "sklearn")
    with pytest.raises(ImportError, match=re.escape(install_hint("learned"))):
        MetaFusion("lr").fit(paths, np.eye(4, 6), ["a", "b", "c", "d"])


def test_albumentations_without_the_package(monkeypatch):
    _hide(monkeypatch, "albumentations")
    monkeypatch.delitem(sys.modules, "snapbench.interop.albumentations", raising=False)
    with pytest.raises(ImportError, match=re.escape(install_hint("albumentations"))):
        importlib.import_module("snapbench.interop.albumentations")
    monkeypatch.delitem(sys.modules, "snapbench.interop.albumentations", raising=False)
