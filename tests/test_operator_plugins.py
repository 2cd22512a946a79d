"""Operators from installed packages (entry points) are usable from the command line.

A real distribution is installed into a temporary site folder (a dist-info with entry_points.txt
and a package), and snapbench runs in a subprocess with that folder on its path -- no mocks: the
same discovery (importlib.metadata) a pip-installed plugin goes through, in the parent and in the
spawned worker processes.  Pixels and questions are checked against the operators' formulas
computed here with NumPy from the clean image.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from skimage import data

ROOT = Path(__file__).resolve().parents[1]

PLUGIN = '''
import numpy as np

from snapbench.corruptions.image import ImageOperator, register_image_operator
from snapbench.corruptions.text import TextOperator


def haze(image, params):
    return (image // 2 + params["lift"]).astype(np.uint8)


def shout(text, span, rng):
    s, e = span
    return text[:s] + text[s:e].upper() + text[e:], {"shouted": text[s:e]}


HAZE = ImageOperator("haze", apply=haze, grid={1: {"lift": 10}, 2: {"lift": 60}})
SHOUT = TextOperator("shout", shout, random=False)
'''

REGISTERING = '''
from snapbench.corruptions.image import register_image_operator


@register_image_operator("stripes", grid={1: {"every": 4}})
def stripes(image, params):
    out = image.copy()
    out[:: params["every"]] = 0
    return out
'''

ENTRY_POINTS = '''
[snapbench.image_operators]
haze = snapbench_test_plugin:HAZE
stripes = snapbench_test_plugin.registering:stripes
broken = snapbench_test_plugin:DOES_NOT_EXIST

[snapbench.text_operators]
shout = snapbench_test_plugin:SHOUT
'''


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    site = tmp_path_factory.mktemp("site")
    pkg = site / "snapbench_test_plugin"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(textwrap.dedent(PLUGIN))
    (pkg / "registering.py").write_text(textwrap.dedent(REGISTERING))
    info = site / "snapbench_test_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: snapbench-test-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(ENTRY_POINTS))
    return site


@pytest.fixture(scope="module")
def queries(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("q")
    for i, photo in enumerate((data.astronaut(), data.coffee())):
        Image.fromarray(np.ascontiguousarray(photo[::8, ::8, :3])).save(root / f"p{i}.png")
    rows = [{"id": f"q{i}", "image": f"p{i}.png", "question": "What kind of fish is this?", "entity": "fish"}
            for i in range(2)]
    (root / "q.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root / "q.jsonl"


def snapbench(site: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    return subprocess.run([sys.executable, "-m", "snapbench", *args], capture_output=True, text=True, env=env,
                          cwd=site, timeout=300)


def test_plugin_operators_are_listed_and_a_broken_plugin_is_named(site: Path) -> None:
    res = snapbench(site, "conditions")
    ids = res.stdout.split()
    assert res.returncode == 0, res.stderr
    assert {"img/haze/s1", "img/haze/s2", "img/stripes/s1", "txt/shout"} <= set(ids)
    assert "warning:" in res.stderr and "broken = snapbench_test_plugin:DOES_NOT_EXIST" in res.stderr


@pytest.mark.slow
def test_plugin_operators_run_from_the_cli_with_workers(site: Path, queries: Path, tmp_path: Path) -> None:
    out = tmp_path / "o"
    res = snapbench(site, "corrupt", str(queries), "--out", str(out), "--conditions",
                    "img/haze/s2,txt/shout,img/stripes/s1,joint/haze+shout/s1", "--workers", "2", "--no-progress")
    assert res.returncode == 0, res.stderr
    lines = {(r["id"], r["condition"]): r for r in map(json.loads, (out / "manifest.jsonl").read_text().splitlines())}
    for qid in ("q0", "q1"):
        clean = np.asarray(Image.open(out / lines[(qid, "clean")]["path"]))
        hazy = np.asarray(Image.open(out / lines[(qid, "img/haze/s2")]["path"]))
        assert np.array_equal(hazy, clean // 2 + 60)
        joint = np.asarray(Image.open(out / lines[(qid, "joint/haze+shout/s1")]["path"]))
        assert np.array_equal(joint, clean // 2 + 10)
        striped = np.asarray(Image.open(out / lines[(qid, "img/stripes/s1")]["path"]))
        expected = clean.copy()
        expected[::4] = 0
        assert np.array_equal(striped, expected)
        assert lines[(qid, "txt/shout")]["question"] == "What kind of FISH is this?"
        assert lines[(qid, "joint/haze+shout/s1")]["question"] == "What kind of FISH is this?"


@pytest.mark.slow
def test_grid_levels_for_a_plugin_operator(site: Path, queries: Path, tmp_path: Path) -> None:
    (tmp_path / "g.json").write_text(json.dumps({"haze": {"s3": {"lift": 100}}}))
    res = snapbench(site, "conditions", "--grid", str(tmp_path / "g.json"))
    assert res.returncode == 0 and "img/haze/s3" in res.stdout.split(), res.stderr
    out = tmp_path / "o"
    res = snapbench(site, "corrupt", str(queries), "--out", str(out), "--grid", str(tmp_path / "g.json"),
                    "--conditions", "img/haze/s3", "--no-progress")
    assert res.returncode == 0, res.stderr
    line = next(r for r in map(json.loads, (out / "manifest.jsonl").read_text().splitlines())
                if r["id"] == "q0" and r["condition"] == "img/haze/s3")
    assert line["image_params"] == {"lift": 100}


@pytest.mark.slow
def test_asking_for_a_broken_plugin_says_why_and_other_runs_go_on(site: Path, queries: Path, tmp_path: Path) -> None:
    res = snapbench(site, "corrupt", str(queries), "--out", str(tmp_path / "a"), "--conditions", "img/broken/s1",
                    "--no-progress")
    assert res.returncode == 2
    assert "error: --conditions: unknown condition 'img/broken/s1'" in res.stderr
    assert "not available: the plugin entry point broken = snapbench_test_plugin:DOES_NOT_EXIST" in res.stderr
    assert "AttributeError" in res.stderr and "Traceback" not in res.stderr
    res = snapbench(site, "corrupt", str(queries), "--out", str(tmp_path / "b"), "--conditions", "img/motion_blur/s1",
                    "--no-progress")
    assert res.returncode == 0, res.stderr


def test_a_builtin_without_an_implementation_is_an_error_not_a_gap(monkeypatch) -> None:
    from snapbench.core import conditions
    from snapbench.core.errors import ConfigError
    from snapbench.corruptions import image_operators, resolve_conditions, text_operators

    monkeypatch.setattr(conditions, "IMAGE_OPERATORS", (*conditions.IMAGE_OPERATORS, "fog"))
    with pytest.raises(ConfigError, match=r"built-in image operator\(s\) fog .*no registered implementation"):
        image_operators()
    with pytest.raises(ConfigError, match="fog"):
        resolve_conditions(None)
    monkeypatch.undo()
    monkeypatch.setattr(conditions, "TEXT_OPERATORS", (*conditions.TEXT_OPERATORS, "typo_add"))
    with pytest.raises(ConfigError, match=r"built-in text operator\(s\) typo_add .*no registered implementation"):
        text_operators()


def _halve(image, params):
    return image // 2


def test_an_alias_is_the_operator_it_names() -> None:
    from snapbench.corruptions import corrupt_image, resolve_conditions
    from snapbench.corruptions.image import register_image_operator, unregister_image_operator

    photo = np.ascontiguousarray(data.astronaut()[::8, ::8])
    register_image_operator("halve_test", apply=_halve, grid={1: {}}, aliases=("half_test",))
    try:
        assert [c.id for c in resolve_conditions(["img/half_test/s1"])] == ["clean", "img/halve_test/s1"]
        assert np.array_equal(corrupt_image(photo, "half_test", 1, key="q"), photo // 2)
    finally:
        unregister_image_operator("halve_test")
    with pytest.raises(ValueError, match="unknown image operator 'half_test'"):
        corrupt_image(photo, "half_test", 1)
