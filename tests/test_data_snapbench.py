"""snap_bench.json loader: gallery dedup and ids, qrels, released variants, absent images, errors."""

from __future__ import annotations

import json
import shutil

import pytest
from data_fixtures import GALLERY_FILES, make_snapbench_release, snapbench_records

from snapbench.core.errors import ConfigError, InputError
from snapbench.data import detect_format, load_dataset

# Hand-derived from snapbench_records(): unique (local, caption) in first appearance order (records
# in file order, gt before hard_negative); stem when unique, else stem#k in appearance order.
EXPECTED_GALLERY = [
    ("08805#1", "08805.jpg", "red cup"),
    ("08806", "08806.jpg", "blue cup"),
    ("08807", "08807.jpg", "green cup"),
    ("01000#1", "01000.png", "a rocket"),
    ("08805#2", "08805.jpg", "a crimson mug"),
    ("02000", "02000.webp", "a cat"),
    ("01000#2", "01000.jpg", "a rocket on pad"),
    ("03000", "03000.jpeg", "coins"),
]
EXPECTED_QRELS = {
    "bench_0000": {"08805#1": 1.0},
    "bench_0001": {"08806": 1.0, "01000#1": 1.0},
    "bench_0002": {"08805#2": 1.0},
    "bench_0003": {},
    "bench_0004": {"03000": 1.0},
}


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    root = tmp_path_factory.mktemp("release")
    make_snapbench_release(root)
    return root


def test_detect(release):
    js = release / "benchmark" / "snap_bench.json"
    assert detect_format(js) == "snapbench-json"
    assert detect_format(release) == "snapbench-json"
    assert detect_format(release / "benchmark") == "snapbench-json"


def test_gallery_and_qrels(release):
    ds = load_dataset(release / "benchmark" / "snap_bench.json")
    assert ds.format == "snapbench-json"
    got = [(g.id, g.image.name, g.caption) for g in ds.gallery]
    assert got == EXPECTED_GALLERY
    assert all(g.image == release / "bench_images" / "gallery" / g.image.name for g in ds.gallery)
    assert ds.qrels == EXPECTED_QRELS
    # hard negatives are gallery items without a judgement
    assert "08807" in ds.gallery_ids and all("08807" not in v for v in ds.qrels.values())
    assert ds.has_query_images and ds.has_gallery_images
    assert ds.runnable_modes == ("I→I", "T→T", "IT→IT", "I→IT", "T→IT")
    assert any("1 zero-GT" in n and "bench_0003" in n for n in ds.notes)


def test_queries_and_unknown_field(release):
    ds = load_dataset(release)  # the release root folder works too
    recs = snapbench_records()
    assert [q.id for q in ds.queries] == [r["query_id"] for r in recs]
    for q, r in zip(ds.queries, recs):
        assert q.question == r["query_text"] and q.entity == r["query_entity"]
        assert q.image == release / "bench_images" / "query" / r["query_image_local"]
        assert q.image.is_file()
    assert ds.queries[0].tags == {"domain": "product"}
    # the misspelt 'domian' is kept as a tag and reported with a suggestion, not an error
    assert ds.queries[4].tags == {"domian": "product"}
    note = next(n for n in ds.notes if "'domian'" in n)
    assert "did you mean 'domain'" in note and "bench_0004" in note


def test_released_texts(release):
    ds = load_dataset(release)
    texts = ds.released.texts
    ops8 = {"char_add", "char_delete", "char_change", "char_swap", "word_repeat", "word_swap", "sent_add", "sent_replace"}
    assert set(texts) == {f"bench_000{i}" for i in range(5)}
    for ops in texts.values():
        assert set(ops) == ops8
    # the variant spellings of bench_0004 map to snapbench's names, carrying their own text
    assert texts["bench_0004"]["char_add"] == "[char-add] what coins are these?"
    assert texts["bench_0004"]["char_delete"] == "[character_deletion] what coins are these?"
    assert texts["bench_0004"]["sent_add"] == "[sentence_addition] what coins are these?"
    assert texts["bench_0000"]["word_swap"] == "[word_swap] what cup is this?"
    assert any("'emoji_add'" in n and "skipped" in n for n in ds.notes)


def test_released_images_sev_mapping(release):
    ds = load_dataset(release)
    p = release / "bench_images" / "perturbed"
    assert ds.released.images == {
        "bench_0000": {("motion_blur", 1): p / "motion_blur" / "sev1" / "bench_0000.jpg",
                       ("motion_blur", 3): p / "motion_blur" / "sev5" / "bench_0000.jpg"},
        "bench_0001": {("rotation", 2): p / "rotation" / "sev3" / "bench_0001.jpg"},
    }
    # 5 records x 2 operators x 3 severities listed, 3 present
    assert "released image variants: 3 of 30 listed files present" in ds.notes


def test_json_without_images(tmp_path):
    js = make_snapbench_release(tmp_path, with_images=False)
    ds = load_dataset(js)
    assert not ds.has_query_images and not ds.has_gallery_images
    assert all(q.image is None for q in ds.queries) and all(g.image is None for g in ds.gallery)
    assert ds.released.images == {} and set(ds.released.texts) == {q.id for q in ds.queries}
    assert ds.qrels == EXPECTED_QRELS  # ground truth does not need the pixels
    assert ds.runnable_modes == ("T→T",)
    assert any("no 'bench_images' folder" in n and "give their folder with --images" in n for n in ds.notes)
    assert any(n.startswith("retrieval modes that can run: T→T") for n in ds.notes)


def test_images_elsewhere(tmp_path, release):
    js = tmp_path / "only" / "snap_bench.json"
    js.parent.mkdir()
    shutil.copy(release / "benchmark" / "snap_bench.json", js)
    ds = load_dataset(js, images=release / "bench_images")
    assert ds.has_query_images and ds.has_gallery_images
    assert ds.gallery[0].image == release / "bench_images" / "gallery" / "08805.jpg"
    assert set(ds.released.images) == {"bench_0000", "bench_0001"}
    # the folder above bench_images is accepted too
    assert load_dataset(js, images=release).has_gallery_images
    with pytest.raises(InputError, match="image folder not found"):
        load_dataset(js, images=tmp_path / "nope")
    with pytest.raises(InputError, match="'bench_images' folder with 'query/' and 'gallery/'"):
        load_dataset(js, images=tmp_path / "only")
    with pytest.raises(ConfigError, match="images does not apply to the jsonl format"):
        load_dataset(js, images=release, format="jsonl")


def test_some_gallery_images_absent(tmp_path):
    make_snapbench_release(tmp_path)
    (tmp_path / "bench_images" / "gallery" / GALLERY_FILES[2]).unlink()
    ds = load_dataset(tmp_path)
    assert ds.has_query_images and not ds.has_gallery_images
    note = next(n for n in ds.notes if n.startswith("gallery images: 1 of 8 absent"))
    assert "a run of a mode that compares gallery images refuses it" in note and "--modes T2T" in note
    # query image + captions still give I->IT's IT path, but no mode without II/TI
    assert ds.available_paths == ("TT", "IT")
    assert ds.runnable_modes == ("T→T",)


def _broken(tmp_path, mutate):
    recs = snapbench_records()
    mutate(recs)
    js = tmp_path / "snap_bench.json"
    js.write_text(json.dumps(recs), encoding="utf-8")
    return js


@pytest.mark.parametrize(
    "mutate, pattern",
    [
        (lambda r: r[1].pop("query_text"), r"record #2 \(query_id 'bench_0001'\): missing 'query_text'"),
        (lambda r: r[2].update(query_id="bench_0000"), r"record #3: duplicate query_id 'bench_0000' \(first at record #1\)"),
        (lambda r: r[3]["gallery"]["hard_negative"].append({"caption": "x"}),
         r"record #4 \(query_id 'bench_0003'\): 'gallery.hard_negative\[2\]' must be an object with a 'local'"),
        (lambda r: r[0].update(gallery=["08805.jpg"]), r"record #1 \(query_id 'bench_0000'\): 'gallery' must be an object"),
        (lambda r: r[4]["text_perturbations"].update(char_swap={"changed": True}),
         r"record #5 \(query_id 'bench_0004'\): 'text_perturbations.char_swap' must be an object with a 'perturbed_text'"),
        (lambda r: r[0]["image_perturbations"]["rotation"].update(sev3=3),
         r"record #1 \(query_id 'bench_0000'\): 'image_perturbations.rotation.sev3' must be a path string"),
        (lambda r: r.__setitem__(1, "bench_0001"), r"record #2: a query record must be a JSON object, got str"),
        (lambda r: r[0].update(query_id="a/b"), r"record #1: query_id 'a/b' cannot be used as a file name"),
    ],
)
def test_errors_name_file_record_problem(tmp_path, mutate, pattern):
    js = _broken(tmp_path, mutate)
    with pytest.raises(InputError, match=pattern) as exc:
        load_dataset(js, format="snapbench-json")
    assert str(exc.value).startswith(str(js))


def test_bad_json(tmp_path):
    js = tmp_path / "snap_bench.json"
    js.write_text('[{"query_id": "bench_0000",\n "query_text": }]', encoding="utf-8")
    with pytest.raises(InputError, match=r"snap_bench.json: not valid JSON: .* at line 2"):
        load_dataset(js, format="snapbench-json")
    js.write_text('{"queries": []}', encoding="utf-8")
    with pytest.raises(InputError, match="expected a JSON list of query records, got a JSON dict"):
        load_dataset(js, format="snapbench-json")


def test_some_query_images_absent_one_rule_with_the_run(tmp_path):
    """One missing query image: the dataset's notes and the run's plan name the same modes (the image
    modes run on the other queries; that query is left out of every mode)."""
    from snapbench.app.stages import RunOptions
    from snapbench.app.stages.plan import plan_run
    from snapbench.core.targets import MODE_LABELS
    from snapbench.models import get_encoder

    make_snapbench_release(tmp_path)
    (tmp_path / "bench_images" / "query" / "0002.jpg").unlink()
    ds = load_dataset(tmp_path)
    assert not ds.has_query_images  # not every query has its image ...
    assert ds.runnable_modes == ("I→I", "T→T", "IT→IT", "I→IT", "T→IT")  # ... but the image modes run
    note = next(n for n in ds.notes if n.startswith("query images: 1 of 5 absent"))
    assert "leaves those queries out of every mode" in note
    plan = plan_run(ds, get_encoder("toy"), RunOptions(conditions=["clean"]))
    assert tuple(MODE_LABELS[m] for m in plan.modes.modes) == ds.runnable_modes
