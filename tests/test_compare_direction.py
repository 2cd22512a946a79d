"""A metric where higher is worse (flip@1: the share of queries whose top-1 item changed) is read the
right way round by compare: the model that flips less ranks first, is called more robust, and the
other's mean corruption error is above 1 -- and the terminal's ranking says what its rank interval
and tier each rest on when the two seem to disagree.

Expected values come from the per-query values themselves (numpy transcriptions of the definitions:
mean Δ = mean over corrupted conditions of the mean flip, clean flips 0; CE_o = Σ_s flips(model) /
Σ_s flips(reference), mCE their mean over operators), never from compare's code.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from snapbench.compare import CompareConfig, ModelValues, compare_models
from snapbench.compare.records import RankingRecord
from snapbench.render.compare import MetricView, compare_findings, pairs_table, ranking_table
from snapbench.render.terminal import _tier_footnote, _told_apart_lines

Q = 80
CONDS = (["clean"] + [f"img/{op}/s{s}" for op in ("compression", "mosaic") for s in (1, 2, 3)]
         + ["txt/char_add", "txt/word_swap"])


def _flips(p_of: dict[str, float], seed: int) -> dict[str, dict[str, np.ndarray]]:
    """Per condition, flip@1 (0/1) and overlap@10 per query; clean flips nothing, by definition."""
    rng = np.random.default_rng(seed)
    out = {}
    for c in CONDS:
        p = 0.0 if c == "clean" else p_of[c]
        flip = (rng.random(Q) < p).astype(float)
        out[c] = {"flip@1": flip, "overlap@10": np.where(flip > 0, 0.6, 1.0) if c != "clean" else np.ones(Q)}
    return out


@pytest.fixture(scope="module")
def compared():
    # A flips top-1 on ~10% of the queries, B on ~50%: B is the less robust (every operator flips some)
    a = _flips({c: 0.10 + 0.02 * i for i, c in enumerate(CONDS[1:])}, seed=1)
    b = _flips({c: 0.50 + 0.02 * i for i, c in enumerate(CONDS[1:])}, seed=2)
    qids = [f"q{i:03d}" for i in range(Q)]
    models = [ModelValues.from_values(n, qids, {"IT2IT": v}) for n, v in (("A", a), ("B", b))]
    cmp = compare_models(models, CompareConfig(resamples=300, seed=0, workers=1))
    views = MetricView.all_of(cmp, 0.95)
    return {"A": a, "B": b}, cmp, views


def _mean_delta(vals: dict, metric: str) -> float:
    return float(np.mean([vals[c][metric].mean() - vals["clean"][metric].mean() for c in CONDS[1:]]))


def test_flip_ranking_puts_the_model_that_flips_less_first(compared):
    vals, cmp, _ = compared
    da, db = _mean_delta(vals["A"], "flip@1"), _mean_delta(vals["B"], "flip@1")
    assert 0 < da < db  # the data: B flips more
    rank = {r.model: r for r in cmp.ranking if r.metric == "flip@1" and r.mode == "IT2IT"}
    assert rank["A"].rank == 1 and rank["B"].rank == 2
    assert rank["A"].group == 1 and rank["B"].group == 2  # told apart: B in the second tier
    # overlap@10 (higher is better) is unchanged: A drops less there too
    ov = {r.model: r for r in cmp.ranking if r.metric == "overlap@10"}
    assert _mean_delta(vals["A"], "overlap@10") > _mean_delta(vals["B"], "overlap@10")
    assert ov["A"].rank == 1


def test_flip_corruption_error_is_the_flip_rate_against_the_reference(compared):
    vals, cmp, _ = compared
    ops = {"compression": [c for c in CONDS if "compression" in c], "mosaic": [c for c in CONDS if "mosaic" in c],
           "char_add": ["txt/char_add"], "word_swap": ["txt/word_swap"]}

    def errors(model: str, conds: list[str]) -> float:  # flip@1 is an error rate: E = flip
        return float(sum(vals[model][c]["flip@1"].mean() for c in conds))

    want = {op: errors("B", cs) / errors("A", cs) for op, cs in ops.items()}
    ce = {r.operator: r.ce for r in cmp.normalised if r.metric == "flip@1" and r.model == "B"}
    for op, w in want.items():
        assert ce[op] == pytest.approx(w, rel=1e-12)
    assert ce["mean:all"] == pytest.approx(np.mean(list(want.values())), rel=1e-12)
    assert ce["mean:all"] > 1
    ref = {r.operator: r.ce for r in cmp.normalised if r.metric == "flip@1" and r.model == "A"}
    assert ref["mean:all"] == pytest.approx(1.0)


def test_flip_pairs_verdict_findings_and_terminal_call_a_more_robust(compared):
    vals, _, views = compared
    v = views[("IT2IT", "flip@1")]
    table = pairs_table(v, "IT2IT_flip1", "holm").to_markdown()
    assert "A more robust" in table and "B more robust" not in table
    assert "< 0: A rises less" in table
    rank = ranking_table(v, "IT2IT_flip1", "A").to_markdown()
    assert rank.index("| A |") < rank.index("| B |")
    mce_b = float(rank.split("| B |")[1].split("|")[6])
    assert mce_b > 1
    text = " ".join(f.text for f in compare_findings([v], [], "A", "holm"))
    assert "A is more robust than B" in text
    assert "A rises least" in text and "B most" in text
    assert _told_apart_lines(v)[0].startswith("  IT2IT: A > B")
    diff = _mean_delta(vals["A"], "flip@1") - _mean_delta(vals["B"], "flip@1")
    assert f"{100 * diff:+.1f}" in _told_apart_lines(v)[0]


def test_terminal_footnote_when_rank_intervals_are_apart_within_one_tier():
    def view(ranks):
        rec = {m: RankingRecord("IT2IT", "hit@1", m, r, lo, hi, g) for m, (r, lo, hi, g) in ranks.items()}
        return SimpleNamespace(ranking=rec, ranked=lambda: list(rec), level=0.95)

    apart = view({"a": (1, 1, 1, 1), "b": (2, 2, 2, 1)})
    assert "rank intervals that do not overlap within one tier" in _tier_footnote([apart])
    overlapping = view({"a": (1, 1, 2, 1), "b": (2, 1, 2, 1)})
    separate_tiers = view({"a": (1, 1, 1, 1), "b": (2, 2, 2, 2)})
    assert _tier_footnote([overlapping, separate_tiers]) == ""


def test_a_retention_with_a_clean_value_of_zero_is_worded_not_printed_as_nan(compared):
    """flip@1 is 0 on clean for every model, so corrupted / clean is undefined: the finding says so."""
    vals, _, views = compared
    assert vals["A"]["clean"]["flip@1"].mean() == 0  # the data: retention = x / 0
    v = views[("IT2IT", "flip@1")]
    text = next(f.text for f in compare_findings([v], [], "A", "holm") if f.id == "normalised:IT2IT")
    assert "nan" not in text and "A undefined" in text and "B undefined" in text


def test_the_terminal_caption_of_one_pair_says_its_p_is_not_adjusted(compared):
    """Two models make one pair: its p is the raw one (the pairs table and findings say so), and the
    terminal's caption must not call it adjusted."""
    import io

    from rich.console import Console

    from snapbench.render.terminal import print_comparison

    _, cmp, _ = compared
    buf = io.StringIO()
    print_comparison(cmp, ["IT2IT"], "flip@1", 0.95, "holm", Console(file=buf, width=200))
    out = buf.getvalue()
    assert "p < 0.05 unadjusted (one pair of models: nothing to adjust over)" in out and "holm-adjusted" not in out
