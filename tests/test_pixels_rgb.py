"""One grey/alpha -> RGB rule (corruptions.pixels.to_rgb_uint8) for the file loader and the variant
decoders, checked against the formula in floating point and through both readers."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from snapbench.core.errors import CodecError, InputError
from snapbench.corruptions import load_image
from snapbench.corruptions.codecs import decode_image, detect_format
from snapbench.corruptions.pixels import PNG_SIGNATURE, encode_png, to_rgb_uint8


def _over_white(samples: np.ndarray) -> np.ndarray:
    """Hand formula: c * a + 255 * (1 - a), a = alpha / 255, rounded (never exactly .5: 255 is odd)."""
    s = samples.astype(np.float64)
    c, a = s[..., :-1], s[..., -1:] / 255.0
    out = np.rint(c * a + 255.0 * (1.0 - a))
    return np.repeat(out, 3, axis=2) if out.shape[2] == 1 else out


def _samples(channels: int, seed: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    arr = rng.integers(0, 256, size=(6, 9, channels), dtype=np.uint8)
    if channels in (2, 4):
        arr[0, :, -1] = 0  # fully transparent: white whatever the colour stored
        arr[1, :, -1] = 255  # opaque: the colour as stored
    return arr


@pytest.mark.parametrize("channels", [2, 4])
def test_alpha_is_composited_over_white_as_the_formula_says(channels):
    arr = _samples(channels)
    got = to_rgb_uint8(arr)
    assert got.dtype == np.uint8 and got.shape == (6, 9, 3) and got.flags.c_contiguous
    np.testing.assert_array_equal(got, _over_white(arr))
    assert (got[0] == 255).all()


def test_grey_is_replicated():
    grey = _samples(1)
    for s in (grey, grey[..., 0]):
        np.testing.assert_array_equal(to_rgb_uint8(s), np.concatenate([grey] * 3, axis=2))
    rgb = _samples(3)
    np.testing.assert_array_equal(to_rgb_uint8(rgb), rgb)
    for bad in (np.zeros((2, 2, 5), np.uint8), np.zeros((2, 2, 3), np.uint16), np.zeros(4, np.uint8)):
        with pytest.raises(InputError):
            to_rgb_uint8(bad)


@pytest.mark.parametrize("channels", [2, 4])
def test_the_loader_and_the_npz_decoder_apply_the_same_rule(tmp_path, channels):
    arr = _samples(channels)
    want = _over_white(arr)
    Image.fromarray(arr).save(tmp_path / "a.png")  # LA or RGBA PNG, read by Pillow
    np.testing.assert_array_equal(load_image(tmp_path / "a.png"), want)
    buf = io.BytesIO()
    np.savez_compressed(buf, image=arr)  # a foreign .npz variant
    np.testing.assert_array_equal(decode_image(buf.getvalue(), "npz"), want)
    buf = io.BytesIO()
    np.savez_compressed(buf, image=np.zeros((2, 2, 5), np.uint8))
    with pytest.raises(CodecError, match=r"shape \(2, 2, 5\), expected H x W x 3"):
        decode_image(buf.getvalue(), "npz")


def test_one_png_signature():
    assert PNG_SIGNATURE == bytes([137, 80, 78, 71, 13, 10, 26, 10])  # the PNG specification, section 5.2
    png = encode_png(_samples(3))
    assert png.startswith(PNG_SIGNATURE) and detect_format(png) == "png"
