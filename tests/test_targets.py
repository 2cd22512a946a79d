"""The one plan of what can run (:func:`snapbench.core.targets.plan_targets`), against a direct rule
written out by hand for every combination of sides and embedding sizes."""

from __future__ import annotations

import itertools

import pytest

from snapbench.core.errors import ConfigError
from snapbench.core.targets import DEFAULT_RUN_BASELINES, plan_targets

SIDE_SETS = [frozenset(s) for n in range(3) for s in itertools.combinations(("image", "text"), n)]
DIMS = {"none": None, "equal": {"image": 4, "text": 4}, "unequal": {"image": 8, "text": 4}}
DIFFER = "the image and text embeddings differ in size (8 vs 4): no shared space"


def _by_hand(q: frozenset[str], g: frozenset[str], shared: bool) -> dict[str, bool]:
    """Which path can be computed: both of its sides exist, and (IT, TI) the two sides share a space."""
    return {"II": "image" in q and "image" in g, "TT": "text" in q and "text" in g,
            "IT": "image" in q and "text" in g and shared, "TI": "text" in q and "image" in g and shared}


#: The paths of each mode, written out: I→I = II, T→T = TT, IT→IT = II + TT, I→IT = II + IT, T→IT = TI + TT.
MODE_PATHS = {"I2I": {"II"}, "T2T": {"TT"}, "IT2IT": {"II", "TT"}, "I2IT": {"II", "IT"}, "T2IT": {"TI", "TT"}}


@pytest.mark.parametrize("dims", list(DIMS), ids=list(DIMS))
@pytest.mark.parametrize("requested", [None, ["i2it", "T2T", "I2IT"]], ids=["all", "some"])
def test_plan_targets_matches_the_rule_by_hand_for_every_side_combination(dims, requested):
    for q, g in itertools.product(SIDE_SETS, SIDE_SETS):
        plan = plan_targets(q, g, requested, dims=DIMS[dims])
        ok = _by_hand(q, g, dims != "unequal")
        wanted = list(MODE_PATHS) if requested is None else ["I2IT", "T2T"]
        moor = all(ok.values())
        modes = [m for m in wanted if all(ok[p] for p in MODE_PATHS[m])]  # in the order asked
        needed = set(ok) if moor else {p for m in modes for p in MODE_PATHS[m]}
        where = f"query {sorted(q)}, gallery {sorted(g)}"
        assert list(plan.modes) == modes, where
        assert plan.moor == moor, where
        assert set(plan.paths) == needed and list(plan.paths) == [p for p in ("II", "TT", "IT", "TI") if p in needed]
        assert list(plan.available) == [p for p, yes in ok.items() if yes], where
        assert set(plan.paths) <= set(plan.available)
        assert list(plan.targets) == modes + ["MOOR"] * moor
        assert list(plan.run_targets) == modes + (["MOOR"] + [f"fusion/{b}" for b in DEFAULT_RUN_BASELINES]) * moor
        assert list(plan.skipped) == [m for m in wanted if m not in modes] + ["MOOR"] * (not moor), where
        assert set(plan.path_skipped) == {p for p, yes in ok.items() if not yes}, where
        for p, why in plan.path_skipped.items():
            sides_there = _by_hand(q, g, True)[p]
            assert (why == DIFFER) == sides_there, (where, p, why)
        if dims == "unequal":
            shared = plan_targets(q, g, requested)
            gone = [t for t in shared.run_targets if t not in plan.run_targets]
            assert plan.space_note == (f"the encoder's image and text embeddings differ in size (8 vs 4): "
                                       f"{', '.join(gone)} need a shared space and are skipped")
        else:
            assert plan.space_note is None
            assert plan == plan_targets(q, g, requested)  # equal sizes: the plan made before the sizes were known


def test_the_reasons_quote_the_missing_sides_and_the_shared_space():
    why = {"query image": "the queries have no images", "gallery text": "the gallery has no captions"}
    plan = plan_targets({"text"}, {"image"}, why=why)
    assert plan.modes == () and plan.available == ("TI",)
    assert plan.skipped["I2I"] == "needs path II: the queries have no images"
    assert plan.skipped["T2IT"] == "needs path TT: the gallery has no captions"
    assert plan.skipped["MOOR"] == "needs paths II, TT, IT: the queries have no images; the gallery has no captions"
    assert plan.lacking["MOOR"] == ("II", "TT", "IT")
    assert plan.reasons["I2I"] == ("the queries have no images",)
    # a path lacking both sides says the query's reason
    assert plan.path_skipped == {"II": "the queries have no images", "TT": "the gallery has no captions",
                                 "IT": "the queries have no images"}

    full = plan_targets({"image", "text"}, {"image", "text"}, dims={"image": 8, "text": 4})
    assert full.modes == ("I2I", "T2T", "IT2IT") and not full.moor and full.paths == ("II", "TT")
    assert full.skipped["I2IT"] == "needs path IT: the image and text embeddings differ in size (no shared space)"
    assert full.path_skipped == {"IT": DIFFER, "TI": DIFFER}
    assert full.space_note == ("the encoder's image and text embeddings differ in size (8 vs 4): I2IT, T2IT, MOOR, "
                               "fusion/comb_sum, fusion/rrf need a shared space and are skipped")


def test_requested_modes_are_any_case_and_checked():
    assert plan_targets({"image"}, {"image"}, ["i2i", "I→I"]).modes == ("I2I",)
    with pytest.raises(ConfigError, match="unknown retrieval mode"):
        plan_targets({"image"}, {"image"}, ["I2X"])
