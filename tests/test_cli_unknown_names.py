"""Every value outside a known set is refused one way, on every command: the flag first, the close
names, then the known ones (``error: --flag: unknown X 'y' (did you mean 'z'?); known: a, b``).

The rows are the misspelt values a new user tried (trial 4, findings 2 and 3) and a few that already
had the hint; each expected text is written out by hand.
"""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from snapbench.app.stages import RunOptions, run_benchmark
from snapbench.cli import app
from snapbench.core.defaults import DEFAULT_DATA

runner = CliRunner()
CONDS = ["clean", "img/low_light/s1", "img/motion_blur/s2", "txt/char_add"]


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A corrupt folder (cj), its encode folder (ej), two runs of the toy encoder (r1, r2), a thresholds file."""
    root = tmp_path_factory.mktemp("names")
    r = runner.invoke(app, ["corrupt", str(DEFAULT_DATA / "queries.jsonl"), "--out", str(root / "cj"),
                            "--conditions", ",".join(CONDS[1:]), "--no-progress"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["encode", str(root / "cj"), "--gallery", str(DEFAULT_DATA / "gallery.jsonl"),
                            "--out", str(root / "ej"), "--no-progress"])
    assert r.exit_code == 0, r.output
    opts = RunOptions(conditions=CONDS, joint=False, resamples=50, report=False, progress=False, use_cache=False)
    for name in ("r1", "r2"):
        run_benchmark(DEFAULT_DATA, "toy", root / name, opts)
    (root / "th.toml").write_text("[blurr]\nthreshold = 6.0\n", encoding="utf-8")
    return root


def _run(*args: str, encoder: str = "toy") -> list[str]:
    return ["run", str(DEFAULT_DATA), "-e", encoder, "--conditions", "clean", "--resamples", "50", "--no-report",
            "--no-progress", *args]


# (command line with {root} for the fixture folder, expected text); {root} in the text too
ROWS = [
    # finding 2: refusals that had no hint, or introduced the known list another way
    (_run("--out", "{root}/o", "--modes", "IT2TI"),
     "error: --modes: unknown retrieval mode 'IT2TI' (did you mean 'IT2IT'"),
    (["evaluate", "{root}/ej/paths", "--qrels", str(DEFAULT_DATA / "qrels.json"), "--mode", "IT2ITT"],
     "error: --mode: unknown retrieval mode 'IT2ITT' (did you mean 'IT2IT', 'I2IT' or 'T2IT'?); known: I2I, T2T, IT2IT, I2IT, T2IT (any case)"),
    (_run("--out", "{root}/o", "--variants", "generatd"),
     "error: --variants: unknown variant source 'generatd' (did you mean 'generated'?); known: generated, released"),
    (_run("--out", "{root}/o", "--severity-target", "sim=0.9,0.8"),
     "error: --severity-target: unknown metric 'sim' in 'sim=0.9,0.8' (did you mean 'ssim'?); known: ssim, psnr"),
    (_run("--out", "{root}/o", "--device", "cdua"),
     "error: --device: unknown torch device 'cdua' (did you mean 'cuda'?); known: cpu, cuda, mps,"),
    (["evaluate", "{root}/ej/paths", "--qrels", str(DEFAULT_DATA / "qrels.json"), "--mode", "IT2IT", "--primary", "hit@l"],
     "error: --primary: 'hit@l' is not among the evaluated metrics (did you mean 'hit@1', 'hit@5' or 'hit@10'?); "
     "known: hit@1, hit@5, hit@10, hit@20, recall@1,"),
    (["report", "{root}/r1", "--out", "{root}/rep", "--metric", "hit@l"],
     "error: --metric: metric 'hit@l' is in none of the reports of {root}/r1 (did you mean 'hit@1', 'hit@5' or "
     "'hit@10'?); known: hit@1,"),
    (["compare", "{root}/r1", "{root}/r2", "--name", "a", "--name", "b", "--out", "{root}/cmp", "--metric", "hit@l"],
     "error: --metric: 'hit@l' is not among the metrics compared (did you mean 'hit@1', 'hit@5' or 'hit@10'?); known: hit@1,"),
    (["additivity", "{root}/r1/IT2IT/report.json", "--metric", "hitt@1"],
     "error: --metric: metric 'hitt@1' is not in the report {root}/r1/IT2IT/report.json (did you mean 'hit@1'"),
    (["additivity", "{root}/ej/paths", "--qrels", str(DEFAULT_DATA / "qrels.json"), "--mode", "IT2IT", "--metric", "hitt@1"],
     "error: --metric: unknown metric 'hitt@1' (did you mean 'hit'?); known: hit[@k], recall[@k],"),
    (["compare", "{root}/r1", "{root}/r2", "--out", "{root}/cmp", "--correction", "holmes"],
     "error: --correction: unknown correction 'holmes' (did you mean 'holm'?); known: holm, bh"),
    (["compare", "{root}/r1", "{root}/r2", "--out", "{root}/cmp", "--formats", "md,texx"],
     "error: --formats: unknown format 'texx' (did you mean 'tex'?); known: html, md, tex, csv, parquet, png, pdf"),
    (["report", "{root}/r1", "--out", "{root}/rep", "--formats", "md,texx"],
     "error: --formats: unknown report format 'texx' (did you mean 'tex'?); known: html, md, tex, csv, parquet, png, pdf"),
    (["moor", "--paths-dir", "{root}/ej/paths", "--out", "{root}/mo", "--dtype", "float16"],
     "error: --dtype: unknown dtype 'float16' (did you mean 'float64' or 'float32'?); known: float32, float64"),
    (["moor", "--paths-dir", "{root}/ej/paths", "--out", "{root}/mo", "--weights-format", "csvv"],
     "error: --weights-format: unknown weights format 'csvv' (did you mean 'csv'?); known: csv, npy"),
    (["corrupt", str(DEFAULT_DATA / "queries.jsonl"), "--out", "{root}/c2", "--format", "pngg"],
     "error: --format: unknown image format 'pngg' (did you mean 'png'?); known: png, qoi, jxl, webp, npz"),
    (["diagnose", str(DEFAULT_DATA / "queries.jsonl"), "--out", "{root}/d", "--format", "questons"],
     "error: --format: unknown input format 'questons' (did you mean 'questions'?); known: "),
    (["diagnose", str(DEFAULT_DATA / "queries.jsonl"), "--out", "{root}/d", "--thresholds", "{root}/th.toml"],
     "error: {root}/th.toml: unknown detector or section 'blurr' (did you mean 'blur'?); known: blur, "),
    (["evaluate", "{root}/ej/paths", "--qrels", str(DEFAULT_DATA / "qrels.json"), "--mode", "IT2IT",
      "--conditions", "img/low_light/s9"],
     "error: --conditions: unknown condition 'img/low_light/s9' in {root}/ej/paths (did you mean 'img/low_light/s1'"),
    # finding 3: encode names the close condition of the folder, not all of its ids
    (["encode", "{root}/cj", "--gallery", str(DEFAULT_DATA / "gallery.jsonl"), "--out", "{root}/e2",
      "--conditions", "img/motion_blurr/s2"],
     "error: --conditions: unknown condition 'img/motion_blurr/s2' in {root}/cj (did you mean 'img/motion_blur/s2'?); "
     "known: clean, img/low_light/s1, img/motion_blur/s2, txt/char_add"),
    # already with the hint: the same words, the flag in front
    (_run("--out", "{root}/o", encoder="toi"),
     "error: --encoder: unknown encoder 'toi' (did you mean 'toy'?); known: toy"),
    (_run("--out", "{root}/o", "--engine", "locl"),
     "error: --engine: unknown engine 'locl' (did you mean 'local'?); known: local, ray"),
    (["moor", "--paths-dir", "{root}/ej/paths", "--out", "{root}/mo", "--gate", "belll"],
     "error: --gate: unknown gate 'belll' (did you mean 'bell'"),
    (["evaluate", "{root}/ej/paths", "--qrels", str(DEFAULT_DATA / "qrels.json"), "--mode", "IT2IT", "--metrics", "hitt"],
     "error: --metrics: unknown metric 'hitt' (did you mean 'hit'?); known: hit[@k], recall[@k],"),
]


@pytest.mark.parametrize("args,expected", ROWS, ids=[" ".join(a[:1] + a[-2:]) if a[-2] != "--out" else f"{a[0]} -e {a[3]}" for a, _ in ROWS])
def test_a_misspelt_value_names_the_flag_the_close_names_and_the_known_ones(made, args, expected):
    res = runner.invoke(app, [a.replace("{root}", str(made)) for a in args])
    assert res.exit_code == 2, res.output
    assert res.output.startswith(expected.replace("{root}", str(made))), res.output
    assert "Traceback" not in res.output and "choose " not in res.output


def test_a_long_known_list_is_cut():
    """A folder's conditions (72 in a default corrupt) are not all printed: the first ten, then a count."""
    from snapbench.core.validate import LIST_MAX, unknown_name

    names = [f"img/op{i}/s1" for i in range(25)]
    assert unknown_name("condition", "img/opp/s1", names, n=LIST_MAX) == (
        "unknown condition 'img/opp/s1' (did you mean 'img/op0/s1', 'img/op1/s1' or 'img/op2/s1'?); known: "
        + ", ".join(names[:10]) + " (and 15 more)")
