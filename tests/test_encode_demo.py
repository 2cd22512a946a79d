import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from snapbench.app.corrupt import run_corruption
from snapbench.app.encode import encode_corrupted
from snapbench.core.errors import ConfigError
from snapbench.corruptions import load_image
from snapbench.data.common import read_gallery_manifest
from snapbench.models import get_encoder

DEMO = Path(__file__).resolve().parents[1] / "snapbench" / "assets" / "demo"


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("enc")
    qs = [json.loads(line) for line in (DEMO / "queries.jsonl").read_text().splitlines()][:3]
    for q in qs:
        q["image"] = str(DEMO / q["image"])
    qs[2]["entity"] = "zebra"  # not in its question: skipped under text conditions
    (tmp / "q.jsonl").write_text("".join(json.dumps(q) + "\n" for q in qs))
    conds = ["img/cropping/s3", "txt/char_swap"]
    run_corruption(tmp / "q.jsonl", tmp / "c", conditions=conds, progress=False)
    return tmp, conds


def test_encode_writes_paired_embeddings_and_the_four_cosines(small_run):
    tmp, conds = small_run
    enc = get_encoder("toy")
    s = encode_corrupted(tmp / "c", DEMO / "gallery.jsonl", enc, tmp / "e")
    # the query whose entity is missing has no text output, so it is dropped everywhere (stay paired)
    assert list(s.dropped_queries) == ["q_coffee"]
    qids = (tmp / "e" / "query_ids.txt").read_text().split()
    assert qids == ["q_astronaut", "q_chelsea"]
    gallery = read_gallery_manifest(DEMO / "gallery.jsonl")
    assert (tmp / "e" / "paths" / "gallery_ids.txt").read_text().split() == [g.id for g in gallery]

    # second code path: encode the written variant files and questions directly
    man = [json.loads(x) for x in (tmp / "c" / "manifest.jsonl").read_text().splitlines()]
    row = {(m["id"], m["condition"]): m for m in man}
    g_img = enc.encode_images([load_image(g.image) for g in gallery])
    g_txt = enc.encode_texts([g.caption for g in gallery])
    for cond, stem in [("clean", "clean"), ("img/cropping/s3", "img__cropping__s3"), ("txt/char_swap", "txt__char_swap")]:
        rows = [row[(q, cond)] for q in qids]
        q_img = enc.encode_images([load_image(tmp / "c" / r["path"]) for r in rows])
        q_txt = enc.encode_texts([r["question"] for r in rows])
        np.testing.assert_allclose(np.load(tmp / "e" / "embeddings" / f"{stem}.image.npy"), q_img, atol=1e-6)

        def cos(a, b):
            a = a / np.linalg.norm(a, axis=1, keepdims=True)
            b = b / np.linalg.norm(b, axis=1, keepdims=True)
            return a @ b.T

        expect = {"II": cos(q_img, g_img), "TT": cos(q_txt, g_txt), "IT": cos(q_img, g_txt), "TI": cos(q_txt, g_img)}
        for p, m in expect.items():
            np.testing.assert_allclose(np.load(tmp / "e" / "paths" / f"{stem}.{p}.npy"), m, atol=1e-5)
    # text condition shares the clean image embedding; image condition the clean question
    clean_i = np.load(tmp / "e" / "embeddings" / "clean.image.npy")
    assert np.array_equal(np.load(tmp / "e" / "embeddings" / "txt__char_swap.image.npy"), clean_i)
    assert not np.array_equal(np.load(tmp / "e" / "embeddings" / "img__cropping__s3.image.npy"), clean_i)


def test_gallery_manifest_errors_name_the_file_and_line(tmp_path):
    p = tmp_path / "g.jsonl"
    p.write_text('{"id": "a", "image": "a.jpg", "caption": "x"}\n{"id": "a", "image": "b.jpg", "caption": "y"}\n')
    with pytest.raises(ValueError, match=r"g.jsonl: line 2: duplicate gallery id 'a'"):
        read_gallery_manifest(p)
    p.write_text('{"id": "a", "image": "a.jpg"}\n')
    assert read_gallery_manifest(p)[0].caption is None  # a gallery without captions: image paths only
    with pytest.raises(ValueError, match="no manifest.jsonl"):
        encode_corrupted(tmp_path, p, get_encoder("toy"), tmp_path / "o")


@pytest.mark.slow
def test_demo_command_runs_end_to_end(tmp_path):
    r = subprocess.run([sys.executable, "-m", "snapbench.cli", "demo", "--out", str(tmp_path / "d"), "--resamples", "200"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    for name in ("I2I", "T2T", "IT2IT", "I2IT", "T2IT", "MOOR", "fusion/comb_sum", "fusion/rrf"):
        rep = json.loads((tmp_path / "d" / name / "report.json").read_text())
        assert len(rep["conditions"]) == 72 and rep["n_excluded_zero_gt"] == 1
        assert set(rep["additivity"]) == {c for c in rep["conditions"] if c.startswith("joint/")}
    assert "MOOR" in r.stdout and f"report: {tmp_path / 'd' / 'report.html'}" in r.stdout


def test_encode_takes_e_for_the_encoder_as_run_does(tmp_path):
    from typer.testing import CliRunner

    from snapbench.cli import app

    r = CliRunner().invoke(app, ["encode", str(tmp_path / "nowhere"), "--gallery", str(tmp_path / "g.jsonl"),
                                 "--out", str(tmp_path / "o"), "-e", "toy"])
    assert "No such option" not in r.output
    assert r.exit_code == 2 and r.output.startswith("error:"), r.output  # the missing corrupt folder, not the flag


class _Hist:
    """Trial 3's user encoder: 24-dimensional images and texts, under a fingerprint another model used."""

    name, fingerprint, modalities, dim = "my-hist", "my-hist-v1", frozenset({"image", "text"}), 24

    def encode_images(self, images):
        return np.stack([np.concatenate([np.histogram(im[..., c], bins=8, range=(0, 256))[0] for c in range(3)])
                         for im in images]).astype(np.float32) + 1

    def encode_texts(self, texts):
        return np.stack([np.bincount([len(w) % self.dim for w in t.split()] or [0], minlength=self.dim)
                         for t in texts]).astype(np.float32) + 0.01


class _Foreign(_Hist):
    name, dim = "someone-else", 32


def _files(folder: Path) -> dict[str, int]:
    """Every path under ``folder``, with a file's modification time (a folder's changes with its listing)."""
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns if p.is_file() else None
            for p in folder.rglob("*")} if folder.exists() else {}


def test_a_foreign_cache_entry_fails_the_encode_leaving_the_entry_and_the_output_as_they_were(small_run, tmp_path):
    """Trial 3: a cache entry holding another model's 32-dimensional texts under the same fingerprint was found
    only at the gallery texts, after the gallery images had been written into it; the failed encode left a
    half-written output folder (dropped_queries.json, paths/query_ids.txt...)."""
    from snapbench.app.encode import prepare_out_dir
    from snapbench.store.cache import CachedEncoder

    tmp, _ = small_run
    cache = tmp_path / "cache"
    # the other model encoded the same gallery's captions (only a hit shows the entry's dimension)
    CachedEncoder(_Foreign(), cache).encode_texts([g.caption for g in read_gallery_manifest(DEMO / "gallery.jsonl")
                                                   if g.caption is not None])
    entry = _files(cache)
    assert any(k.startswith(next(iter(entry)).split("/")[0] + "/text/") for k in entry)
    prepared = tmp_path / "prepared"
    prepare_out_dir(prepared)  # as the CLI does before the model is loaded: the folder exists, holding no file
    held = tmp_path / "held"
    (held / "paths").mkdir(parents=True)
    (held / "paths" / "earlier.txt").write_text("an earlier call's file\n")
    for out in (tmp_path / "fresh", prepared, held):
        was = _files(out)
        with pytest.raises(ConfigError, match="holds text embeddings of dimension 32 but encoder 'my-hist' returns 24"):
            encode_corrupted(tmp / "c", DEMO / "gallery.jsonl", CachedEncoder(_Hist(), cache), out)
        assert _files(cache) == entry  # no image embeddings of this model next to the other's texts
        if out is held:
            assert (held / "paths" / "earlier.txt").is_file()  # a folder given with content is kept
        else:
            assert _files(out) == was, sorted(set(_files(out)) - set(was))
