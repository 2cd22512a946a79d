"""Every consumer of a corrupt run's manifest.jsonl reads it through one reader (snapbench.store):
a last line cut by a kill is dropped the same way by encode, by the corrupt resume and by layout."""

from __future__ import annotations

import json

from snapbench.app.corrupt import run_corruption
from snapbench.app.encode import encode_corrupted
from snapbench.core.defaults import DEFAULT_DATA
from snapbench.models import get_encoder
from snapbench.store.jsonl import read_manifest


def test_a_cut_last_line_is_dropped_by_every_consumer(tmp_path):
    out = tmp_path / "c"
    run_corruption(DEFAULT_DATA / "queries.jsonl", out, conditions=["txt/char_swap"], progress=False)
    full = (out / "manifest.jsonl").read_text()
    lines = full.splitlines()
    cut = "\n".join(lines[:-1]) + "\n" + lines[-1][: len(lines[-1]) // 2]  # a kill mid-append
    (out / "manifest.jsonl").write_text(cut)
    assert len(read_manifest(out)) == len(lines) - 1
    # encode: the query whose line was cut has no output under that condition -> dropped, not an error
    last = json.loads(lines[-1])
    summary = encode_corrupted(out, DEFAULT_DATA / "gallery.jsonl", get_encoder("toy"), tmp_path / "e")
    assert last["id"] in summary.dropped_queries
    # the corrupt resume redoes exactly that output and ends with the uninterrupted manifest
    res = run_corruption(DEFAULT_DATA / "queries.jsonl", out, conditions=["txt/char_swap"], progress=False)
    assert res.written == 1
    assert sorted((out / "manifest.jsonl").read_text().splitlines()) == sorted(lines)


def test_a_variant_path_is_a_file_of_its_condition_folder(tmp_path):
    from snapbench.store import CorruptDir

    d = CorruptDir(tmp_path / "c")
    rel = d.image_relpath("img/motion_blur/s2", "q1", ".png")
    assert rel == "images/img__motion_blur__s2/q1.png"  # the layout documented in snapbench.store
    assert (d.root / rel).parent == d.image_dir("img/motion_blur/s2")
