"""Photos the project does not ship, for validating the diagnose detectors (tests and
bench/validate_diagnose.py): scikit-image's sample photos that snapbench's demo is *not* built
from, scikit-learn's two sample photos and matplotlib's Grace Hopper portrait (all installed with
the test extra).  The demo's own photos (astronaut, camera, chelsea, coffee, coins, rocket, ...)
are the development set the thresholds were chosen on: :data:`DEV_PHOTOS`.
"""

from __future__ import annotations

import numpy as np

#: name -> how to load it; RGB uint8, grey photos replicated to three channels.
TEST_PHOTOS: tuple[str, ...] = ("motorcycle_left", "motorcycle_right", "grass", "gravel", "cell", "page", "text",
                                "china", "flower", "grace_hopper")
DEV_PHOTOS: tuple[str, ...] = ("astronaut", "camera", "chelsea", "coffee", "coins", "rocket", "hubble_deep_field",
                               "retina", "immunohistochemistry", "brick", "moon", "clock")


def _rgb(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a)
    if a.ndim == 2:
        a = np.repeat(a[..., None], 3, axis=2)
    return np.ascontiguousarray(a[..., :3]).astype(np.uint8)


def load_photo(name: str) -> np.ndarray:
    """One photo of :data:`TEST_PHOTOS` or :data:`DEV_PHOTOS` as HxWx3 uint8 RGB."""
    from skimage import data

    if name.startswith("motorcycle_"):
        left, right, _ = data.stereo_motorcycle()
        return _rgb(left if name.endswith("left") else right)
    if name in ("china", "flower"):
        from sklearn.datasets import load_sample_image

        return _rgb(load_sample_image(f"{name}.jpg"))
    if name == "grace_hopper":
        import matplotlib.cbook
        from PIL import Image

        with matplotlib.cbook.get_sample_data("grace_hopper.jpg") as fh:
            return _rgb(np.asarray(Image.open(fh).convert("RGB")))
    return _rgb(getattr(data, name)())


def photo_set(names: tuple[str, ...] = TEST_PHOTOS) -> dict[str, np.ndarray]:
    return {n: load_photo(n) for n in names}
