"""A numeric flag out of range, or not a number, is refused in snapbench's words on every command:
``error: --flag: ...``, exit status 2 -- never click's usage block (``Error: Invalid value for
'--topk': ...``, trial 4 finding 12).  Expected texts are written out by hand."""

from __future__ import annotations

import pytest
import typer
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
    (EVALUATE + ["--k", "0,5"], "error: --k: each value must be an integer >= 1, got 0 (in 0,5)"),
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
    # not a number: click cannot parse it; the library's words
    (MOOR + ["--topk", "abc"], "error: --topk: must be an integer, got 'abc'"),
    (MOOR + ["--topk", "1.5"], "error: --topk: must be an integer, got '1.5'"),
    (EVALUATE + ["--ci", "high"], "error: --ci: must be a number, got 'high'"),
    (RUN + ["--seed", "x"], "error: --seed: must be an integer, got 'x'"),
]


@pytest.mark.parametrize("args,expected", ROWS, ids=[f"{a[0]} {' '.join(a[-2:])}" for a, _ in ROWS])
def test_a_bad_number_is_an_error_naming_the_flag(made, args, expected):
    res = runner.invoke(app, [a.replace("{root}", str(made)) for a in args])
    assert res.exit_code == 2, res.output
    assert res.output.startswith(expected), res.output
    assert "Invalid value" not in res.output and "Usage:" not in res.output, res.output


COMMANDS = typer.main.get_command(app).commands


def _flags(command, kind):
    """The long flags of ``command`` whose value is of type ``kind`` (int, float; None: every flag)."""
    return [o for p in COMMANDS[command].params if p.param_type_name == "option"
            and (kind is None or p.type_descriptor.annotation is kind) for o in p.opts if o.startswith("--")]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_an_unknown_flag_is_an_error_naming_it_on_every_command(command):
    """trial finding: `snapbench stress ... --quiet` printed click's usage block and "(Possible options: --out)"."""
    res = runner.invoke(app, [command, "--quiet-please"])
    assert res.exit_code == 2, res.output
    assert res.output.startswith("error: --quiet-please: no such option; see '"), res.output
    assert res.output.rstrip().endswith(f"{command} --help'"), res.output
    assert "Usage:" not in res.output and "Possible options" not in res.output, res.output
    longest = max(_flags(command, None), key=len)  # one letter short: the flag is suggested
    res = runner.invoke(app, [command, longest[:-1]])
    assert res.exit_code == 2 and res.output.startswith(f"error: {longest[:-1]}: no such option (did you mean "), res.output
    assert repr(longest) in res.output.split("?)")[0], res.output


def test_an_unknown_command_or_top_level_flag_is_an_error_naming_it():
    """`snapbench rnu` and `snapbench --bogus` printed click's usage block and 'Error: No such command'."""
    for args, words in ((["rnu"], "error: rnu: no such command (did you mean 'run'?); see '"),
                        (["--bogus"], "error: --bogus: no such option; see '")):
        res = runner.invoke(app, args)
        assert res.exit_code == 2, res.output
        assert res.output.startswith(words) and res.output.rstrip().endswith(" --help'"), res.output
        assert "Usage:" not in res.output, res.output
    assert runner.invoke(app, ["--help"]).exit_code == 0


NUMBER_FLAGS = [(c, f, must_be) for c in sorted(COMMANDS) for kind, must_be in ((int, "an integer"), (float, "a number"))
                for f in _flags(c, kind)]


@pytest.mark.parametrize("command,flag,must_be", NUMBER_FLAGS, ids=[f"{c} {f}" for c, f, _ in NUMBER_FLAGS])
def test_a_value_that_is_not_a_number_is_said_in_the_library_words_on_every_command(command, flag, must_be):
    """`--resamples abc` on any command: ``error: --resamples: must be an integer, got 'abc'`` (not typer's
    "Input should be a valid integer")."""
    res = runner.invoke(app, [command, flag, "abc"])
    assert res.exit_code == 2, res.output
    assert res.output == f"error: {flag}: must be {must_be}, got 'abc'\n", res.output
