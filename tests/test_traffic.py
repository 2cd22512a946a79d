"""Traffic-weighted robustness (snapbench.app.traffic): weights from hand-written and real
diagnose folders, expected R@k recomputed by hand from the run's report.json files, CIs, fallbacks,
determinism across processes, and the report/run entry points."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from snapbench.app.diagnose import run_diagnose
from snapbench.app.stages import RunOptions, run_benchmark
from snapbench.app.traffic import compute_traffic, read_traffic, write_traffic
from snapbench.cli import app
from snapbench.core.defaults import DEFAULT_DATA
from snapbench.core.errors import ConfigError, InputError
from snapbench.diagnose import IMAGE_DETECTORS, TEXT_DETECTORS
from snapbench.diagnose.mix import FlagConditions, build_mix
from snapbench.evaluate.paired import bootstrap_counts
from snapbench.render.build import traffic_fragment

REPO = Path(__file__).resolve().parents[1]
CONDS = ["clean", "img/defocus_blur/s2", "img/defocus_blur/s3", "img/motion_blur/s2", "img/motion_blur/s3",
         "img/low_light/s3", "img/overexposure/s3", "img/compression/s3", "txt/char_add", "txt/char_delete",
         "txt/char_change", "txt/char_swap", "txt/sent_replace", "joint/compression+char_add/s3"]
SMALL = ["clean", "img/defocus_blur/s1", "txt/char_add"]

# (query id, image flags or None = no image, text flags or None = no question)
HAND = [
    *[(f"c{i}", set(), set()) for i in range(5)],
    ("b1", {"blur"}, set()), ("b2", {"blur"}, set()),
    ("typo", set(), {"oov", "no_entity"}),            # no_entity is explained by oov
    ("cc", {"compression"}, {"oov"}),                 # the run has joint/compression+char_add/s3
    ("lf", {"low_light"}, {"few_content_tokens"}),    # no joint low_light+sent_replace: estimated
    ("ov", {"overexposure"}, set()),                  # the run has s3 of overexposure, not s2
    ("broken", None, {"oov"}),                        # unreadable image: left out
]


def _opts(**kw) -> RunOptions:
    base = dict(conditions=CONDS, joint=False, resamples=300, report=False, progress=False, use_cache=False)
    base.update(kw)
    return RunOptions(**base)


def write_diag(folder: Path, queries, *, skips=("broken",)) -> Path:
    """A diagnose folder written by hand: every detector of a present side, flag 1 where listed."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "diagnose.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["query_id", "side", "detector", "score", "flag"])
        for qid, img, txt in queries:
            for side, flags, dets in (("image", img, IMAGE_DETECTORS), ("text", txt, TEXT_DETECTORS)):
                if flags is not None and not (side == "image" and qid in skips):
                    w.writerows((qid, side, d, "1", int(d in flags)) for d in dets)
    summary = {"skips": [{"query_id": q, "side": "image", "reason": "unreadable"} for q in skips]}
    (folder / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def hand_diag(tmp_path_factory) -> Path:
    return write_diag(tmp_path_factory.mktemp("diag") / "hand", HAND)


@pytest.fixture(scope="module")
def run_dir(demo, hand_diag, tmp_path_factory) -> Path:
    """The demo through `run` on 14 conditions, with --traffic (the pipeline hook writes traffic.json)."""
    out = tmp_path_factory.mktemp("run") / "r"
    with pytest.warns(UserWarning, match="traffic: ") as caught:  # overexposure s2 missing; an estimated joint
        run_benchmark(demo, "toy", out, _opts(traffic=hand_diag))
    assert len(caught) == 2
    return out


@pytest.fixture(scope="module")
def variants(tmp_path_factory) -> Path:
    """snapbench corrupt of the demo queries (real photos and questions) on six conditions."""
    from snapbench.app.corrupt import run_corruption

    out = tmp_path_factory.mktemp("corrupt") / "c"
    run_corruption(Path(DEFAULT_DATA) / "queries.jsonl", out, progress=False,
                   conditions=["img/compression/s3", "txt/char_add", "joint/compression+char_add/s3",
                               "img/low_light/s3", "img/defocus_blur/s3", "txt/sent_replace"])
    return out


def _reports(run: Path) -> dict[str, dict]:
    out = {t: json.loads((run / t / "report.json").read_text()) for t in ("I2I", "T2T", "IT2IT", "I2IT", "T2IT", "MOOR")}
    for d in sorted((run / "fusion").iterdir()):
        out[f"fusion/{d.name}"] = json.loads((d / "report.json").read_text())
    return out


def _by_hand(rep: dict, weights: dict, estimated: dict, metric: str) -> float:
    """Σ_c w_c R(c), R of an estimated joint = clip(R(img) + R(txt) − R(clean), 0, 1)."""
    r = rep["conditions"]
    total = 0.0
    for c, w in weights.items():
        if c in estimated:
            x = r[estimated[c]["image"]][metric] + r[estimated[c]["text"]][metric] - r["clean"][metric]
            total += w * min(1.0, max(0.0, x))
        else:
            total += w * r[c][metric]
    return total


def test_hand_mix_weights_follow_the_documented_rules(run_dir) -> None:
    body = json.loads((run_dir / "traffic.json").read_text())
    n = 11  # "broken" is left out
    want = {"clean": 5 / n, "img/defocus_blur/s2": 0.5 / n, "img/defocus_blur/s3": 0.5 / n,
            "img/motion_blur/s2": 0.5 / n, "img/motion_blur/s3": 0.5 / n, "img/overexposure/s3": 1 / n,
            "txt/char_add": 0.25 / n, "txt/char_delete": 0.25 / n, "txt/char_change": 0.25 / n,
            "txt/char_swap": 0.25 / n, "joint/compression+char_add/s3": 1 / n, "joint/low_light+sent_replace/s3": 1 / n}
    assert body["weights"] == pytest.approx(want, abs=1e-12)
    assert sum(body["weights"].values()) == pytest.approx(1.0, abs=1e-12)
    assert body["estimated"] == {"joint/low_light+sent_replace/s3": {
        "rule": "additive", "image": "img/low_light/s3", "text": "txt/sent_replace"}}
    assert body["queries"] == {"n": 11, "clean": 5, "image_only": 3, "text_only": 1, "both": 2,
                               "excluded_unreadable_image": 1, "sides": ["image", "text"]}
    assert any("overexposure: the run lacks img/overexposure/s2" in m for m in body["notes"])
    assert any("low_light + few_content_tokens" in m for m in body["notes"])


def test_expected_is_the_weighted_mean_of_the_reports(run_dir) -> None:
    body = json.loads((run_dir / "traffic.json").read_text())
    reps = _reports(run_dir)
    assert set(body["expected"]) == set(reps)
    for t, rep in reps.items():
        for m in rep["meta"]["metrics"]:
            e = body["expected"][t][m]
            assert e["value"] == pytest.approx(_by_hand(rep, body["weights"], body["estimated"], m), abs=1e-11)
            assert e["ci_low"] <= e["value"] + 1e-12 and e["value"] <= e["ci_high"] + 1e-12, (t, m)
            d = body["delta_vs_clean"][t][m]
            assert d["value"] == pytest.approx(e["value"] - rep["conditions"]["clean"][m], abs=1e-11)
    for m, g in body["moor_gain"]["by_metric"].items():
        want = _by_hand(reps["MOOR"], body["weights"], body["estimated"], m) - _by_hand(
            reps["IT2IT"], body["weights"], body["estimated"], m)
        assert g["value"] == pytest.approx(want, abs=1e-11)
        assert g["ci_low"] <= g["value"] + 1e-12 <= g["ci_high"] + 2e-12


def test_benchmark_interval_is_the_bootstrap_of_the_per_query_table(run_dir, tmp_path) -> None:
    """All-clean traffic: E = R(clean), no traffic uncertainty, and the benchmark CI is the percentile
    interval of the resampled per-query mean (recomputed here from per_query.csv)."""
    diag = write_diag(tmp_path / "d", [(f"q{i}", set(), set()) for i in range(7)], skips=())
    body = compute_traffic(run_dir, diag)
    assert body["weights"] == {"clean": 1.0}
    rows = list(csv.DictReader(open(run_dir / "T2T" / "per_query.csv", encoding="utf-8")))
    v = np.array([float(r["value"]) for r in rows if r["condition"] == "clean" and r["metric"] == "mrr" and r["value"]])
    counts = bootstrap_counts(v.size, 300, 0, key="traffic.benchmark")
    lo, hi = np.quantile(counts @ v / counts.sum(axis=1), [0.025, 0.975])
    e = body["expected"]["T2T"]["mrr"]
    assert e["value"] == pytest.approx(v.mean(), abs=1e-11)
    assert e["ci_benchmark"] == pytest.approx([lo, hi], abs=1e-11)
    assert [e["ci_low"], e["ci_high"]] == pytest.approx([lo, hi], abs=1e-11)
    assert e["ci_traffic"] == pytest.approx([v.mean(), v.mean()], abs=1e-11)


def test_interval_shrinks_with_more_traffic(run_dir, tmp_path) -> None:
    small = compute_traffic(run_dir, write_diag(tmp_path / "s", HAND))
    many = [(f"{q}-{k}", i, t) for k in range(30) for q, i, t in HAND]
    big = compute_traffic(run_dir, write_diag(tmp_path / "b", many, skips=tuple(f"broken-{k}" for k in range(30))))
    assert big["weights"] == pytest.approx(small["weights"], abs=1e-12)
    for t in ("IT2IT", "T2T", "MOOR"):
        s, b = small["expected"][t]["hit@1"], big["expected"][t]["hit@1"]
        assert b["value"] == pytest.approx(s["value"], abs=1e-11)
        width = lambda e, lo="ci_low", hi="ci_high": e[hi] - e[lo]  # noqa: E731
        assert width(b) < width(s)
        assert b["ci_traffic"][1] - b["ci_traffic"][0] < 0.5 * (s["ci_traffic"][1] - s["ci_traffic"][0])
        assert b["ci_benchmark"] == s["ci_benchmark"]  # the same benchmark resamples


def test_deterministic_across_processes(run_dir, hand_diag) -> None:
    code = ("import sys; from snapbench.app.traffic import compute_traffic; from snapbench.core.jsonable import dumps; "
            "print(dumps(compute_traffic(sys.argv[1], sys.argv[2])))")
    outs = []
    for hashseed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hashseed, "PYTHONPATH": str(REPO)}
        outs.append(subprocess.run([sys.executable, "-c", code, str(run_dir), str(hand_diag)], env=env,
                                   capture_output=True, text=True, check=True).stdout)
    assert outs[0] == outs[1]
    assert json.loads(outs[0]) == json.loads((run_dir / "traffic.json").read_text())


def test_real_variants_use_the_measured_joint_condition(run_dir, variants, tmp_path) -> None:
    diag = run_diagnose(variants, tmp_path / "d").out_dir
    body = compute_traffic(run_dir, diag)
    w = body["weights"]
    assert sum(w.values()) == pytest.approx(1.0, abs=1e-12)
    assert all(x > 0 for x in w.values())
    assert body["queries"]["n"] == 12 * 7 and body["queries"]["both"] > 0
    # compression s3 + char_add variants are flagged compression + oov: the run's joint condition
    assert w["joint/compression+char_add/s3"] >= 0.5 * 12 / 84
    reps = _reports(run_dir)
    for t in ("IT2IT", "MOOR", "fusion/rrf"):
        for m in ("hit@1", "ndcg@10"):
            assert body["expected"][t][m]["value"] == pytest.approx(_by_hand(reps[t], w, body["estimated"], m), abs=1e-11)


def test_images_only_and_questions_only(run_dir, variants, tmp_path) -> None:
    imgs = tmp_path / "imgs"
    imgs.mkdir()
    for sub in ("img__low_light__s3", "img__defocus_blur__s3"):
        for p in sorted((variants / "images" / sub).iterdir()):
            shutil.copy(p, imgs / f"{sub}-{p.name}")
    for p in sorted((Path(DEFAULT_DATA) / "queries").iterdir()):
        shutil.copy(p, imgs / p.name)
    only_img = compute_traffic(run_dir, run_diagnose(imgs, tmp_path / "di").out_dir)
    assert only_img["queries"]["sides"] == ["image"] and only_img["queries"]["text_only"] == 0
    assert {c.split("/")[0] for c in only_img["weights"]} == {"clean", "img"}
    assert only_img["weights"]["img/low_light/s3"] > 0.2
    manifest = [json.loads(line) for line in (variants / "manifest.jsonl").read_text().splitlines()]
    questions = [r["question"] for r in manifest if r.get("condition") in ("clean", "txt/char_add", "txt/sent_replace")]
    (tmp_path / "q.txt").write_text("\n".join(questions) + "\n", encoding="utf-8")
    only_txt = compute_traffic(run_dir, run_diagnose(tmp_path / "q.txt", tmp_path / "dq").out_dir)
    assert only_txt["queries"]["sides"] == ["text"] and only_txt["queries"]["image_only"] == 0
    assert {c.split("/")[0] for c in only_txt["weights"]} == {"clean", "txt"}
    for body in (only_img, only_txt):
        assert sum(body["weights"].values()) == pytest.approx(1.0, abs=1e-12)
        assert body["expected"]["IT2IT"]["hit@1"]["ci_low"] is not None


def test_every_diagnosed_query_is_counted_or_excluded(run_dir, tmp_path) -> None:
    """An unreadable image with no question has no diagnose.csv row; it is still an exclusion."""
    imgs = tmp_path / "uploads"
    imgs.mkdir()
    for name in ("astronaut.jpg", "coffee.jpg", "camera.jpg"):
        shutil.copy(Path(DEFAULT_DATA) / "queries" / name, imgs / name)
    (imgs / "broken.jpg").write_bytes(b"not a jpeg")  # no question: image-only, unreadable
    (tmp_path / "uq.csv").write_text("image,question\nastronaut.jpg,Which astronaut is this?\n"
                                     "missing.jpg,What is it?\n", encoding="utf-8")
    diag = run_diagnose(imgs, tmp_path / "d", questions=tmp_path / "uq.csv")
    summary = json.loads((diag.out_dir / "summary.json").read_text())
    assert summary["n_queries"] == 5 and summary["n_skipped_images"] == 2
    queries = compute_traffic(run_dir, diag.out_dir)["queries"]
    assert queries["excluded_unreadable_image"] == 2
    assert queries["n"] + queries["excluded_unreadable_image"] == summary["n_queries"]


def test_a_run_lacking_mapped_conditions_falls_back_with_warnings(demo, hand_diag, tmp_path) -> None:
    out = tmp_path / "small"
    run_benchmark(demo, "toy", out, _opts(conditions=SMALL))
    with pytest.warns(UserWarning) as caught:
        write_traffic(out, hand_diag)
    msgs = [str(w.message) for w in caught]
    assert any("blur: the run has none of img/defocus_blur/s2" in m and "using img/defocus_blur/s1" in m for m in msgs)
    assert any("low_light" in m and "count as clean" in m for m in msgs)
    body = json.loads((out / "traffic.json").read_text())
    n = 11
    # clean: 5 clean + low_light+few_content (both fall back to clean) + overexposure (clean)
    assert body["weights"] == pytest.approx({"clean": 7 / n, "img/defocus_blur/s1": 2 / n, "txt/char_add": 2 / n}, abs=1e-12)
    assert body["estimated"] == {}
    rep = _reports(out)["IT2IT"]
    assert body["expected"]["IT2IT"]["recall@5"]["value"] == pytest.approx(
        _by_hand(rep, body["weights"], {}, "recall@5"), abs=1e-11)


def test_bad_inputs_are_clear_errors(run_dir, tmp_path) -> None:
    with pytest.raises(InputError, match="not a snapbench diagnose folder"):
        read_traffic(run_dir)
    bad = write_diag(tmp_path / "bad", HAND[:3], skips=())
    text = (bad / "diagnose.csv").read_text().splitlines()
    text[2] = text[2][:-1] + "2"
    (bad / "diagnose.csv").write_text("\n".join(text) + "\n")
    with pytest.raises(InputError, match=r"diagnose\.csv: line 3"):
        read_traffic(bad)
    with pytest.raises(InputError, match="no diagnosed query"):
        read_traffic(write_diag(tmp_path / "empty", [("broken", set(), set())]))
    with pytest.raises(ConfigError, match="unknown detector 'blurr'.*known: blur"):
        build_mix([(frozenset({"blur"}), frozenset())], CONDS, {"blurr": FlagConditions(("img/defocus_blur/s2",))})
    with pytest.raises(ConfigError, match="not an image condition"):
        build_mix([(frozenset({"blur"}), frozenset())], CONDS, {"blur": FlagConditions(("txt/char_add",))})
    with pytest.raises(InputError, match="not a snapbench run directory"):
        compute_traffic(tmp_path, tmp_path / "bad")


def test_run_refuses_a_wrong_diagnose_folder_before_running(demo, tmp_path) -> None:
    with pytest.raises(InputError, match="not a folder"):
        run_benchmark(demo, "toy", tmp_path / "never", _opts(traffic=tmp_path / "missing"))
    assert not (tmp_path / "never").exists()


@pytest.mark.slow
def test_report_command_writes_and_shows_the_traffic_view(run_dir, hand_diag, tmp_path) -> None:
    run = tmp_path / "r"
    shutil.copytree(run_dir, run)
    (run / "traffic.json").unlink()
    r = CliRunner().invoke(app, ["report", str(run), "--traffic", str(hand_diag), "--formats", "html", "--dpi", "50"])
    assert r.exit_code == 0, r.output
    assert json.loads((run / "traffic.json").read_text())["diagnose_dir"] == str(hand_diag)
    page = (run / "report.html").read_text(encoding="utf-8")
    assert 'id="traffic"' in page and 'id="table-traffic-mix"' in page and "Expected gain of MOOR over IT→IT" in page
    r = CliRunner().invoke(app, ["report", str(run), "--traffic", str(tmp_path / "nope")])
    assert r.exit_code == 2 and "error:" in r.output and "--traffic" in r.output


def test_a_stale_traffic_view_shows_no_numbers_only_how_to_refresh(run_dir, hand_diag, tmp_path) -> None:
    run = tmp_path / "r"
    shutil.copytree(run_dir, run)
    fresh = traffic_fragment(run)
    assert "out of date" not in fresh and 'id="table-traffic-mix"' in fresh
    rep = json.loads((run / "T2T" / "report.json").read_text())
    rep["conditions"]["clean"]["hit@1"] = 0.0
    (run / "T2T" / "report.json").write_text(json.dumps(rep))
    stale = traffic_fragment(run)
    assert "out of date" in stale and f"snapbench report {run} --traffic {hand_diag}" in stale
    # none of the old numbers: no table, no percentage, no MOOR gain
    assert "<table" not in stale and "%" not in stale and "MOOR" not in stale
    (run / "traffic.json").write_text("{not json")
    assert "not valid JSON" in traffic_fragment(run)
    (run / "traffic.json").unlink()
    assert traffic_fragment(run) is None


def test_run_traffic_is_honoured_when_the_run_is_read_back(run_dir, demo, hand_diag, tmp_path) -> None:
    """A folder holding the run complete: --traffic still writes traffic.json (a new one replaces the old)."""
    run = tmp_path / "r"
    shutil.copytree(run_dir, run)
    (run / "traffic.json").unlink()
    before = (run / "T2T" / "report.json").read_bytes()
    with pytest.warns(UserWarning, match="traffic: "):
        run_benchmark(demo, "toy", run, _opts(traffic=hand_diag))
    assert (run / "T2T" / "report.json").read_bytes() == before  # read back, not recomputed
    assert json.loads((run / "traffic.json").read_text())["diagnose_dir"] == str(hand_diag)
    other = write_diag(tmp_path / "other", [(f"q{i}", set(), set()) for i in range(4)], skips=())
    run_benchmark(demo, "toy", run, _opts(traffic=other))
    body = json.loads((run / "traffic.json").read_text())
    assert body["diagnose_dir"] == str(other) and body["weights"] == {"clean": 1.0}


@pytest.mark.slow
def test_run_traffic_on_a_read_back_run_rebuilds_the_report(demo, hand_diag, tmp_path) -> None:
    run = tmp_path / "r"
    opts = dict(conditions=SMALL, report=True)
    run_benchmark(demo, "toy", run, _opts(**opts))
    assert 'id="traffic"' not in (run / "report.html").read_text(encoding="utf-8")
    run_benchmark(demo, "toy", run, _opts(traffic=write_diag(tmp_path / "d", [("c", set(), set())], skips=()), **opts))
    assert (run / "traffic.json").is_file() and 'id="traffic"' in (run / "report.html").read_text(encoding="utf-8")


def test_mix_rules_on_the_full_condition_list() -> None:
    """The split rules of snapbench.diagnose.mix, against the 72 default conditions (weights by hand)."""
    from snapbench.core.conditions import list_conditions

    ids = [c.id for c in list_conditions(joint=True)]
    sig = lambda i=(), t=(): (frozenset(i), frozenset(t))  # noqa: E731
    mix = build_mix([sig({"low_resolution"}), sig({"blur", "low_light"}), sig({"low_resolution"}, {"oov"}),
                     sig(t={"few_content_tokens", "no_entity"}), sig({"overexposure"}, {"no_entity"})], ids)
    rows = [dict((c, w) for c, w in zip(mix.conditions, r) if w) for r in mix.rows]
    # one flag, two operators: half each, then evenly over each operator's severities
    assert rows[0] == pytest.approx({"img/low_resolution/s2": 1 / 4, "img/low_resolution/s3": 1 / 4,
                                     "img/downscale/s1": 1 / 6, "img/downscale/s2": 1 / 6, "img/downscale/s3": 1 / 6})
    # two image flags: half each
    assert rows[1] == pytest.approx({"img/defocus_blur/s2": 1 / 8, "img/defocus_blur/s3": 1 / 8, "img/motion_blur/s2": 1 / 8,
                                     "img/motion_blur/s3": 1 / 8, "img/low_light/s3": 1 / 2})
    # both sides: the run's joint conditions that combine the two flags' conditions
    assert rows[2] == pytest.approx({f"joint/downscale+char_delete/s{s}": 1 / 3 for s in (1, 2, 3)})
    # two text flags with the same condition
    assert rows[3] == pytest.approx({"txt/sent_replace": 1.0})
    # overexposure + no_entity: no joint pair in the paper's six; estimated over s2 and s3
    assert rows[4] == pytest.approx({"joint/overexposure+sent_replace/s2": 1 / 2, "joint/overexposure+sent_replace/s3": 1 / 2})
    assert set(mix.estimated) == {"joint/overexposure+sent_replace/s2", "joint/overexposure+sent_replace/s3"}
    assert np.allclose(mix.rows.sum(axis=1), 1.0)
    assert mix.weights(np.array([1, 1, 1, 1, 0])) == pytest.approx(mix.rows[:4].mean(axis=0))
