"""Additivity on a constructed case whose per-query hits are known, so Exp/Obs/δ are computed by hand."""

from __future__ import annotations

import numpy as np
import pytest

from snapbench.evaluate import (
    EvaluationConfig,
    Labels,
    additivity_terms,
    bootstrap_counts,
    evaluate_conditions,
    evaluate_matrix,
    joint_parts,
)

N = 10  # queries = gallery items; query q's only positive is item q


def _scores_with_hits(hits) -> np.ndarray:
    """hit@1 = hits[q]: the positive scores 1 when hit, else a decoy (q + 1) scores 0.5 above it."""
    s = np.zeros((N, N))
    for q, h in enumerate(hits):
        s[q, q] = 1.0 if h else 0.0
        s[q, (q + 1) % N] = 0.5
    return s


HITS = {
    "clean": [1, 1, 1, 1, 1, 1, 1, 1, 0, 0],                           # 0.8
    "img/compression/s1": [1, 1, 1, 1, 1, 1, 1, 0, 0, 0],              # 0.7
    "img/compression/s2": [1, 1, 1, 1, 1, 1, 0, 0, 0, 0],              # 0.6
    "txt/char_add": [1, 1, 1, 1, 1, 1, 1, 0, 0, 0],                    # 0.7
    "joint/compression+char_add/s1": [1, 1, 1, 1, 1, 0, 0, 0, 0, 0],   # 0.5
    "joint/compression+char_add/s2": [1, 1, 1, 0, 0, 0, 0, 0, 0, 0],   # 0.3
    "joint/mosaic+sent_add/s3": [1, 0, 0, 0, 0, 0, 0, 0, 0, 0],        # parts missing -> skipped
}


@pytest.fixture(scope="module")
def report():
    labels = Labels.from_lists([[q] for q in range(N)], N)
    evals = {c: evaluate_matrix(_scores_with_hits(h), labels, ["hit@1"]) for c, h in HITS.items()}
    cfg = EvaluationConfig(metrics="hit@1", resamples=3000, seed=5, workers=1)
    return evaluate_conditions(evals, labels, cfg).to_json()  # the JSON form: SPEC §11 keys


def test_exact_terms_by_hand(report):
    # s2: Δ_I = .8 - .6 = .2, Δ_T = .8 - .7 = .1, Exp = .3, Obs = .8 - .3 = .5, δ = .2
    e = report["additivity"]["joint/compression+char_add/s2"]["hit@1"]
    assert e["delta_image"] == pytest.approx(0.2, abs=1e-12)
    assert e["delta_text"] == pytest.approx(0.1, abs=1e-12)
    assert e["exp"] == pytest.approx(0.3, abs=1e-12)
    assert e["obs"] == pytest.approx(0.5, abs=1e-12)
    assert e["delta"] == pytest.approx(0.2, abs=1e-12)
    # s1: Δ_I = .1, Δ_T = .1, Exp = .2, Obs = .3, δ = .1
    e1 = report["additivity"]["joint/compression+char_add/s1"]["hit@1"]
    assert (e1["exp"], e1["obs"], e1["delta"]) == pytest.approx((0.2, 0.3, 0.1), abs=1e-12)
    # means over severities (Table 3) and over pairs per severity (Table 14)
    pair = report["additivity_summary"]["by_pair"]["compression+char_add"]["hit@1"]
    assert (pair["exp"], pair["obs"], pair["delta"], pair["n"]) == pytest.approx((0.25, 0.4, 0.15, 2), abs=1e-12)
    assert report["additivity_summary"]["by_severity"]["s2"]["hit@1"]["delta"] == pytest.approx(0.2, abs=1e-12)
    assert report["additivity_summary"]["mean"]["hit@1"]["delta"] == pytest.approx(0.15, abs=1e-12)
    assert "joint/mosaic+sent_add/s3" not in report["additivity"]
    assert "img/mosaic/s3" in report["additivity_skipped"]["joint/mosaic+sent_add/s3"]


def test_delta_ci_resamples_the_four_states_jointly(report):
    """Second code path: with the same resample counts for all four states, compute δ per resample
    from the raw hit vectors and take numpy percentiles."""
    w = bootstrap_counts(N, 3000, seed=5)
    h = {c: np.asarray(v, float) for c, v in HITS.items()}
    r = {c: (w @ v) / w.sum(axis=1) for c, v in h.items()}
    j = "joint/compression+char_add/s2"
    d = (r["img/compression/s2"] + r["txt/char_add"]) - r["clean"] - r[j]
    lo, hi = np.quantile(d, [0.025, 0.975])
    assert report["additivity"][j]["hit@1"]["ci"] == pytest.approx([lo, hi], abs=1e-12)
    # the CI of the mean over severities averages the same resamples
    j1 = "joint/compression+char_add/s1"
    d1 = (r["img/compression/s1"] + r["txt/char_add"]) - r["clean"] - r[j1]
    lo, hi = np.quantile((d + d1) / 2, [0.025, 0.975])
    assert report["additivity_summary"]["by_pair"]["compression+char_add"]["hit@1"]["ci"] == pytest.approx([lo, hi])


def test_additivity_terms_formula_and_joint_parts():
    t = additivity_terms(0.6, 0.5, 0.55, 0.3)
    assert t["exp"] == pytest.approx(0.15) and t["obs"] == pytest.approx(0.3) and t["delta"] == pytest.approx(0.15)
    ok, skipped = joint_parts(["clean", "img/rotation/s3", "joint/rotation+sent_replace/s3", "txt/sent_replace",
                               "joint/rotation+sent_replace/s2"])
    assert ok == {"joint/rotation+sent_replace/s3": ("img/rotation/s3", "txt/sent_replace")}
    assert skipped == {"joint/rotation+sent_replace/s2": "missing img/rotation/s2"}
