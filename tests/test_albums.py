"""Albums and the record-field stress suite (issue 25), on synthetic albums whose answers are known from
their fields (tests/album_fixtures.py), with a bag-of-words text encoder given as ``module:attr``."""

from __future__ import annotations

import csv
import html
import json
import math
import re
import shutil
from collections import defaultdict
from pathlib import Path

import album_fixtures as fx
import numpy as np
import pytest
from typer.testing import CliRunner

from snapbench.albums import apply_condition, load_albums, parse_conditions
from snapbench.albums.records import AlbumRecord, Face
from snapbench.app.stress import StressOptions, run_stress
from snapbench.cli import app
from snapbench.core.errors import ConfigError, InputError

pytest.importorskip("reverse_geocode")  # the albums extra (in the test extra): place names from coordinates
runner = CliRunner()
ENC = "album_fixtures:BagOfWords"
CONDS = ["location_sparsify=0.3", "ocr_dropout=0.25", "caption_truncate=0.51", "faces-mild", "caption_swap",
         "drop=location", "combined-mild"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("albums")
    return fx.write_photobench(root / "pb"), fx.write_jsonl(root / "jl")


@pytest.fixture(scope="module")
def run(data, tmp_path_factory):
    out = tmp_path_factory.mktemp("stress") / "out"
    r = runner.invoke(app, ["stress", str(data[0]), "-e", ENC, "--out", str(out), "--stress", ",".join(CONDS),
                            "--resamples", "300", "--no-progress"])
    assert r.exit_code == 0, r.output
    return out


def _records(out: Path, cond: str) -> list[dict]:
    return [json.loads(x) for x in (out / "records" / f"{cond}.jsonl").read_text().splitlines()]


def _per_query(out: Path) -> dict:
    """{condition: {metric: {query id: value or None}}} from per_query.csv."""
    table: dict = defaultdict(lambda: defaultdict(dict))
    with open(out / "per_query.csv", newline="") as f:
        for row in csv.DictReader(f):
            assert row["mode"] == "T2T"
            table[row["condition"]][row["metric"]][row["query_id"]] = float(row["value"]) if row["value"] else None
    return table


def _kinds(pb: Path) -> dict[str, str]:
    out = {}
    for a in fx.ALBUMS:
        for j, q in enumerate(json.loads((pb / a / "query.json").read_text())):
            out[f"{a}_q{j:04d}"] = q["kind"]
    return out


def _gold(pb: Path) -> dict[str, list[str]]:
    out = {}
    for a in fx.ALBUMS:
        for j, q in enumerate(json.loads((pb / a / "query.json").read_text())):
            out[f"{a}_q{j:04d}"] = [f"{a}/{f}" for f in q["ground_truth"]]
    return out


# ------------------------------------------------------------------------------ loading
def test_all_albums_load_from_the_root_in_both_layouts_with_the_same_fields(data):
    pb, jl = load_albums(data[0]), load_albums(data[1])
    assert pb.albums == jl.albums == list(fx.ALBUMS)
    assert [q.id for q in pb.queries] == [q.id for q in jl.queries]
    assert pb.qrels == jl.qrels
    assert len(pb.records) == 3 * fx.N_PHOTOS and [r.id for r in pb.records] == sorted(r.id for r in jl.records)
    by_id = {r.id: r for r in jl.records}
    for r in pb.records:
        album_no = int(r.album[-1])
        p = fx.photo_fields(album_no, int(r.id.split("_")[-1][:4]))
        assert (r.latitude, r.longitude, r.time, r.caption, r.ocr) == (p["latitude"], p["longitude"], p["time"],
                                                                      p["caption"], p["ocr"])
        assert r.people == [("me" if f == "1" else fx.PEOPLE[f][0]) for f in p["faces"]]
        assert by_id[r.id].people == r.people and by_id[r.id].time == r.time
    zero = [q for q, v in pb.qrels.items() if not v]
    assert len(zero) == 3  # one absent-city query per album
    one = load_albums(data[0] / "album2")
    assert one.albums == ["album2"] and one.records[0].id.startswith("album2/") and one.queries[0].id == "album2_q0000"


def test_the_hugging_face_copy_needs_a_split(tmp_path, data):
    root = tmp_path / "hf"
    for a in fx.ALBUMS:
        shutil.copytree(data[0] / a / "images", root / a / "images")
        (root / "protected" / a).mkdir(parents=True)
        qs = json.loads((data[0] / a / "query.json").read_text())
        (root / "protected" / a / "validation.json").write_text(json.dumps(qs[:10]))
        (root / "protected" / a / "test.json").write_text(json.dumps([{k: v for k, v in q.items() if "ground" not in k}
                                                                      for q in qs[10:]]))
    ds = load_albums(root, split="validation")
    assert len(ds.queries) == 30 and ds.albums == list(fx.ALBUMS) and len(ds.records) == 3 * fx.N_PHOTOS
    with pytest.raises(InputError, match="choose a split"):
        load_albums(root)
    with pytest.raises(InputError, match="no ground truth"):
        load_albums(root, split="test")


# ------------------------------------------------------------------------------ retrieval per album
def _own_album_metrics(records: list[dict], queries: dict[str, str], gold: dict[str, list[str]], *, own: bool):
    """Recall@10 and hit@1 recomputed from a records file: bag-of-words cosine, stable ranking by score then
    gallery order, over the query's own album (``own``) or over every album."""
    texts = [r["text"] for r in records]
    v = fx.bow_vectors(texts).astype(np.float64)
    v /= np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
    out = {}
    for qid, question in queries.items():
        album = qid.split("_q")[0]
        cols = [j for j, r in enumerate(records) if r["album"] == album or not own]
        q = fx.bow_vectors([question]).astype(np.float64)[0]
        q /= np.linalg.norm(q)
        s = v[cols] @ q
        order = [records[cols[j]]["id"] for j in np.argsort(-s, kind="stable")]
        g = set(gold[qid])
        if g:
            out[qid] = (len(g & set(order[:10])) / len(g), float(order[0] in g))
    return out


def test_each_query_ranks_only_its_album(run, data):
    pq = _per_query(run)
    questions = {}
    for a in fx.ALBUMS:
        for j, q in enumerate(json.loads((data[0] / a / "query.json").read_text())):
            questions[f"{a}_q{j:04d}"] = q["query_en"]
    gold = _gold(data[0])
    for cond in ("clean", "combined-mild", "caption_swap"):
        mine = _own_album_metrics(_records(run, cond), questions, gold, own=True)
        assert mine
        for qid, (rec10, hit1) in mine.items():
            assert pq[cond]["recall@10"][qid] == pytest.approx(rec10, abs=1e-9), (cond, qid)
            assert pq[cond]["hit@1"][qid] == pytest.approx(hit1, abs=1e-9), (cond, qid)
        assert all(pq[cond]["recall@10"][q] is None for q, g in gold.items() if not g)  # zero-GT: not counted
    everywhere = _own_album_metrics(_records(run, "clean"), questions, gold, own=False)
    assert any(everywhere[q] != mine_q for q, mine_q in _own_album_metrics(_records(run, "clean"), questions, gold,
                                                                           own=True).items())


def test_the_default_template_makes_place_and_person_queries_findable(run, data):
    import reverse_geocode

    pq = _per_query(run)
    kinds = _kinds(data[0])
    gold = _gold(data[0])
    for qid, kind in kinds.items():
        if kind in ("place", "person") and gold[qid]:
            assert pq["clean"]["hit@1"][qid] == 1.0, qid
            assert pq["clean"]["recall@10"][qid] == pytest.approx(min(1.0, 10 / len(gold[qid]))), qid
    recs = {r["id"]: r for r in _records(run, "clean")}
    for r in recs.values():
        if r["latitude"] is not None:
            geo = reverse_geocode.get((r["latitude"], r["longitude"]))
            assert geo["city"] in r["text"] and geo["country"] in r["text"]
        if "me" in (r["people"] or []):
            assert "me, myself" in r["text"]
        if r["time"] is None:
            assert "Taken" not in r["text"]
        if r["ocr"] is None:
            assert "Text:" not in r["text"]
    assert recs["album1/IMG_0001.jpg"]["text"].count("Taken 2023 February winter morning Thursday") == 1


def test_the_records_file_holds_the_geocoded_place_the_text_says(run, data, tmp_path):
    """docs/albums.md: the records file holds every field after the stress; a photo with coordinates and
    no place of its own holds the geocoded place its text names, not null."""
    recs = _records(run, "clean")
    located = [r for r in recs if r["latitude"] is not None]
    assert located and all(r["place"] and f"Place: {r['place']}." in r["text"] for r in located)
    assert all(r["place"] is None and "Place:" not in r["text"] for r in recs if r["latitude"] is None)
    clean = {r["id"]: r for r in recs}
    for r in _records(run, "location_sparsify=0.3"):  # a kept location keeps its place, a removed one none
        assert r["place"] == (clean[r["id"]]["place"] if r["latitude"] is not None else None)
    # a template without a place needs no geocoder: the records keep only their own place (none here)
    res = run_stress(data[1], ENC, tmp_path / "np", StressOptions(stress="drop=ocr", template="[{caption}.]",
                                                                  resamples=20, report=False))
    assert all(r["place"] is None for r in _records(res.out, "clean"))


# ------------------------------------------------------------------------------ operators
def _changed(out: Path, cond: str):
    clean = {r["id"]: r for r in _records(out, "clean")}
    return clean, _records(out, cond)


def _within(share: float, p: float, n: int) -> bool:
    return abs(share - p) <= 4 * math.sqrt(p * (1 - p) / n) + 1e-9


def test_each_operator_rate_in_its_records_file_and_other_fields_untouched(run):
    clean, loc = _changed(run, "location_sparsify=0.3")
    had = [r for r in loc if clean[r["id"]]["latitude"] is not None]
    lost = sum(r["latitude"] is None for r in had)
    assert _within(lost / len(had), 0.3, len(had)) and 0 < lost < len(had)
    for r in loc:
        c = clean[r["id"]]
        assert (r["album"], r["caption"], r["ocr"], r["time"], r["people"]) == (c["album"], c["caption"], c["ocr"],
                                                                               c["time"], c["people"])
        assert r["latitude"] is None or (r["latitude"], r["longitude"]) == (c["latitude"], c["longitude"])
    clean, ocr = _changed(run, "ocr_dropout=0.25")
    had = [r for r in ocr if clean[r["id"]]["ocr"]]
    assert _within(sum(r["ocr"] is None for r in had) / len(had), 0.25, len(had))
    assert all(r["caption"] == clean[r["id"]]["caption"] and r["latitude"] == clean[r["id"]]["latitude"] for r in ocr)
    clean, cap = _changed(run, "caption_truncate=0.51")
    shares = []
    for r in cap:
        c = clean[r["id"]]["caption"]
        assert c.startswith(r["caption"] or "")
        shares.append(len(r["caption"] or "") / len(c))
        assert r["ocr"] == clean[r["id"]]["ocr"] and r["people"] == clean[r["id"]]["people"]
    assert abs(float(np.median(shares)) - 0.51) < 0.06
    clean, faces = _changed(run, "faces-mild")
    other = kept_other = owner = kept_owner = 0
    for r in faces:
        before, after = clean[r["id"]]["people"] or [], r["people"] or []
        other += sum(p != "me" for p in before)
        kept_other += sum(p != "me" for p in after)
        owner += before.count("me")
        kept_owner += after.count("me")
        assert set(after) <= set(before) and r["caption"] == clean[r["id"]]["caption"]
    assert _within(1 - kept_other / other, 0.1, other) and _within(1 - kept_owner / owner, 0.02, owner)
    clean, ablated = _changed(run, "drop=location")
    assert all(r["latitude"] is None and r["place"] is None for r in ablated)
    assert [r["id"] for r in ablated] == list(clean)  # ids and order kept


def test_caption_swap_donors_come_from_other_albums_and_the_same_month(run):
    clean, swapped = _changed(run, "caption_swap")
    for r in swapped:
        donor = clean[r["caption_donor"]]
        assert donor["album"] != r["album"]
        assert r["caption"] == donor["caption"]
        own_month = clean[r["id"]]["time"][:7][5:] if clean[r["id"]]["time"] else None
        donor_month = donor["time"][:7][5:] if donor["time"] else None
        assert own_month == donor_month
        assert len(donor["people"] or []) == len(clean[r["id"]]["people"] or [])  # enough donors for an exact match
        assert r["ocr"] == clean[r["id"]]["ocr"] and r["time"] == clean[r["id"]]["time"]


def _synthetic(n: int) -> list[AlbumRecord]:
    faces = (Face("1", ("me",), True), Face("2", ("ann",)), Face("3", ("ben",)))
    return [AlbumRecord(f"a{i % 7}/p{i}.jpg", f"a{i % 7}", caption="word " * (5 + i % 20), ocr="sign text",
                        time=f"2022-{1 + i % 12:02d}-03T10:00:00", latitude=10.0, longitude=20.0, faces=faces)
            for i in range(n)]


def test_rates_on_many_records_and_independent_of_record_order():
    recs = _synthetic(4000)
    cond = parse_conditions("combined-mild")[0]
    res = apply_condition(recs, cond, seed=3).records
    n = len(recs)
    assert _within(sum(r.latitude is None for r in res) / n, 0.30, n)
    assert _within(sum(r.ocr is None for r in res) / n, 0.25, n)
    assert _within(sum(not any(f.owner for f in r.faces) for r in res) / n, 0.02, n)
    assert _within(sum(sum(not f.owner for f in r.faces) for r in res) / (2 * n), 0.90, 2 * n)
    assert abs(np.median([len(a.caption or "") / len(b.caption) for a, b in zip(res, recs)]) - 0.51) < 0.02
    rev = apply_condition(recs[::-1], cond, seed=3).records[::-1]
    assert rev == res  # per record, not per position
    assert apply_condition(recs, cond, seed=4).records != res


# ------------------------------------------------------------------------------ effects
def _mean_by_kind(pq, cond: str, kinds: dict[str, str], kind: str) -> float:
    vals = [v for q, v in pq[cond]["recall@10"].items() if kinds[q] == kind and v is not None]
    return float(np.mean(vals))


def test_each_stress_lowers_the_queries_that_need_its_field_and_leaves_the_others(run, data):
    pq = _per_query(run)
    kinds = _kinds(data[0])

    def m(cond, kind):
        return _mean_by_kind(pq, cond, kinds, kind)

    assert m("location_sparsify=0.3", "place") < m("clean", "place") - 0.05
    assert m("location_sparsify=0.3", "person") == m("clean", "person")
    assert m("caption_truncate=0.51", "caption") < m("clean", "caption") - 0.1
    assert m("ocr_dropout=0.25", "ocr") < m("clean", "ocr") - 0.05
    assert m("ocr_dropout=0.25", "caption") == m("clean", "caption")
    summary = json.loads((run / "stress.json").read_text())
    loc = summary["conditions"]["location_sparsify=0.3"]["groups"]
    assert loc["source=M"]["recall@10"]["delta"] < 0 and loc["source=F"]["recall@10"]["delta"] == 0


def test_the_same_seed_gives_byte_identical_records_and_another_seed_others(run, data, tmp_path):
    for seed, same in ((0, True), (1, False)):
        out = tmp_path / f"s{seed}"
        res = run_stress(data[0], ENC, out, StressOptions(stress="combined-mild,caption_swap", seed=seed, resamples=50,
                                                           report=False))
        assert res.n_records == 3 * fx.N_PHOTOS
        for cond in ("combined-mild", "caption_swap"):
            a = (run / "records" / f"{cond}.jsonl").read_bytes()
            b = (out / "records" / f"{cond}.jsonl").read_bytes()
            assert (a == b) is same, (seed, cond)


# ------------------------------------------------------------------------------ statistics
def test_micro_and_macro_deltas_equal_a_recomputation_from_per_query_csv(run, data):
    pq = _per_query(run)
    summary = json.loads((run / "stress.json").read_text())
    ld = load_albums(data[0])
    source = {q.id: q.tags["source"] for q in ld.queries}
    for cond in CONDS:
        for group, rows in (("all", lambda q: True), ("source=M", lambda q: source[q] == "M"),
                            ("album=album2", lambda q: q.startswith("album2_"))):
            for metric in ("recall@10", "hit@1", "mrr"):
                def micro(c):
                    v = [x for q, x in pq[c][metric].items() if rows(q) and x is not None]
                    return float(np.mean(v))

                def macro(c):
                    per = [np.mean([x for q, x in pq[c][metric].items() if rows(q) and x is not None
                                    and q.startswith(a + "_")]) for a in fx.ALBUMS
                           if any(rows(q) and x is not None and q.startswith(a + "_") for q, x in pq[c][metric].items())]
                    return float(np.mean(per))

                e = summary["conditions"][cond]["groups"][group][metric]
                assert e["delta"] == pytest.approx(micro(cond) - micro("clean"), abs=1e-12)
                assert e["delta_macro"] == pytest.approx(macro(cond) - macro("clean"), abs=1e-12)
                assert e["clean"] == pytest.approx(micro("clean"), abs=1e-12)
    e = summary["conditions"]["combined-mild"]["groups"]["all"]["recall@10"]
    assert summary["resample_by"] == "query" and summary["resample_by_requested"] == "album"
    assert e["resample_by"] == "album" and e["resampled"] == "query" and e["ci_macro"] is None
    assert "too few" in e["note"] and any("3 albums are too few" in n for n in summary["notes"])
    assert e["ci"][0] <= e["delta"] <= e["ci"][1]


def test_enough_albums_are_resampled_by_album():
    from snapbench.albums.evaluate import MIN_ALBUMS, paired_delta
    from snapbench.evaluate.metrics import QueryStat

    rng = np.random.default_rng(0)
    n_alb, per = MIN_ALBUMS + 2, 5
    clean = rng.integers(0, 2, n_alb * per).astype(float)
    stressed = clean * (rng.random(n_alb * per) > 0.3)
    ones = np.ones(n_alb * per)
    rows = [np.arange(a * per, (a + 1) * per) for a in range(n_alb)]
    e = paired_delta(QueryStat(clean, ones), QueryStat(stressed, ones), rows, resample_by="album", resamples=500,
                     seed=0, level=0.95, key="t")
    assert e["resampled"] == "album" and e["ci_macro"] is not None and "note" not in e
    macro = np.mean([stressed[r].mean() - clean[r].mean() for r in rows])
    assert e["delta_macro"] == pytest.approx(macro) and e["delta"] == pytest.approx(stressed.mean() - clean.mean())
    assert e["ci_macro"][0] <= macro <= e["ci_macro"][1] and e["ci"][0] <= e["delta"] <= e["ci"][1]


def test_one_condition_encodes_no_more_than_queries_clean_and_changed_records(data, tmp_path):
    fx.BagOfWords.encoded.clear()
    out = tmp_path / "o"
    run_stress(data[0], ENC, out, StressOptions(stress="location_sparsify=0.3", resamples=50, report=False))
    clean = {r["id"]: r["text"] for r in _records(out, "clean")}
    changed = sum(r["text"] != clean[r["id"]] for r in _records(out, "location_sparsify=0.3"))
    n_q = len(load_albums(data[0]).queries)
    assert 0 < changed < len(clean)
    assert len(fx.BagOfWords.encoded) == n_q + len(clean) + changed
    fx.BagOfWords.encoded.clear()
    run_stress(data[0], ENC, out, StressOptions(stress="location_sparsify=0.3", resamples=50, report=False))
    assert fx.BagOfWords.encoded == []  # resumed: every vector read back


def test_outputs_and_report(run):
    assert (run / "report.html").is_file() and (run / "run.json").is_file()
    page = (run / "report.html").read_text()
    for words in ("Which query types depend on which field", "Caption-swap probe", "Curves over field availability",
                  "image embeddings are untouched", "too few"):
        assert words in page
    conds = {r["condition"] for r in csv.DictReader(open(run / "per_query.csv"))}
    assert conds == {"clean", *CONDS}


# ------------------------------------------------------------------------------ bad input
def _bad_album(tmp_path, data, edit) -> Path:
    root = tmp_path / "bad"
    shutil.copytree(data[0], root)
    edit(root / "album2")
    return root


@pytest.mark.parametrize("edit,words", [
    (lambda a: _meta(a, "IMG_0003.jpg", latitude=200), ["metadata.json", "IMG_0003.jpg", "latitude 200"]),
    (lambda a: _meta(a, "IMG_0004.jpg", time="yesterday"), ["metadata.json", "IMG_0004.jpg", "'yesterday'"]),
    (lambda a: _faces(a), ["face_info_en.json", "IMG_0000.jpg", "face id '9'"]),
    (lambda a: _gt(a), ["query.json", "album2_q0000", "NOPE.jpg"]),
])
def test_bad_inputs_are_named_without_a_traceback(tmp_path, data, edit, words):
    root = _bad_album(tmp_path, data, edit)
    r = runner.invoke(app, ["stress", str(root), "-e", ENC, "--out", str(tmp_path / "o"), "--stress", "ocr_dropout=0.2",
                            "--no-progress"])
    assert r.exit_code != 0 and "Traceback" not in r.output
    for w in words:
        assert w in r.output, (w, r.output)


def _meta(album: Path, file: str, **fields) -> None:
    p = album / "images" / "metadata" / "metadata.json"
    m = json.loads(p.read_text())
    m[file].update(fields)
    p.write_text(json.dumps(m))


def _faces(album: Path) -> None:
    p = album / "images" / "faceid" / "face_info_en.json"
    m = json.loads(p.read_text())
    m["image_to_face_ids"]["IMG_0000.jpg"] = ["1", "9"]
    p.write_text(json.dumps(m))


def _gt(album: Path) -> None:
    p = album / "query.json"
    qs = json.loads(p.read_text())
    qs[0]["ground_truth"] = ["NOPE.jpg"]
    p.write_text(json.dumps(qs))


@pytest.mark.parametrize("spec,words", [
    ("ocr_dropout=1.5", ["ocr_dropout", "1.5", "out of range"]),
    ("blur=0.3", ["unknown stress operator", "caption_truncate", "combined-mild"]),
    ("drop=gps", ["unknown field 'gps'", "location"]),
    ("drop=tiime", ["unknown field 'tiime'", "did you mean 'time'?", "known: caption, ocr, time"]),
    ("ocr_dropot=0.2", ["unknown stress operator or preset 'ocr_dropot'", "did you mean 'ocr_dropout'"]),
    ("a/b", ["file name"]),
])
def test_bad_stress_specs_are_refused_listing_what_is_known(tmp_path, data, spec, words):
    r = runner.invoke(app, ["stress", str(data[0]), "-e", ENC, "--out", str(tmp_path / "o"), "--stress", spec])
    assert r.exit_code != 0 and "Traceback" not in r.output
    for w in words:
        assert w in r.output, (w, r.output)


def test_a_record_template_override_and_an_unknown_field(run, data, tmp_path):
    res = run_stress(data[1], ENC, tmp_path / "t", StressOptions(stress="drop=caption", template="[{place}] [{people}]",
                                                                  resamples=50, report=False))
    recs = _records(res.out, "clean")
    assert all("showing" not in r["text"] for r in recs)
    assert any("Paris" in r["text"] for r in recs)
    with pytest.raises(ConfigError, match=r"unknown field \{town\}.*\{place\}"):
        run_stress(data[1], ENC, tmp_path / "t2", StressOptions(stress="drop=caption", template="{town}"))


def test_the_missing_geocoder_names_the_extra(monkeypatch):
    import sys

    from snapbench.albums import records as template

    template._geocoder.cache_clear()
    template.reverse_geocode.cache_clear()
    monkeypatch.setitem(sys.modules, "reverse_geocode", None)
    from snapbench.core.install_hint import install_hint

    with pytest.raises(ConfigError) as exc:
        template.RecordTemplate().render(AlbumRecord("a/x.jpg", "a", latitude=1.0, longitude=2.0))
    # the hint of the running installation (core/install_hint), and no flag blamed: none was given
    assert install_hint("albums") in str(exc.value) and exc.value.param is None
    template._geocoder.cache_clear()


def test_reject_metrics_of_zero_gt_queries_under_stress_equal_a_recomputation(data, tmp_path):
    thr = 0.3
    res = run_stress(data[0], ENC, tmp_path / "r", StressOptions(stress="drop=location", set_threshold=thr,
                                                                  resamples=50, report=False))
    summary = json.loads((res.out / "stress.json").read_text())
    gold = _gold(data[0])
    questions = {q.id: q.question for q in load_albums(data[0]).queries}
    for cond, key in (("clean", "clean"), ("drop=location", "stressed")):
        recs = _records(res.out, cond)
        v = fx.bow_vectors([r["text"] for r in recs]).astype(np.float64)
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        a = b = c = 0
        for qid, question in questions.items():
            q = fx.bow_vectors([question]).astype(np.float64)[0]
            q /= np.linalg.norm(q)
            album = qid.split("_q")[0]
            empty = not any(r["album"] == album and float(v[j] @ q) >= thr - 1e-6 for j, r in enumerate(recs))
            zero = not gold[qid]
            a += empty and zero
            b += empty and not zero
            c += zero and not empty
        e = summary["conditions"]["drop=location"]["groups"]["all"]
        assert e["reject_recall"][key] == pytest.approx(a / (a + c))
        assert e["reject_precision"][key] == pytest.approx(a / (a + b))
    assert summary["n_excluded_zero_gt"] == 3 and e["reject_recall"]["n_counted"] == len(questions)


@pytest.mark.parametrize("field,value,words", [
    ("latitude", 200, ["gallery.jsonl", "album1/IMG_0000.jpg", "latitude 200"]),
    ("time", "yesterday", ["gallery.jsonl", "album1/IMG_0000.jpg", "'yesterday'"]),
])
def test_bad_jsonl_records_are_named(tmp_path, data, field, value, words):
    root = tmp_path / "jl"
    shutil.copytree(data[1], root)
    lines = (root / "gallery.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    first[field] = value
    if field == "latitude":
        first["longitude"] = 1.0
    (root / "gallery.jsonl").write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    r = runner.invoke(app, ["stress", str(root), "-e", ENC, "--out", str(tmp_path / "o"), "--stress", "drop=ocr"])
    assert r.exit_code != 0 and "Traceback" not in r.output
    for w in words:
        assert w in r.output, (w, r.output)


def _drop_album(root: Path, relevant: bool) -> str:
    """Remove the 'album' field of a gallery record the qrels name, or add a record without 'album' that
    they do not name; its id."""
    lines = [json.loads(x) for x in (root / "gallery.jsonl").read_text().splitlines()]
    if relevant:
        named = {g for gs in json.loads((root / "qrels.json").read_text()).values() for g in gs}
        rec = next(x for x in lines if x["id"] in named)
        del rec["album"]
    else:
        rec = {"id": "stray.jpg", "caption": "a photo of a lake"}
        lines.append(rec)
    (root / "gallery.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return rec["id"]


def test_a_relevant_gallery_record_without_album_is_named_as_such(tmp_path, data):
    """A record without 'album' is in the album 'all': the refusal says so, not only 'from another album'."""
    from snapbench.albums.load import load_albums

    root = tmp_path / "jl"
    shutil.copytree(data[1], root)
    rid = _drop_album(root, relevant=True)
    with pytest.raises(InputError) as e:
        load_albums(root)
    msg = str(e.value)
    assert repr(rid) in msg and "without an 'album' field" in msg and "in the album 'all'" in msg, msg
    assert "from another album" not in msg, msg


def test_an_unjudged_gallery_record_without_album_is_noted(tmp_path, data):
    from snapbench.albums.load import load_albums

    root = tmp_path / "jl"
    shutil.copytree(data[1], root)
    rid = _drop_album(root, relevant=False)
    ds = load_albums(root)
    assert [r.album for r in ds.records if r.id == rid] == ["all"]
    assert any("no 'album' field" in n and repr(rid) in n and "'all'" in n for n in ds.notes), ds.notes


def test_the_availability_curve_reads_caption_characters_for_truncation(run):
    from snapbench.render.stress import availability_points

    summary = json.loads((run / "stress.json").read_text())
    clean = {r["id"]: r["caption"] for r in _records(run, "clean")}
    kept = sum(len(r["caption"] or "") for r in _records(run, "caption_truncate=0.51")) / sum(map(len, clean.values()))
    pts = availability_points(summary, "recall@10")
    assert ("caption_truncate=0.51" in {c for _, _, c in pts["caption"]})
    assert [x for x, _, c in pts["caption"] if c == "caption_truncate=0.51"] == [pytest.approx(kept)]
    loc = {c: x for x, _, c in pts["location"]}
    assert loc["drop=location"] == 0.0 and loc["clean"] > loc["location_sparsify=0.3"] > 0


def test_the_template_writes_present_fields_only_and_time_as_search_words():
    import calendar

    from snapbench.albums.records import RecordTemplate

    t = RecordTemplate()
    rec = AlbumRecord("a/1.jpg", "a", caption="see {place} [draft]", ocr="EXIT", time="2024-02-29T19:05:00",
                      latitude=51.5074, longitude=-0.1278,
                      faces=(Face("1", ("me", "myself"), True), Face("7", ("ann", "mum"))))
    text = t.render(rec)
    weekday = calendar.day_name[calendar.weekday(2024, 2, 29)]
    assert text.startswith("see {place} [draft]. Text: EXIT.")  # a value is written as it is, never re-read
    assert f"Taken 2024 February winter evening {weekday}." in text
    assert "London" in text and "United Kingdom" in text
    assert text.endswith("People: me, myself, ann, mum.")
    bare = t.render(AlbumRecord("a/2.jpg", "a", caption="a cat", time="2021-07-04"))
    assert bare == f"a cat. Taken 2021 July summer {calendar.day_name[calendar.weekday(2021, 7, 4)]}."
    assert t.render(AlbumRecord("a/3.jpg", "a")) == ""
    assert RecordTemplate("[{city} in {country}]").render(rec.without(caption=None)) == "London in United Kingdom"


def test_clean_results_per_group_micro_and_macro(run):
    pq = _per_query(run)
    summary = json.loads((run / "stress.json").read_text())
    for album in fx.ALBUMS:
        vals = [v for q, v in pq["clean"]["recall@10"].items() if q.startswith(album + "_") and v is not None]
        e = summary["clean"][f"album={album}"]["recall@10"]
        assert e["micro"] == pytest.approx(np.mean(vals)) and e["n_counted"] == len(vals) and e["n_albums"] == 1
    per_album = [summary["clean"][f"album={a}"]["recall@10"]["micro"] for a in fx.ALBUMS]
    assert summary["clean"]["all"]["recall@10"]["macro"] == pytest.approx(np.mean(per_album))


def test_a_rerun_with_another_seed_is_refused_unless_forced(data, tmp_path):
    out = tmp_path / "o"
    run_stress(data[0], ENC, out, StressOptions(stress="ocr_dropout=0.5,drop=time", resamples=20, report=False))
    with pytest.raises(ConfigError, match="seed"):
        run_stress(data[0], ENC, out, StressOptions(stress="ocr_dropout=0.5", seed=5, resamples=20, report=False))
    fx.BagOfWords.encoded.clear()
    run_stress(data[0], ENC, out, StressOptions(stress="ocr_dropout=0.5", seed=5, resamples=20, report=False,
                                                force=True))
    assert len(fx.BagOfWords.encoded) > 3 * fx.N_PHOTOS  # vectors of the other configuration are not reused
    assert sorted(p.name for p in (out / "records").iterdir()) == ["clean.jsonl", "ocr_dropout=0.5.jsonl"]
    r = runner.invoke(app, ["stress", str(data[0]), "-e", ENC, "--out", str(out), "--stress", "ocr_dropout=0.5"])
    assert r.exit_code == 2 and "--seed" in r.output and "--force" in r.output and "Traceback" not in r.output


def test_a_failed_start_leaves_no_output_folder_behind(data, tmp_path):
    out = tmp_path / "o"
    r = runner.invoke(app, ["stress", str(data[0]), "-e", "no_such_module:Thing", "--out", str(out), "--stress", "drop=ocr"])
    assert r.exit_code == 2 and "no_such_module" in r.output and not out.exists()
    r = runner.invoke(app, ["stress", str(data[0]), "-e", ENC, "--out", str(out), "--stress", "drop=ocr",
                            "--resamples", "20", "--no-report", "--no-progress"])
    assert r.exit_code == 0, r.output


def test_quiet_lists_the_result_files_only(data, tmp_path):
    """-q as run's and compare's: no progress, no findings, no notes; stdout lists the result files."""
    root = tmp_path / "jl"
    shutil.copytree(data[1], root)
    _drop_album(root, relevant=False)  # a note the quiet run does not print
    out = tmp_path / "o"
    r = runner.invoke(app, ["stress", str(root), "-e", ENC, "--out", str(out), "--stress", "drop=ocr",
                            "--resamples", "20", "-q"])
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines() == [str(out / "stress.json"), str(out / "per_query.csv"), str(out / "report.html")]
    assert r.stderr == "", r.stderr
    assert json.loads((out / "stress.json").read_text())["notes"]  # the note is in the file


def test_the_output_folder_is_claimed_like_every_command(data, tmp_path):
    from snapbench.store import write_run_json

    write_run_json(tmp_path / "run", "run", {"fingerprint": {}})
    r = runner.invoke(app, ["stress", str(data[0]), "-e", ENC, "--out", str(tmp_path / "run" / "st"), "--stress",
                            "drop=ocr"])
    assert r.exit_code == 2 and "inside" in r.output and "snapbench run" in r.output
    r = runner.invoke(app, ["stress", str(data[0]), "-e", ENC, "--out", str(tmp_path / "run"), "--stress", "drop=ocr"])
    assert r.exit_code == 2 and "snapbench run" in r.output


def test_chinese_queries_with_language_cn(data):
    ds = load_albums(data[0], language="cn")
    assert ds.queries[0].question == f"{fx.OBJECTS[0]}的照片" and ds.queries[0].id == "album1_q0000"
    with pytest.raises(ConfigError, match="unknown language 'fr'.*; known: en, cn"):
        load_albums(data[0], language="fr")


def test_language_cn_on_a_jsonl_dataset_is_refused_like_split(data, tmp_path):
    """A JSONL query has one text: --language would change nothing, so it is refused as --split is."""
    with pytest.raises(InputError, match="this is a JSONL dataset") as exc:
        load_albums(data[1], language="cn")
    assert exc.value.param == "language"
    assert load_albums(data[1], language="en").queries  # the default is no choice made
    for flag, value in (("--language", "cn"), ("--split", "validation")):
        r = runner.invoke(app, ["stress", str(data[1]), "-e", ENC, "--out", str(tmp_path / flag), "--stress",
                                "drop=ocr", flag, value, "--no-progress"])
        assert r.exit_code != 0 and "Traceback" not in r.output and flag in r.output, r.output
        assert "JSONL dataset" in r.output and not (tmp_path / flag).exists()



def test_an_unknown_split_or_resampling_unit_is_refused_with_a_did_you_mean(data, tmp_path):
    with pytest.raises(InputError, match=re.escape("unknown split 'valdation' (did you mean 'validation'?); "
                                                   "known: validation, test, query")) as exc:
        load_albums(data[0], split="valdation")
    assert exc.value.param == "split"
    with pytest.raises(ConfigError, match=re.escape("unknown resampling unit 'albums' (did you mean 'album'?); "
                                                    "known: album, query")) as exc:
        run_stress(data[1], ENC, tmp_path / "o", StressOptions(resample_by="albums"))
    assert exc.value.param == "resample_by" and not (tmp_path / "o").exists()


class _FailingEncoder:
    modalities = frozenset({"text"})

    def encode_texts(self, texts):
        raise RuntimeError("out of memory")


class _ZeroEncoder:
    modalities = frozenset({"text"})

    def encode_texts(self, texts):
        return np.zeros((len(texts), 8), np.float32)


def test_stress_calls_its_encoder_the_way_run_and_encode_do(data, tmp_path):
    """A failing model is a clean error naming the batch; all-zero embeddings are said once per kind of text."""
    with pytest.raises(InputError, match=r"the encoder failed on a batch of \d+ queries: RuntimeError: out of memory"):
        run_stress(data[1], _FailingEncoder(), tmp_path / "fail", StressOptions(stress="drop=ocr", resamples=50))
    with pytest.warns(UserWarning, match="all-zero embeddings") as caught:
        run_stress(data[1], _ZeroEncoder(), tmp_path / "zero", StressOptions(stress="drop=ocr", resamples=50))
    said = [str(w.message) for w in caught]
    assert len(said) == 2, said
    assert re.search(r"all-zero embeddings for (\d+) of \1 queries", said[0]), said
    assert re.search(r"all-zero embeddings for (\d+) of \1 record texts", said[1]), said

# ------------------------------------------------------------------------------ small albums, no-op swap
def test_small_albums_headline_a_metric_that_can_move_and_name_the_fixed_ones(tmp_path):
    """3 albums of 5 photos: hit@10 and recall@10 retrieve every record of an album, so they cannot
    fall; the findings speak of hit@1 and a note names every fixed metric@k (k >= 5)."""
    root = fx.write_jsonl(tmp_path / "small", n_photos=5)
    out = tmp_path / "st"
    r = runner.invoke(app, ["stress", str(root), "-e", ENC, "--out", str(out), "--stress",
                            "location_sparsify=0.3,combined-mild,caption_swap", "--resamples", "200", "--no-progress"])
    assert r.exit_code == 0, r.output
    s = json.loads((out / "stress.json").read_text())
    assert s["album_records"] == {a: 5 for a in fx.ALBUMS}
    assert s["metric"] == "hit@1"
    assert s["fixed_metrics"] == ["hit@5", "hit@10", "hit@20", "recall@5", "recall@10", "recall@20"]
    note = next(n for n in s["notes"] if "fixed by construction" in n)
    assert all(m in note for m in s["fixed_metrics"]) and "5 record(s)" in note
    assert "note: " + note[:40] in r.output
    for cid in ("location_sparsify=0.3", "combined-mild", "caption_swap"):
        line = next(x for x in r.output.splitlines() if f"Stress {cid}" in x)
        assert "hit@1" in line and "recall@10" not in line
        assert s["conditions"][cid]["groups"]["all"]["recall@10"]["delta"] == 0  # why it cannot headline


def test_a_caption_swap_that_changed_no_caption_gives_no_verdict(tmp_path):
    root = fx.write_jsonl(tmp_path / "same", n_photos=12, caption="a photo")
    out = tmp_path / "st"
    res = run_stress(root, ENC, out, StressOptions(stress="caption_swap", resamples=50))
    sw = res.summary["conditions"]["caption_swap"]["caption_swap"]
    assert sw["swapped"] == 0 and sw["captions"] == 36
    from snapbench.render.stress import stress_findings

    text = dict(stress_findings(res.summary))["finding-caption-swap"]
    assert "0 of 36 captions swapped" in text and "changed no captions" in text
    assert "does not depend" not in text and "depends on" not in text
    page = (out / "report.html").read_text()
    assert "changed no captions" in page


def test_a_caption_swap_reports_how_many_captions_it_changed(run):
    s = json.loads((run / "stress.json").read_text())
    sw = s["conditions"]["caption_swap"]["caption_swap"]
    clean = _records(run, "clean")
    swapped = _records(run, "caption_swap")
    assert sw["captions"] == sum(1 for r in clean if r["caption"])
    assert sw["swapped"] == sum(1 for a, b in zip(clean, swapped) if a["caption"] != b["caption"]) > 0
    assert f"{sw['swapped']} of {sw['captions']} captions swapped" in (run / "report.html").read_text()


def test_too_few_albums_records_the_unit_resampled_and_the_one_asked(run):
    s = json.loads((run / "stress.json").read_text())
    assert s["n_albums"] == 3 and s["resample_by"] == "query" and s["resample_by_requested"] == "album"
    page = (run / "report.html").read_text()
    assert "queries resampled (album resampling asked; 3 albums are too few)" in page
    assert "resamples of albums requested" not in page


def _swap_summary(run, ci, delta, donor_match, n_counted=9):
    """The module run's stress.json with its caption_swap condition's headline set to ``delta`` / ``ci``."""
    s = json.loads((run / "stress.json").read_text())
    body = s["conditions"]["caption_swap"]
    body["groups"]["all"][s["metric"]].update(delta=delta, ci=ci, n_counted=n_counted)
    body["caption_swap"] = {"donor_match": donor_match, "captions": sum(donor_match.values()),
                            "swapped": sum(donor_match.values())}
    return s


def test_a_wide_caption_swap_ci_around_zero_says_the_data_cannot_tell(run):
    """hit@1 -22.2 (95% CI -77.8 to +33.3) on 9 queries holds 0 and a large loss alike: no "no measurable
    effect"; and the donors' matching is said as recorded (3 of 12 matched by month only)."""
    from snapbench.render.stress import render_stress_report, stress_findings

    s = _swap_summary(run, [-0.778, 0.333], -0.222, {"month+length+faces": 9, "month": 3})
    text = dict(stress_findings(s))["finding-caption-swap"]
    assert "No measurable effect" not in text and "does not depend" not in text
    assert "cannot tell" in text and "9 counted queries" in text and "from -77.8 to +33.3" in text
    assert "matched by month, length and faces for 9, by month only for 3" in text
    assert "matched by month, length and faces)" not in text and "for all" not in text
    assert "cannot tell" in render_stress_report(s)


def test_only_a_narrow_caption_swap_ci_around_zero_says_no_measurable_effect(run):
    from snapbench.render.stress import stress_findings

    s = _swap_summary(run, [-0.02, 0.015], -0.002, {"month+length+faces": 200}, n_counted=400)
    text = dict(stress_findings(s))["finding-caption-swap"]
    assert "No measurable effect" in text and "cannot tell" not in text
    assert "matched by month, length and faces for all 200" in text
    for ci in ([-0.06, 0.01], [-0.01, 0.06]):  # a loss or a gain the size of PAL-Bench's is not excluded
        text = dict(stress_findings(_swap_summary(run, ci, 0.0, {"month+length+faces": 200})))["finding-caption-swap"]
        assert "No measurable effect" not in text and "cannot tell" in text


def test_caption_chars_kept_only_for_conditions_that_truncate(run):
    conds = json.loads((run / "stress.json").read_text())["conditions"]
    assert {c for c, b in conds.items() if "caption_chars_kept" in b} == {"caption_truncate=0.51", "combined-mild"}


def test_flags_that_cannot_apply_are_refused_before_the_resume_check(data, tmp_path):
    """Trial 3: --split/--language on a JSONL dataset whose --out holds an earlier stress run was answered
    with the resume refusal (inviting --force) instead of the flag's own refusal."""
    out = tmp_path / "sx"
    run_stress(data[1], ENC, out, StressOptions(stress="drop=ocr", resamples=20, report=False))
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    for flag, value in (("--split", "validation"), ("--language", "cn")):
        for force in ([], ["--force"]):
            r = runner.invoke(app, ["stress", str(data[1]), "-e", ENC, "--out", str(out), "--stress", "drop=ocr",
                                    flag, value, "--no-progress", *force])
            assert r.exit_code == 2 and "this is a JSONL dataset" in r.output and "holds the output" not in r.output, r.output
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before  # --force discarded nothing


def test_a_changed_split_is_worded_with_the_flag_and_no_bare_none(tmp_path):
    from snapbench.store import check_resume, write_run_json

    write_run_json(tmp_path, "stress", {"fingerprint": {"split": None, "language": "en"}})
    with pytest.raises(ConfigError) as exc:
        check_resume(tmp_path, "stress", {"split": "validation", "language": "cn"})
    # arg() names the parameter (the CLI shows it as --split)
    assert 'a different split not given (this run: "validation"), language "en" (this run: "cn")' in str(exc.value)


def test_stress_is_said_to_be_required_in_the_help_and_the_docs():
    """Trial 3: --stress is required, but only the error said so."""
    r = runner.invoke(app, ["stress", "--help"], terminal_width=200)
    assert r.exit_code == 0 and "Required (no default)" in " ".join(r.output.split()), r.output
    doc = (Path(__file__).resolve().parents[1] / "docs" / "albums.md").read_text()
    assert "`--stress` is **required**" in doc


def test_a_condition_moving_one_field_is_on_its_curve_and_the_others_are_listed_with_why(run):
    """Trial 3: combined conditions were left off the availability curves without a word; faces-mild (two
    operators, one field) was left off although its point is well defined."""
    from snapbench.render.stress import availability_points

    summary = json.loads((run / "stress.json").read_text())
    recs = _records(run, "faces-mild")
    share = sum(1 for r in recs if r["people"]) / len(recs)
    pts = availability_points(summary, "recall@10")
    assert [x for x, _, c in pts["people"] if c == "faces-mild"] == [pytest.approx(share)]
    assert "combined-mild" not in {c for p in pts.values() for _, _, c in p}
    page = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", (run / "report.html").read_text())).split())
    curves = page.split("Curves over field availability")[-1].split("Caption-swap probe")[0]  # (after the contents)
    assert "Not on the curves: caption_swap (caption_swap changes the captions' content" in curves
    assert "combined-mild (moves caption, ocr, location, people at once" in curves


def test_a_missing_longitude_or_latitude_is_said_in_words_not_as_none():
    """Trial 3: 'latitude 48.8566 and longitude None: give both or neither' (Python's None in a message)."""
    from snapbench.albums.records import check_coordinates

    for lat, lon, said in ((48.8566, None, "latitude 48.8566 but no longitude"),
                           ("", 2.35, "longitude 2.35 but no latitude")):
        with pytest.raises(InputError) as exc:
            check_coordinates(lat, lon, where="line 1 (record 'x')", path=None)
        assert f"line 1 (record 'x'): {said}: give both or neither" in str(exc.value) and "None" not in str(exc.value)


def test_album_names_are_listed_in_natural_order(data, tmp_path):
    """Trial 3: 'album0, album1, album10, album11, album2' -- album names listed as text, not as numbers."""
    root = fx.write_jsonl(tmp_path / "jl", n_photos=4)  # small albums: the note on fixed metrics lists them all
    rename = {"album1": "a10", "album2": "a2", "album3": "a1"}  # in the files: a10, a2, a1
    for name in ("queries.jsonl", "gallery.jsonl"):
        rows = [json.loads(x) for x in (root / name).read_text().splitlines()]
        (root / name).write_text("".join(json.dumps({**r, "album": rename[r["album"]]}) + "\n" for r in rows))
    natural = ["a1", "a2", "a10"]
    out = tmp_path / "o"
    r = runner.invoke(app, ["stress", str(root), "-e", ENC, "--out", str(out), "--stress", "drop=ocr",
                            "--resamples", "20", "--no-progress"])
    assert r.exit_code == 0, r.output
    summary = json.loads((out / "stress.json").read_text())
    assert any(f"album(s) {', '.join(natural)} of 4 record(s)" in n for n in summary["notes"]), summary["notes"]
    page = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", (out / "report.html").read_text())).split())
    assert f"3 ({', '.join(natural)})" in page
    per_album = page.split("Per album")[-1].split("Curves over field availability")[0]
    assert [per_album.index(f"drop=ocr {a} ") for a in natural] == sorted(per_album.index(f"drop=ocr {a} ") for a in natural)
    # a query of an album without records: the known albums listed in the same order
    (root / "queries.jsonl").write_text((root / "queries.jsonl").read_text().replace('"a10"', '"a99"', 1))
    with pytest.raises(InputError, match=re.escape(f"(albums: {', '.join(natural)})")):
        load_albums(root)


def test_the_stress_page_states_the_answer_threshold_only_when_one_was_set(data, tmp_path):
    from snapbench.render.stress import render_stress_report

    res = run_stress(data[0], ENC, tmp_path / "r", StressOptions(stress="drop=location", set_threshold=0.3,
                                                                  resamples=50, report=False))
    page = html.unescape(render_stress_report(json.loads((res.out / "stress.json").read_text())))
    assert "--set-threshold 0.3: a query's answer is the records scoring at least this" in page
    res = run_stress(data[0], ENC, tmp_path / "n", StressOptions(stress="drop=location", resamples=50, report=False))
    assert "--set-threshold" not in render_stress_report(json.loads((res.out / "stress.json").read_text()))
