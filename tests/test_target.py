"""search_knob (snapbench.corruptions.target) on three of today's operators, unchanged.

Every achieved value is recomputed by a second path: the operator applied again to the returned
parameters and measured with scikit-image on the documented preprocessing
(tests/measure_reference.py).  Compression's integer knob is checked against a brute-force sweep of all 100
qualities.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import pytest
from measure_reference import photo, ref_strength

from snapbench.core.errors import ConfigError
from snapbench.corruptions.image import get_image_operator
from snapbench.corruptions.measure import image_reference
from snapbench.corruptions.target import DEFAULT_TOLERANCE, search_knob

SIZES = [("moto_left", 240, 320), ("moto_right", 333, 517), ("gravel", 768, 1024)]
# operator: (knob, lo, hi, options, the other sampled parameters)
KNOBS = {
    "defocus_blur": ("sigma", 0.3, 40.0, {"log": True}, {"exact": False}),
    "overexposure": ("gain", 1.0, 10.0, {"log": True}, {}),
    "compression": ("quality", 1, 100, {"integer": True}, {}),
}


def _second_path(op: str, clean: np.ndarray, result, metric: str) -> float:
    again = get_image_operator(op).apply(clean, result.params)
    assert np.array_equal(again, result.image)  # apply is pure: the returned image is reproducible
    psnr, ssim, _ = ref_strength(clean, again)
    return ssim if metric == "ssim" else psnr


@pytest.mark.parametrize("name,h,w", SIZES)
@pytest.mark.parametrize("op", ["defocus_blur", "overexposure"])
@pytest.mark.parametrize("metric,targets", [("ssim", (0.9, 0.75, 0.6)), ("psnr", (35.0, 28.0, 22.0))])
def test_continuous_knobs_reach_the_target(name, h, w, op, metric, targets) -> None:
    clean = photo(name, h, w)
    ref = image_reference(clean)
    knob, lo, hi, opts, rest = KNOBS[op]
    tol = DEFAULT_TOLERANCE[metric]
    for target in targets:
        res = search_knob(get_image_operator(op).apply, clean, {knob: 1.0, **rest}, knob, lo, hi, target, metric,
                          reference=ref, **opts)
        assert res.reached, (name, op, metric, target, res.achieved)
        independent = _second_path(op, clean, res, metric)
        assert abs(independent - res.achieved) <= 1e-4
        assert abs(independent - target) <= tol + 1e-4
        assert lo <= res.knob_value <= hi and res.params == {knob: res.knob_value, **rest}
        assert res.evaluations <= 20


@lru_cache(maxsize=None)
def _jpeg_sweep(name: str, h: int, w: int) -> dict[int, tuple[float, float]]:
    clean = photo(name, h, w)
    apply = get_image_operator("compression").apply
    return {q: ref_strength(clean, apply(clean, {"quality": q}))[:2] for q in range(1, 101)}


@pytest.mark.parametrize("name,h,w", SIZES[:2])
@pytest.mark.parametrize("metric,targets", [("ssim", (0.95, 0.85, 0.75, 0.6)), ("psnr", (36.0, 30.0, 26.0, 22.0))])
def test_integer_knob_against_a_sweep(name, h, w, metric, targets) -> None:
    clean = photo(name, h, w)
    apply = get_image_operator("compression").apply
    sweep = {q: values[0 if metric == "psnr" else 1] for q, values in _jpeg_sweep(name, h, w).items()}
    tol = DEFAULT_TOLERANCE[metric]
    for target in targets:
        res = search_knob(apply, clean, {"quality": 50}, "quality", 1, 100, target, metric, integer=True)
        q = res.knob_value
        assert isinstance(q, int) and abs(sweep[q] - res.achieved) <= 1e-4
        assert res.evaluations <= 24  # max_evals
        # JPEG is not monotone in quality, and jumps over the band at low qualities: the search
        # reaches the target exactly when some quality of the brute-force sweep is within tolerance
        reachable = any(abs(v - target) <= tol - 1e-4 for v in sweep.values())
        assert res.reached == reachable, (target, q, res.achieved)
        if res.reached:
            assert abs(sweep[q] - target) <= tol + 1e-4
        else:  # the closest value the search measured is returned
            assert abs(sweep[q] - target) > tol - 1e-4


def test_unreachable_targets_return_the_closer_end() -> None:
    clean = photo("moto_left", 240, 320)
    blur = get_image_operator("defocus_blur").apply
    weak = search_knob(blur, clean, {"sigma": 1.0}, "sigma", 0.3, 1.0, 0.2, "ssim")
    # the ends do not bracket it: six values across the range are measured too, the closer end stays closest
    assert not weak.reached and weak.knob_value == 1.0 and weak.evaluations == 2 + 6
    assert abs(_second_path("defocus_blur", clean, weak, "ssim") - weak.achieved) <= 1e-4
    strong = search_knob(blur, clean, {"sigma": 1.0}, "sigma", 2.0, 10.0, 0.999, "ssim")
    assert not strong.reached and strong.knob_value == 2.0
    # a knob whose weak end is the identity: PSNR inf there, the target is bracketed
    gain = search_knob(get_image_operator("overexposure").apply, clean, {"gain": 2.0}, "gain", 1.0, 4.0, 40.0, "psnr")
    assert gain.reached and abs(gain.achieved - 40.0) <= 0.5
    js = gain.to_json()
    assert set(js) == {"metric", "value", "achieved", "reached", "knob", "knob_value"}
    assert js["metric"] == "psnr" and js["value"] == 40.0 and js["knob"] == "gain"


def test_random_draws_stay_fixed_and_the_search_is_deterministic() -> None:
    clean = photo("moto_right", 333, 517)
    low = get_image_operator("low_light").apply
    params = {"brightness": 0.7, "noise_sigma": 10.0, "noise_seed": 12345}
    a = search_knob(low, clean, params, "brightness", 0.02, 1.0, 0.6, "ssim", log=True)
    b = search_knob(low, clean, params, "brightness", 0.02, 1.0, 0.6, "ssim", log=True)
    assert a.reached and a.params["noise_seed"] == 12345 and a.params["noise_sigma"] == 10.0
    assert a.image.tobytes() == b.image.tobytes() and a.to_json() == b.to_json()
    assert np.array_equal(low(clean, a.params), a.image)


def test_max_evals_bounds_the_work() -> None:
    clean = photo("moto_left", 240, 320)
    res = search_knob(get_image_operator("defocus_blur").apply, clean, {"sigma": 1.0}, "sigma", 0.3, 40.0, 0.6,
                      "ssim", tol=1e-9, max_evals=6)
    assert not res.reached and res.evaluations == 6 and math.isfinite(res.achieved)


@pytest.mark.parametrize("kwargs,match", [
    ({"metric": "mse"}, "unknown metric 'mse'; known: ssim, psnr"),
    ({"lo": 2.0, "hi": 1.0}, "lo < hi"),
    ({"lo": 1.5, "hi": 9.0, "integer": True}, "integer ends"),
    ({"lo": 0.0, "log": True}, "lo > 0"),
    ({"tol": 0.0}, "positive"),
    ({"max_evals": 1}, "at least 2"),
])
def test_bad_search_settings(kwargs, match) -> None:
    args = {"lo": 0.5, "hi": 4.0, "metric": "ssim", **kwargs}
    clean = photo("moto_left", 240, 320)
    with pytest.raises(ConfigError, match=match):
        search_knob(get_image_operator("defocus_blur").apply, clean, {}, "sigma", target=0.8, **args)
