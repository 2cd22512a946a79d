import numpy as np
import pytest

A = pytest.importorskip("albumentations")

from skimage import data  # noqa: E402

from snapbench.corruptions import image_operators  # noqa: E402
from snapbench.corruptions.albumentations import SnapbenchCorruption  # noqa: E402
from snapbench.corruptions.image.base import _level_params, get_image_operator  # noqa: E402


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
    params = op.sample(rng, _level_params("scribble", 2, None), photo.shape[:2])
    assert np.array_equal(out, op.apply(photo, params))


def test_probability_zero_is_identity_and_grayscale_is_kept(photo):
    assert np.array_equal(SnapbenchCorruption("overexposure", 3, p=0.0)(image=photo)["image"], photo)
    gray = photo[..., 0].copy()
    out = SnapbenchCorruption("overexposure", 3)(image=gray)["image"]
    assert out.shape == gray.shape and out.mean() > gray.mean()


def test_unknown_operator_or_level_fails_early():
    with pytest.raises(ValueError, match="unknown image operator"):
        SnapbenchCorruption("no_such_op")
    with pytest.raises(ValueError, match="no severity 9"):
        SnapbenchCorruption("overexposure", severity=9)
