"""The operator registry: one source of built-in names and primitives, levels required, errors typed."""

from __future__ import annotations

import numpy as np
import pytest

from snapbench.core.conditions import IMAGE_PRIMITIVES, TEXT_OPERATORS
from snapbench.core.errors import ConfigError, InputError, RunConfigError
from snapbench.corruptions import (
    EntityNotFoundError,
    ImageLoadError,
    ManifestError,
    TextCorruptionError,
    resolve_conditions,
    resolve_grid,
)
from snapbench.corruptions.image import (
    image_operators,
    register_image_operator,
    unregister_image_operator,
)


def _identity(image: np.ndarray, params: dict) -> np.ndarray:
    return image.copy()


def test_builtin_registrations_agree_with_the_taxonomy_in_conditions() -> None:
    ops = image_operators()
    for primitive, names in IMAGE_PRIMITIVES.items():
        for name in names:
            assert ops[name].primitive == primitive


def test_a_builtin_registered_under_another_primitive_is_an_error() -> None:
    with pytest.raises(ConfigError, match=r"'motion_blur' is a built-in 'degrade' operator.*'add'"):
        register_image_operator("motion_blur", apply=_identity, primitive="add", replace=True)
    assert image_operators()["motion_blur"].apply.__name__ == "motion_blur"  # untouched


def test_an_operator_without_levels_is_refused_at_registration() -> None:
    with pytest.raises(ConfigError, match=r"'no_levels_op' has no default levels"):
        register_image_operator("no_levels_op", apply=_identity)
    assert "no_levels_op" not in image_operators()


def test_a_registered_operator_is_part_of_default_runs() -> None:
    register_image_operator("reg_test_op", apply=_identity, grid={"s1": {}, 2: {}})
    try:
        ids = [c.id for c in resolve_conditions(None)]
        assert ids.count("img/reg_test_op/s1") == 1 and "img/reg_test_op/s2" in ids
        assert image_operators()["reg_test_op"].primitive == "custom"
    finally:
        unregister_image_operator("reg_test_op")
    assert "img/reg_test_op/s1" not in [c.id for c in resolve_conditions(None)]


def test_a_grid_missing_a_registered_operator_is_an_error_not_a_silent_drop() -> None:
    table = resolve_grid(None)
    del table["mosaic"]
    with pytest.raises(ConfigError, match=r"no levels for image operator\(s\) mosaic"):
        resolve_conditions(None, grid=table)


def test_corruption_errors_belong_to_the_snapbench_family() -> None:
    for cls in (ManifestError, ImageLoadError, EntityNotFoundError, TextCorruptionError):
        assert issubclass(cls, InputError) and issubclass(cls, ValueError)
    assert issubclass(RunConfigError, ConfigError) and issubclass(RunConfigError, ValueError)
    with pytest.raises(ConfigError):
        resolve_conditions(["img/nope/s1"])
    assert len(TEXT_OPERATORS) == 8


def test_one_set_of_parameter_validators() -> None:
    from snapbench.corruptions.image import base as P

    assert P.number("op", {"x": 2}, "x", lo=0.0) == 2.0 and P.integer("op", {"k": 15.0}, "k", lo=1) == 15
    assert P.fraction("op", {"keep": 0.5}, "keep") == 0.5 and P.rgb("op", (1, 2, 3), "c") == [1, 2, 3]
    assert [P.scaled_side(10, f) for f in (0.25, 0.35, 0.01)] == [3, 4, 1]  # round half up, at least 1
    bad = [
        lambda: P.number("op", {"x": True}, "x"),
        lambda: P.number("op", {"x": float("nan")}, "x"),
        lambda: P.number("op", {"x": 0.0}, "x", lo=0.0, lo_open=True),
        lambda: P.integer("op", {"k": 1.5}, "k", lo=1),
        lambda: P.known_keys("op", {"kernal": 3}, "kernel"),
        lambda: P.fraction("op", {"keep": 0}, "keep"),
        lambda: P.level_value("op", {}, "x"),
        lambda: P.rgb("op", (1, 2), "c"),
    ]
    for call in bad:
        with pytest.raises(ConfigError, match="op"):
            call()
    # the validators are what the operators use: a grid typo is reported by the same check
    with pytest.raises(ConfigError, match=r"unknown parameter 'kernal' \(did you mean 'kernel'\?\); known: "):
        resolve_conditions(["img/motion_blur/s1"], grid={**resolve_grid(None), "motion_blur": {1: {"kernal": 3}}})


def test_a_builtin_registration_takes_its_primitive_from_the_benchmark_taxonomy() -> None:
    from snapbench.core.conditions import PRIMITIVE_OF
    from snapbench.corruptions.image import builtin_image_operators
    from snapbench.corruptions.image.base import builtin_operator

    def sample(rng, level, shape):
        return dict(level)

    with pytest.raises(ConfigError, match=r"'fog' is not listed in snapbench.core.conditions.IMAGE_PRIMITIVES"):
        builtin_operator("fog", levels={1: {}}, sample=sample, knob=None)
    assert "fog" not in image_operators()  # nothing was registered
    assert {n: op.primitive for n, op in builtin_image_operators().items()} == PRIMITIVE_OF


def test_the_tables_of_the_builtins_are_their_registrations() -> None:
    from snapbench.corruptions.image import BUILTIN_KNOBS, DEFAULT_GRID, builtin_image_operators
    from snapbench.diagnose.mix import FLAG_CONDITIONS

    records = builtin_image_operators()
    assert list(records) == [op for ops in IMAGE_PRIMITIVES.values() for op in ops]
    for name, op in records.items():
        assert op.origin == "builtin" and op.grid == DEFAULT_GRID[name] and op.knob is BUILTIN_KNOBS[name]
    # diagnose's image flags, as docs/diagnose.md tabulates them
    assert {f: e.conditions for f, e in FLAG_CONDITIONS.items() if e.conditions[0].startswith("img/")} == {
        "blur": ("img/defocus_blur/s2", "img/defocus_blur/s3", "img/motion_blur/s2", "img/motion_blur/s3"),
        "low_light": ("img/low_light/s3",),
        "overexposure": ("img/overexposure/s2", "img/overexposure/s3"),
        "compression": ("img/compression/s3",),
        "low_resolution": ("img/low_resolution/s2", "img/low_resolution/s3", "img/downscale/s1", "img/downscale/s2",
                           "img/downscale/s3"),
    }
    assert list(FLAG_CONDITIONS) == ["blur", "low_light", "overexposure", "compression", "low_resolution", "oov",
                                     "few_content_tokens", "no_entity"]  # the detectors' order (traffic.json)
