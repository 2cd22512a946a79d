import json

import pytest

from snapbench.core.conditions import IMAGE_OPERATORS
from snapbench.corruptions.image import DEFAULT_GRID, load_grid, merge_grid


def test_default_grid_is_the_spec_table():
    assert list(DEFAULT_GRID) == list(IMAGE_OPERATORS)
    assert all(sorted(levels) == [1, 2, 3] for levels in DEFAULT_GRID.values())
    # spot values from SPEC §3 (the authors' release)
    assert DEFAULT_GRID["low_light"][3] == {"brightness": 0.15, "noise_sigma": 22.0}
    assert [DEFAULT_GRID["compression"][s]["quality"] for s in (1, 2, 3)] == [50, 18, 5]
    assert [DEFAULT_GRID["downscale"][s]["scale"] for s in (1, 2, 3)] == [0.20, 0.10, 0.04]
    assert [DEFAULT_GRID["rotation"][s]["angle"] for s in (1, 2, 3)] == [10.0, 45.0, 180.0]


def test_toml_and_json_overrides(tmp_path):
    toml = tmp_path / "g.toml"
    toml.write_text('[motion_blur.s2]\nkernel = 15\n[defocus_blur.s4]\nsigma = 16.0\n')
    g = load_grid(toml)
    assert g["motion_blur"][2] == {"kernel": 15, "angle": 0.0}
    assert g["defocus_blur"][4] == {"sigma": 16.0}
    assert DEFAULT_GRID["motion_blur"][2]["kernel"] == 13  # defaults untouched
    js = tmp_path / "g.json"
    js.write_text(json.dumps({"overexposure": {"1": {"gain": 1.2}}}))
    assert load_grid(js)["overexposure"][1] == {"gain": 1.2}


@pytest.mark.parametrize("content", ["{not json", '{"x": 3}', '{"x": {"high": {}}}', "[1, 2]"])
def test_bad_grid_files_name_the_file(tmp_path, content):
    p = tmp_path / "bad.json"
    p.write_text(content)
    with pytest.raises(ValueError, match="bad.json"):
        load_grid(p)


def test_merge_creates_new_operator_levels():
    # levels for a name outside the base grid are accepted when the caller says it exists
    g = merge_grid(DEFAULT_GRID, {"my_op": {"s1": {"a": 1}}}, operators=["my_op"])
    assert g["my_op"] == {1: {"a": 1}}


@pytest.mark.parametrize("suffix,content", [
    (".toml", "[motionblur.s2]\nkernel = 15\n"),
    (".json", '{"motionblur": {"s2": {"kernel": 15}}}'),
])
def test_a_misspelt_operator_in_a_grid_file_is_an_error_with_did_you_mean(tmp_path, suffix, content):
    # Parameter typos were caught, operator typos silently ignored (motion_blur kept its defaults).
    p = tmp_path / f"g{suffix}"
    p.write_text(content)
    with pytest.raises(ValueError, match=r"g\.(toml|json).*'motionblur'.*did you mean 'motion_blur'"):
        load_grid(p)
    with pytest.raises(ValueError, match=r"'motionblur'.*did you mean 'motion_blur'"):
        merge_grid(DEFAULT_GRID, {"motionblur": {"s2": {"kernel": 15}}})
