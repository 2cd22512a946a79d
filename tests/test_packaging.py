"""The demo data ships inside the package (found through importlib.resources, not the repository)."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import snapbench
from snapbench.core.defaults import DEFAULT_DATA
from snapbench.corruptions import load_manifest


def test_demo_data_is_package_data() -> None:
    demo = resources.files("snapbench").joinpath("assets", "demo")
    for name in ("queries.jsonl", "gallery.jsonl", "qrels.json", "LICENSE.md"):
        assert demo.joinpath(name).is_file(), name
    package_dir = Path(snapbench.__file__).resolve().parent
    assert Path(str(demo)).resolve() == DEFAULT_DATA.resolve()
    assert DEFAULT_DATA.resolve().is_relative_to(package_dir)  # not <repo>/assets/demo
    records = load_manifest(DEFAULT_DATA / "queries.jsonl", on_warning=lambda m: (_ for _ in ()).throw(AssertionError(m)))
    assert len(records) == 12 and all(r.image is not None and r.image.is_file() for r in records)
    gallery = [json.loads(line) for line in demo.joinpath("gallery.jsonl").read_text().splitlines()]
    assert gallery and all(demo.joinpath(g["image"]).is_file() for g in gallery)
