"""`snapbench diagnose` end to end: every input kind, the three outputs, skips, thresholds files."""

from __future__ import annotations

import csv
import json
import re
import shutil
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest
from diagnose_photos import photo_set
from typer.testing import CliRunner

from snapbench.app.diagnose import run_diagnose
from snapbench.cli import app
from snapbench.core.errors import InputError
from snapbench.core.install_hint import install_hint
from snapbench.corruptions import corrupt_image
from snapbench.diagnose import DETECTORS, IMAGE_DETECTORS, TEXT_DETECTORS, load_thresholds
from snapbench.diagnose.summary import wilson_interval

DEMO = Path(__file__).resolve().parents[1] / "snapbench" / "assets" / "demo"
runner = CliRunner()


def _write(path: Path, rgb: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    params = [cv2.IMWRITE_JPEG_QUALITY, 92] if path.suffix == ".jpg" else []
    ok, buf = cv2.imencode(path.suffix, np.ascontiguousarray(rgb[..., ::-1]), params)
    path.write_bytes(buf.tobytes())


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """Six clean photos, three degraded ones, a sub-folder, a duplicate, a recompression and a bad file."""
    root = tmp_path_factory.mktemp("imgs")
    photos = photo_set(("motorcycle_left", "grass", "china", "flower", "grace_hopper", "gravel"))
    for n, p in photos.items():
        _write(root / f"{n}.png", p)
    _write(root / "degraded" / "dark.png", corrupt_image(photos["china"], "low_light", 3))
    _write(root / "degraded" / "blurred.png", corrupt_image(photos["flower"], "defocus_blur", 3))
    _write(root / "degraded" / "blocky.png", corrupt_image(photos["grass"], "compression", 3))
    shutil.copy(root / "china.png", root / "copy_of_china.png")
    _write(root / "china_again.jpg", photos["china"])
    (root / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 not really a jpeg")
    return root


def _csv(out: Path) -> list[dict]:
    with open(out / "diagnose.csv", newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text(encoding="utf-8"))


def test_folder_of_images_without_questions(folder, tmp_path) -> None:
    out = tmp_path / "out"
    res = runner.invoke(app, ["diagnose", str(folder), "--out", str(out), "--no-progress"])
    assert res.exit_code == 0, res.output
    rows, s = _csv(out), _summary(out)
    assert list(rows[0]) == ["query_id", "side", "detector", "score", "flag"]
    assert {r["side"] for r in rows} == {"image"} and {r["detector"] for r in rows} == set(IMAGE_DETECTORS)
    ids = {r["query_id"] for r in rows}
    assert "degraded/dark.png" in ids and "broken.jpg" not in ids and len(ids) == 11
    flag = {(r["query_id"], r["detector"]): r["flag"] == "1" for r in rows}
    assert flag[("degraded/dark.png", "low_light")] and flag[("degraded/blurred.png", "blur")]
    assert flag[("degraded/blocky.png", "compression")]
    assert not any(flag[("china.png", d)] for d in IMAGE_DETECTORS)
    # the skip is recorded, the run went on
    assert s["n_skipped_images"] == 1 and s["skips"][0]["query_id"] == "broken.jpg"
    assert "broken.jpg" in s["skips"][0]["reason"]
    # the four-way split recomputed by hand from the CSV; no questions: the text side is clean
    per_query = {q: any(flag[(q, d)] for d in IMAGE_DETECTORS) for q in ids}
    k = sum(per_query.values())
    assert s["any"]["count"] == s["image_only"]["count"] == k and s["both"]["count"] == s["text_only"]["count"] == 0
    assert s["any"]["n"] == 11 and s["any"]["ci"] == pytest.approx(list(wilson_interval(k, 11)))
    for d in IMAGE_DETECTORS:
        assert s["shares"][d]["count"] == sum(flag[(q, d)] for q in ids)
    for d in TEXT_DETECTORS:
        assert s["shares"][d]["n"] == 0 and s["shares"][d]["share"] is None
    assert s["inputs"]["kind"] == "image-folder" and s["inputs"]["sides"] == ["image"]
    # query-set checks: the byte copy, the recompressed copy, the small images
    checks = s["checks"]
    assert checks["duplicate_images"]["groups"] == [["china.png", "copy_of_china.png"]]
    groups = checks["near_duplicate_images"]["groups"]
    # a recompressed copy is a near-duplicate -- and so is a degraded copy of the same photo
    assert sorted(groups) == [["china.png", "china_again.jpg", "copy_of_china.png", "degraded/dark.png"],
                              ["degraded/blocky.png", "grass.png"], ["degraded/blurred.png", "flower.png"]]
    assert checks["unreadable_images"]["count"] == 1
    assert not list(out.glob(".*.tmp"))  # atomic writes leave nothing behind


def test_html_is_self_contained_with_thumbnails(folder, tmp_path) -> None:
    out = tmp_path / "out"
    run_diagnose(folder, out, examples=3)
    page = (out / "diagnose.html").read_text(encoding="utf-8")
    srcs = re.findall(r'src="([^"]*)"', page)
    assert srcs and all(s.startswith("data:image/jpeg;base64,") for s in srcs)
    assert "http://" not in page and "https://" not in page
    assert "degraded/dark.png" in page and "low_light" in page and "broken.jpg" in page
    for s in srcs:  # every thumbnail decodes
        import base64

        assert cv2.imdecode(np.frombuffer(base64.b64decode(s.split(",", 1)[1]), np.uint8), 1) is not None


def test_questions_without_images(tmp_path) -> None:
    qfile = tmp_path / "log.txt"
    qfile.write_text("What kind of fish is this?\n\nWhat is this?\nWhich astrbonaut is this?\n", encoding="utf-8")
    out = tmp_path / "out"
    res = runner.invoke(app, ["diagnose", str(qfile), "--out", str(out), "--no-progress"])
    assert res.exit_code == 0, res.output
    rows, s = _csv(out), _summary(out)
    assert {r["side"] for r in rows} == {"text"} and {r["query_id"] for r in rows} == {"line-1", "line-3", "line-4"}
    flag = {(r["query_id"], r["detector"]): r["flag"] == "1" for r in rows}
    assert flag[("line-4", "oov")] and not flag[("line-1", "oov")]
    assert flag[("line-3", "few_content_tokens")] and flag[("line-3", "no_entity")]
    assert s["text_only"]["count"] == 2 and s["image_only"]["count"] == 0 and s["n_images"] == 0
    for d in IMAGE_DETECTORS:
        assert s["shares"][d]["n"] == 0


def test_image_folder_with_a_questions_file(folder, tmp_path) -> None:
    qfile = tmp_path / "q.csv"
    qfile.write_text("image,question,entity\ndegraded/dark.png,What temple is this?,temple\n"
                     "china.png,Which pagda is this?,pagoda\n", encoding="utf-8")
    res = run_diagnose(folder, tmp_path / "out", questions=qfile)
    s = res.summary
    by_id = {r.id: r for r in res.results}
    assert by_id["degraded/dark.png"].text_scores is not None and by_id["grass.png"].text_scores is None
    assert by_id["china.png"].flags["no_entity"] and by_id["china.png"].flags["oov"]
    assert s["n_questions"] == 2
    both = sum(1 for r in res.results if r.image_skip is None and r.image_flagged and r.text_flagged)
    assert s["both"]["count"] == both


def test_dataset_manifest_and_corrupt_output(tmp_path) -> None:
    res = run_diagnose(DEMO / "queries.jsonl", tmp_path / "d")
    assert res.summary["n_queries"] == 12 and res.summary["inputs"]["kind"] == "jsonl"
    assert all(r.text_scores is not None and r.image_scores is not None for r in res.results)
    corrupted = tmp_path / "c"
    r = runner.invoke(app, ["corrupt", str(DEMO / "queries.jsonl"), "--out", str(corrupted), "--no-progress",
                            "--conditions", "clean,img/defocus_blur/s3,img/low_light/s3,txt/char_swap,txt/sent_replace"])
    assert r.exit_code == 0, r.output
    res = run_diagnose(corrupted, tmp_path / "d2")
    s = res.summary
    assert s["inputs"]["kind"] == "corrupt-output" and s["n_queries"] == 12 * 5
    assert "q_chelsea@img/defocus_blur/s3" in {r.id for r in res.results}
    bc = s["by_condition"]
    assert bc["img/defocus_blur/s3"]["blur"] >= 0.9 and bc["img/low_light/s3"]["low_light"] >= 0.9
    assert bc["clean"]["blur"] <= 0.1 and bc["clean"]["low_light"] <= 0.1
    assert bc["txt/char_swap"]["no_entity"] == 1.0 and bc["clean"]["no_entity"] == 0.0  # entity from the manifest
    assert bc["txt/sent_replace"]["few_content_tokens"] == 1.0


def test_thresholds_file_overrides_and_errors(folder, tmp_path) -> None:
    th = tmp_path / "t.toml"
    th.write_text("[low_resolution]\nthreshold = 1e12\n", encoding="utf-8")
    res = run_diagnose(folder, tmp_path / "o", thresholds=th)
    assert res.summary["shares"]["low_resolution"]["count"] == 11
    assert res.summary["thresholds"]["blur"] == load_thresholds()["blur"]  # the rest keeps the shipped values
    (tmp_path / "t.json").write_text('{"blur": {"threshold": 0}}', encoding="utf-8")
    assert run_diagnose(folder, tmp_path / "o2", thresholds=tmp_path / "t.json").summary["shares"]["blur"]["count"] == 0
    for text, expect in (("[blurr]\nthreshold = 1\n", "unknown detector or section 'blurr' (did you mean 'blur'?); known: blur, low_light"),
                         ("[blur]\nthreshhold = 1\n", "unknown key 'threshhold' in [blur] (did you mean 'threshold'?); known: threshold"),
                         ('[blur]\nthreshold = "high"\n', "[blur] threshold must be a finite number"),
                         ("[blur\n", "invalid TOML")):
        th.write_text(text, encoding="utf-8")
        res = runner.invoke(app, ["diagnose", str(folder), "--out", str(tmp_path / "o3"), "--thresholds", str(th)])
        assert res.exit_code == 2 and expect in res.output and str(th) in res.output, res.output
        assert "Traceback" not in res.output
    with pytest.raises(InputError, match="thresholds file not found"):  # read through snapbench.core.userfiles
        load_thresholds(tmp_path / "missing.toml")


def test_bad_inputs_are_clear_errors(folder, tmp_path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    for args, expect in (([str(tmp_path / "nope")], "not found"),
                         ([str(empty)], "cannot tell"),
                         ([str(DEMO / "queries.jsonl"), "--questions", str(DEMO / "queries.jsonl")], "folder of images only"),
                         ([str(folder), "--format", "tiff"], "unknown input format 'tiff'")):
        res = runner.invoke(app, ["diagnose", *args, "--out", str(tmp_path / "o")])
        assert res.exit_code == 2 and expect in res.output, res.output
    bad_q = tmp_path / "q.jsonl"
    bad_q.write_text('{"question": "no image field"}\n', encoding="utf-8")
    res = runner.invoke(app, ["diagnose", str(folder), "--questions", str(bad_q), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "needs an 'image' field" in res.output


def test_questions_without_the_word_list_package(tmp_path, monkeypatch) -> None:
    from snapbench.diagnose import text

    qfile = tmp_path / "log.txt"
    qfile.write_text("What is this?\n", encoding="utf-8")
    text._spellchecker_words.cache_clear()
    monkeypatch.setitem(sys.modules, "spellchecker", None)
    try:
        res = runner.invoke(app, ["diagnose", str(qfile), "--out", str(tmp_path / "o")])
    finally:
        text._spellchecker_words.cache_clear()
    assert res.exit_code == 2 and install_hint("diagnose") in res.output


def test_wilson_interval_matches_scipy() -> None:
    from scipy.stats import binomtest

    for k, n in ((0, 10), (1, 10), (7, 12), (50, 50), (355, 1000), (3, 5000)):
        for level in (0.9, 0.95, 0.99):
            ref = binomtest(k, n).proportion_ci(confidence_level=level, method="wilson")
            assert wilson_interval(k, n, level) == pytest.approx((ref.low, ref.high), abs=1e-12)
    assert wilson_interval(0, 10)[0] == 0.0 and wilson_interval(10, 10)[1] == 1.0


def test_detector_table_and_shipped_thresholds_agree() -> None:
    th = load_thresholds()
    assert set(th) == {*DETECTORS, "checks"}
    assert all("threshold" in th[d] for d in DETECTORS)


def test_every_dataset_format_of_the_loaders(tmp_path) -> None:
    from data_fixtures import make_hf_imagefolder, make_photobench_album, make_snapbench_release, snapbench_records

    js = make_snapbench_release(tmp_path / "sb")
    res = run_diagnose(js, tmp_path / "o1")
    assert res.summary["inputs"]["kind"] == "snapbench-json"
    assert [r.id for r in res.results] == [r["query_id"] for r in snapbench_records()]
    assert all(r.image_scores is not None and r.text_scores is not None for r in res.results)
    res = run_diagnose(make_hf_imagefolder(tmp_path / "hf"), tmp_path / "o2")
    assert res.summary["inputs"]["kind"] == "hf-imagefolder" and res.summary["n_queries"] == 3
    assert {r.id for r in res.results} == {"hf-bench_0000", "hf-bench_0001", "hf-bench_0002"}
    res = run_diagnose(make_photobench_album(tmp_path / "pb"), tmp_path / "o3")  # text queries, no query images
    assert res.summary["inputs"]["kind"] == "photobench" and res.summary["n_images"] == 0
    assert res.summary["n_questions"] == 4 and res.summary["shares"]["oov"]["n"] == 4


def test_a_missing_image_is_file_not_found_not_undecodable(tmp_path) -> None:
    """diagnose's unreadable_images check tells a missing file from one that is not an image."""
    _write(tmp_path / "ok.png", np.full((64, 64, 3), 128, np.uint8))
    (tmp_path / "junk.jpg").write_bytes(b"not an image at all")
    rows = [{"id": "ok", "image": "ok.png"}, {"id": "gone", "image": "missing.jpg"}, {"id": "junk", "image": "junk.jpg"}]
    (tmp_path / "q.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    res = runner.invoke(app, ["diagnose", str(tmp_path / "q.jsonl"), "--out", str(tmp_path / "out"), "--no-progress"])
    assert res.exit_code == 0, res.output
    check = json.loads((tmp_path / "out" / "summary.json").read_text())["checks"]["unreadable_images"]
    assert {e["id"]: e["problem"] for e in check["ids"]} == {"gone": "file not found", "junk": "cannot be decoded"}
    assert "missing.jpg: image file not found" in next(e["reason"] for e in check["ids"] if e["id"] == "gone")
    page = (tmp_path / "out" / "diagnose.html").read_text(encoding="utf-8")
    assert "gone (file not found)" in page and "junk (cannot be decoded)" in page


def test_unreadable_images_are_classified_as_corrupt_classifies_them(tmp_path) -> None:
    """diagnose reads image bytes through corruptions.io (one reader, one classifier): a directory is
    "cannot be read" with the reader's own words, an empty file "cannot be decoded" as empty."""
    (tmp_path / "adir.jpg").mkdir()
    (tmp_path / "empty.png").write_bytes(b"")
    rows = [{"id": "dir", "image": "adir.jpg"}, {"id": "empty", "image": "empty.png"}]
    (tmp_path / "q.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    res = runner.invoke(app, ["diagnose", str(tmp_path / "q.jsonl"), "--out", str(tmp_path / "out"), "--no-progress"])
    assert res.exit_code == 0, res.output
    check = json.loads((tmp_path / "out" / "summary.json").read_text())["checks"]["unreadable_images"]
    by_id = {e["id"]: e for e in check["ids"]}
    assert by_id["dir"]["problem"] == "cannot be read"
    assert by_id["dir"]["reason"].endswith("adir.jpg: is a directory, not an image file")
    assert by_id["empty"]["problem"] == "cannot be decoded"
    assert by_id["empty"]["reason"].endswith("empty.png: image file is empty (0 bytes)")
