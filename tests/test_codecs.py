import io
import zipfile

import numpy as np
import pytest
from PIL import Image
from skimage import data

from snapbench.core.errors import CodecError, ImageLoadError, SnapbenchError
from snapbench.corruptions import load_image
from snapbench.corruptions.codecs import FORMATS, decode_image, detect_format, encode_image, extension

pytest.importorskip("imagecodecs")

SHAPES = [(1, 1), (1, 7), (5, 1), (17, 31), (64, 33), (129, 250)]


def _random(shape, seed):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, size=(*shape, 3), dtype=np.uint8)


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_round_trips_exact_pixels(fmt):
    images = [_random(s, i) for i, s in enumerate(SHAPES)]
    images.append(np.ascontiguousarray(data.astronaut()[::3, ::3]))  # real photo, 171x171
    images.append(np.full((9, 13, 3), 255, np.uint8))  # flat image: encoders take shortcuts here
    # a non-contiguous view must be encoded as the pixels it shows
    images.append(data.chelsea()[::2, ::-3])
    for img in images:
        blob = encode_image(img, fmt)
        assert detect_format(blob) == fmt
        out = decode_image(blob)
        assert out.dtype == np.uint8 and out.shape == img.shape
        assert np.array_equal(out, img), (fmt, img.shape)


@pytest.mark.parametrize("fmt", FORMATS)
def test_load_image_reads_what_encode_image_writes(tmp_path, fmt):
    img = _random((23, 41), 7)
    path = tmp_path / f"x{extension(fmt)}"
    path.write_bytes(encode_image(img, fmt))
    assert np.array_equal(load_image(path), img)
    assert np.array_equal(decode_image(path), img)


def test_independent_decoders_agree():
    # cross-check our encoders with decoders we did not call in encode_image
    import imagecodecs

    img = _random((31, 45), 3)
    assert np.array_equal(np.asarray(Image.open(io.BytesIO(encode_image(img, "png")))), img)
    assert np.array_equal(np.asarray(Image.open(io.BytesIO(encode_image(img, "webp"))).convert("RGB")), img)
    assert np.array_equal(np.asarray(Image.open(io.BytesIO(encode_image(img, "qoi"))).convert("RGB")), img)
    assert np.array_equal(imagecodecs.jpegxl_decode(encode_image(img, "jxl")), img)
    with np.load(io.BytesIO(encode_image(img, "npz")), allow_pickle=False) as z:
        assert np.array_equal(z["image"], img)


def test_extensions_and_unknown_format():
    assert [extension(f) for f in FORMATS] == [".png", ".qoi", ".jxl", ".webp", ".npz"]
    with pytest.raises(SnapbenchError, match="unknown image format 'bmp'"):
        encode_image(_random((2, 2), 0), "bmp")
    with pytest.raises(SnapbenchError, match="HxWx3 uint8"):
        encode_image(np.zeros((4, 4), np.float32), "png")


@pytest.mark.parametrize("fmt", FORMATS)
def test_truncated_bytes_give_a_clear_error(fmt):
    blob = encode_image(_random((40, 40), 1), fmt)
    with pytest.raises(CodecError, match=f"{fmt}|npz|zip|not a recognised"):
        decode_image(blob[: len(blob) // 2])


def test_bad_bytes_and_mismatched_format():
    with pytest.raises(CodecError, match="not a recognised image format"):
        decode_image(b"hello world, not an image")
    with pytest.raises(CodecError, match="empty"):
        decode_image(b"")
    with pytest.raises(CodecError, match="asked to decode as qoi but the bytes are png"):
        decode_image(encode_image(_random((3, 3), 0), "png"), "qoi")
    assert isinstance(CodecError("x"), ValueError)


def test_npz_never_unpickles_and_names_the_file(tmp_path):
    bad = tmp_path / "evil.npz"
    np.savez(bad, image=np.array([object()], dtype=object))
    with pytest.raises(CodecError, match="evil.npz"):
        decode_image(bad)
    with pytest.raises(ImageLoadError, match="evil.npz"):
        load_image(bad)
    # a zip that is not an npz
    z = tmp_path / "notnpz.npz"
    with zipfile.ZipFile(z, "w") as f:
        f.writestr("readme.txt", "hi")
    with pytest.raises((CodecError, ImageLoadError)):
        load_image(z)


def test_load_image_enforces_max_pixels_for_new_formats(tmp_path):
    img = _random((20, 30), 2)
    for fmt in ("qoi", "jxl", "npz"):
        p = tmp_path / f"big{extension(fmt)}"
        p.write_bytes(encode_image(img, fmt))
        with pytest.raises(ImageLoadError, match="too large"):
            load_image(p, max_pixels=599)
        assert load_image(p, max_pixels=600).shape == (20, 30, 3)


@pytest.mark.parametrize("fmt", FORMATS)
def test_truncated_file_is_an_image_load_error_naming_it(tmp_path, fmt):
    p = tmp_path / f"cut{extension(fmt)}"
    blob = encode_image(_random((50, 50), 4), fmt)
    p.write_bytes(blob[: len(blob) // 3])
    with pytest.raises(ImageLoadError, match=f"^{p}: .*(truncated|corrupt|not a readable)"):
        load_image(p)
