"""The words every "unknown X" message shares: one did-you-mean (one cutoff, one count, one
wording) and one list of examples; expected strings are written out by hand."""

from __future__ import annotations

import pytest

from snapbench.core.errors import ConfigError
from snapbench.core.registry import Table
from snapbench.core.validate import choice, did_you_mean, examples, listing, suggestion, unknown_name
from snapbench.corruptions.image import merge_grid
from snapbench.evaluate.metrics import parse_metrics


def test_the_one_wording():
    assert suggestion([]) == ""
    assert suggestion(["ray"]) == " (did you mean 'ray'?)"
    assert suggestion(["a", "b"]) == " (did you mean 'a' or 'b'?)"
    assert suggestion(["a", "b", "c"]) == " (did you mean 'a', 'b' or 'c'?)"


def test_the_one_cutoff_and_count():
    # difflib's ratio is 2 * matches / (len(a) + len(b)): "abcd"/"abxy" 4/8 = 0.5, "abcde"/"abcxy" 6/10 = 0.6
    assert did_you_mean("abcd", ["abxy"]) == ""
    assert did_you_mean("abcde", ["abcxy"]) == " (did you mean 'abcxy'?)"
    # four close names: the three closest, closest first ("motionblur" is 1 edit from the first)
    got = did_you_mean("motionblur", ["motion_blurs", "motion_blur", "motion_blurry", "motion_blur_xyz"])
    assert got == " (did you mean 'motion_blur', 'motion_blurs' or 'motion_blurry'?)"
    assert did_you_mean("zzz", ["ray", "local"]) == ""
    # equally close names keep the order they are known in (difflib's own order would be hit@5 first)
    assert did_you_mean("hit@l", ["hit@1", "hit@5", "hit@10"]) == " (did you mean 'hit@1', 'hit@5' or 'hit@10'?)"


def test_examples_lists_five_then_counts():
    assert examples([]) == ""
    assert examples(["q1", "q2"]) == "'q1', 'q2'"
    assert examples([f"q{i}" for i in range(7)]) == "'q0', 'q1', 'q2', 'q3', 'q4' (and 2 more)"


def test_one_listing_of_values_never_python_syntax():
    assert listing([1, 2, 3]) == "1, 2, 3"
    assert listing(("a", "b"), quote=True) == "'a', 'b'"
    assert listing(range(12), 10) == "0, 1, 2, 3, 4, 5, 6, 7, 8, 9 (and 2 more)"
    assert listing([]) == ""


def test_one_wording_of_a_refused_name():
    assert unknown_name("image format", "pngg", ["png", "qoi"]) == (
        "unknown image format 'pngg' (did you mean 'png'?); known: png, qoi")
    assert unknown_name("key", "x", [], where=" in [blur]") == "unknown key 'x' in [blur]; known: none"
    with pytest.raises(ConfigError) as err:
        choice("holmes", ("holm", "bh"), "correction", what="correction")
    assert err.value.param == "correction"
    assert err.value.problem == "unknown correction 'holmes' (did you mean 'holm'?); known: holm, bh"


def test_every_unknown_name_error_uses_it():
    t: Table[int] = Table("engine", param="engine")
    t.register("local", 1)
    t.register("ray", 2, aliases=("ray-cluster",))
    with pytest.raises(ConfigError) as err:
        t.get("rey")
    assert err.value.problem == "unknown engine 'rey' (did you mean 'ray'?); known: local, ray"
    with pytest.raises(ConfigError, match=r"unknown metric 'ndgc@10' \(did you mean 'ndcg'\?\); known"):
        parse_metrics("ndgc@10")
    with pytest.raises(ConfigError, match=r"unknown image operator 'motionblur' in the grid \(did you mean 'motion_blur'\?\); "
                                          r"known: motion_blur, mosaic \(register an operator"):
        merge_grid({}, {"motionblur": {"s1": {}}}, operators=["motion_blur", "mosaic"])
