"""A numeric flag out of range, or not a number, is refused in snapbench's words on every command:
``error: --flag: ...``, exit status 2 -- never click's usage block (``Error: Invalid value for
'--topk': ...``, trial 4 finding 12).  Expected texts are written out by hand."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from snapbench.cli import app
from snapbench.core.defaults import DEFAULT_DATA

runner = CliRunner()
Q, G, QRELS = str(DEFAULT_DATA / "queries.jsonl"), str(DEFAULT_DATA / "gallery.jsonl"), str(DEFAULT_DATA / "qrels.json")


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A corrupt folder (c), its encode folder (e) and a run (r) of the toy encoder."""
    root = tmp_path_factory.mktemp("flags")
    for args in (["corrupt", Q, "--out", str(root / "c"), "--conditions", "txt/char_add", "--no-progress"],
                 ["encode", str(root / "c"), "--gallery", G, "--out", str(root / "e"), "--no-progress"],
                 ["run", str(DEFAULT_DATA), "-e", "toy", "--conditions", "clean,txt/char_add", "--resamples", "50",
                  "--no-report", "--no-progress", "--out", str(root / "r")]):
        r = runner.invoke(app, args)
        assert r.exit_code == 0, r.output
    return root


RUN = ["run", str(DEFAULT_DATA), "-e", "toy", "--conditions", "clean", "--no-progress", "--out", "{root}/o"]
EVALUATE = ["evaluate", "{root}/e/paths", "--qrels", QRELS, "--mode", "IT2IT", "-q"]
MOOR = ["moor", "--paths-dir", "{root}/e/paths", "--out", "{root}/m"]
ENCODE = ["encode", "{root}/c", "--gallery", G, "--out", "{root}/e2", "--no-progress"]
COMPARE = ["compare", "{root}/r", "{root}/r", "--name", "a", "--name", "b", "--out", "{root}/cmp", "--no-progress"]
ROWS = [
    # the flags typer checked with min=/max= (its own message and format)
    (MOOR + ["--topk", "0"], "error: --topk: must be an integer >= 1, got 0"),
    (MOOR + ["--chunk-size", "0"], "error: --chunk-size: must be an integer >= 1, got 0"),
    (MOOR + ["--ann", "--topk", "5", "--ann-check", "-1"], "error: --ann-check: must be an integer >= 0, got -1"),
    (ENCODE + ["--batch-size", "0"], "error: --batch-size: must be an integer >= 1, got 0"),
    (["report", "{root}/r", "--out", "{root}/rep", "--dpi", "10"], "error: --dpi: must be an integer from 50 to 600, got 10"),
    (COMPARE + ["--dpi", "700"], "error: --dpi: must be an integer from 50 to 600, got 700"),
    # flags that were not checked at all
    (MOOR + ["--fusion-eps", "-1"], "error: --fusion-eps: must be a number >= 0, got -1.0"),
    (MOOR + ["--fusion-eps", "nan"], "error: --fusion-eps: must be finite, got nan"),
    (EVALUATE + ["--export-run", "{root}/x", "--export-depth", "-1"], "error: --export-depth: must be an integer >= 1, got -1"),
    (["diagnose", Q, "--out", "{root}/d", "--examples", "-1"], "error: --examples: must be an integer >= 0, got -1"),
    # the rest, one each
    (EVALUATE + ["--resamples", "0"], "error: --resamples: must be an integer >= 1, got 0"),
    (EVALUATE + ["--permutations", "-1"], "error: --permutations: must be an integer >= 0, got -1"),
    (EVALUATE + ["--ci", "1.5"], "error: --ci: must be in (0, 1), e.g. 0.95; got 1.5"),
    (EVALUATE + ["--workers", "0"], "error: --workers: must be an integer >= 1, got 0"),
    (EVALUATE + ["--cliff-tol", "nan"], "error: --cliff-tol: must be finite, got nan"),
    (EVALUATE + ["--k", "0,5"], "error: --k: needs integers >= 1, got '0,5'"),
    (["additivity", "{root}/e/paths", "--qrels", QRELS, "--mode", "IT2IT", "--resamples", "0"],
     "error: --resamples: must be an integer >= 1, got 0"),
    (COMPARE + ["--resamples", "0"], "error: --resamples: must be an integer >= 1, got 0"),
    (COMPARE + ["--ci", "2"], "error: --ci: must be in (0, 1), e.g. 0.95; got 2.0"),
    (RUN + ["--batch-size", "0"], "error: --batch-size: must be an integer >= 1, got 0"),
    (RUN + ["--workers", "0"], "error: --workers: must be an integer >= 1, got 0"),
    (RUN + ["--actors", "-1"], "error: --actors: must be an integer >= 0, got -1"),
    (RUN + ["--resamples", "0"], "error: --resamples: must be an integer >= 1, got 0"),
    (RUN + ["--gallery-shard-rows", "0"], "error: --gallery-shard-rows: must be an integer >= 1, got 0"),
    (ENCODE + ["--actors", "0"], "error: --actors: must be an integer >= 1, got 0"),
    (["corrupt", Q, "--out", "{root}/c2", "--workers", "0"], "error: --workers: must be an integer >= 1, got 0"),
    (["corrupt", Q, "--out", "{root}/c2", "--max-pixels", "0"], "error: --max-pixels: must be an integer >= 1, got 0"),
    (["preview", str(DEFAULT_DATA / "queries" / "brick.jpg"), "--out", "{root}/p.png", "--max-pixels", "0"],
     "error: --max-pixels: must be an integer >= 1, got 0"),
    (["demo", "--out", "{root}/dm", "--workers", "0"], "error: --workers: must be an integer >= 1, got 0"),
    # not a number: click cannot parse it; the same format (the words are typer's)
    (MOOR + ["--topk", "abc"], "error: --topk: "),
    (EVALUATE + ["--ci", "high"], "error: --ci: "),
    (RUN + ["--seed", "x"], "error: --seed: "),
]


@pytest.mark.parametrize("args,expected", ROWS, ids=[f"{a[0]} {' '.join(a[-2:])}" for a, _ in ROWS])
def test_a_bad_number_is_an_error_naming_the_flag(made, args, expected):
    res = runner.invoke(app, [a.replace("{root}", str(made)) for a in args])
    assert res.exit_code == 2, res.output
    assert res.output.startswith(expected), res.output
    assert "Invalid value" not in res.output and "Usage:" not in res.output, res.output


def test_a_missing_argument_keeps_the_usage_line():
    """click's MissingParameter is a BadParameter too: it keeps click's words, which show the usage."""
    res = runner.invoke(app, ["report"])
    assert res.exit_code == 2 and "Missing argument 'RUN_DIR'" in res.output and "Usage:" in res.output, res.output
