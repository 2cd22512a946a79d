"""load_image / save_png on real files written by Pillow, OpenCV and by hand (zlib), real codecs."""

from __future__ import annotations

import hashlib
import struct
import zlib
from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image
from skimage import data

from snapbench.core.errors import ImageLoadError
from snapbench.corruptions.io import image_problem, load_image
from snapbench.store.atomic import save_png


@pytest.fixture(scope="module")
def photo() -> np.ndarray:
    return np.ascontiguousarray(data.astronaut()[40:136, 150:278])  # 96x128 RGB


def _png_chunk(ctype: bytes, payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + ctype + payload + struct.pack(">I", zlib.crc32(ctype + payload) & 0xFFFFFFFF)


# ---------------------------------------------------------------------------------------------
# normalisation


@pytest.mark.parametrize("fmt,ext", [("PNG", "png"), ("BMP", "bmp"), ("TIFF", "tif"), ("WEBP", "webp")])
def test_lossless_formats_roundtrip_exactly(tmp_path: Path, photo: np.ndarray, fmt: str, ext: str) -> None:
    path = tmp_path / f"p.{ext}"
    Image.fromarray(photo).save(path, fmt, **({"lossless": True} if fmt == "WEBP" else {}))
    out = load_image(path)
    assert out.dtype == np.uint8 and out.shape == photo.shape and out.flags.c_contiguous
    np.testing.assert_array_equal(out, photo)


def test_jpeg_matches_an_independent_decoder(tmp_path: Path, photo: np.ndarray) -> None:
    path = tmp_path / "p.jpg"
    Image.fromarray(photo).save(path, quality=90)
    ref = cv2.imread(str(path), cv2.IMREAD_COLOR)[..., ::-1]
    out = load_image(path)
    assert out.shape == photo.shape
    assert np.abs(out.astype(int) - ref.astype(int)).mean() < 1.0


def test_grayscale_is_replicated_to_rgb(tmp_path: Path, photo: np.ndarray) -> None:
    grey = photo[..., 1].copy()
    Image.fromarray(grey, mode="L").save(tmp_path / "g.png")
    out = load_image(tmp_path / "g.png")
    assert out.shape == (*grey.shape, 3)
    for c in range(3):
        np.testing.assert_array_equal(out[..., c], grey)


def test_rgba_and_la_are_composited_over_white(tmp_path: Path, photo: np.ndarray) -> None:
    h, w = photo.shape[:2]
    alpha = np.tile(np.linspace(0, 255, w).round().astype(np.uint8), (h, 1))
    rgba = np.dstack([photo, alpha])
    Image.fromarray(rgba, mode="RGBA").save(tmp_path / "a.png")
    out = load_image(tmp_path / "a.png")
    # Reference: Pillow's own compositor over an opaque white canvas.
    white = Image.new("RGBA", (w, h), (255, 255, 255, 255))
    ref = np.asarray(Image.alpha_composite(white, Image.fromarray(rgba, mode="RGBA")).convert("RGB"))
    assert np.abs(out.astype(int) - ref.astype(int)).max() <= 1
    np.testing.assert_array_equal(out[:, 0], 255)  # fully transparent column -> white
    np.testing.assert_array_equal(out[:, -1], photo[:, -1])  # fully opaque column -> unchanged

    la = np.dstack([photo[..., 0], alpha])
    Image.fromarray(la, mode="LA").save(tmp_path / "la.png")
    out_la = load_image(tmp_path / "la.png")
    expected = photo[..., 0].astype(float) * alpha / 255 + 255 * (1 - alpha / 255)
    assert np.abs(out_la[..., 2].astype(float) - expected).max() <= 0.51
    np.testing.assert_array_equal(out_la[..., 0], out_la[..., 2])


def test_16bit_grey_and_colour_png_keep_the_high_byte(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    grey16 = rng.integers(0, 65536, size=(40, 50), dtype=np.uint16)
    rgb16 = rng.integers(0, 65536, size=(40, 50, 3), dtype=np.uint16)
    cv2.imwrite(str(tmp_path / "g16.png"), grey16)  # written by OpenCV, read by Pillow
    cv2.imwrite(str(tmp_path / "c16.png"), rgb16[..., ::-1])  # OpenCV stores BGR
    g = load_image(tmp_path / "g16.png")
    c = load_image(tmp_path / "c16.png")
    np.testing.assert_array_equal(g, np.repeat((grey16 >> 8).astype(np.uint8)[..., None], 3, axis=2))
    np.testing.assert_array_equal(c, (rgb16 >> 8).astype(np.uint8))


def test_palette_images_go_through_their_palette(tmp_path: Path, photo: np.ndarray) -> None:
    pal = Image.fromarray(photo).quantize(colors=16)
    pal.save(tmp_path / "p.png")
    idx = np.asarray(pal)
    table = np.array(pal.getpalette(), dtype=np.uint8).reshape(-1, 3)
    np.testing.assert_array_equal(load_image(tmp_path / "p.png"), table[idx])

    # palette with a transparent entry: that colour becomes white
    pal.save(tmp_path / "pt.png", transparency=int(idx[0, 0]))
    out = load_image(tmp_path / "pt.png")
    mask = idx == idx[0, 0]
    np.testing.assert_array_equal(out[mask], 255)
    np.testing.assert_array_equal(out[~mask], table[idx][~mask])


def _exif_orientation(value: int) -> bytes:
    exif = Image.Exif()
    exif[0x0112] = value
    return exif.tobytes()


def test_exif_orientation_is_applied_png_exact(tmp_path: Path, photo: np.ndarray) -> None:
    Image.fromarray(photo).save(tmp_path / "o6.png", exif=_exif_orientation(6))
    out = load_image(tmp_path / "o6.png")
    assert out.shape == (photo.shape[1], photo.shape[0], 3)
    np.testing.assert_array_equal(out, np.rot90(photo, k=-1))  # orientation 6 = rotate 90 deg clockwise


def test_exif_orientation_is_applied_jpeg(tmp_path: Path, photo: np.ndarray) -> None:
    path = tmp_path / "o6.jpg"
    Image.fromarray(photo).save(path, quality=95, exif=_exif_orientation(6))
    out = load_image(path)
    assert out.shape == (128, 96, 3)
    stored = cv2.imread(str(path), cv2.IMREAD_COLOR | cv2.IMREAD_IGNORE_ORIENTATION)[..., ::-1]
    assert stored.shape == (96, 128, 3)  # the file really is stored sideways
    expected = np.rot90(stored, k=-1)
    assert np.abs(out.astype(int) - expected.astype(int)).mean() < 1.0
    wrong_way = np.rot90(stored, k=1)
    assert np.abs(out.astype(int) - wrong_way.astype(int)).mean() > 20
    # OpenCV applies the tag by default: a third, independent opinion on the upright image.
    upright = cv2.imread(str(path), cv2.IMREAD_COLOR)[..., ::-1]
    assert np.abs(out.astype(int) - upright.astype(int)).mean() < 1.0


# ---------------------------------------------------------------------------------------------
# errors


def test_missing_and_empty_and_not_an_image(tmp_path: Path) -> None:
    with pytest.raises(ImageLoadError, match=r"nope\.jpg.*not found"):
        load_image(tmp_path / "nope.jpg")
    (tmp_path / "empty.png").write_bytes(b"")
    with pytest.raises(ImageLoadError, match=r"empty\.png.*empty"):
        load_image(tmp_path / "empty.png")
    (tmp_path / "notes.jpg").write_text("this is a text file, not a photo\n")
    with pytest.raises(ImageLoadError, match=r"notes\.jpg.*not a recognised image"):
        load_image(tmp_path / "notes.jpg")
    with pytest.raises(ImageLoadError, match="directory"):
        load_image(tmp_path)
    assert issubclass(ImageLoadError, ValueError)


@pytest.mark.parametrize("fmt,ext", [("JPEG", "jpg"), ("PNG", "png"), ("WEBP", "webp")])
@pytest.mark.parametrize("cut", ["half", "tail"])
def test_truncated_files_are_rejected(tmp_path: Path, photo: np.ndarray, fmt: str, ext: str, cut: str) -> None:
    good = tmp_path / f"good.{ext}"
    Image.fromarray(photo).save(good, fmt)
    raw = good.read_bytes()
    load_image(good)  # the uncut file is fine
    # "tail" cuts only the last 12 bytes: for PNG exactly the IEND chunk, which Pillow alone accepts
    keep = len(raw) // 2 if cut == "half" else len(raw) - 12
    bad = tmp_path / f"cut.{ext}"
    bad.write_bytes(raw[:keep])
    with pytest.raises(ImageLoadError, match=r"cut\.%s.*(truncated|corrupt)" % ext):
        load_image(bad)


def test_too_large_by_argument_states_count_and_limit(tmp_path: Path, photo: np.ndarray) -> None:
    Image.fromarray(photo).save(tmp_path / "p.png")
    with pytest.raises(ImageLoadError, match=r"p\.png.*128x96 = 12,288 pixels.*limit of 10,000"):
        load_image(tmp_path / "p.png", max_pixels=10_000)
    assert load_image(tmp_path / "p.png", max_pixels=12_288).shape == photo.shape


def test_huge_header_is_rejected_before_decoding(tmp_path: Path) -> None:
    # A hand-built PNG whose IHDR claims 10000x6000 (1-bit grey) but which holds NO pixel data.
    # If the loader decoded before checking the size, it would fail with a truncation/corruption
    # error (or allocate 60 MP); the size error proves the header check comes first.
    ihdr = struct.pack(">IIBBBBB", 10_000, 6_000, 1, 0, 0, 0, 0)
    png = b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", ihdr) + _png_chunk(b"IEND", b"")
    path = tmp_path / "huge.png"
    path.write_bytes(png)
    assert Image.open(path).size == (10_000, 6_000)  # the header really claims that size
    with pytest.raises(ImageLoadError, match=r"huge\.png.*too large.*60,000,000 pixels.*50,000,000"):
        load_image(path)
    # and with a limit above its size the same file fails as what it is: no pixel data
    with pytest.raises(ImageLoadError, match=r"huge\.png.*(truncated|corrupt)"):
        load_image(path, max_pixels=70_000_000)


def test_real_huge_png_is_rejected(tmp_path: Path) -> None:
    # A genuine, complete 10000x6000 1-bit PNG (~7 kB compressed) built with zlib.
    row = b"\x00" + b"\x00" * (10_000 // 8)
    idat = zlib.compress(row * 6_000, 9)
    ihdr = struct.pack(">IIBBBBB", 10_000, 6_000, 1, 0, 0, 0, 0)
    path = tmp_path / "big.png"
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", ihdr) + _png_chunk(b"IDAT", idat) + _png_chunk(b"IEND", b""))
    assert path.stat().st_size < 100_000
    with pytest.raises(ImageLoadError, match=r"too large: 10000x6000"):
        load_image(path)


# ---------------------------------------------------------------------------------------------
# writer


def test_save_png_is_lossless_atomic_and_returns_the_file_hash(tmp_path: Path, photo: np.ndarray) -> None:
    target = tmp_path / "sub" / "x.png"
    digest = save_png(target, photo)
    assert digest == hashlib.sha256(target.read_bytes()).hexdigest()
    decoded = cv2.imread(str(target), cv2.IMREAD_UNCHANGED)  # an independent PNG decoder
    np.testing.assert_array_equal(decoded[..., ::-1], photo)  # colours not swapped, no loss
    np.testing.assert_array_equal(np.asarray(Image.open(target)), photo)
    # overwrite in place; no temp files left behind
    digest2 = save_png(target, photo[::-1].copy())
    assert digest2 != digest and digest2 == hashlib.sha256(target.read_bytes()).hexdigest()
    assert sorted(p.name for p in target.parent.iterdir()) == ["x.png"]
    # same pixels -> same bytes (deterministic encoder)
    assert save_png(tmp_path / "y.png", photo) == digest


def test_save_png_rejects_non_rgb_arrays(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="HxWx3 uint8"):
        save_png(tmp_path / "z.png", np.zeros((4, 4), np.uint8))
    with pytest.raises(ValueError, match="HxWx3 uint8"):
        save_png(tmp_path / "z.png", np.zeros((4, 4, 3), np.float32))
    assert not (tmp_path / "z.png").exists()


def test_image_problem_names_each_kind_of_load_failure(tmp_path: Path) -> None:
    """The one classifier diagnose and corrupt share: what load_image raised -> a problem word."""
    (tmp_path / "adir.png").mkdir()
    (tmp_path / "empty.png").write_bytes(b"")
    (tmp_path / "junk.png").write_bytes(b"not an image")
    Image.fromarray(np.zeros((40, 40, 3), np.uint8)).save(tmp_path / "big.png")
    expected = {"gone.png": "file not found", "adir.png": "cannot be read", "empty.png": "cannot be decoded",
                "junk.png": "cannot be decoded", "big.png": "too large"}
    for name, problem in expected.items():
        with pytest.raises(ImageLoadError) as info:
            load_image(tmp_path / name, max_pixels=1000)
        assert image_problem(info.value) == problem, name
