"""The batch pipeline and the streaming API on real files (JPEG/PNG/WebP crops of scikit-image photos).

References are independent of the pipeline: files are hashed with hashlib and decoded with
OpenCV; pixels are compared with the public single-image API (corrupt_image / corrupt_text) and
with Pillow's decoding of the sources.
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
import zlib
from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image
from query_sets import three_photo_set as make_query_set
from skimage import data

from snapbench.app.corrupt import MANIFEST_FIELDS, run_corruption
from snapbench.core.conditions import IMAGE_OPERATORS, TEXT_OPERATORS
from snapbench.core.errors import RunConfigError
from snapbench.core.records import QueryRecord
from snapbench.corruptions import (
    ManifestError,
    corrupt_image,
    corrupt_text,
    iter_variants,
    load_manifest,
    resolve_conditions,
    resolve_grid,
    stream_corruptions,
)
from snapbench.corruptions.io import load_image

# A small subset of conditions: random (cropping, scribble) and deterministic (overexposure)
# operators, a size change (downscale), two text operators and two joint pairs (one not in the paper).
SUBSET = [
    "img/cropping/s2",
    "img/overexposure/s3",
    "img/overexposure/s2",
    "img/scribble/s1",
    "img/downscale/s3",
    "txt/char_swap",
    "txt/sent_add",
    "txt/word_repeat",
    "joint/scribble+char_swap/s1",
    "joint/overexposure+word_repeat/s2",
]


def file_hashes(out: Path) -> dict[str, str]:
    """Every file under out/images (hidden ones too) -> sha256 of its bytes."""
    return {
        str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted((out / "images").rglob("*"))
        if p.is_file()
    }


def manifest_lines(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()]


def skip_lines(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "skips.jsonl").read_text().splitlines()]


def by_key(lines: list[dict]) -> dict[tuple[str, str], dict]:
    return {(x["id"], x["condition"]): x for x in lines}


@pytest.fixture(scope="module")
def query_set(tmp_path_factory) -> Path:
    return make_query_set(tmp_path_factory.mktemp("qs"))


@pytest.fixture(scope="module")
def subset_run(query_set: Path, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("run") / "out"
    summary = run_corruption(query_set, out, seed=0, conditions=SUBSET, progress=False)
    assert summary.written == 3 * (1 + len(SUBSET)) and summary.reused == 0 and summary.added_conditions == []
    return out


# ---------------------------------------------------------------------------------------------
# input manifests


def test_load_manifest_layouts(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    jsonl = tmp_path / "sub" / "q.jsonl"
    jsonl.write_text(
        '{"id": 1, "image": "a.jpg", "question": "What cat?", "entity": "cat", "tags": {"domain": "pets"}, "src": "S_V"}\n'
        "\n"
        '{"id": "b", "question": "Where is this?"}\n'
    )
    with pytest.warns(UserWarning, match=r"unknown field 'src'"):  # kept as a tag, but reported
        recs = load_manifest(jsonl)
    assert recs[0] == QueryRecord("1", tmp_path / "sub" / "a.jpg", "What cat?", "cat", {"domain": "pets", "src": "S_V"})
    assert recs[1] == QueryRecord("b", None, "Where is this?", None, {})

    lst = tmp_path / "q.json"
    lst.write_text(json.dumps([{"id": "x", "image": "/abs/x.png", "question": "Q?"}], indent=2))
    assert load_manifest(lst)[0].image == Path("/abs/x.png")

    # the authors' snap_bench.json-like layout with field aliases
    snap = tmp_path / "snap_bench.json"
    snap.write_text(json.dumps({"version": 1, "queries": [
        {"query_id": "s1", "query_image": "img/1.jpg", "query_text": "What bird is this?", "category": "bird", "domain": "nature"},
        {"qid": "s2", "img": "img/2.jpg", "query": "Who is this?", "target": "person"},
    ]}, indent=1))
    recs = load_manifest(snap)
    assert [r.id for r in recs] == ["s1", "s2"]
    assert recs[0].image == tmp_path / "img" / "1.jpg" and recs[0].question == "What bird is this?"
    assert recs[0].entity == "bird" and recs[0].tags == {"domain": "nature"}
    assert recs[1].entity == "person" and recs[1].question == "Who is this?"


@pytest.mark.parametrize(
    "content,pattern",
    [
        ('{"id": "a", "question": "Q?"}\n{"image": "x.jpg", "question": "Q?"}\n', r"line 2: record has no id"),
        ('{"id": "a", "question": "Q?"}\n{"id": "b", "question": "Q?"}\n{"id": "a", "question": "R?"}\n',
         r"line 3: duplicate id 'a' \(first at line 1\)"),
        ('{"id": "a", "question": "Q?"}\n{"id": "b", "question": "Q?"}\n{"id": "c", "question": \n', r"line 3: invalid JSON"),
        # the rules of every user JSON file: NaN is no JSON value (one reader of JSONL lines)
        ('{"id": "a", "question": "Q?"}\n{"id": "b", "question": "Q?", "w": NaN}\n', r"line 2: invalid JSON \(NaN is not valid JSON"),
        ('{"id": "a"}\n', r"line 1 \(id 'a'\): record has neither an image nor a question"),
        ('{"id": "a/b", "question": "Q?"}\n', r"line 1: id 'a/b' cannot be used as a file name"),
        ('{"id": "a", "question": 3}\n', r"line 1 \(id 'a'\): question must be a string"),
        ('[{"id": "a", "question": "Q?"}, 5]', r"record #2: a query record must be a JSON object"),
        ('{"meta": {"name": "x"}}', r"JSON object without a query list"),
        # one line (or one pretty object) with a record's fields but no id: the record's error, as with two lines
        ('{"image": "../q/coffee.jpg", "question": "what?"}\n',
         r": line 1: record has no id \(expected one of id, query_id, qid\)$"),
        ('{\n  "question": "what?",\n  "entity": "cup"\n}\n', r": record #1: record has no id \(expected one of id"),
        ("", r"empty"),
    ],
)
def test_load_manifest_errors_name_file_and_record(tmp_path: Path, content: str, pattern: str) -> None:
    path = tmp_path / "m.jsonl"
    path.write_text(content)
    with pytest.raises(ManifestError, match=r"m\.jsonl.*" + pattern):
        load_manifest(path)


# ---------------------------------------------------------------------------------------------
# conditions


def test_resolve_conditions_defaults_and_validation() -> None:
    default = [c.id for c in resolve_conditions(None)]
    assert len(default) == 54 and default[0] == "clean"
    assert len(resolve_conditions(None, joint=True)) == 72
    assert {c.split("/")[1] for c in default if c.startswith("img/")} == set(IMAGE_OPERATORS)
    assert {c.split("/")[1] for c in default if c.startswith("txt/")} == set(TEXT_OPERATORS)
    # any image x text pair, clean always first, duplicates dropped
    # a joint condition brings its parts (before it), as additivity needs them
    got = [c.id for c in resolve_conditions(["joint/scribble+char_swap/s2", "txt/char_swap", "txt/char_swap"])]
    assert got == ["clean", "img/scribble/s2", "txt/char_swap", "joint/scribble+char_swap/s2"]
    with pytest.raises(ValueError, match=r"'img/motion_blr/s2'.*did you mean 'img/motion_blur/s2'"):
        resolve_conditions(["img/motion_blr/s2"])
    with pytest.raises(ValueError, match=r"no severity s4"):
        resolve_conditions(["img/motion_blur/s4"])
    with pytest.raises(ValueError, match=r"unknown text operator 'typo'"):
        resolve_conditions(["joint/mosaic+typo/s1"])
    with pytest.raises(ValueError, match=r"(?s)'nonsense'.*valid forms"):
        resolve_conditions(["nonsense"])
    # a grid with an extra level makes s4 valid
    grid = {"motion_blur": {"s4": {"kernel": 31}}}
    assert resolve_conditions(["img/motion_blur/s4"], grid=run_grid(grid))[1].id == "img/motion_blur/s4"


def test_invalid_grid_level_is_an_error_before_any_query(query_set: Path, tmp_path: Path) -> None:
    # A bad grid value or a typo is an option error (corrupt exits 2), not one skip per query with
    # exit status 0 and the condition silently missing from the whole run.
    bad = {"motion_blur": {"s2": {"kernal": 15}}, "compression": {"s1": {"quality": 500}}}
    with pytest.raises(ValueError, match=r"img/motion_blur/s2.*unknown parameter.*'kernal'"):
        resolve_conditions(["img/motion_blur/s2"], grid=run_grid(bad))
    with pytest.raises(ValueError, match=r"img/compression/s1.*quality"):
        run_corruption(query_set, tmp_path / "o", conditions=["img/compression/s1"], grid=bad, progress=False)
    assert not (tmp_path / "o" / "manifest.jsonl").exists()
    # levels the run does not use are not its concern
    assert [c.id for c in resolve_conditions(["img/mosaic/s2"], grid=run_grid(bad))] == ["clean", "img/mosaic/s2"]


def run_grid(override: dict) -> dict:
    return resolve_grid(override)


# ---------------------------------------------------------------------------------------------
# the batch run


def test_outputs_manifest_and_skips_are_verified_independently(query_set: Path, subset_run: Path) -> None:
    out = subset_run
    lines = manifest_lines(out)
    keyed = by_key(lines)
    ids = ["q_astro", "q_cat", "q_coffee"]
    assert len(lines) == len(keyed) == 3 * (1 + len(SUBSET))
    assert {k[0] for k in keyed} == set(ids)  # the broken query produced nothing ...
    assert skip_lines(out) == [  # ... and is one skip line naming the file and the problem
        {"id": "q_broken", "condition": None, "reason": skip_lines(out)[0]["reason"]}
    ]
    assert "broken.jpg" in skip_lines(out)[0]["reason"] and "truncated" in skip_lines(out)[0]["reason"]

    records = {r.id: r for r in load_manifest(query_set)}
    for line in lines:
        assert tuple(line) == MANIFEST_FIELDS
        assert line["seed"] == 0
        f = out / line["path"]
        assert line["sha256"] == hashlib.sha256(f.read_bytes()).hexdigest()
        pixels = cv2.imread(str(f), cv2.IMREAD_UNCHANGED)[..., ::-1]
        assert (line["width"], line["height"]) == (pixels.shape[1], pixels.shape[0])
        cond, qid = line["condition"], line["id"]
        rec = records[qid]
        if cond != "clean" and not cond.startswith("txt/"):
            assert line["path"] == f"images/{cond.replace('/', '__')}/{qid}.png"

        if cond == "clean":
            assert line["path"] == f"images/clean/{qid}.png"
            assert line["question"] == rec.question and line["image_params"] is None and line["text_params"] is None
            # the source decoded by Pillow, saved without loss
            np.testing.assert_array_equal(pixels, np.asarray(Image.open(rec.image).convert("RGB")))
        elif cond.startswith("img/"):
            _, op, sev = cond.split("/")
            expected = corrupt_image(load_image(rec.image), op, int(sev[1:]), seed=0, key=qid)
            np.testing.assert_array_equal(pixels, expected)
            assert line["question"] == rec.question and line["image_params"] and line["text_params"] is None
        elif cond.startswith("txt/"):
            op = cond.split("/")[1]
            assert line["question"] == corrupt_text(rec.question, op, entity=rec.entity, seed=0, key=qid)
            assert line["question"] != rec.question
            assert line["path"] == keyed[(qid, "clean")]["path"] and line["sha256"] == keyed[(qid, "clean")]["sha256"]
            assert line["image_params"] is None and line["text_params"]
        else:  # joint: the image of img/<op>/s<N> and the question of txt/<op>
            pair, sev = cond.split("/")[1:]
            img_op, txt_op = pair.split("+")
            expected = corrupt_image(load_image(rec.image), img_op, int(sev[1:]), seed=0, key=qid)
            np.testing.assert_array_equal(pixels, expected)
            assert line["question"] == corrupt_text(rec.question, txt_op, entity=rec.entity, seed=0, key=qid)
            assert line["image_params"] and line["text_params"]
    # downscale keeps its small size; joint images equal their single-condition files byte for byte
    small = keyed[("q_cat", "img/downscale/s3")]
    assert small["width"] < 128 * 0.1 and small["height"] < 96 * 0.1
    for qid in ids:
        assert keyed[(qid, "joint/scribble+char_swap/s1")]["sha256"] == keyed[(qid, "img/scribble/s1")]["sha256"]
        assert keyed[(qid, "joint/scribble+char_swap/s1")]["question"] == keyed[(qid, "txt/char_swap")]["question"]
    run = json.loads((out / "run.json").read_text())
    assert run["seed"] == 0 and run["conditions"] == ["clean"] + SUBSET and "motion_blur" in run["grid"]
    assert not [p for p in out.rglob("*.tmp")]


def test_worker_count_does_not_change_a_single_byte(query_set: Path, subset_run: Path, tmp_path: Path) -> None:
    out2 = tmp_path / "w2"
    run_corruption(query_set, out2, seed=0, conditions=SUBSET, workers=2, progress=False)
    assert file_hashes(out2) == file_hashes(subset_run)
    assert (out2 / "manifest.jsonl").read_bytes() == (subset_run / "manifest.jsonl").read_bytes()
    assert (out2 / "skips.jsonl").read_bytes() == (subset_run / "skips.jsonl").read_bytes()


def test_seed_changes_random_operators_only(query_set: Path, subset_run: Path, tmp_path: Path) -> None:
    out1 = tmp_path / "seed1"
    run_corruption(query_set, out1, seed=1, conditions=SUBSET, progress=False)
    a, b = by_key(manifest_lines(subset_run)), by_key(manifest_lines(out1))
    ids = ["q_astro", "q_cat", "q_coffee"]
    for qid in ids:  # deterministic operators and clean: identical files
        for cond in ("clean", "img/overexposure/s3", "img/downscale/s3"):
            assert a[(qid, cond)]["sha256"] == b[(qid, cond)]["sha256"]
    # random ones: the seed moves the crop / strokes / edited letters for at least one query
    for cond in ("img/cropping/s2", "img/scribble/s1", "txt/sent_add"):
        assert any(a[(q, cond)]["sha256"] != b[(q, cond)]["sha256"] or a[(q, cond)]["question"] != b[(q, cond)]["question"]
                   for q in ids), cond
        assert any(a[(q, cond)]["image_params"] != b[(q, cond)]["image_params"]
                   or a[(q, cond)]["text_params"] != b[(q, cond)]["text_params"] for q in ids), cond


def test_each_kind_of_bad_file_is_a_named_skip_and_the_batch_goes_on(tmp_path: Path) -> None:
    root = tmp_path / "qs"
    (root / "imgs").mkdir(parents=True)
    Image.fromarray(data.astronaut()[20:116, 160:288]).save(root / "imgs" / "ok.jpg", quality=92)
    good = (root / "imgs" / "ok.jpg").read_bytes()
    (root / "imgs" / "cut.jpg").write_bytes(good[: len(good) // 2])
    (root / "imgs" / "empty.jpg").write_bytes(b"")
    (root / "imgs" / "notes.jpg").write_text("not an image\n")
    # a complete 10000x6000 1-bit PNG, ~7 kB on disk
    chunk = lambda t, d: struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))  # noqa: E731
    ihdr, idat = struct.pack(">IIBBBBB", 10_000, 6_000, 1, 0, 0, 0, 0), zlib.compress(b"\x00" * 1251 * 6000, 9)
    (root / "imgs" / "huge.png").write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b""))
    names = ["cut.jpg", "ok.jpg", "empty.jpg", "notes.jpg", "huge.png", "missing.jpg"]
    rows = [{"id": n.split(".")[0], "image": f"imgs/{n}", "question": "What kind of astronaut is this?"} for n in names]
    (root / "q.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    summary = run_corruption(root / "q.jsonl", tmp_path / "out", conditions=["img/mosaic/s1"], progress=False)
    assert summary.written == 2 and summary.skipped_queries == 5
    reasons = {s["id"]: s["reason"] for s in skip_lines(tmp_path / "out")}
    assert set(reasons) == {"cut", "empty", "notes", "huge", "missing"}
    for qid, pattern in {"cut": r"cut\.jpg.*truncated", "empty": r"empty\.jpg.*empty", "notes": r"notes\.jpg.*not a recognised image",
                         "huge": r"huge\.png.*too large.*10000x6000", "missing": r"missing\.jpg.*not found"}.items():
        assert re.search(pattern, reasons[qid]), (qid, reasons[qid])


def test_entity_not_found_skips_text_and_joint_only(tmp_path: Path) -> None:
    root = tmp_path / "qs"
    make_query_set(root, bad=False)
    rows = [json.loads(x) for x in (root / "queries.jsonl").read_text().splitlines()]
    rows[1]["entity"] = "zebra"  # not in "What kind of cat is this?"
    (root / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out"
    summary = run_corruption(root / "queries.jsonl", out, conditions=SUBSET, progress=False)
    skipped = {(s["id"], s["condition"]): s["reason"] for s in skip_lines(out)}
    text_like = [c for c in SUBSET if not c.startswith("img/")]
    assert set(skipped) == {("q_cat", c) for c in text_like}
    assert all("zebra" in r and "not found" in r for r in skipped.values())
    done = by_key(manifest_lines(out))
    assert {c for q, c in done if q == "q_cat"} == {"clean"} | {c for c in SUBSET if c.startswith("img/")}
    assert summary.skipped == len(text_like) and summary.skipped_queries == 0
    assert summary.written == 3 * (1 + len(SUBSET)) - len(text_like)


def test_text_only_and_image_only_queries(tmp_path: Path) -> None:
    root = tmp_path / "qs"
    make_query_set(root, bad=False)
    (root / "q.jsonl").write_text(
        json.dumps({"id": "t", "question": "What kind of cat is this?", "entity": "cat"}) + "\n"
        + json.dumps({"id": "i", "image": "imgs/cat.png"}) + "\n"
    )
    out = tmp_path / "out"
    run_corruption(root / "q.jsonl", out, conditions=["img/overexposure/s1", "txt/char_swap"], progress=False)
    done = by_key(manifest_lines(out))
    assert done[("t", "txt/char_swap")]["path"] is None and done[("t", "txt/char_swap")]["question"] != "What kind of cat is this?"
    assert done[("t", "clean")]["path"] is None and done[("i", "clean")]["question"] is None
    assert done[("i", "img/overexposure/s1")]["question"] is None
    assert {(s["id"], s["condition"], s["reason"]) for s in skip_lines(out)} == {
        ("t", "img/overexposure/s1", "query has no image"),
        ("i", "txt/char_swap", "query has no question"),
    }


# ---------------------------------------------------------------------------------------------
# resume and reruns


def test_resume_tolerates_a_cut_last_line_and_redoes_damaged_files(query_set: Path, subset_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "resume"
    run_corruption(query_set, out, seed=0, conditions=SUBSET, progress=False)
    reference_files, reference_lines = file_hashes(out), sorted((out / "manifest.jsonl").read_text().splitlines())
    # a kill mid-append leaves half a line; a damaged image must not be trusted
    raw = (out / "manifest.jsonl").read_bytes()
    (out / "manifest.jsonl").write_bytes(raw[: len(raw) - 40])
    cut_line = json.loads(raw.splitlines()[-1])
    damaged = out / "images" / "img__cropping__s2" / "q_cat.png"
    damaged.write_bytes(damaged.read_bytes()[:100])
    (out / "images" / "clean" / ".q_x.png.abc.tmp").write_bytes(b"left by a kill")

    summary = run_corruption(query_set, out, seed=0, conditions=SUBSET, progress=False)
    assert summary.written == 2  # the cut line's output and the damaged file, nothing else
    assert summary.reused == 3 * (1 + len(SUBSET)) - 2
    assert (cut_line["id"], cut_line["condition"]) != ("q_cat", "img/cropping/s2")
    assert file_hashes(out) == reference_files == file_hashes(subset_run)
    assert sorted((out / "manifest.jsonl").read_text().splitlines()) == reference_lines
    assert skip_lines(out) == skip_lines(subset_run)  # skips are retried and recorded again

    # a third run has nothing to do
    again = run_corruption(query_set, out, seed=0, conditions=SUBSET, progress=False)
    assert again.written == 0 and again.reused == 3 * (1 + len(SUBSET))
    # adding conditions to an existing directory only computes the new ones
    more = run_corruption(query_set, out, seed=0, conditions=SUBSET + ["img/mosaic/s1"], progress=False)
    assert more.written == 3 and json.loads((out / "run.json").read_text())["conditions"][-1] == "img/mosaic/s1"


def test_changed_inputs_are_redone(tmp_path: Path) -> None:
    root = tmp_path / "qs"
    manifest = make_query_set(root, bad=False)
    out = tmp_path / "o"
    conds = ["img/cropping/s1", "txt/char_swap"]
    run_corruption(manifest, out, conditions=conds, progress=False)
    before = by_key(manifest_lines(out))
    # replace one photo (same path), change another query's question
    Image.fromarray(data.rocket()[:96, :128]).save(root / "imgs" / "cat.png")
    rows = [json.loads(x) for x in manifest.read_text().splitlines()]
    rows[2]["question"] = "What type of coffee is in this mug?"
    manifest.write_text("".join(json.dumps(r) + "\n" for r in rows))
    summary = run_corruption(manifest, out, conditions=conds, progress=False)
    assert summary.written == 6 and summary.reused == 3
    after = by_key(manifest_lines(out))
    assert after[("q_astro", "clean")] == before[("q_astro", "clean")]
    assert after[("q_cat", "clean")]["sha256"] != before[("q_cat", "clean")]["sha256"]
    np.testing.assert_array_equal(
        cv2.imread(str(out / after[("q_cat", "img/cropping/s1")]["path"]))[..., ::-1],
        corrupt_image(np.asarray(data.rocket()[:96, :128]), "cropping", 1, seed=0, key="q_cat"),
    )
    assert after[("q_coffee", "txt/char_swap")]["question"].endswith("in this mug?")
    assert after[("q_coffee", "clean")]["question"] == "What type of coffee is in this mug?"
    assert len(after) == 9


def test_a_bad_line_inside_the_manifest_is_an_error(query_set: Path, tmp_path: Path) -> None:
    out = tmp_path / "o"
    run_corruption(query_set, out, conditions=["txt/char_swap"], progress=False)
    lines = (out / "manifest.jsonl").read_text().splitlines()
    lines[1] = "{garbage"
    (out / "manifest.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"manifest\.jsonl: line 2 is not a valid manifest record"):
        run_corruption(query_set, out, conditions=["txt/char_swap"], progress=False)


def test_other_seed_or_grid_refuses_unless_forced(query_set: Path, tmp_path: Path) -> None:
    out = tmp_path / "o"
    conds = ["img/cropping/s1", "img/motion_blur/s2"]
    run_corruption(query_set, out, seed=0, conditions=conds, progress=False)
    with pytest.raises(RunConfigError, match=r"seed 0 \(this run: 5\).*or force to discard it"):
        run_corruption(query_set, out, seed=5, conditions=conds, progress=False)
    with pytest.raises(RunConfigError, match=r"different grid;"):
        run_corruption(query_set, out, seed=0, conditions=conds, grid={"motion_blur": {"s2": {"kernel": 15}}}, progress=False)
    cfg = json.loads((out / "run.json").read_text())
    fp = cfg["fingerprint"]
    major = int(cv2.__version__.split(".")[0])
    (out / "run.json").write_text(json.dumps({**cfg, "fingerprint": {**fp, "opencv_major": major - 1}}))
    with pytest.raises(RunConfigError, match=rf"opencv_major {major - 1} \(this run: {major}\)"):
        run_corruption(query_set, out, seed=0, conditions=conds, progress=False)
    np_major = int(np.__version__.split(".")[0])
    (out / "run.json").write_text(json.dumps({**cfg, "fingerprint": {**fp, "numpy_major": np_major + 1}}))
    with pytest.raises(RunConfigError, match=rf"numpy_major {np_major + 1} \(this run: {np_major}\)"):
        run_corruption(query_set, out, seed=0, conditions=conds, progress=False)
    (out / "run.json").write_text(json.dumps({**cfg, "fingerprint": {**fp, "revision.cropping": 7}}))
    with pytest.raises(RunConfigError, match=r"revision\.cropping 7 \(this run: 1\)"):
        run_corruption(query_set, out, seed=0, conditions=conds, progress=False)
    (out / "run.json").write_text(json.dumps({**cfg, "opencv_version": f"{major}.99.1"}))  # same major: resumes
    assert run_corruption(query_set, out, seed=0, conditions=conds, progress=False).reused > 0
    (out / "images" / "notes").mkdir()  # not ours: --force must leave it alone
    forced = run_corruption(query_set, out, seed=5, conditions=conds[:1], force=True, progress=False)
    fresh = tmp_path / "fresh"
    run_corruption(query_set, fresh, seed=5, conditions=conds[:1], progress=False)
    assert forced.reused == 0
    assert file_hashes(out) == file_hashes(fresh)  # nothing of the seed-0 run survives
    assert (out / "manifest.jsonl").read_bytes() == (fresh / "manifest.jsonl").read_bytes()
    assert (out / "images" / "notes").is_dir()


# ---------------------------------------------------------------------------------------------
# streaming


@pytest.mark.slow
def test_a_query_holds_only_the_variants_still_needed(tmp_path: Path) -> None:
    # Memory per query must not grow with the number of conditions (45 variants of a 12 Mpx phone
    # photo are ~1.6 GB): each variant and its PNG bytes are released after their last use.
    import tracemalloc

    img = np.ascontiguousarray(cv2.resize(data.coffee(), (640, 480), interpolation=cv2.INTER_AREA))
    Image.fromarray(img).save(tmp_path / "c.png")
    (tmp_path / "q.jsonl").write_text(json.dumps({"id": "a", "image": "c.png", "question": "What is this?"}) + "\n")
    conds = [f"img/{op}/s{s}" for op in ("overexposure", "motion_blur", "rotation", "mosaic", "scribble", "watermark") for s in (1, 2, 3)]
    peaks = {}
    for measure in (False, True):
        run_corruption(tmp_path / "q.jsonl", tmp_path / f"warm{measure}", conditions=conds, progress=False,
                       measure=measure)  # caches, imports, the measurement's per-thread work arrays
        tracemalloc.start()
        try:
            run_corruption(tmp_path / "q.jsonl", tmp_path / f"o{measure}", conditions=conds, progress=False,
                           measure=measure)
            run_peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.reset_peak()
            for _ in iter_variants(img, None, key="a", conditions=conds, measure=measure):
                pass
            stream_peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        peaks[measure] = run_peak, stream_peak
    # 18 conditions: holding them all costs ~29x (run, with PNG bytes) and ~18x (stream) the image
    run_peak, stream_peak = peaks[False]
    assert run_peak < 8 * img.nbytes and stream_peak < 8 * img.nbytes, (run_peak / img.nbytes, stream_peak / img.nbytes)
    # measuring adds one query's constant: the clean image's full-size luma and comparison-size window
    # statistics, one variant's luma (<= 2.7x the image + eight 512x384 float32 arrays), never a variant each
    extra = 2.7 * img.nbytes + 8 * 512 * 384 * 4
    assert all(m < 8 * img.nbytes + extra for m in peaks[True]), [m / img.nbytes for m in peaks[True]]


@pytest.mark.slow
def test_streaming_variants_equal_the_written_files(query_set: Path, subset_run: Path) -> None:
    keyed = by_key(manifest_lines(subset_run))
    rec = load_manifest(query_set)[1]
    variants = list(iter_variants(load_image(rec.image), rec.question, key=rec.id, entity=rec.entity, conditions=SUBSET))
    assert [v.condition for v in variants] == ["clean"] + SUBSET
    for v in variants:
        line = keyed[(rec.id, v.condition)]
        written = cv2.imread(str(subset_run / line["path"]), cv2.IMREAD_UNCHANGED)[..., ::-1]
        np.testing.assert_array_equal(v.image, written)
        assert v.question == line["question"]
        assert v.params.get("image") == line["image_params"] and v.params.get("text") == line["text_params"]
    by_cond = {v.condition: v for v in variants}
    assert by_cond["txt/char_swap"].image_from == "clean"
    assert by_cond["joint/scribble+char_swap/s1"].image_from == "img/scribble/s1"
    assert by_cond["joint/scribble+char_swap/s1"].text_from == "txt/char_swap"

    skips: list[dict] = []
    pairs = list(stream_corruptions(query_set, conditions=SUBSET, skips=skips))
    assert len(pairs) == 3 * (1 + len(SUBSET))
    assert [s["id"] for s in skips] == ["q_broken"] and skips[0]["condition"] is None
    for r, v in pairs:
        assert v.question == keyed[(r.id, v.condition)]["question"]


def test_iter_variants_errors_raise_or_skip() -> None:
    img = np.zeros((32, 32, 3), np.uint8)
    with pytest.raises(ValueError, match=r"query 'k'.*txt/char_swap.*zebra"):
        list(iter_variants(img, "What cat is this?", key="k", entity="zebra", conditions=["txt/char_swap"]))
    got = list(iter_variants(img, "What cat is this?", key="k", entity="zebra", conditions=["txt/char_swap"], errors="skip"))
    assert [v.condition for v in got] == ["clean"]


def test_generate_variants_defaults_to_the_54_states_and_refuses_condition_ids() -> None:
    from snapbench.core.errors import ConfigError
    from snapbench.corruptions import generate_variants, iter_variants

    img = np.random.default_rng(0).integers(0, 256, (48, 64, 3), dtype=np.uint8)
    q = "a red bicycle by the wall"
    got = list(generate_variants(img, q, key="q1", entity="bicycle", seed=5, conditions=None, grid=None))
    ids = [v.condition for v in got]
    # clean + every image operator at s1..s3 + 8 text operators: what iter_variants gives for the same query
    assert len(ids) == 54 == 1 + 3 * len(IMAGE_OPERATORS) + 8 and ids[0] == "clean"
    ref = {v.condition: v for v in iter_variants(img, q, key="q1", entity="bicycle", seed=5, errors="skip")}
    assert set(ref) <= set(ids)
    for v in got:
        if v.condition in ref and v.image is not None:
            assert np.array_equal(v.image, ref[v.condition].image), v.condition
    for bad in (["clean"], "clean"):
        with pytest.raises(ConfigError, match="Condition objects") as err:
            list(generate_variants(img, q, key="q1", entity=None, seed=0, conditions=bad))
        assert err.value.param == "conditions"


def test_an_unknown_mode_is_about_the_parameter_it_came_from() -> None:
    """normalize_mode(param=) names the caller's parameter (run's list is `modes`, not `mode`)."""
    from snapbench.app.stages.options import RunOptions, check_options
    from snapbench.core.errors import ConfigError
    from snapbench.core.targets import normalize_mode

    with pytest.raises(ConfigError) as info:
        check_options(RunOptions(modes=["I2I", "XYZ"]))
    assert info.value.param == "modes" and "unknown retrieval mode 'XYZ'" in info.value.problem
    with pytest.raises(ConfigError) as info:
        normalize_mode("XYZ")
    assert info.value.param == "mode"
    assert normalize_mode("it→it", param="modes") == "IT2IT"
