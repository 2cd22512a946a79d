"""ImageFolder and generic JSONL loaders, format detection, and export_jsonl round trips."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from data_fixtures import make_hf_imagefolder, make_snapbench_release, write_photo

from snapbench.core.errors import ConfigError, InputError, OutputError
from snapbench.corruptions import load_manifest
from snapbench.data import FORMATS, detect_format, load_dataset
from snapbench.data.common import read_gallery_manifest
from snapbench.data.qrels import load_qrels
from snapbench.store.jsonl import export_jsonl

DEMO = Path(__file__).resolve().parents[1] / "snapbench" / "assets" / "demo"


# ------------------------------------------------------------------ hf-imagefolder
def test_hf_imagefolder(tmp_path):
    root = make_hf_imagefolder(tmp_path / "hf")
    assert detect_format(root) == "hf-imagefolder"
    assert detect_format(root / "test" / "query" / "metadata.jsonl") == "hf-imagefolder"
    ds = load_dataset(root)
    assert ds.format == "hf-imagefolder"
    assert [q.id for q in ds.queries] == ["hf-bench_0000", "hf-bench_0001", "hf-bench_0002"]
    assert [g.id for g in ds.gallery] == ["hf-g_red", "hf-g_blue", "hf-g_rocket", "hf-g_cat"]
    assert [g.caption for g in ds.gallery] == ["red cup", 'blue cup, "large"', "a rocket", "a cat"]
    assert ds.gallery[2].image == root / "test" / "gallery" / "rocket.png"
    assert ds.queries[1].image == root / "test" / "query" / "q1.jpg"
    assert ds.queries[0].question == "what cup is this?" and ds.queries[0].entity == "cup"
    assert ds.queries[0].tags == {"domain": "product", "split": "test"}
    # gt entries by gallery id or by file name
    assert ds.qrels == {
        "hf-bench_0000": {"hf-g_red": 1.0},
        "hf-bench_0001": {"hf-g_rocket": 1.0, "hf-g_blue": 1.0},
        "hf-bench_0002": {},
    }
    assert ds.has_query_images and ds.has_gallery_images
    assert any("'hf-' prefix" in n for n in ds.notes)


def test_hf_ids_never_meet_json_ids(tmp_path):
    hf = load_dataset(make_hf_imagefolder(tmp_path / "hf"))
    js = load_dataset(make_snapbench_release(tmp_path / "rel"))
    assert not set(hf.query_ids) & set(js.query_ids)
    assert not set(hf.gallery_ids) & set(js.gallery_ids)
    assert hf.format != js.format


def test_hf_rows_with_json_gallery_objects(tmp_path):
    root = tmp_path / "hf2"
    rows = [
        {"file_name": "0000.jpg", "query_id": "bench_0000", "query_text": "what cup?",
         "gallery": {"gt": [{"local": "08805.jpg", "caption": "red cup"}], "hard_negative": [{"local": "08805.jpg", "caption": "cup"}]}},
        {"file_name": "0001.jpg", "query_id": "bench_0001", "query_text": "which one?",
         "gallery": json.dumps({"gt": [{"local": "08806.jpg", "caption": "blue cup"}], "hard_negative": []})},
    ]
    for i, r in enumerate(rows):
        write_photo(root / "query" / r["file_name"], i)
    (root / "query" / "metadata.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    ds = load_dataset(root, format="hf-imagefolder")
    # same id rule as snap_bench.json, prefixed: 08805 has two captions
    assert [(g.id, g.caption) for g in ds.gallery] == [("hf-08805#1", "red cup"), ("hf-08805#2", "cup"), ("hf-08806", "blue cup")]
    assert ds.gallery[0].image == root / "gallery" / "08805.jpg"
    assert ds.qrels == {"hf-bench_0000": {"hf-08805#1": 1.0}, "hf-bench_0001": {"hf-08806": 1.0}}
    assert not ds.has_gallery_images and ds.has_query_images


def test_hf_layout_errors(tmp_path):
    (tmp_path / "imgs").mkdir()
    write_photo(tmp_path / "imgs" / "a.jpg", 0)
    (tmp_path / "imgs" / "metadata.csv").write_text("file_name,label\na.jpg,cat\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"row 1 is neither a query nor a gallery row.*Found: imgs/metadata.csv \(1 rows, columns: file_name, label\)"):
        load_dataset(tmp_path)
    (tmp_path / "imgs" / "metadata.csv").write_text("file_name,caption\na.jpg,cat\n", encoding="utf-8")
    with pytest.raises(InputError, match="no query table"):
        load_dataset(tmp_path, format="hf-imagefolder")
    root = make_hf_imagefolder(tmp_path / "hf")
    meta = root / "test" / "query" / "metadata.jsonl"
    rows = [json.loads(x) for x in meta.read_text().splitlines()]
    rows[1]["gt"] = ["g_nothing"]
    meta.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(InputError, match=r"query/metadata.jsonl: row 2 \(id 'bench_0001'\): gt entry 'g_nothing' is not in the gallery"):
        load_dataset(root)
    rows[1]["gt"] = []
    del rows[2]["query_id"]
    meta.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(InputError, match=r"row 3: no query id"):
        load_dataset(root)


# ------------------------------------------------------------------ jsonl
def test_jsonl_demo_against_files():
    ds = load_dataset(DEMO / "queries.jsonl")
    assert detect_format(DEMO / "queries.jsonl") == "jsonl" and ds.format == "jsonl"
    qlines = [json.loads(x) for x in (DEMO / "queries.jsonl").read_text().splitlines() if x.strip()]
    glines = [json.loads(x) for x in (DEMO / "gallery.jsonl").read_text().splitlines() if x.strip()]
    qrels = json.loads((DEMO / "qrels.json").read_text())
    assert [q.id for q in ds.queries] == [x["id"] for x in qlines]
    assert [q.image.resolve() for q in ds.queries] == [(DEMO / x["image"]).resolve() for x in qlines]
    assert [(g.id, g.caption) for g in ds.gallery] == [(x["id"], x["caption"]) for x in glines]
    assert ds.qrels == {q: {g: 1.0 for g in v} for q, v in qrels.items()}
    assert ds.has_query_images and ds.has_gallery_images and ds.released is None


def test_jsonl_trec_qrels_and_errors(tmp_path):
    trec = tmp_path / "qrels.txt"
    trec.write_text("q_chelsea 0 g_chelsea_full 2\nq_chelsea 0 g_coffee_full 0\nq_coffee 0 g_coffee_full 1\n")
    ds = load_dataset(DEMO / "queries.jsonl", gallery=DEMO / "gallery.jsonl", qrels=trec)
    assert ds.qrels["q_chelsea"] == {"g_chelsea_full": 2.0}  # grade 0 is not a positive
    assert ds.qrels["q_coffee"] == {"g_coffee_full": 1.0}
    assert ds.qrels["q_astronaut"] == {}  # unjudged: zero-GT, noted
    assert any("have no judgements and are treated as zero-GT" in n for n in ds.notes)
    trec.write_text("q_chelsea 0 g_nope 1\n")
    with pytest.raises(InputError, match=r"qrels.txt: 1 gallery id\(s\) are not in the gallery: 'g_nope'"):
        load_dataset(DEMO / "queries.jsonl", gallery=DEMO / "gallery.jsonl", qrels=trec)
    trec.write_text("q_chelsea g_chelsea_full 1\n")
    with pytest.raises(InputError, match=r"qrels.txt: line 1: expected 'qid 0 docid rel'"):
        load_dataset(DEMO / "queries.jsonl", gallery=DEMO / "gallery.jsonl", qrels=trec)
    gal = tmp_path / "gallery.jsonl"
    gal.write_text('{"id": "a", "image": "a.jpg", "caption": "x"}\n{"id": "a", "caption": "y"}\n')
    with pytest.raises(InputError, match=r"gallery.jsonl: line 2: duplicate gallery id 'a'"):
        load_dataset(DEMO / "queries.jsonl", gallery=gal)
    man = tmp_path / "q.jsonl"
    man.write_text('{"id": "x", "question": "?"}\n{"question": "no id"}\n')
    with pytest.raises(InputError, match=r"q.jsonl: line 2: record has no id"):
        load_dataset(man, gallery=DEMO / "gallery.jsonl")
    alone = tmp_path / "alone" / "queries.jsonl"
    alone.parent.mkdir()
    alone.write_text('{"id": "x", "question": "?"}\n')
    with pytest.raises(InputError, match="queries.jsonl: no gallery: give one with gallery"):
        load_dataset(alone)


# ------------------------------------------------------------------ detection
def test_detect_and_force(tmp_path):
    with pytest.raises(InputError, match="dataset path not found"):
        detect_format(tmp_path / "missing")
    (tmp_path / "notes.txt").write_text("hi")
    with pytest.raises(InputError, match=r"cannot tell the dataset format of this folder \(found: notes.txt\)"):
        detect_format(tmp_path)
    with pytest.raises(ConfigError, match="unknown dataset format 'coco'"):
        load_dataset(DEMO, format="coco")
    assert FORMATS == ("snapbench-json", "hf-imagefolder", "photobench", "jsonl")
    assert detect_format(DEMO) == "jsonl"
    with pytest.raises(ConfigError, match="language does not apply to the jsonl format"):
        load_dataset(DEMO, language="cn")


# ------------------------------------------------------------------ export
def test_export_snapbench_json_round_trip(tmp_path):
    src = load_dataset(make_snapbench_release(tmp_path / "rel"))
    out = tmp_path / "out"
    written = export_jsonl(src, out)
    assert set(written) == {"queries", "gallery", "qrels", "released_texts"}
    back = load_dataset(out)
    assert back.query_ids == src.query_ids and back.gallery_ids == src.gallery_ids
    assert back.qrels == src.qrels
    assert [q.image.resolve() for q in back.queries] == [q.image.resolve() for q in src.queries]
    assert [(g.image.resolve(), g.caption) for g in back.gallery] == [(g.image.resolve(), g.caption) for g in src.gallery]
    assert [q.tags for q in back.queries] == [q.tags for q in src.queries]
    # the existing commands' readers accept the files
    assert [r.id for r in load_manifest(written["queries"])] == src.query_ids
    assert [g.id for g in read_gallery_manifest(written["gallery"])] == src.gallery_ids
    _labels, notes = load_qrels(written["qrels"], src.query_ids, src.gallery_ids)
    assert notes == []
    texts = [json.loads(x) for x in written["released_texts"].read_text().splitlines()]
    assert len(texts) == 5 * 8 and {"id": "bench_0004", "operator": "char_add", "question": "[char-add] what coins are these?"} in texts


def test_export_moved_folder_and_no_ground_truth(tmp_path):
    from data_fixtures import make_photobench_album

    src = load_dataset(make_photobench_album(tmp_path / "a"))
    written = export_jsonl(src, tmp_path / "a" / "pb")
    assert "qrels" not in written  # no ground truth, no qrels file
    lines = [json.loads(x) for x in written["gallery"].read_text().splitlines()]
    assert all("caption" not in x and x["image"].startswith("../album1/images/") for x in lines)
    # relative image paths survive moving the source and the export together
    shutil.move(str(tmp_path / "a"), str(tmp_path / "b"))
    pb = tmp_path / "b" / "pb"
    assert detect_format(pb / "queries.jsonl") == "jsonl"  # tags hold query_cn: still jsonl
    back = load_dataset(pb / "queries.jsonl", gallery=pb / "gallery.jsonl")
    assert back.has_gallery_images and back.gallery_ids == src.gallery_ids
    assert [q.question for q in back.queries] == [q.question for q in src.queries]
    with pytest.raises(OutputError, match="exists and is not a folder"):
        export_jsonl(src, pb / "queries.jsonl")
