import os
import stat

import numpy as np
import pytest

from snapbench.atomic import atomic_path, save_npy_atomic, write_bytes_atomic


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
