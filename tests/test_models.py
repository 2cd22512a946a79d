import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from snapbench.core.errors import ConfigError
from snapbench.models import (
    Encoder,
    available_encoders,
    cosine_path_scores,
    get_encoder,
    load_encoder,
    register_encoder,
)
from snapbench.models.toy import ToyEncoder
from snapbench.store.cache import CachedEncoder


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


# --- spec strings: module:attribute, entry-point plugins ------------------------------------------

USER_MODULE = '''
import numpy as np

class WordCount:
    """A text-only encoder a user writes: counts of three words."""
    name = "word-count"
    fingerprint = "word-count-v1"
    modalities = frozenset({"text"})

    def __init__(self, batch_size=None):
        self.batch_size = batch_size

    def encode_texts(self, texts):
        return np.array([[t.split().count(w) for w in ("a", "dog", "cat")] for t in texts], np.float32)

class Broken:
    def encode_texts(self, texts):
        return np.zeros((len(texts) + 1, 3))

INSTANCE = WordCount(batch_size=7)
'''


def test_module_attribute_spec_loads_a_user_encoder_from_the_current_directory(tmp_path, monkeypatch):
    (tmp_path / "snapbench_user_enc_a.py").write_text(textwrap.dedent(USER_MODULE))
    monkeypatch.chdir(tmp_path)
    enc = load_encoder("snapbench_user_enc_a:WordCount", batch_size=5)  # a class: called with the kwargs it takes
    assert enc.name == "word-count" and enc.modalities == {"text"} and enc.inner.batch_size == 5
    np.testing.assert_array_equal(enc.encode_texts(["a dog a cat", "dog"]), [[2, 1, 1], [0, 1, 0]])
    with pytest.raises(ConfigError, match="does not encode images"):
        enc.encode_images([np.zeros((4, 4, 3), np.uint8)])
    inst = load_encoder("snapbench_user_enc_a:INSTANCE")  # an instance: used as it is
    assert inst.inner.batch_size == 7
    with pytest.raises(ConfigError, match=r"returned shape \(3, 3\) for 2 inputs"):
        load_encoder("snapbench_user_enc_a:Broken").encode_texts(["x", "y"])
    with pytest.raises(ConfigError, match="has no attribute 'Nope'"):
        load_encoder("snapbench_user_enc_a:Nope")
    with pytest.raises(ConfigError, match="no module named 'snapbench_no_such_mod'"):
        load_encoder("snapbench_no_such_mod:X")
    with pytest.raises(ConfigError, match="unknown encoder 'nope'"):
        load_encoder("nope")


def test_entry_point_plugins_are_listed_and_loaded_by_name(tmp_path, monkeypatch):
    (tmp_path / "snapbench_user_enc_b.py").write_text(textwrap.dedent(USER_MODULE))
    dist = tmp_path / "snapbench_plugin_demo-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: snapbench-plugin-demo\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[snapbench.encoders]\nwordcount = snapbench_user_enc_b:WordCount\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert {"toy", "wordcount"} <= set(available_encoders())
    enc = load_encoder("wordcount")
    np.testing.assert_array_equal(enc.encode_texts(["a cat"]), [[1, 0, 1]])


def test_load_encoder_toy_carries_identity_and_modalities():
    enc = load_encoder("toy", device="cuda", batch_size=3)  # toy takes neither: ignored
    assert enc.name == "toy" and enc.modalities == {"image", "text"}
    assert enc.fingerprint == load_encoder("toy").fingerprint and enc.fingerprint.startswith("toy:")
    np.testing.assert_array_equal(enc.encode_texts(["a b"]), ToyEncoder().encode_texts(["a b"]))


# --- the embedding cache --------------------------------------------------------------------------

class CountingToy(ToyEncoder):
    """The real toy encoder, counting the items it is asked to encode."""

    def __init__(self, fingerprint="toy-test-1"):
        self.fingerprint = fingerprint
        self.images_encoded = 0
        self.texts_encoded = 0

    def encode_images(self, images):
        self.images_encoded += len(images)
        return super().encode_images(images)

    def encode_texts(self, texts):
        self.texts_encoded += len(texts)
        return super().encode_texts(texts)


def test_cache_second_run_does_not_call_the_model_and_returns_the_same_embeddings(tmp_path):
    rng = np.random.default_rng(3)
    imgs = [rng.integers(0, 256, (32 + i, 40, 3), dtype=np.uint8) for i in range(5)]
    texts = ["a dog", "a cat", "a dog", "snow"]
    fresh_i, fresh_t = ToyEncoder().encode_images(imgs), ToyEncoder().encode_texts(texts)

    first = CountingToy()
    c1 = CachedEncoder(first, tmp_path)
    np.testing.assert_array_equal(c1.encode_images(imgs), fresh_i)
    np.testing.assert_array_equal(c1.encode_texts(texts), fresh_t)
    assert (first.images_encoded, first.texts_encoded) == (5, 3)  # "a dog" once

    second = CountingToy()
    c2 = CachedEncoder(second, tmp_path)  # a new process would see the same files
    np.testing.assert_array_equal(c2.encode_images(imgs[::-1]), fresh_i[::-1])
    np.testing.assert_array_equal(c2.encode_texts(texts), fresh_t)
    assert (second.images_encoded, second.texts_encoded) == (0, 0)
    assert c2.name == "toy" and c2.modalities == {"image", "text"}

    # a different array with the same bytes but another shape is another item
    flat = imgs[0].reshape(imgs[0].shape[1], imgs[0].shape[0], 3)
    c2.encode_images([flat])
    assert second.images_encoded == 1

    other = CountingToy("toy-test-2")
    c3 = CachedEncoder(other, tmp_path)
    c3.encode_texts(texts)
    assert other.texts_encoded == 3 and c3.root != c2.root
    entries = sorted(p.relative_to(tmp_path).parts[0] for p in tmp_path.rglob("*.npy"))
    assert len(set(entries)) == 2
    for p in tmp_path.rglob("*.npy"):  # plain arrays, readable without pickle
        assert np.load(p, allow_pickle=False).dtype == np.float32


def test_cache_treats_a_damaged_entry_as_a_miss(tmp_path):
    enc = CountingToy()
    c = CachedEncoder(enc, tmp_path)
    want = c.encode_texts(["hello"])
    (entry,) = tmp_path.rglob("*.npy")
    entry.write_bytes(entry.read_bytes()[:20])
    np.testing.assert_array_equal(CachedEncoder(enc, tmp_path).encode_texts(["hello"]), want)
    assert enc.texts_encoded == 2


def test_cache_refuses_an_encoder_without_fingerprint(tmp_path):
    class NoId:
        def encode_texts(self, texts):
            return np.zeros((len(texts), 2), np.float32)

    with pytest.raises(ConfigError, match="no 'fingerprint'"):
        CachedEncoder(NoId(), tmp_path)


@pytest.mark.slow
def test_cache_shared_by_two_processes(tmp_path):
    code = (
        "import sys; import numpy as np; from snapbench.models import load_encoder; from snapbench.store.cache import CachedEncoder;"
        "c = CachedEncoder(load_encoder('toy'), sys.argv[1]);"
        "e = c.encode_texts([f'text number {i}' for i in range(300)]);"
        "np.save(sys.argv[2], e)"
    )
    root = Path(__file__).resolve().parents[1]
    env = {"PYTHONPATH": str(root), "PATH": ""}
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "c"), str(tmp_path / f"{k}.npy")], env=env)
             for k in range(2)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    want = ToyEncoder().encode_texts([f"text number {i}" for i in range(300)])
    for k in range(2):
        np.testing.assert_array_equal(np.load(tmp_path / f"{k}.npy"), want)
    assert len(list((tmp_path / "c").rglob("*.npy"))) == 300
    assert not list((tmp_path / "c").rglob("*.tmp"))
