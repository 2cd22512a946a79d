"""The numbers `snapbench run` and `snapbench compare` print when they are done, read back from the
terminal and checked against the JSON files (report.json, compare.json) with the test's own
arithmetic; --quiet for scripts and --limit N for a quick look (stated on every output)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from snapbench.cli import app
from snapbench.core.defaults import DEFAULT_DATA
from snapbench.store.compare import read_compare_json

runner = CliRunner()
CONDS = "clean,img/compression/s1,img/compression/s3,img/rotation/s2,txt/char_swap,txt/char_add,joint/compression+char_add/s3"
FAST = ["--resamples", "200", "--no-progress", "--no-cache"]
MIRROR = """
from snapbench.models import get_encoder

class Mirror:
    '''The toy features reversed and scaled: a second model that ranks differently from toy.'''
    name = fingerprint = "mirror-v1"
    modalities = frozenset({"image", "text"})

    def __init__(self):
        self.inner = get_encoder("toy")

    def encode_images(self, xs):
        return self.inner.encode_images(xs)[:, ::-1] * 2.0 + 0.1

    def encode_texts(self, xs):
        return self.inner.encode_texts(xs)[:, ::-1]
"""


def _table_rows(text: str, ruled: bool = True) -> tuple[list[str], list[list[str]]]:
    """The header and the rows of the first rich table (box MINIMAL: columns split by │) in ``text``:
    ``ruled``, rows are ruled by ╶…╴ lines and a cell of several lines is read as its lines joined by a
    space; otherwise each line is a row (╶…╴ lines split sections)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if "│" in line)
    blocks: list[list[str]] = [[]]
    for line in lines[start:]:
        if line.lstrip().startswith("╶"):
            blocks.append([])
        elif "│" in line:
            blocks[-1].append(line)
        elif "╵" in line or not line.strip():
            break

    def join(block: list[str]) -> list[str]:
        cols = [line.split("│") for line in block]
        return [" ".join(p.strip() for p in parts if p.strip()) for parts in zip(*cols)]

    header = join(blocks[0])
    if not ruled:
        return header, [join([line]) for b in blocks[1:] for line in b]
    return header, [join(b) for b in blocks[1:] if b]


def _pct(x: float) -> str:
    return f"{100 * x + 0.0:.1f}"


def _signed(x: float) -> str:
    return f"{100 * x + 0.0:+.1f}"


@pytest.fixture(scope="module")
def one_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("res") / "run"
    r = runner.invoke(app, ["run", str(DEFAULT_DATA), "-e", "toy", "--out", str(out), "--conditions", CONDS,
                            "--limit", "10", "--no-report", *FAST])
    assert r.exit_code == 0, r.output
    return out, r.stdout


#: The query sides each target reads (the test's own table: I→IT = II + IT and T→IT = TI + TT read one side).
READS = {"I2I": {"img"}, "I2IT": {"img"}, "T2T": {"txt"}, "T2IT": {"txt"}}


def _counts(target: str, cond: str) -> bool:
    """Whether ``cond`` corrupts a side ``target`` reads (joint: either part)."""
    kind = cond.split("/")[0]
    sides = READS.get(target, {"img", "txt"})
    return kind == "joint" or kind in sides


def _reports(out):
    found = {}
    for p in sorted(out.glob("*/report.json")) + sorted(out.glob("fusion/*/report.json")):
        t = str(p.parent.relative_to(out))
        found[t] = json.loads(p.read_text())
    return found


def test_run_prints_the_reports_numbers(one_run):
    out, stdout = one_run
    header, rows = _table_rows(stdout)
    reports = _reports(out)
    assert [r[0] for r in rows] and set(r[0] for r in rows) == set(reports)
    col = {h: i for i, h in enumerate(header)}
    for row in rows:
        rep = reports[row[0]]
        assert row[col["clean R@1"]] == _pct(rep["conditions"]["clean"]["hit@1"])
        assert row[col["clean ndcg@10"]] == _pct(rep["conditions"]["clean"]["ndcg@10"])
        deltas = {c: v["hit@1"]["delta"] for c, v in rep["paired"].items() if c != "clean" and _counts(row[0], c)}
        assert row[col["mean ΔR@1 [CI]"]].split(" [")[0] == _signed(np.mean(list(deltas.values())))
        by_op: dict[str, list[float]] = {}
        for c, d in deltas.items():
            kind, *rest = c.split("/")
            if kind in ("img", "txt"):
                by_op.setdefault(f"{kind}/{rest[0]}", []).append(d)
        means = {op: np.mean(v) for op, v in by_op.items()}
        lo, hi = min(means.values()), max(means.values())
        worst, mild = row[col["worst operator"]], row[col["mildest operator"]]
        if lo == hi:
            assert worst == mild == f"all equal {_signed(lo)}"
        else:
            assert worst.split()[0] in [op for op, v in means.items() if v == lo] and worst.split()[1] == _signed(lo)
            assert mild.split()[0] in [op for op, v in means.items() if v == hi] and mild.split()[1] == _signed(hi)
        mean_add = rep["additivity_summary"]["mean"]["hit@1"]
        lo_ci, hi_ci = mean_add["ci"]
        assert row[col["δ [CI]"]] == f"{_signed(mean_add['delta'])} [{_signed(lo_ci)}, {_signed(hi_ci)}]"


def test_run_moor_against_the_best_fixed_fusion(one_run):
    out, stdout = one_run
    header, rows = _table_rows(stdout)
    reports = _reports(out)
    moor = reports["MOOR"]["conditions"]
    best, best_mean = None, -1.0
    for t in ["IT2IT", *(t for t in reports if t.startswith("fusion/"))]:
        other = reports[t]["conditions"]
        m = np.mean([other[c]["hit@1"] for c in moor])
        if m > best_mean:
            best, best_mean = t, m
    gain = np.mean([moor[c]["hit@1"] for c in moor]) - best_mean
    cell = dict(zip(header, next(r for r in rows if r[0] == "MOOR")))["MOOR − best fixed fusion"]
    assert cell.startswith(_signed(gain) + " [") and cell.endswith(f"vs {best}")
    assert all(dict(zip(header, r))["MOOR − best fixed fusion"] == "" for r in rows if r[0] != "MOOR")


def test_run_table_equals_headline_json_and_ci_is_the_files(one_run):
    out, stdout = one_run
    header, rows = _table_rows(stdout)
    head = json.loads((out / "headline.json").read_text())
    by = {t["target"]: t for t in head["targets"]}
    for row in rows:
        md = by[row[0]]["mean_delta"]
        assert row[header.index("mean ΔR@1 [CI]")] == f"{_signed(md['value'])} [{_signed(md['ci'][0])}, {_signed(md['ci'][1])}]"
        assert md["n_conditions"] == {"I2I": 4, "I2IT": 4, "T2T": 3, "T2IT": 3}.get(row[0], 6)  # 3 image, 2 text, 1 joint condition


def test_the_report_summary_averages_only_the_conditions_each_target_reads(one_run):
    """The page's "all modes at a glance" table follows the headline's rule: T→T has no image means (an
    image condition cannot move it), I→I no text means, and every mean is over the conditions read."""
    from snapbench.render.tables import summary_table
    from snapbench.store.rundir import load_run_dir

    out, _ = one_run
    reports, data = _reports(out), load_run_dir(out)
    md = summary_table([(t, t, data.target_report(t)) for t in reports]).to_markdown()
    rows = {c[0]: c[1:] for c in ([p.strip() for p in line.strip("|").split("|")] for line in md.splitlines()
                                  if line.startswith("| ") and not line.startswith("| Mode"))}
    for t, rep in reports.items():
        conds, clean = rep["conditions"], rep["conditions"]["clean"]["hit@1"]
        cells = [_pct(clean)]
        for kind in ("img", "txt", "joint"):
            read = [c for c in conds if c.startswith(kind + "/") and _counts(t, c)]
            cells.append(_pct(np.mean([conds[c]["hit@1"] for c in read])) if read else "–")
        for kind in ("img", "txt", "joint"):
            read = [c for c in conds if c.startswith(kind + "/") and _counts(t, c)]
            cells.append(_signed(np.mean([rep["paired"][c]["hit@1"]["delta"] for c in read])) if read else "–")
        assert rows[t] == cells, t
    assert rows["T2T"][1] == rows["T2T"][4] == "–" and rows["I2I"][2] == rows["I2I"][5] == "–"


def test_the_demo_table_averages_only_the_conditions_each_target_reads(one_run):
    """Trial: `snapbench demo`'s table averaged every image condition for T→T (its img cell was the
    clean value) and every text condition for I→I (100.0) while the page's summary showed –.  It now
    takes the summary's means (kind_means): "–" where the target reads no condition of that kind."""
    import io

    from rich.console import Console

    from snapbench.render.terminal import demo_table
    from snapbench.store.rundir import load_run_dir

    out, _ = one_run
    reports, data = _reports(out), load_run_dir(out)
    con = Console(file=io.StringIO(), width=200)
    con.print(demo_table({t: data.target_report(t) for t in reports}))
    lines = con.file.getvalue().splitlines()
    header = next([p.strip() for p in line.strip().strip("┃").split("┃")] for line in lines if "┃" in line)
    assert header == ["mode", "clean", "img (3)", "txt (2)", "joint (1)", "mean δ", "drag"]
    rows = {c[0]: c[1:] for c in ([p.strip() for p in line.strip().strip("│").split("│")] for line in lines
                                  if line.startswith("│"))}
    assert set(rows) == set(reports)
    for t, rep in reports.items():
        conds = rep["conditions"]
        cells = [_pct(conds["clean"]["hit@1"])]
        for kind in ("img", "txt", "joint"):
            read = [c for c in conds if c.startswith(kind + "/") and _counts(t, c)]
            cells.append(_pct(np.mean([conds[c]["hit@1"] for c in read])) if read else "–")
        assert rows[t][:4] == cells, t
    assert rows["T2T"][1] == "–" and rows["I2I"][2] == "–" and rows["I2IT"][2] == rows["T2IT"][1] == "–"
    # below the table, how many queries count (trial: the demo left out what `run` says), from report.json
    rep = reports["IT2IT"]
    n, zero = rep["n_queries"], rep["n_excluded_zero_gt"]
    want = f"{n - zero} of {n} queries count" if zero else f"all {n} queries count"
    assert any(line.strip().startswith(want) for line in lines), lines[-3:]

def test_limit_is_stated_on_every_output(one_run):
    out, stdout = one_run
    run = json.loads((out / "run.json").read_text())
    assert run["limit"] == {"queries": 10, "of": 12} and run["n_queries_evaluated"] == 10
    assert any("first 10 of 12 queries" in n for n in run["notes"])  # the report shows run.json's notes
    assert "the first 10 of 12 queries only" in stdout
    assert json.loads((out / "headline.json").read_text())["limit"] == {"queries": 10, "of": 12}
    rep = json.loads((out / "IT2IT" / "report.json").read_text())
    assert rep["n_queries"] == 10
    for t, rep in _reports(out).items():  # each target's report.json says it in its meta notes
        assert any("only the first 10 of the dataset's 12 queries" in n for n in rep["meta"]["notes"]), t


def test_limit_reaches_the_report_page(tmp_path):
    from snapbench.render import build_report

    out = tmp_path / "run"
    r = runner.invoke(app, ["run", str(DEFAULT_DATA), "-e", "toy", "--out", str(out), "--conditions", "clean,txt/char_swap",
                            "--limit", "3", "--no-report", *FAST])
    assert r.exit_code == 0, r.output
    build_report(out, formats=["html", "md", "tex"])
    page = (out / "report.html").read_text()
    assert "only the first 3 of 12 queries (--limit 3)" in page  # the run's note
    assert "only the first 3 of the dataset&#x27;s 12 (run --limit)" in page  # beside the number of queries
    words = "only the first 3 of the dataset's 12 queries (run --limit 3)"
    tables = sorted((out / "tables").glob("*.md")) + sorted((out / "tables").glob("*.tex"))
    assert tables and {p.suffix for p in tables} == {".md", ".tex"}
    for p in tables:  # every table's caption
        assert words in p.read_text().splitlines()[0], p.name
    finds = json.loads((out / "findings.json").read_text())
    assert finds[0]["id"] == "limit" and finds[0]["values"] == {"queries": 3, "of": 12}
    assert "first 3 of the dataset's 12 queries" in finds[0]["text"]


def test_a_rerun_without_the_limit_is_refused_naming_it(one_run, tmp_path):
    out = tmp_path / "run"
    shutil.copytree(one_run[0], out)
    base = ["run", str(DEFAULT_DATA), "-e", "toy", "--out", str(out), "--conditions", CONDS, "--no-report", *FAST]
    r = runner.invoke(app, base)
    assert r.exit_code == 2
    assert (f"error: {out} holds the output of a 'snapbench run' made with --limit 10 (a different list of queries); "
            "use a new output folder, or --force to discard it") in " ".join(r.output.split())
    r = runner.invoke(app, [*base, "--seed", "1"])
    assert r.exit_code == 2
    assert "made with --limit 10 (a different list of queries) and a different --seed 0 (this run: 1);" in " ".join(r.output.split())


@pytest.mark.parametrize("value", ["0", "-2"])
def test_a_limit_below_one_is_refused(tmp_path, value):
    r = runner.invoke(app, ["run", str(DEFAULT_DATA), "-e", "toy", "--out", str(tmp_path / "o"), "--limit", value, *FAST])
    assert r.exit_code == 2 and f"--limit: must be an integer >= 1, got {value}" in r.output, r.output
    assert not (tmp_path / "o").exists()


def test_run_quiet_prints_the_result_paths_only(one_run):
    out, _ = one_run
    # the same run again: read back (complete already), quietly
    r = runner.invoke(app, ["run", str(DEFAULT_DATA), "-e", "toy", "--out", str(out), "--conditions", CONDS,
                            "--limit", "10", "--no-report", "--quiet", *FAST])
    assert r.exit_code == 0, r.output
    assert r.stderr == ""
    paths = r.stdout.splitlines()
    expected = [str(out / t / "report.json") for t in _reports(out)] + [str(out / "headline.json")]
    assert sorted(paths) == sorted(expected)


@pytest.fixture(scope="module")
def compared(tmp_path_factory, user_code):
    root = tmp_path_factory.mktemp("cmpres")
    (root / "snapbench_res_mirror.py").write_text(MIRROR)
    with user_code(root, "snapbench_res_mirror"):
        r = runner.invoke(app, ["run", str(DEFAULT_DATA), "-e", "toy", "-e", "snapbench_res_mirror:Mirror",
                                "--name", "toy", "--name", "mirror", "--out", str(root / "multi"), "--conditions", CONDS,
                                "--no-report", *FAST])
        assert r.exit_code == 0, r.output
        run_stdout = r.stdout
    out = root / "cmp"
    r = runner.invoke(app, ["compare", str(root / "multi"), "--out", str(out), "--formats", "html", "--no-progress"])
    assert r.exit_code == 0, r.output
    return root, out, r.stdout, run_stdout


def test_several_encoders_print_one_table_each(compared):
    root, _, _, stdout = compared
    first, second = stdout.split("\nmirror:\n")
    for name, part in (("toy", first), ("mirror", second)):
        assert f"snapbench run: {name}" in part
        header, rows = _table_rows(part)
        reports = _reports(root / "multi" / name)
        assert {r[0] for r in rows} == set(reports)
        for row in rows:
            assert row[header.index("clean R@1")] == _pct(reports[row[0]]["conditions"]["clean"]["hit@1"])


def test_compare_prints_the_ranking_of_compare_json(compared):
    _, out, stdout, _ = compared
    cj = read_compare_json(out / "compare.json")
    header, rows = _table_rows(stdout, ruled=False)
    assert header[:3] == ["target", "rank", "model"]
    assert len(rows) == len([r for r in cj["ranking"] if r["metric"] == "hit@1"]) > 0
    for row in rows:
        target, rank, model, clean, mean, ci, interval, tier = row
        rec = next(r for r in cj["ranking"] if (r["mode"], r["model"], r["metric"]) == (target, model, "hit@1"))
        assert float(rank) == rec["rank"] and int(tier) == rec["group"]
        assert interval == f"{rec['rank_low']:g}–{rec['rank_high']:g}"
        vals = {r["condition"]: r for r in cj["models"]
                if (r["mode"], r["model"], r["metric"]) == (target, model, "hit@1")}
        assert clean == _pct(vals["clean"]["value"])
        assert mean == _signed(vals["group:all"]["delta"])
        assert ci == f"[{_signed(vals['group:all']['ci_low'])}, {_signed(vals['group:all']['ci_high'])}]"
    # best rank first within each target
    for t in {r[0] for r in rows}:
        ranks = [float(r[1]) for r in rows if r[0] == t]
        assert ranks == sorted(ranks)


def test_compare_names_the_pairs_told_apart(compared):
    _, out, stdout, _ = compared
    cj = read_compare_json(out / "compare.json")
    lines = stdout.splitlines()
    for t in cj["settings"]["targets"]:
        (pair,) = [p for p in cj["pairs"] if (p["mode"], p["metric"], p["condition"]) == (t, "hit@1", "group:all")]
        # two models: one pair, so the adjustment over pairs leaves its p as it is
        apart = pair["p_raw"] < 0.05 and (pair["ci_low"] > 0 or pair["ci_high"] < 0)
        mine = [line for line in lines if line.startswith(f"  {t}: ")]
        assert len(mine) == 1
        if apart:
            better, worse = (pair["model_a"], pair["model_b"]) if pair["diff"] > 0 else (pair["model_b"], pair["model_a"])
            assert mine[0].startswith(f"  {t}: {better} > {worse}") and _signed(abs(pair["diff"])) in mine[0]
        else:
            assert mine[0] == f"  {t}: none of 1 pair told apart"


def test_compare_quiet_prints_its_files_only(compared, tmp_path):
    root, _, _, _ = compared
    out = tmp_path / "cmp"
    r = runner.invoke(app, ["compare", str(root / "multi"), "--out", str(out), "--formats", "html", "--quiet"])
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines() == [str(out / "compare.json"), str(out / "compare.html")]
    assert not re.search(r"note:", r.stderr)


def test_compare_of_limited_runs_says_so(tmp_path):
    multi = tmp_path / "multi"
    r = runner.invoke(app, ["run", str(DEFAULT_DATA), "-e", "toy", "-e", "toy", "--name", "a", "--name", "b", "--out",
                            str(multi), "--conditions", "clean,txt/char_swap", "--limit", "6", "--no-report", *FAST])
    assert r.exit_code == 0, r.output
    first, second = r.stdout.split("\nb:\n")
    assert all("the first 6 of 12 queries only" in part for part in (first, second))  # each encoder's table
    out = tmp_path / "cmp"
    r = runner.invoke(app, ["compare", str(multi), "--out", str(out), "--formats", "html", "--no-progress"])
    assert r.exit_code == 0, r.output
    note = "a, b: the first 6 of 12 queries only (run --limit)"
    assert note in r.stderr
    assert any(note in n for n in read_compare_json(out / "compare.json")["notes"])


def test_the_table_shows_and_explains_only_the_columns_that_apply():
    from rich.console import Console

    from snapbench.render.terminal import headline_table

    row = {"target": "T2T", "clean": {"hit@1": 0.5}, "mean_delta": {"value": -0.25, "ci": [-0.5, 0.0], "n_conditions": 2},
           "worst": {"operator": "txt/char_swap", "delta": -0.5}, "mildest": {"operator": "txt/word_swap", "delta": 0.0},
           "additivity": None, "moor_vs_fixed": None}
    con = Console(width=200, record=True)
    con.print(headline_table({"metric": "hit@1", "ci_level": 0.9, "n_queries": 4, "primary_target": "T2T",
                              "limit": None, "targets": [row]}))
    text = con.export_text()
    header, rows = _table_rows(text)
    assert header == ["target", "clean R@1", "mean ΔR@1 [CI]", "worst operator", "mildest operator"]
    assert rows == [["T2T", "50.0", "-25.0 [-50.0, +0.0]", "txt/char_swap -50.0", "txt/word_swap +0.0"]]
    assert "δ =" not in text and "MOOR" not in text and "[90% CI]" in text and "--limit" not in text


def test_run_headline_and_compare_agree_on_mean_delta_and_ci(compared):
    """The same mean Δ over the same conditions (those the mode reads) with the same CI (the run's draw)."""
    root, out, _, _ = compared
    cj = read_compare_json(out / "compare.json")
    for name in ("toy", "mirror"):
        head = json.loads((root / "multi" / name / "headline.json").read_text())
        compared_targets = {r["mode"] for r in cj["models"]}
        assert compared_targets
        for t in head["targets"]:
            if t["target"] not in compared_targets:  # compare ranks the modes and MOOR, not fusion baselines
                continue
            md = t["mean_delta"]
            (rec,) = [r for r in cj["models"] if (r["mode"], r["model"], r["metric"], r["condition"])
                      == (t["target"], name, "hit@1", "group:all")]
            assert rec["delta"] == pytest.approx(md["value"], abs=1e-12)
            assert [rec["ci_low"], rec["ci_high"]] == pytest.approx(md["ci"], abs=1e-12), t["target"]


def test_a_mode_mean_counts_only_the_conditions_it_reads():
    from snapbench.core.targets import target_reads

    assert not target_reads("T2T", "img/compression/s1") and target_reads("T2T", "txt/char_swap")
    assert target_reads("T2T", "joint/compression+char_add/s3") and target_reads("I2I", "joint/compression+char_add/s3")
    assert not target_reads("I2I", "txt/char_swap") and not target_reads("T2IT", "img/rotation/s2")
    assert target_reads("MOOR", "img/rotation/s2") and target_reads("fusion/x", "txt/char_swap")
    assert not target_reads("IT2IT", "clean")


def _wide_headline(**kw):
    def row(target, worst, mild):
        return {"target": target, "clean": {"hit@1": 0.909, "ndcg@10": 0.9},
                "mean_delta": {"value": -0.276, "ci": [-0.388, -0.178], "n_conditions": 26},
                "worst": {"operator": worst, "delta": -0.818}, "mildest": {"operator": mild, "delta": 0.0},
                "additivity": {"delta": 0.01, "ci": [-0.081, 0.116]},
                "moor_vs_fixed": {"baseline": "IT2IT", "gain": -0.049, "ci": [-0.077, -0.02], "n_conditions": 71}
                if target == "MOOR" else None}
    rows = [row(t, "txt/sent_replace", "img/lens_distortion")
            for t in ("I2I", "T2T", "IT2IT", "I2IT", "T2IT", "MOOR", "fusion/comb_sum", "fusion/rrf")]
    return {"metric": "hit@1", "ci_level": 0.95, "n_queries": 12, "n_counted": 11, "primary_target": "IT2IT",
            "limit": None, "targets": rows, **kw}


def test_operator_names_are_never_split_at_120_columns():
    from rich.console import Console

    from snapbench.render.terminal import headline_table

    con = Console(width=120, record=True)
    con.print(headline_table(_wide_headline()))
    text = con.export_text()
    header, rows = _table_rows(text)
    for r in rows:
        cells = dict(zip(header, r))
        assert cells["worst operator"] == "txt/sent_replace -81.8", text
        assert cells["mildest operator"] == "img/lens_distortion +0.0", text
    # the footer says how many queries count for R@1
    assert "12 queries (11 count for R@1; 1 has no relevant item)" in " ".join(text.split())


@pytest.fixture(scope="module")
def nolab_run(tmp_path_factory):
    """The demo without its qrels (queries.jsonl + gallery.jsonl and their images): a label-free run;
    --k 40 reaches past the demo's 33 gallery items."""
    from data_fixtures import demo_without_qrels

    data = demo_without_qrels(tmp_path_factory.mktemp("nolab") / "my_nolab").parent
    out = data.parent / "runs" / "nolab"
    r = runner.invoke(app, ["run", str(data / "queries.jsonl"), "-e", "toy", "--out", str(out), "--conditions", CONDS,
                            "--k", "1,10,40", "--no-report", *FAST])
    assert r.exit_code == 0, r.output
    return data, out, r.stdout, r.stderr


def test_a_run_without_labels_prints_the_label_free_measures(nolab_run):
    _, out, stdout, _ = nolab_run
    head = json.loads((out / "headline.json").read_text())
    assert head["metric"] == "overlap@10" and head["labelled"] is False and head["extra"] == ["rbo", "flip@1"]
    title = next(line for line in stdout.splitlines() if "snapbench run —" in line)
    assert "overlap@10" in title and "no labels" in title and "R@1" not in title
    assert "values in %" not in stdout and "R@1" not in stdout
    header, rows = _table_rows(stdout)
    assert header[:4] == ["target", "mean Δ overlap@10 [CI]", "mean Δrbo [CI]", "mean Δ flip@1 [CI]"]
    reports = _reports(out)
    by = {t["target"]: t for t in head["targets"]}
    assert {r[0] for r in rows} == set(reports) == set(by)
    for row in rows:
        cells = dict(zip(header, row))
        rep = reports[row[0]]
        for metric, col in (("overlap@10", "mean Δ overlap@10 [CI]"), ("rbo", "mean Δrbo [CI]"),
                            ("flip@1", "mean Δ flip@1 [CI]")):
            deltas = [v[metric]["delta"] for c, v in rep["paired"].items() if c != "clean" and _counts(row[0], c)]
            md = by[row[0]]["mean_delta"] if metric == "overlap@10" else by[row[0]]["extra"][metric]
            assert md["value"] == pytest.approx(np.mean(deltas)) and md["ci"] is not None
            assert cells[col] == f"{_signed(md['value'])} [{_signed(md['ci'][0])}, {_signed(md['ci'][1])}]"


def test_a_run_without_labels_says_which_measures_it_has(nolab_run):
    _, out, _, stderr = nolab_run
    notes = json.loads((out / "run.json").read_text())["notes"]
    for text in (stderr, "\n".join(notes)):
        assert "metrics need them" not in text
        assert "the label-free measures overlap@k, rbo, flip@1 are reported" in text
        # the demo gallery has 33 items: overlap@40 cannot move
        assert "the gallery has 33 items: overlap@40 is 1 by construction" in text


def test_run_quiet_shows_no_progress_when_stderr_is_not_a_terminal(nolab_run, tmp_path):
    data, _, _, _ = nolab_run
    out = tmp_path / "q"
    r = runner.invoke(app, ["run", str(data / "queries.jsonl"), "-e", "toy", "--out", str(out), "--conditions",
                            "clean,txt/char_swap", "--no-report", "--resamples", "200", "--no-cache", "--quiet"])
    assert r.exit_code == 0, r.output
    assert r.stderr == ""
    assert all(Path(p).is_file() for p in r.stdout.splitlines())


def test_additivity_of_a_label_free_run_uses_overlap(nolab_run):
    _, out, _, _ = nolab_run
    r = runner.invoke(app, ["additivity", str(out / "IT2IT" / "report.json")])
    assert r.exit_code == 0, r.output
    assert "overlap@10 drops" in " ".join(r.stdout.split()) and "joint/compression+char_add/s3" in r.stdout


def test_a_several_encoder_rerun_without_the_limit_is_refused_naming_it(tmp_path):
    """The folder of a several-encoder run records its --limit as a run's does, so the refusal says so."""
    base = ["run", str(DEFAULT_DATA), "-e", "toy", "-e", "toy", "--name", "a", "--name", "b", "--out",
            str(tmp_path / "multi"), "--conditions", "clean,txt/char_swap", "--no-report", *FAST]
    r = runner.invoke(app, [*base, "--limit", "4"])
    assert r.exit_code == 0, r.output
    assert json.loads((tmp_path / "multi" / "run.json").read_text())["limit"] == {"queries": 4, "of": 12}
    r = runner.invoke(app, base)
    assert r.exit_code == 2
    assert "made with --limit 4 (a different list of queries)" in " ".join(r.output.split()), r.output
