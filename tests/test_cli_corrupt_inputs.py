"""What a new user gets wrong with `corrupt`, `preview` and `conditions`: an `error:` line naming the
file and the flag, exit status 2 -- never a traceback; and what an old output folder still does."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from PIL import Image
from skimage import data
from typer.testing import CliRunner

from snapbench.app.corrupt import run_corruption
from snapbench.cli import app
from snapbench.core.errors import RunConfigError

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


@pytest.fixture()
def queries(tmp_path: Path) -> Path:
    Image.fromarray(data.astronaut()[::8, ::8]).save(tmp_path / "a.png")
    (tmp_path / "q.jsonl").write_text(json.dumps({"id": "a", "image": "a.png", "question": "What is this fish?"}) + "\n")
    return tmp_path / "q.jsonl"


def big_png(path: Path, width: int = 9000, height: int = 7000) -> Path:
    """A complete 1-bit PNG of width x height (63 Mpx by default), a few kB on disk."""
    def chunk(t: bytes, d: bytes) -> bytes:
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))

    row = b"\x00" * (1 + (width + 7) // 8)
    ihdr = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(row * height, 9))
                     + chunk(b"IEND", b""))
    return path


def test_a_63_megapixel_image_is_an_error_naming_the_file_and_the_flag(tmp_path: Path) -> None:
    big_png(tmp_path / "big.png")
    (tmp_path / "q.jsonl").write_text(json.dumps({"id": "a", "image": "big.png", "question": "What is this?"}) + "\n")
    res = runner.invoke(app, ["corrupt", str(tmp_path / "q.jsonl"), "--out", str(tmp_path / "o"),
                              "--conditions", "img/motion_blur/s1", "--no-progress"])
    assert res.exit_code == 2, res.output
    assert f"error: {tmp_path / 'big.png'}: image too large: 9000x7000 = 63,000,000 pixels" in res.output
    assert "raise --max-pixels to allow it" in res.output
    res = runner.invoke(app, ["preview", str(tmp_path / "big.png"), "--out", str(tmp_path / "s.png")])
    assert res.exit_code == 2 and "too large" in res.output and "--max-pixels" in res.output, res.output
    res = runner.invoke(app, ["preview", str(tmp_path / "big.png"), "--out", str(tmp_path / "s.png"),
                              "--max-pixels", "0"])
    assert res.exit_code == 2 and "error: --max-pixels: must be an integer >= 1" in res.output, res.output


def test_a_grid_file_that_is_not_utf8_names_the_file(queries: Path, tmp_path: Path) -> None:
    grid = tmp_path / "grid.toml"
    grid.write_bytes("[motion_blur.s2]\nkernel = 15 # größer\n".encode("latin-1"))
    column = len("kernel = 15 # gr") + 1
    expected = f"error: {grid}: not UTF-8 text: byte 0xf6 at line 2, column {column}"
    for args in (["corrupt", str(queries), "--out", str(tmp_path / "o"), "--grid", str(grid), "--no-progress"],
                 ["conditions", "--grid", str(grid)],
                 ["preview", str(tmp_path / "a.png"), "--out", str(tmp_path / "s.png"), "--grid", str(grid)]):
        res = runner.invoke(app, args)
        assert res.exit_code == 2 and expected in res.output, (args[0], res.output)


def test_a_query_manifest_that_is_not_utf8_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "q.jsonl").write_bytes(b'{"id": "a", "question": "Qu\xe9 es esto?"}\n')
    res = runner.invoke(app, ["corrupt", str(tmp_path / "q.jsonl"), "--out", str(tmp_path / "o"), "--no-progress"])
    assert res.exit_code == 2, res.output
    column = len('{"id": "a", "question": "Qu') + 1
    assert f"error: {tmp_path / 'q.jsonl'}: not UTF-8 text: byte 0xe9 at line 1, column {column}" in res.output


@pytest.mark.parametrize("lines", [1, 2])
def test_a_jsonl_record_without_an_id_gets_the_record_error_however_many_lines(tmp_path: Path, lines: int) -> None:
    good = json.dumps({"id": "b", "question": "What is this?"})
    (tmp_path / "noid.jsonl").write_text("\n".join([json.dumps({"image": "a.png", "question": "what?"}), good][:lines])
                                         + "\n")
    res = runner.invoke(app, ["corrupt", str(tmp_path / "noid.jsonl"), "--out", str(tmp_path / "o"), "--no-progress"])
    assert res.exit_code == 2, res.output
    assert res.output.strip() == (f"error: {tmp_path / 'noid.jsonl'}: line 1: record has no id "
                                  "(expected one of id, query_id, qid)")


def test_library_messages_name_parameters_and_the_cli_names_flags(queries: Path, tmp_path: Path) -> None:
    out = tmp_path / "o"
    run_corruption(queries, out, conditions=["img/cropping/s1"], progress=False)
    with pytest.raises(RunConfigError) as err:
        run_corruption(queries, out, conditions=["img/cropping/s1"], seed=3, progress=False)
    message = str(err.value)
    assert "seed 0 (this run: 3)" in message and "or force to discard it" in message
    assert "--" not in message and "force=True" not in message
    res = runner.invoke(app, ["corrupt", str(queries), "--out", str(out), "--conditions", "img/cropping/s1",
                              "--seed", "3", "--no-progress"])
    assert res.exit_code == 2 and "or --force to discard it" in res.output and "force=True" not in res.output
    res = runner.invoke(app, ["corrupt", str(queries), "--out", str(tmp_path / "p"), "--conditions", "img/nope/s1"])
    assert res.exit_code == 2 and res.output.startswith("error: --conditions: unknown condition 'img/nope/s1'")


def test_a_folder_whose_run_json_lacks_the_fingerprint_is_refused_unless_forced(queries: Path, tmp_path: Path) -> None:
    # a run.json without what this version writes is one made with other settings; one without a kind is
    # not snapbench's
    out = tmp_path / "o"
    conds = ["img/cropping/s1", "txt/char_swap"]
    first = run_corruption(queries, out, conditions=conds, progress=False)
    cfg = json.loads((out / "run.json").read_text())
    (out / "run.json").write_text(json.dumps({k: v for k, v in cfg.items() if k != "fingerprint"}, indent=2))
    res = runner.invoke(app, ["corrupt", str(queries), "--out", str(out), "--conditions", ",".join(conds),
                              "--no-progress"])
    assert res.exit_code == 2, res.output
    assert res.output.startswith(f"error: {out} holds the output of a 'snapbench corrupt' made with other settings "
                                 "(its run.json records no fingerprint); use a new output folder, or --force to "
                                 "discard it"), res.output
    again = run_corruption(queries, out, conditions=conds, force=True, progress=False)
    assert again.written == first.written
    assert json.loads((out / "run.json").read_text())["fingerprint"] == cfg["fingerprint"]
    bare = {k: v for k, v in cfg.items() if k not in ("kind", "schema_version", "fingerprint")}
    (out / "run.json").write_text(json.dumps(bare, indent=2))
    with pytest.raises(RunConfigError, match="holds the output of something other than snapbench"):
        run_corruption(queries, out, conditions=conds, force=True, progress=False)


def test_conditions_into_a_pipe_closed_early_is_quiet() -> None:
    # `snapbench conditions --joint | head -1`: the reader leaves before the writer is done
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line
    proc = subprocess.run([sys.executable, "-m", "snapbench", "conditions", "--joint"], stdout=write,
                          stderr=subprocess.PIPE, text=True, timeout=120, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    os.close(write)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


def test_max_pixels_is_the_only_size_limit_not_pillows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pillow refuses images over 2 * Image.MAX_IMAGE_PIXELS (~179 Mpx) with its own wording; lowered
    here to 1,000 so a 60x50 image crosses it.  --max-pixels alone decides: our message about the
    limit below it, a decoded image above it, through preview and corrupt alike."""
    Image.fromarray(data.astronaut()[:50, :60]).save(tmp_path / "a.png")
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1000)
    res = runner.invoke(app, ["preview", str(tmp_path / "a.png"), "--out", str(tmp_path / "s.png"),
                              "--max-pixels", "2000"])
    assert res.exit_code == 2, res.output
    assert (f"error: {tmp_path / 'a.png'}: image too large: 60x50 = 3,000 pixels exceeds the limit of 2,000 pixels "
            "(raise --max-pixels to allow it)") in res.output
    assert "decompression bomb" not in res.output
    res = runner.invoke(app, ["preview", str(tmp_path / "a.png"), "--out", str(tmp_path / "s.png")])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "s.png").stat().st_size > 0
    assert Image.MAX_IMAGE_PIXELS == 1000  # lifted only while decoding
    (tmp_path / "q.jsonl").write_text(json.dumps({"id": "a", "image": "a.png", "question": "What is this?"}) + "\n")
    res = runner.invoke(app, ["corrupt", str(tmp_path / "q.jsonl"), "--out", str(tmp_path / "o"),
                              "--conditions", "img/motion_blur/s1", "--no-progress"])
    assert res.exit_code == 0, res.output
