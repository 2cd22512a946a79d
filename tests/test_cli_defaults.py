"""The command line's defaults are the library's: every flag that sets an option defaults to what the
library does without it (read from the click commands typer builds), and those values are the
documented ones."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import typer.main

from snapbench.cli import app

ROOT = Path(__file__).resolve().parents[1]


def _flags(command: str) -> dict[str, Any]:
    """Parameter name -> default of one command, as the command line has them."""
    cmd = typer.main.get_command(app).commands[command]
    return {p.name: p.default for p in cmd.params}


def _ks(text: str) -> tuple[int, ...]:
    return tuple(int(k) for k in text.split(","))


def _mismatches(command: str, library: dict[str, Any], *, renamed: dict[str, str] | None = None,
                negated: dict[str, str] | None = None, convert: dict[str, Any] | None = None,
                not_options: set[str] = frozenset()) -> list[str]:
    """The flags of ``command`` whose default differs from the library's ``library[name]``; every flag
    must be an option (``renamed``: flag -> option), a switch of one (``negated``: ``--no-x`` off by
    default = option ``x`` on), or listed in ``not_options`` (so a new flag cannot go unchecked)."""
    renamed, negated, convert = renamed or {}, negated or {}, convert or {}
    bad = []
    for name, default in _flags(command).items():
        if name in not_options:
            continue
        if name in negated:
            if not (default is False and library[negated[name]] is True):
                bad.append(f"{command} {name}: {default!r} vs {negated[name]}={library[negated[name]]!r}")
            continue
        field = renamed.get(name, name)
        if field not in library:
            bad.append(f"{command} {name}: no library option {field!r} (list it in not_options?)")
            continue
        value = convert[name](default) if name in convert and default is not None else default
        if value != library[field]:
            bad.append(f"{command} {name}: {value!r} vs {field}={library[field]!r}")
    return bad


def _fields(obj: Any) -> dict[str, Any]:
    return dict(vars(obj))


def _signature(fn: Any) -> dict[str, Any]:
    return {n: p.default for n, p in inspect.signature(fn).parameters.items() if p.default is not inspect.Parameter.empty}


def test_run_and_demo_default_to_run_options():
    from snapbench.app.stages import RunOptions

    lib = _fields(RunOptions())
    bad = _mismatches("run", lib, renamed={"actors": "encoder_actors", "format": "dataset_format", "k": "ks"},
                      negated={"no_report": "report", "no_progress": "progress", "no_measure": "measure"},
                      convert={"k": _ks},
                      # no_cache: off means "decided per encoder" (use_cache None), not use_cache=True
                      # quiet: what the command prints, not how the run runs
                      not_options={"dataset", "encoder", "out", "name", "no_cache", "quiet"})
    bad += _mismatches("demo", lib, negated={"no_progress": "progress"}, not_options={"out", "data", "force"})
    assert not bad, bad


def test_corrupt_and_preview_default_to_corrupt_options():
    from snapbench.app.corrupt import CorruptOptions
    from snapbench.corruptions.io import load_image
    from snapbench.corruptions.preview import contact_sheet

    bad = _mismatches("corrupt", _fields(CorruptOptions()),
                      negated={"no_progress": "progress", "no_measure": "measure"}, not_options={"input", "out"})
    assert not bad, bad
    preview = _flags("preview")
    assert preview["max_pixels"] == _signature(load_image)["max_pixels"] == CorruptOptions().max_pixels
    assert preview["seed"] == _signature(contact_sheet)["seed"] == CorruptOptions().seed


def test_evaluate_and_additivity_default_to_evaluation_config():
    from snapbench.evaluate import EvaluationConfig

    lib = _fields(EvaluationConfig())
    bad = _mismatches("evaluate", lib, renamed={"k": "ks", "cliff_tol": "curve_tol", "cliff_ratio": "curve_ratio"},
                      convert={"k": _ks},
                      not_options={"scores_dir", "qrels", "out", "tags", "group_by", "mode", "conditions",
                                   "allow_unknown_items", "table_out", "export_run", "export_depth", "primary",
                                   "per_query", "quiet",
                                   "workers"})  # None: the config's own default, min(4, CPUs)
    assert _flags("evaluate")["workers"] is None
    additivity = _flags("additivity")
    assert additivity["seed"] == lib["seed"]
    assert additivity["resamples"] is None and additivity["ci"] is None  # the config's, as the help says:
    helps = {p.name: p.help for p in typer.main.get_command(app).commands["additivity"].params}
    assert f"default {lib['resamples']}" in helps["resamples"] and f"default {lib['ci']}" in helps["ci"]
    assert not bad, bad


def test_encode_moor_compare_report_diagnose_default_to_the_library():
    from snapbench.app.compare import CompareOptions
    from snapbench.app.diagnose import run_diagnose
    from snapbench.app.encode import encode_corrupted
    from snapbench.app.moor import DEFAULT_ANN_CHECK, FuseOptions
    from snapbench.app.stages import RunOptions
    from snapbench.render import build_report

    encode = _flags("encode")
    assert encode["batch_size"] == _signature(encode_corrupted)["batch_size"] == RunOptions().batch_size
    bad = _mismatches("moor", _fields(FuseOptions()), renamed={"topk": "k"}, negated={"no_whiten": "whiten"},
                      not_options={"out", "q_image", "q_text", "g_image", "g_text", "paths_dir", "embeddings_dir",
                                   "condition", "query_ids", "gallery_ids", "ann_check"})
    moor_help = {p.name: p.help for p in typer.main.get_command(app).commands["moor"].params}
    assert _flags("moor")["ann_check"] is None and f"(default {DEFAULT_ANN_CHECK})" in moor_help["ann_check"]
    listed = {"formats": lambda text: tuple(text.split(","))}
    bad += _mismatches("compare", _fields(CompareOptions()), renamed={"name": "names"}, convert=listed,
                       not_options={"run_dirs", "out", "no_progress", "quiet"})
    bad += _mismatches("report", _signature(build_report), convert=listed, not_options={"run_dir", "out", "traffic"})
    diagnose = _signature(run_diagnose)
    bad += [f"diagnose {n}" for n in ("examples", "questions", "format", "thresholds", "words")
            if _flags("diagnose")[n] != diagnose[n]]
    assert not bad, bad


def test_the_defaults_are_the_documented_ones():
    """docs/run.md and docs/evaluate.md show the defaults in their synopsis; corruptions.md and
    encoders.md name them in words."""
    run_md = (ROOT / "docs" / "run.md").read_text()
    evaluate_md = (ROOT / "docs" / "evaluate.md").read_text()
    run, evaluate = _flags("run"), _flags("evaluate")
    for flag, name in (("seed", "seed"), ("batch-size", "batch_size"), ("resamples", "resamples"), ("k", "k")):
        assert f"[--{flag} {run[name]}]" in run_md, flag
    for flag, name in (("seed", "seed"), ("resamples", "resamples"), ("k", "k"), ("ci", "ci")):
        assert f"[--{flag} {evaluate[name]}]" in evaluate_md, flag
    corruptions_md = (ROOT / "docs" / "corruptions.md").read_text()
    documented = re.search(r"`--max-pixels N` \(default ([\d,]+)\)", corruptions_md)
    assert documented and int(documented.group(1).replace(",", "")) == _flags("corrupt")["max_pixels"]
    encoders_md = (ROOT / "docs" / "encoders.md").read_text()
    assert f"`--batch-size` (default {_flags('encode')['batch_size']})" in encoders_md
    # docs/compare.md: the runs' resamples and CI level default to "10,000 and 0.95"
    assert (run["resamples"], evaluate["ci"], _ks(run["k"])) == (10_000, 0.95, (1, 5, 10, 20))


def test_the_command_line_starts_without_the_packages_whose_defaults_it_shows():
    """The defaults live in snapbench.core.defaults (and RunOptions): `snapbench --help` must not import
    the pipeline, evaluation or OpenCV to show them."""
    code = ("import sys, snapbench.cli; print(sorted(m for m in ('cv2', 'snapbench.evaluate', 'snapbench.corruptions', "
            "'snapbench.app.stages.run', 'snapbench.fusion', 'snapbench.compare') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]", out.stdout


def test_the_resume_line_of_corrupt_gives_back_the_options_it_was_made_with():
    """`corrupt` interrupted prints the command that resumes it: the flags whose value is not the
    default.  Parsed again by the command line, it must give the same options (a default that the
    line leaves out must be the command line's default too)."""
    from snapbench.app.corrupt import CorruptOptions
    from snapbench.cli import _rerun
    from snapbench.corruptions.target import parse_severity_target

    cmd = typer.main.get_command(app).commands["corrupt"]

    def parsed(opts: CorruptOptions, no_progress: bool = False) -> dict[str, Any]:
        line = _rerun(Path("q.jsonl"), Path("o"), opts, no_progress)
        assert line[:2] == ["snapbench", "corrupt"]
        return cmd.make_context("corrupt", line[2:]).params

    assert _rerun(Path("q.jsonl"), Path("o"), CorruptOptions(), False) == [
        "snapbench", "corrupt", "q.jsonl", "--out", "o", "--seed", "0"]
    default, p = CorruptOptions(), parsed(CorruptOptions())
    assert (p["workers"], p["engine"], p["image_format"], p["max_pixels"], p["joint"], p["no_measure"]) == (
        default.workers, default.engine, default.image_format, default.max_pixels, default.joint, not default.measure)
    target = parse_severity_target("ssim=0.9,0.75,0.6")
    given = CorruptOptions(seed=3, conditions=["clean", "img/low_light/s1"], joint=True, workers=3, engine="ray",
                           address="auto", grid="g.toml", image_format="qoi", max_pixels=1000, measure=False,
                           severity_target=target)
    p = parsed(given, no_progress=True)
    assert (p["seed"], p["conditions"], p["joint"], p["workers"], p["engine"], p["address"], str(p["grid"]),
            p["image_format"], p["max_pixels"], p["no_measure"], p["no_progress"]) == (
        3, "clean,img/low_light/s1", True, 3, "ray", "auto", "g.toml", "qoi", 1000, True, True)
    assert parse_severity_target(p["severity_target"]) == target
