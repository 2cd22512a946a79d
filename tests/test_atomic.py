import os
import stat

import numpy as np
import pytest

from snapbench.core.errors import OutputError
from snapbench.store.atomic import atomic_path, open_text_atomic, save_npy_atomic, write_bytes_atomic


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "out.npy"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_bytes(b"half")
            raise RuntimeError("killed")
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.npy"]


def test_outputs_have_the_mode_open_gives_not_private(tmp_path):
    umask = os.umask(0o022)
    try:
        write_bytes_atomic(tmp_path / "a" / "b.bin", b"x")  # parent folders are created
    finally:
        os.umask(umask)
    assert stat.S_IMODE((tmp_path / "a" / "b.bin").stat().st_mode) == 0o644


def test_npy_round_trip_without_pickle(tmp_path):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    save_npy_atomic(tmp_path / "m.npy", a)
    assert np.array_equal(np.load(tmp_path / "m.npy", allow_pickle=False), a)
    with pytest.raises(ValueError):
        save_npy_atomic(tmp_path / "o.npy", np.array([object()]))
    assert not (tmp_path / "o.npy").exists()


def test_text_handle_appears_only_on_success_and_keeps_newlines_as_asked(tmp_path):
    target = tmp_path / "t.csv"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError):  # an error of the block itself passes through unchanged
        with open_text_atomic(target) as fh:
            fh.write("half")
            raise RuntimeError("killed")
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.csv"]
    with open_text_atomic(target, newline="") as fh:  # csv's "\r\n" written as given
        fh.write("a,b\r\nü\n")
    assert target.read_bytes() == "a,b\r\nü\n".encode("utf-8")


def test_text_write_that_cannot_happen_is_an_output_error_naming_the_file(tmp_path):
    (tmp_path / "f").write_text("a file, not a folder")
    target = tmp_path / "f" / "out.md"
    with pytest.raises(OutputError) as err:
        with open_text_atomic(target) as fh:
            fh.write("x")
    assert err.value.path == str(target) and "cannot write" in str(err.value)
