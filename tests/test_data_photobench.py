"""PhotoBench album loader, ground-truth file, and FAISS gallery indexes as embeddings."""

from __future__ import annotations

import json

import numpy as np
import pytest
from data_fixtures import PHOTOBENCH_FILES, PHOTOBENCH_QUERIES, make_photobench_album

from snapbench.core.errors import ConfigError, InputError
from snapbench.data import (
    detect_format,
    load_dataset,
    load_faiss_embeddings,
    photobench_albums,
)

faiss = pytest.importorskip("faiss")


@pytest.fixture()
def album(tmp_path):
    return make_photobench_album(tmp_path)


def _gt(tmp_path, obj):
    p = tmp_path / "gt.json"
    p.write_text(json.dumps(obj, ensure_ascii=False), encoding="utf-8")
    return p


def test_album_without_ground_truth(album):
    assert detect_format(album) == "photobench"
    assert detect_format(album / "query.json") == "photobench"
    ds = load_dataset(album)
    assert ds.format == "photobench" and ds.name == "photobench-album1"
    assert [q.id for q in ds.queries] == ["album1_q0000", "album1_q0001", "album1_q0002", "album1_q0003"]
    assert [q.question for q in ds.queries] == [r["query_en"] for r in PHOTOBENCH_QUERIES]
    assert all(q.image is None for q in ds.queries)
    assert [q.tags["source"] for q in ds.queries] == ["VM", "F", "VMF", "V"]
    assert ds.queries[2].tags["time"] == "fact" and ds.queries[2].tags["person"] is None
    assert ds.queries[1].tags["person"] == "cognitive"
    assert ds.queries[0].tags["query_cn"] == "海边的日落"
    assert [g.id for g in ds.gallery] == sorted(PHOTOBENCH_FILES)
    assert all(g.image == album / "images" / g.id and g.caption is None for g in ds.gallery)
    assert ds.qrels == {} and not ds.has_ground_truth
    assert ds.has_gallery_images and not ds.has_query_images
    assert ds.available_paths == ("TI",) and ds.runnable_modes == ()
    assert any("no ground truth" in n for n in ds.notes)
    assert any("image query modes (I→I, IT→IT, I→IT)" in n and "not applicable" in n for n in ds.notes)


def test_chinese_and_ground_truth_keys(tmp_path, album):
    gt = _gt(tmp_path, {
        "0": ["IMG_0001.jpg", "IMG_0003.jpg"],                      # 0-based index
        "photo of me with my mother": ["IMG_0002.png"],             # English text
        "album1_q0002": [],                                         # query id; zero-GT
        "咖啡收据": ["images/IMG_0010.jpg"],                         # Chinese text, path-like name
    })
    ds = load_dataset(album, qrels=gt, language="cn")
    assert [q.question for q in ds.queries] == [r["query_cn"] for r in PHOTOBENCH_QUERIES]
    assert ds.qrels == {
        "album1_q0000": {"IMG_0001.jpg": 1.0, "IMG_0003.jpg": 1.0},
        "album1_q0001": {"IMG_0002.png": 1.0},
        "album1_q0002": {},
        "album1_q0003": {"IMG_0010.jpg": 1.0},
    }
    assert ds.has_ground_truth
    assert any("1 zero-GT" in n for n in ds.notes)
    # a list aligned with query.json gives the same
    lst = _gt(tmp_path, [["IMG_0001.jpg", "IMG_0003.jpg"], ["IMG_0002.png"], [], ["IMG_0010.jpg"]])
    assert load_dataset(album, qrels=lst).qrels == ds.qrels


@pytest.mark.parametrize(
    "obj, pattern",
    [
        ({"0": ["IMG_9999.jpg"], "1": [], "2": [], "3": []}, r"query #0 \(album1_q0000\): 1 file name\(s\) not in the album: 'IMG_9999.jpg'"),
        ({"0": [], "1": []}, r"2 query\(ies\) have no entry \(use an empty list for a zero-GT query\): 'album1_q0002', 'album1_q0003'"),
        ({"0": [], "1": [], "2": [], "3": [], "a cat": []}, r"key 'a cat' is neither a query index"),
        ({"0": [], "album1_q0000": [], "2": [], "3": []}, r"query #0 \(album1_q0000\) is given twice"),
        ([[], []], r"one entry per query \(4\), got 2"),
        ({"0": "IMG_0001.jpg", "1": [], "2": [], "3": []}, r"query #0 \(album1_q0000\): expected a list of file names"),
    ],
)
def test_ground_truth_errors(tmp_path, album, obj, pattern):
    gt = _gt(tmp_path, obj)
    with pytest.raises(InputError, match=pattern) as exc:
        load_dataset(album, qrels=gt)
    assert str(exc.value).startswith(str(gt))


def test_album_errors(tmp_path, album):
    make_photobench_album(tmp_path, "album2")
    assert [a.name for a in photobench_albums(tmp_path)] == ["album1", "album2"]
    with pytest.raises(InputError, match=r"holds 2 PhotoBench albums \(album1, album2\).*one album folder at a time"):
        load_dataset(tmp_path)
    bad = [dict(r) for r in PHOTOBENCH_QUERIES]
    bad[2]["Source"] = "VX"
    (album / "query.json").write_text(json.dumps(bad), encoding="utf-8")
    with pytest.raises(InputError, match=r"query.json: query #2 \(0-based\): 'Source' must be one of V, M, F"):
        load_dataset(album)
    bad[2]["Source"] = "VM"
    del bad[1]["query_en"]
    (album / "query.json").write_text(json.dumps(bad), encoding="utf-8")
    with pytest.raises(InputError, match=r"query #1 \(0-based\): missing or empty 'query_en'"):
        load_dataset(album)
    assert load_dataset(album, language="cn").queries[1].question == "我和妈妈的合照"
    with pytest.raises(ConfigError, match="images does not apply to the photobench format"):
        load_dataset(album, images=tmp_path)


def test_photos_absent_gallery_from_metadata(album):
    for f in PHOTOBENCH_FILES:
        (album / "images" / f).unlink()
    ds = load_dataset(album)
    assert [g.id for g in ds.gallery] == sorted(PHOTOBENCH_FILES)  # names from metadata.json
    assert not ds.has_gallery_images and ds.available_paths == ()
    assert "gallery images: 5 of 5 absent" in ds.notes


def test_captions_file(tmp_path, album):
    caps = {f: f"caption of {f}" for f in PHOTOBENCH_FILES}
    p = _gt(tmp_path, caps)
    ds = load_dataset(album, gallery=p)
    assert {g.id: g.caption for g in ds.gallery} == caps
    assert ds.available_paths == ("TT", "TI") and ds.runnable_modes == ("T→T", "T→IT")


def _write_index(folder, index, names):
    folder.mkdir(parents=True, exist_ok=True)
    faiss.write_index(index, str(folder / "index.faiss"))
    (folder / "metadata.json").write_text(json.dumps({"model_name": "tiny", "filenames": names}), encoding="utf-8")


def test_faiss_flat_index(album):
    rng = np.random.default_rng(0)
    vecs = rng.standard_normal((5, 8)).astype(np.float32)
    index = faiss.IndexFlatIP(8)
    index.add(vecs)
    folder = album / "images" / "embeddings" / "tiny"
    _write_index(folder, index, list(PHOTOBENCH_FILES))
    ids, arr = load_faiss_embeddings(folder)
    assert ids == list(PHOTOBENCH_FILES)
    assert arr.dtype == np.float32 and np.array_equal(arr, vecs)
    # the ids are the album's gallery ids
    assert set(ids) == set(load_dataset(album).gallery_ids)


def test_faiss_ivf_index(tmp_path):
    rng = np.random.default_rng(1)
    vecs = rng.standard_normal((64, 4)).astype(np.float32)
    quant = faiss.IndexFlatL2(4)
    index = faiss.IndexIVFFlat(quant, 4, 2)
    index.train(vecs)
    index.add(vecs)
    names = [f"p{i}.jpg" for i in range(64)]
    _write_index(tmp_path / "ivf", index, names)
    ids, arr = load_faiss_embeddings(tmp_path / "ivf")
    assert ids == names and np.array_equal(arr, vecs)


def test_faiss_errors(tmp_path):
    index = faiss.IndexFlatL2(3)
    index.add(np.zeros((2, 3), np.float32))
    _write_index(tmp_path / "a", index, ["x.jpg", "y.jpg", "z.jpg"])
    with pytest.raises(InputError, match="holds 2 vectors but metadata.json lists 3 file names"):
        load_faiss_embeddings(tmp_path / "a")
    _write_index(tmp_path / "b", index, ["x.jpg", "x.jpg"])
    with pytest.raises(InputError, match="duplicate file names: 'x.jpg'"):
        load_faiss_embeddings(tmp_path / "b")
    (tmp_path / "c").mkdir()
    with pytest.raises(InputError, match="no index.faiss"):
        load_faiss_embeddings(tmp_path / "c")
    (tmp_path / "a" / "index.faiss").write_bytes(b"not an index")
    with pytest.raises(InputError, match="cannot read the FAISS index"):
        load_faiss_embeddings(tmp_path / "a")
