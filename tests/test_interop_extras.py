"""The interop modules and the fast codecs, when their extra is missing, fail with a pip hint."""

import importlib
import re
import sys

import numpy as np
import pytest

from snapbench.core.errors import ImageLoadError
from snapbench.core.install_hint import install_hint
from snapbench.corruptions import load_image
from snapbench.corruptions.codecs import encode_image


@pytest.mark.parametrize(("module", "package", "extra"), [
    ("snapbench.interop.nlpaug", "nlpaug", "nlpaug"),
    ("snapbench.interop.torch", "torch", "torch"),
    ("snapbench.interop.albumentations", "albumentations", "albumentations"),
])
def test_interop_module_without_its_package(monkeypatch, hide_modules, module, package, extra):
    hide_modules(package, *(m for m in list(sys.modules) if m.startswith(package + ".")))
    monkeypatch.delitem(sys.modules, module, raising=False)
    with pytest.raises(ImportError, match=re.escape(install_hint(extra))):
        importlib.import_module(module)
    monkeypatch.delitem(sys.modules, module, raising=False)


def test_interop_package_itself_needs_nothing(monkeypatch, hide_modules):
    hide_modules("torch", "nlpaug", "albumentations")
    monkeypatch.delitem(sys.modules, "snapbench.interop", raising=False)
    importlib.import_module("snapbench.interop")


def test_fast_codecs_without_imagecodecs(hide_modules, tmp_path):
    pytest.importorskip("imagecodecs")
    img = np.random.default_rng(0).integers(0, 256, (8, 9, 3), dtype=np.uint8)
    path = tmp_path / "x.jxl"
    path.write_bytes(encode_image(img, "jxl"))
    hide_modules("imagecodecs")
    for fmt in ("qoi", "jxl", "webp"):
        with pytest.raises(ImportError, match=re.escape(install_hint("codecs"))):
            encode_image(img, fmt)
    with pytest.raises(ImageLoadError, match=r"x\.jxl: .*" + re.escape(install_hint("codecs"))):
        load_image(path)
    # png and npz need nothing extra
    for fmt in ("png", "npz"):
        p = tmp_path / f"y.{fmt}"
        p.write_bytes(encode_image(img, fmt))
        assert np.array_equal(load_image(p), img)


def test_corrupt_help_says_which_formats_need_the_codecs_extra(hide_modules):
    # the formats --help sends to 'snapbench[codecs]' are exactly those that fail without imagecodecs
    import re

    from typer.testing import CliRunner

    from snapbench.cli import app
    from snapbench.corruptions.codecs import FORMATS

    out = " ".join(CliRunner().invoke(app, ["corrupt", "--help"], terminal_width=200).output.split())
    extra = re.search(r"([\w, ]+): " + re.escape(install_hint("codecs")), out)
    free = re.search(r"([\w, ]+): nothing extra", out)
    assert extra and free, out
    assert [f.strip() for f in extra.group(1).split(",")] == ["qoi", "jxl", "webp"]
    assert [f.strip() for f in free.group(1).split(",")] == ["png", "npz"]
    hide_modules("imagecodecs")
    img = np.zeros((4, 5, 3), np.uint8)
    failing = []
    for fmt in FORMATS:
        try:
            encode_image(img, fmt)
        except ImportError:
            failing.append(fmt)
    assert failing == ["qoi", "jxl", "webp"]
