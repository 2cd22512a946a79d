import pytest

from snapbench.conditions import (
    IMAGE_OPERATORS,
    JOINT_PAIRS,
    TEXT_OPERATORS,
    Condition,
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
