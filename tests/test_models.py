import subprocess
import sys

import numpy as np
import pytest

from snapbench.models import Encoder, get_encoder, cosine_path_scores, register_encoder


def test_toy_encoder_is_an_encoder_and_deterministic_across_processes():
    enc = get_encoder("toy")
    assert isinstance(enc, Encoder)
    t = enc.encode_texts(["What kind of fish is this?"])
    code = "from snapbench.models import get_encoder; print(get_encoder('toy').encode_texts(['What kind of fish is this?']).tobytes().hex())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONHASHSEED": "123", "PATH": ""}).stdout.strip()
    assert out == t.tobytes().hex()


def test_toy_image_features_see_the_image():
    enc = get_encoder("toy")
    rng = np.random.default_rng(0)
    a = rng.integers(0, 255, (48, 64, 3), dtype=np.uint8)
    e = enc.encode_images([a, a, 255 - a])
    assert e.shape == (3, enc.dim)
    assert np.array_equal(e[0], e[1]) and not np.allclose(e[0], e[2])


def test_path_scores_are_the_four_cosines():
    rng = np.random.default_rng(1)
    qi, qt, gi, gt = (rng.normal(size=(n, 8)) for n in (3, 3, 5, 5))
    s = cosine_path_scores(qi, qt, gi, gt)

    def cos(a, b):
        return np.array([[x @ y / np.linalg.norm(x) / np.linalg.norm(y) for y in b] for x in a])

    for name, (a, b) in {"II": (qi, gi), "TT": (qt, gt), "IT": (qi, gt), "TI": (qt, gi)}.items():
        np.testing.assert_allclose(s[name], cos(a, b), atol=1e-6)


def test_registry_rejects_duplicates_and_unknowns():
    with pytest.raises(ValueError, match="already registered"):
        register_encoder("toy")(lambda: None)
    with pytest.raises(ValueError, match="unknown encoder 'nope'"):
        get_encoder("nope")
