"""Measured strength (snapbench.corruptions.measure) against independent computations.

PSNR and SSIM are checked against scikit-image (``peak_signal_noise_ratio``,
``structural_similarity(gaussian_weights=True, sigma=1.5, use_sample_covariance=False,
data_range=255)``) on the documented preprocessing transcribed in float64 in
tests/measure_reference.py, on scikit-image photos the package does not ship.
``changed`` is checked with numpy, ``area_kept`` with the output's shape, edit distances with a
full dynamic-programming table written here, the entity rule with hand-written cases.
"""

from __future__ import annotations

import json
import math

import cv2
import numpy as np
import pytest
from measure_reference import photo, ref_luma, ref_size, ref_strength
from skimage.metrics import peak_signal_noise_ratio, structural_similarity

from snapbench.core.errors import InputError
from snapbench.corruptions.image import DEFAULT_GRID, corrupt_image_with_params
from snapbench.corruptions.measure import (
    ImageStrength,
    TextStrength,
    compare_size,
    entity_intact,
    image_reference,
    levenshtein,
    luma,
    measure_image,
    measure_text,
)
from snapbench.corruptions.text import corrupt_text_with_params

TOL = 1e-4


def _check(clean: np.ndarray, variant: np.ndarray, got: ImageStrength, where: str) -> None:
    psnr, ssim, changed = ref_strength(clean, variant)
    assert abs(got.ssim - ssim) <= TOL, (where, got.ssim, ssim)
    if math.isinf(psnr):
        assert got.psnr == math.inf, where
    else:
        assert abs(got.psnr - psnr) <= TOL, (where, got.psnr, psnr)
    assert got.changed == pytest.approx(changed, abs=1e-12), where


# ------------------------------------------------------------------------------------------------
# images

# (photo, height, width): no resize, odd sizes, factor 2, a non-integer factor, factor 4, portrait
SIZES = [
    ("moto_left", 240, 320),
    ("gravel", 333, 517),
    ("moto_right", 768, 1024),
    ("moto_left", 1000, 1400),
    ("grass", 701, 389),
]


@pytest.mark.slow
@pytest.mark.parametrize("name,h,w", SIZES)
def test_default_grid_matches_scikit_image(name: str, h: int, w: int) -> None:
    clean = photo(name, h, w)
    ref = image_reference(clean)
    for op, levels in DEFAULT_GRID.items():
        for sev in levels:
            res = corrupt_image_with_params(clean, op, sev, seed=3, key=name)
            got = measure_image(ref, res.image, operator=op, params=res.params)
            _check(clean, res.image, got, f"{name}@{w}x{h} {op}/s{sev}")
            # the reference is a cache, not a different computation
            assert measure_image(clean, res.image, operator=op, params=res.params) == got


@pytest.mark.slow
def test_large_photo_factor_four() -> None:
    clean = photo("moto_left", 1536, 2048)
    ref = image_reference(clean)
    for op, sev in [("defocus_blur", 2), ("compression", 1), ("cropping", 2), ("downscale", 3), ("scribble", 1)]:
        res = corrupt_image_with_params(clean, op, sev, seed=0, key="big")
        _check(clean, res.image, measure_image(ref, res.image, operator=op, params=res.params), f"2048 {op}")


@pytest.mark.slow
@pytest.mark.parametrize("name,h,w", SIZES)
def test_near_identity_changes(name: str, h: int, w: int) -> None:
    # one grey level in one pixel and channel, a 1% gain, a high-quality JPEG: PSNR up to ~150 dB
    clean = photo(name, h, w)
    one = clean.copy()
    one[h // 3, w // 2, 2] ^= 1
    gain = np.clip(np.rint(clean * 1.01), 0, 255).astype(np.uint8)
    ok, buf = cv2.imencode(".jpg", clean, [cv2.IMWRITE_JPEG_QUALITY, 98])
    jpeg = cv2.imdecode(buf, cv2.IMREAD_UNCHANGED)
    for what, v in (("one pixel", one), ("gain 1.01", gain), ("jpeg q98", jpeg)):
        _check(clean, v, measure_image(clean, v), f"{name} {what}")


def test_extreme_images() -> None:
    clean = photo("moto_left", 240, 320)
    for v in (np.zeros_like(clean), np.full_like(clean, 255), clean[::-1].copy(), 255 - clean):
        _check(clean, v, measure_image(clean, v), "extreme")
    flat = np.full((64, 80, 3), 7, np.uint8)
    _check(flat, flat + 1, measure_image(flat, flat + 1), "flat")


def test_identical_and_json() -> None:
    clean = photo("gravel", 333, 517)
    got = measure_image(clean, clean.copy())
    assert (got.psnr, got.ssim, got.changed, got.area_kept) == (math.inf, 1.0, 0.0, None)
    js = got.to_json()
    assert js == {"psnr": None, "ssim": 1.0, "changed": 0.0, "area_kept": None}
    json.dumps(js, allow_nan=False)
    res = corrupt_image_with_params(clean, "cropping", 3, seed=1, key="q")
    js = measure_image(clean, res.image, operator="cropping", params=res.params).to_json()
    assert list(js) == ["psnr", "ssim", "changed", "area_kept"]
    psnr, ssim, _ = ref_strength(clean, res.image)
    assert abs(js["psnr"] - psnr) <= 5e-5 + 1e-9 and abs(js["ssim"] - ssim) <= 5e-7 + 1e-9


def test_area_kept_is_the_crop_share() -> None:
    clean = photo("moto_right", 333, 517)
    for sev in (1, 2, 3):
        res = corrupt_image_with_params(clean, "cropping", sev, seed=sev, key="k")
        got = measure_image(clean, res.image, operator="cropping", params=res.params)
        assert got.area_kept == pytest.approx(res.image.shape[0] * res.image.shape[1] / (333 * 517), abs=1e-15)
        keep = DEFAULT_GRID["cropping"][sev]["keep"]
        assert got.area_kept == pytest.approx(keep * keep, abs=0.01)
    res = corrupt_image_with_params(clean, "downscale", 2, seed=0, key="k")
    assert measure_image(clean, res.image, operator="downscale", params=res.params).area_kept is None


def test_tiny_image_has_no_ssim() -> None:
    clean = np.arange(10 * 30 * 3, dtype=np.uint8).reshape(10, 30, 3)
    v = clean // 2
    got = measure_image(clean, v)
    assert math.isnan(got.ssim) and got.to_json()["ssim"] is None
    with pytest.raises(ValueError):  # scikit-image has no 11x11 window there either
        structural_similarity(ref_luma(clean), ref_luma(v), gaussian_weights=True, sigma=1.5,
                              use_sample_covariance=False, data_range=255)
    x, y = ref_luma(clean), ref_luma(v)
    assert got.psnr == pytest.approx(peak_signal_noise_ratio(x, y, data_range=255), abs=TOL)
    clean11 = photo("moto_left", 11, 40)
    _check(clean11, clean11 // 3, measure_image(clean11, clean11 // 3), "11 px")


def test_compare_size_and_luma() -> None:
    for h, w in [(512, 512), (513, 100), (1000, 1400), (1536, 2048), (3001, 7), (7, 3001), (100, 40)]:
        assert compare_size(h, w) == ref_size(h, w)
    clean = photo("moto_left", 1000, 1400)
    assert np.abs(luma(clean) - ref_luma(clean)).max() < 1e-3


@pytest.mark.parametrize("bad", [np.zeros((8, 8), np.uint8), np.zeros((8, 8, 3), np.float32),
                                 np.zeros((8, 8, 4), np.uint8), np.zeros((0, 8, 3), np.uint8), "img"])
def test_bad_images_are_input_errors(bad) -> None:
    ok = np.zeros((8, 8, 3), np.uint8)
    with pytest.raises(InputError, match="measure: the (clean|variant) image"):
        measure_image(bad, ok)
    with pytest.raises(InputError, match="measure: the variant image"):
        measure_image(ok, bad)


# ------------------------------------------------------------------------------------------------
# text


def full_table_distance(a, b) -> int:
    # the textbook Wagner-Fischer table, no shortcuts
    d = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) + 1):
        d[i][0] = i
    for j in range(len(b) + 1):
        d[0][j] = j
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
    return d[len(a)][len(b)]


def test_levenshtein_equals_the_full_table() -> None:
    rng = np.random.default_rng(17)
    alphabet = list("abcé鱼 ?")
    for _ in range(400):
        a = "".join(rng.choice(alphabet, size=rng.integers(0, 12)))
        b = list(a)
        for _ in range(rng.integers(0, 4)):  # local edits of a, like the operators make
            pos = int(rng.integers(0, len(b) + 1))
            kind = rng.integers(0, 3)
            if kind == 0:
                b.insert(pos, str(rng.choice(alphabet)))
            elif b and pos < len(b):
                if kind == 1:
                    del b[pos]
                else:
                    b[pos] = str(rng.choice(alphabet))
        b = "".join(b) if rng.random() < 0.8 else "".join(rng.choice(alphabet, size=rng.integers(0, 12)))
        assert levenshtein(a, b) == full_table_distance(a, b), (a, b)
        wa, wb = a.split(), b.split()
        assert levenshtein(wa, wb) == full_table_distance(wa, wb)


def test_text_operators_measured() -> None:
    q, ent = "What kind of fish is this?", "fish"
    expect = {  # operator: (char edits, word edits, entity intact) -- from what each operator does
        "char_add": (1, 1, False),
        "char_delete": (1, 1, False),
        "word_repeat": (5, 1, True),        # " fish" inserted
        "sent_replace": (None, None, False),
    }
    for op, (chars, words, intact) in expect.items():
        res = corrupt_text_with_params(q, op, entity=ent, seed=0, key="q")
        got = measure_text(q, res.text, res.params["entity"])
        assert got.char_edits == (chars if chars is not None else full_table_distance(q, res.text))
        if words is not None:
            assert got.word_edits == words
        assert got.entity_intact is intact
    swap = corrupt_text_with_params(q, "char_swap", entity=ent, seed=0, key="q")
    got = measure_text(q, swap.text, "fish")
    assert (got.char_edits, got.word_edits, got.entity_intact) == (2, 1, False)  # a transposition is 2
    ws = corrupt_text_with_params(q, "word_swap", entity=ent, seed=0, key="q")
    got = measure_text(q, ws.text, "fish")
    assert got.entity_intact is True and got.word_edits == 2
    add = corrupt_text_with_params(q, "sent_add", entity=ent, seed=0, key="q")
    got = measure_text(q, add.text, "fish")
    added = len(add.text) - len(q)
    assert got.char_edits == added and got.entity_intact is True
    assert got.word_edits == len(add.text.split()) - len(q.split())
    assert got.to_json() == {"char_edits": added, "word_edits": got.word_edits, "entity_intact": True}
    assert isinstance(got, TextStrength)


@pytest.mark.parametrize("clean,corrupted,entity,expected", [
    ("What kind of fish is this?", "What kind of FISH is this?", "fish", True),       # case
    ("What kind of fish is this?", "Is this fish, really?", "fish", True),            # punctuation
    ("What kind of fish is this?", "Whose fish's fin is this?", "fish", True),        # possessive
    ("What kind of fish is this?", "What kind of fishes is this?", "fish", False),    # whole word only
    ("What kind of fish is this?", "What kind of catfish is this?", "fish", False),
    ("What kind of fish is this?", "What kind of fi sh is this?", "fish", False),
    ("Is don here?", "Is don't here?", "don", False),                                 # apostrophe joins
    ("What is a t-shirt?", "What is a t-shirt now?", "shirt", True),                  # hyphen splits
    ("Which café is this?", "Which cafe\u0301 is this?", "café", True),               # NFC vs NFD
    ("Which café is this?", "Which cafe is this?", "café", False),                    # accent lost
    ("Which Straße is this?", "Which STRASSE is this?", "Straße", True),              # full case folding
    ("Where is İstanbul?", "Where is i̇stanbul?", "İstanbul", True),
    ("Which ice cream is this?", "Which ice\n cream is this?", "ice cream", True),    # any spacing
    ("Which ice cream is this?", "Which ice cram is this?", "ice cream", False),
    ("Which ice cream is this?", "Which cream ice is this?", "ice cream", False),
    ("这是什么金鱼？", "这是什么金鱼金鱼？", "金鱼", True),                                  # no-space script
    ("这是什么金鱼？", "这是什么金？", "金鱼", False),
    ("What kind of fish is this?", "What is this?", None, None),                     # no entity
    ("What kind of fish is this?", "What is this?", "", None),
    ("What kind of fish is this?", "What is this?", "dog", None),                    # not in the clean one
])
def test_entity_rule(clean: str, corrupted: str, entity: str | None, expected: bool | None) -> None:
    assert entity_intact(clean, corrupted, entity) is expected
    assert measure_text(clean, corrupted, entity).entity_intact is expected


def test_word_edits_ignore_punctuation_and_count_case() -> None:
    assert measure_text("What is this?", "What is this ?!").word_edits == 0
    assert measure_text("What is this?", "what is this?").word_edits == 1
    assert measure_text("What is this?", "What is this?").char_edits == 0
    assert measure_text("cafe\u0301?", "café?").word_edits == 0  # words are compared after NFC
    assert measure_text("cafe\u0301?", "café?").char_edits == 2   # characters as given


def test_text_input_errors() -> None:
    with pytest.raises(InputError, match="corrupted question must be a str"):
        measure_text("What?", None)  # type: ignore[arg-type]
