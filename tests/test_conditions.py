import numpy as np
import pytest

from snapbench.core.conditions import (
    IMAGE_OPERATORS,
    JOINT_PAIRS,
    TEXT_OPERATORS,
    Condition,
    ConditionSpace,
    build_conditions,
    condition_sort_key,
    condition_to_filename,
    list_conditions,
    parse_condition,
)


def test_counts_match_the_paper():
    assert len(IMAGE_OPERATORS) == 15 and len(set(IMAGE_OPERATORS)) == 15
    assert len(TEXT_OPERATORS) == 8
    states = list_conditions()
    assert len(states) == 54
    assert len({c.id for c in states}) == 54
    assert sum(c.kind == "image" for c in states) == 45
    allc = list_conditions(joint=True)
    assert len(allc) == 72 and sum(c.kind == "joint" for c in allc) == 18


@pytest.mark.parametrize(
    "cid,kind,img,txt,sev",
    [
        ("clean", "clean", None, None, None),
        ("img/motion_blur/s2", "image", "motion_blur", None, 2),
        ("txt/char_swap", "text", None, "char_swap", None),
        ("joint/compression+char_add/s3", "joint", "compression", "char_add", 3),
    ],
)
def test_ids_round_trip(cid, kind, img, txt, sev):
    c = parse_condition(cid)
    assert (c.kind, c.image_operator, c.text_operator, c.severity) == (kind, img, txt, sev)
    assert c.id == cid
    fname = condition_to_filename(cid)
    assert "/" not in fname
    assert parse_condition(fname) == c


def test_spec_file_names():
    assert Condition("image", image_operator="motion_blur", severity=2).filename == "img__motion_blur__s2"
    assert parse_condition("joint__compression+char_add__s3").id == "joint/compression+char_add/s3"


def test_joint_parts():
    j = parse_condition("joint/rotation+sent_replace/s1")
    assert j.image_part.id == "img/rotation/s1"
    assert j.text_part.id == "txt/sent_replace"
    assert ("rotation", "sent_replace") in JOINT_PAIRS


@pytest.mark.parametrize("bad", ["", "img/blur", "img/blur/2", "txt/", "joint/a/s1", "noise", "img/a b/s1"])
def test_bad_ids_raise_naming_the_id(bad):
    with pytest.raises(ValueError, match="not a condition id"):
        parse_condition(bad)


def test_ids_are_spelled_by_condition_builders_only():
    assert Condition.clean().id == "clean"
    assert Condition.image("motion_blur", 2).id == "img/motion_blur/s2"
    assert Condition.text("char_swap").id == "txt/char_swap"
    assert Condition.joint("compression", "char_add", 3).id == "joint/compression+char_add/s3"
    assert Condition.joint("compression", "char_add", 3) == parse_condition("joint/compression+char_add/s3")
    # a Condition that could not be read back from its id is refused
    for bad in (dict(kind="image", image_operator=None, severity=2), dict(kind="text", text_operator="a b"),
                dict(kind="clean", severity=1), dict(kind="image", image_operator="x", severity="2"),
                dict(kind="blur")):
        with pytest.raises(ValueError):
            Condition(**bad)


def test_bad_ids_are_config_errors_about_the_parameter():
    from snapbench.core.errors import ConfigError

    with pytest.raises(ConfigError) as err:
        parse_condition("noise", param="conditions")
    assert err.value.param == "conditions" and "not a condition id: 'noise'" in str(err.value)


def test_one_builder_for_released_variants():
    # a dataset that ships img/mosaic/s1..2, img/rotation/s3 and two text operators
    space = ConditionSpace.from_parts([("rotation", 3), ("mosaic", 2), ("mosaic", 1)], ["word_swap", "sent_add"],
                                      source="the dataset's released variants")
    ids = [c.id for c in build_conditions(None, joint=True, space=space).conditions]
    # in the paper's order (transform before add, word level before sentence level), as `evaluate` lists them
    assert ids == ["clean", "img/rotation/s3", "img/mosaic/s1", "img/mosaic/s2", "txt/word_swap", "txt/sent_add",
                   "joint/mosaic+sent_add/s1", "joint/mosaic+sent_add/s2"]  # only the paper's pairs that exist
    plan = build_conditions(["joint/rotation+word_swap/s3", "txt/word_swap"], space=space)
    assert [c.id for c in plan.conditions] == ["clean", "img/rotation/s3", "txt/word_swap", "joint/rotation+word_swap/s3"]
    assert [c.id for c in plan.added_parts] == ["img/rotation/s3"]
    with pytest.raises(ValueError, match=r"'img/rotation/s1'.*no severity s1 in the dataset's released variants"):
        build_conditions(["img/rotation/s1"], space=space)


def test_sort_key_gives_the_order_of_a_default_run():
    """Sorting any shuffle of the 72 built-in conditions gives list_conditions' order (what a default
    run lists): the joint pairs in the paper's order C+C, D+D, L+W, M+S, E+W, R+S, not by image operator."""
    import random

    listed = [c.id for c in list_conditions(joint=True)]
    for seed in range(5):
        shuffled = listed[:]
        random.Random(seed).shuffle(shuffled)
        assert sorted(shuffled, key=condition_sort_key) == listed
    joint = [c for c in sorted(listed, key=condition_sort_key) if c.startswith("joint/")]
    assert joint[:4] == ["joint/compression+char_add/s1", "joint/compression+char_add/s2",
                         "joint/compression+char_add/s3", "joint/downscale+char_delete/s1"]
    assert joint[-1] == "joint/rotation+sent_replace/s3"


def test_sort_key_places_what_is_not_built_in_after_the_built_ins_of_its_kind():
    ids = ["txt/emoji", "joint/zoom+char_add/s1", "img/zoom/s1", "joint/motion_blur+char_swap/s2", "img/motion_blur/s4",
           "txt/sent_replace", "joint/rotation+sent_replace/s1", "img/ui_elements/s3", "img/blur/s2", "clean",
           "joint/motion_blur+char_swap/s1", "img/motion_blur/s3", "img/low_light/s1"]
    assert sorted(ids, key=condition_sort_key) == [
        "clean",
        "img/low_light/s1", "img/motion_blur/s3", "img/motion_blur/s4",  # s4 (a custom grid) next to its operator
        "img/ui_elements/s3", "img/blur/s2", "img/zoom/s1",  # user operators after the built-ins, by name
        "txt/sent_replace", "txt/emoji",
        "joint/rotation+sent_replace/s1",  # a paper pair first, then the others by image operator
        "joint/motion_blur+char_swap/s1", "joint/motion_blur+char_swap/s2", "joint/zoom+char_add/s1",
    ]


def test_released_variants_are_listed_in_the_paper_order_whatever_order_they_come_in():
    space = ConditionSpace.from_parts([("rotation", 2), ("zoom", 1), ("motion_blur", 3), ("motion_blur", 1)],
                                      ["word_swap", "emoji", "sent_add", "char_add"])
    assert [(op, list(s)) for op, s in space.image_severities.items()] == [("motion_blur", [1, 3]), ("rotation", [2]),
                                                                          ("zoom", [1])]
    assert list(space.text_operators) == ["char_add", "word_swap", "sent_add", "emoji"]


def test_builder_order_dedup_and_aliases():
    space = ConditionSpace({"blur": [1, 2]}, ["swap"], joint_pairs=(("blur", "swap"),), image_aliases={"smear": "blur"})
    plan = build_conditions(["txt/swap", "img/smear/s2", "img/blur/s2", "clean"], joint=True, space=space)
    assert [c.id for c in plan.conditions] == ["clean", "txt/swap", "img/blur/s2", "img/blur/s1", "joint/blur+swap/s1",
                                               "joint/blur+swap/s2"]
    assert [c.id for c in plan.added_parts] == ["img/blur/s1"]


def test_each_condition_names_the_query_sides_it_corrupts():
    """KIND_SIDES / Condition.sides (the one table compare and run read) against the operators a
    condition actually has."""
    from snapbench.core.conditions import KIND_SIDES, KINDS

    assert KINDS == ("clean", "image", "text", "joint")
    assert KIND_SIDES == {"clean": frozenset(), "image": {"image"}, "text": {"text"}, "joint": {"image", "text"}}
    for c in list_conditions():
        has = {s for s, op in (("image", c.image_operator), ("text", c.text_operator)) if op is not None}
        assert c.sides == has, c.id


def test_query_sides_of_paths_brute_force():
    """modes.query_sides: the query side of each path (II/IT read the query image, TT/TI its text)."""
    from itertools import combinations

    from snapbench.core.targets import PATHS, query_sides

    reads = {"II": "image", "IT": "image", "TT": "text", "TI": "text"}
    for n in range(len(PATHS) + 1):
        for paths in combinations(PATHS, n):
            assert query_sides(paths) == {reads[p] for p in paths}


def test_a_missing_level_lists_the_levels_as_words_not_as_a_python_list(tmp_path):
    """Trial 4: `run --conditions img/motion_blur/s4` said "(levels: [1, 2, 3])"."""
    from typer.testing import CliRunner

    from snapbench.cli import app
    from snapbench.core.defaults import DEFAULT_DATA
    from snapbench.corruptions import corrupt_image, level_params

    res = CliRunner().invoke(app, ["run", str(DEFAULT_DATA), "-e", "toy", "--out", str(tmp_path / "o"),
                                   "--conditions", "img/motion_blur/s4"])
    assert res.exit_code == 2 and res.output.startswith(
        "error: --conditions: unknown condition 'img/motion_blur/s4' (image operator 'motion_blur' has no "
        "severity s4 (levels: 1, 2, 3)) (did you mean 'img/motion_blur/s"), res.output
    with pytest.raises(ValueError, match=r"^severity: image operator 'mosaic' has no severity 5 \(levels: 1, 2, 3\)$"):
        level_params("mosaic", 5, None)
    with pytest.raises(ValueError, match=r"has no severity 4 \(levels: 1, 2, 3\)$"):
        corrupt_image(np.zeros((8, 8, 3), np.uint8), "mosaic", 4)
