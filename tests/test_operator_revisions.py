"""Operator revisions: registered with each image operator, recorded by `corrupt` and `run`, and a resume
across two revisions of one operator refused with a message naming it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from snapbench.app.corrupt import run_corruption
from snapbench.app.stages import RunOptions, run_benchmark
from snapbench.core.defaults import DEFAULT_DATA
from snapbench.core.errors import ConfigError, RunConfigError
from snapbench.corruptions import register_image_operator
from snapbench.corruptions.image import get_image_operator, image_operator_revisions, unregister_image_operator
from snapbench.data import load_dataset

QUERIES = DEFAULT_DATA / "queries.jsonl"


def tint(image: np.ndarray, params) -> np.ndarray:
    out = image.copy()
    out[..., 0] = 255 - out[..., 0]
    return out


@pytest.fixture
def tint_op():
    def register(revision: int) -> None:
        register_image_operator("rev_test_tint", apply=tint, grid={1: {}}, replace=True, revision=revision)

    register(1)
    yield register
    unregister_image_operator("rev_test_tint")


def test_revision_defaults_and_validation(tint_op):
    assert get_image_operator("rev_test_tint").revision == 1
    tint_op(3)
    assert get_image_operator("rev_test_tint").revision == 3
    for bad in (0, -1, True, 1.0, "2"):
        with pytest.raises(ConfigError, match="revision must be an integer >= 1"):
            register_image_operator("rev_test_bad", apply=tint, grid={1: {}}, revision=bad)
    assert image_operator_revisions(["low_light", "rotation", "rev_test_tint", "not_registered"]) == {
        "low_light": 2, "rev_test_tint": 3, "rotation": 1}


def _corrupt(out: Path, conds: list[str], **kw):
    return run_corruption(QUERIES, out, conditions=conds, progress=False, **kw)


def _revisions(out: Path) -> dict[str, int]:
    fp = json.loads((out / "run.json").read_text())["fingerprint"]
    return {k.split(".", 1)[1]: v for k, v in fp.items() if k.startswith("revision.")}


def test_corrupt_records_revisions_and_refuses_a_resume_across_them(tint_op, tmp_path):
    out = tmp_path / "c"
    _corrupt(out, ["clean", "img/rev_test_tint/s1", "img/low_light/s1"])
    assert _revisions(out) == {"low_light": 2, "rev_test_tint": 1}
    assert _corrupt(out, ["clean", "img/rev_test_tint/s1"]).reused > 0  # same revisions: resumes
    tint_op(2)
    with pytest.raises(RunConfigError, match=r"revision\.rev_test_tint 1 \(this run: 2\)"):
        _corrupt(out, ["clean", "img/rev_test_tint/s1"])
    # the folder holds revision-1 files of that operator: a run of other conditions is refused too
    # (a folder's fingerprint covers every condition it holds)
    with pytest.raises(RunConfigError, match=r"revision\.rev_test_tint 1 \(this run: 2\)"):
        _corrupt(out, ["clean", "img/rotation/s1"])
    res = _corrupt(out, ["clean", "img/rev_test_tint/s1"], force=True)
    assert res.written > 0 and _revisions(out) == {"rev_test_tint": 2}


def test_a_corrupt_run_json_without_revisions_is_refused_unless_forced(tmp_path):
    """A fingerprint without the revision entries this version records is one made with other settings."""
    out = tmp_path / "c"
    _corrupt(out, ["clean", "img/low_light/s1", "img/rotation/s1"])
    run = json.loads((out / "run.json").read_text())
    run["fingerprint"] = {k: v for k, v in run["fingerprint"].items() if not k.startswith("revision.")}
    (out / "run.json").write_text(json.dumps(run))
    with pytest.raises(RunConfigError, match=r"revision\.low_light none \(this run: 2\), revision\.rotation none "
                                             r"\(this run: 1\); use a new output folder, or force to discard it"):
        _corrupt(out, ["clean", "img/low_light/s1"])
    assert _corrupt(out, ["clean", "img/rotation/s1"], force=True).written > 0
    assert _revisions(out) == {"rotation": 1}


def test_run_fingerprint_holds_revisions_and_refuses_a_resume_across_them(tint_op, tmp_path):
    ds = load_dataset(DEFAULT_DATA)
    opts = RunOptions(conditions=["clean", "img/rev_test_tint/s1", "img/overexposure/s1"], joint=False, resamples=100,
                      report=False, progress=False, use_cache=False, modes=["I2I"])
    out = tmp_path / "r"
    run_benchmark(ds, "toy", out, opts)
    assert _revisions(out) == {"overexposure": 1, "rev_test_tint": 1}
    run_benchmark(ds, "toy", out, opts)  # same revisions: resumes
    tint_op(2)
    with pytest.raises(ConfigError, match=r"revision\.rev_test_tint 1 \(this run: 2\)"):
        run_benchmark(ds, "toy", out, opts)
    # a run.json without the entries is one made with other settings
    meta = json.loads((out / "run.json").read_text())
    meta["fingerprint"] = {k: v for k, v in meta["fingerprint"].items() if not k.startswith("revision.")}
    (out / "run.json").write_text(json.dumps(meta))
    tint_op(1)
    with pytest.raises(ConfigError, match=r"revision\.rev_test_tint none \(this run: 1\)"):
        run_benchmark(ds, "toy", out, opts)
    run_benchmark(ds, "toy", out, dataclasses.replace(opts, force=True))
    assert _revisions(out) == {"overexposure": 1, "rev_test_tint": 1}


def test_one_revision_rule_for_corrupt_and_run(tint_op):
    """corrupt and run build their revision entries with revision_fingerprint: a registered operator's
    revision; for one not registered now the recorded revision stands (run used to drop the entry),
    else none."""
    from snapbench.app.corrupt import revision_fingerprint
    from snapbench.app.stages.resume import run_fingerprint

    tint_op(3)
    assert revision_fingerprint(["rotation", "gone", "rev_test_tint", "low_light", "rotation"], {"revision.gone": 4}) == {
        "revision.gone": 4, "revision.low_light": 2, "revision.rev_test_tint": 3, "revision.rotation": 1}
    assert revision_fingerprint(["gone"]) == {}
    ds = load_dataset(DEFAULT_DATA)
    opts = RunOptions(conditions=["clean", "img/rev_test_tint/s1"], joint=False, modes=["I2I"])
    sources = {"image": ["clean", "img/rev_test_tint/s1", "img/gone/s2"], "text": ["clean"]}
    fp = run_fingerprint(ds, "toy", opts, {}, sources, {"revision.gone": 4})
    assert {k: v for k, v in fp.items() if k.startswith("revision.")} == {"revision.gone": 4, "revision.rev_test_tint": 3}
