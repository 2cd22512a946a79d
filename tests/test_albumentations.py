# ruff: noqa: E402  (imports after pytest.importorskip on purpose)
import json
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

A = pytest.importorskip("albumentations")

from skimage import data

from snapbench.core.errors import ConfigError
from snapbench.core.seeding import image_rng
from snapbench.corruptions import (
    corrupt_image,
    corrupt_image_with_params,
    default_grid,
    get_image_operator,
    image_operators,
    iter_variants,
)
from snapbench.interop.albumentations import (
    SnapbenchCorruption,
    register_albumentations_operator,
)

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module", autouse=True)
def _restore_registry():
    # operators registered here must not leak into other test modules (they list all operators)
    from snapbench.corruptions.image import unregister_image_operator, user_image_operators

    before = {op.name for op in user_image_operators()}
    yield
    for op in user_image_operators():
        if op.name not in before:
            unregister_image_operator(op.name)


@pytest.fixture(scope="module")
def photo():
    return np.ascontiguousarray(data.astronaut()[::4, ::4])  # 128x128 real photo


def test_every_operator_runs_in_a_compose(photo):
    for name in image_operators():
        aug = A.Compose([SnapbenchCorruption(name, severity=2)], seed=3)
        out = aug(image=photo)["image"]
        assert out.dtype == np.uint8 and out.ndim == 3
        op = get_image_operator(name)
        if not op.changes_size:
            assert out.shape == photo.shape, name


def test_compose_seed_makes_it_reproducible(photo):
    outs = [A.Compose([SnapbenchCorruption("cropping", severity=(1, 2, 3))], seed=11)(image=photo)["image"]
            for _ in range(2)]
    assert np.array_equal(outs[0], outs[1])
    other = A.Compose([SnapbenchCorruption("cropping", severity=3)], seed=12)
    ref = A.Compose([SnapbenchCorruption("cropping", severity=3)], seed=11)
    assert not np.array_equal(other(image=photo)["image"], ref(image=photo)["image"])


def test_pixels_equal_the_library_operator_for_the_same_params(photo):
    # a second path: draw the params with the same generator the transform uses, apply directly
    t = SnapbenchCorruption("scribble", severity=2)
    t.set_random_seed(5)
    out = t(image=photo)["image"]
    rng = np.random.default_rng(5)  # albumentations seeds its generator with default_rng(seed)
    op = get_image_operator("scribble")
    params = op.sample(rng, default_grid()["scribble"][2], photo.shape[:2])
    assert np.array_equal(out, op.apply(photo, params))


def test_probability_zero_is_identity_and_grayscale_is_kept(photo):
    assert np.array_equal(SnapbenchCorruption("overexposure", 3, p=0.0)(image=photo)["image"], photo)
    gray = photo[..., 0].copy()
    out = SnapbenchCorruption("overexposure", 3)(image=gray)["image"]
    assert out.shape == gray.shape and out.mean() > gray.mean()


def test_unknown_operator_or_level_fails_early():
    with pytest.raises(ValueError, match="unknown image operator"):
        SnapbenchCorruption("no_such_op")
    with pytest.raises(ValueError, match=r"no severity 9 \(levels: 1, 2, 3\)"):
        SnapbenchCorruption("overexposure", severity=9)


# ------------------------------------------------------------------------------------------------
# albumentations transforms registered as snapbench operators


def _noise(std):
    return A.GaussNoise(std_range=(std, std), p=1.0)


@pytest.fixture(scope="module")
def alb_noise():
    return register_albumentations_operator(
        "alb_test_noise", {1: _noise(0.03), 2: _noise(0.08), 3: _noise(0.2)}, primitive="degrade", replace=True
    )


def test_registered_transform_is_seeded_per_query_through_albumentations(photo, alb_noise):
    a = corrupt_image_with_params(photo, "alb_test_noise", 2, seed=0, key="q1")
    # independent reference: albumentations itself with the seed snapbench derives for (seed, key, op, sev)
    seed = int(image_rng(0, "q1", "alb_test_noise", 2).integers(0, 2**32, dtype=np.uint64))
    assert a.params["albumentations_seed"] == seed
    ref = A.Compose([_noise(0.08)], seed=seed)(image=photo)["image"]
    assert np.array_equal(a.image, ref)
    assert np.array_equal(corrupt_image(photo, "alb_test_noise", 2, seed=0, key="q1"), a.image)
    assert not np.array_equal(corrupt_image(photo, "alb_test_noise", 2, seed=0, key="q2"), a.image)
    assert not np.array_equal(corrupt_image(photo, "alb_test_noise", 2, seed=1, key="q1"), a.image)
    # severities are different transforms: noise grows
    errs = [np.abs(corrupt_image(photo, "alb_test_noise", s, key="q1").astype(int) - photo).mean() for s in (1, 2, 3)]
    assert errs[0] < errs[1] < errs[2]


def test_applied_params_are_recorded_json_safe(photo, alb_noise):
    p = corrupt_image_with_params(photo, "alb_test_noise", 3, seed=4, key="q").params
    assert p["severity"] == 3 and p["transform"] == "GaussNoise"
    name, applied = p["applied"][0]
    assert name == "GaussNoise"
    assert applied["noise_map"] == {"array": {"shape": [128, 128, 3], "dtype": "float32"}}
    json.dumps(p)  # no numpy left


def test_conditions_and_variants_work(photo, alb_noise):
    vs = list(iter_variants(photo, "What is this?", key="k", conditions=["img/alb_test_noise/s1", "img/alb_test_noise/s3"]))
    assert [v.condition for v in vs] == ["clean", "img/alb_test_noise/s1", "img/alb_test_noise/s3"]
    assert np.array_equal(vs[2].image, corrupt_image(photo, "alb_test_noise", 3, key="k"))
    assert vs[2].params["image"]["applied"][0][0] == "GaussNoise"


def test_operator_pickles_and_gives_the_same_pixels(photo, alb_noise):
    op = get_image_operator("alb_test_noise")
    clone = pickle.loads(pickle.dumps(op))
    params = op.sample(image_rng(0, "x", "alb_test_noise", 1), {"severity": 1}, photo.shape[:2])
    assert np.array_equal(clone.apply(photo, dict(params)), op.apply(photo, dict(params)))


@pytest.mark.slow
def test_byte_identical_in_another_process(photo, alb_noise, tmp_path):
    np.save(tmp_path / "photo.npy", photo)
    code = (
        "import sys, hashlib, numpy as np, albumentations as A\n"
        "from snapbench.interop.albumentations import register_albumentations_operator\n"
        "from snapbench.corruptions import corrupt_image\n"
        "n = lambda s: A.GaussNoise(std_range=(s, s), p=1.0)\n"
        "register_albumentations_operator('alb_test_noise', {1: n(0.03), 2: n(0.08), 3: n(0.2)})\n"
        "img = np.load(sys.argv[1])\n"
        "print(hashlib.sha256(corrupt_image(img, 'alb_test_noise', 2, seed=7, key='q9').tobytes()).hexdigest())\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "photo.npy")], capture_output=True, text=True,
                         cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PYTHONHASHSEED": "123"}, check=True)
    import hashlib

    here = hashlib.sha256(corrupt_image(photo, "alb_test_noise", 2, seed=7, key="q9").tobytes()).hexdigest()
    assert out.stdout.strip() == here


def test_size_changing_transform_needs_changes_size(photo):
    register_albumentations_operator("alb_test_crop", {1: A.CenterCrop(64, 64)}, replace=True)
    with pytest.raises(ValueError, match="changed the image size"):
        corrupt_image(photo, "alb_test_crop", 1)
    register_albumentations_operator("alb_test_crop", {1: A.CenterCrop(64, 64)}, changes_size=True, replace=True)
    assert corrupt_image(photo, "alb_test_crop", 1).shape == (64, 64, 3)
    with pytest.raises(ConfigError, match="expected an albumentations transform"):
        register_albumentations_operator("alb_test_bad", {1: lambda x: x})
    with pytest.raises(ValueError, match="severities must be integers"):
        register_albumentations_operator("alb_test_bad", {0: _noise(0.1)})
