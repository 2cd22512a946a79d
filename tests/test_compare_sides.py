"""`snapbench compare` of runs that read different sides of the query: ONE `snapbench run` of toy
and a text-only encoder (the workflow docs/run.md shows) is compared on the conditions every model
has, with a warning naming the rest; runs whose condition plans differ stay refused.  Plus the
refusal messages (no parameter prefix, balanced quotes) and paths that are no run.  Expected numbers
come from the runs' own reports, never from compare."""

from __future__ import annotations

import json
import re
import shutil

import pytest
from typer.testing import CliRunner

from snapbench.app.stages import RunOptions, run_benchmark, run_encoders
from snapbench.cli import app
from snapbench.core.defaults import DEFAULT_DATA
from snapbench.store.compare import read_compare_json

runner = CliRunner()
CONDS = ["clean", "img/compression/s1", "img/rotation/s2", "txt/char_swap", "txt/char_add",
         "joint/compression+char_add/s1"]
TEXT_ONLY = """
from snapbench.models import get_encoder

class TextOnly:
    '''The toy encoder's text half, reversed: a text-only model (T->T only, like all-MiniLM-L6-v2).'''
    name = fingerprint = "text-only-v1"
    modalities = frozenset({"text"})

    def __init__(self):
        self.inner = get_encoder("toy")

    def encode_texts(self, xs):
        return self.inner.encode_texts(xs)[:, ::-1] + 0.05
"""
ENC = "snapbench_cmp_textonly:TextOnly"


def _opts(**kw) -> RunOptions:
    return RunOptions(**{**dict(conditions=CONDS, resamples=150, report=False, progress=False, use_cache=False), **kw})


@pytest.fixture(scope="module")
def runs(tmp_path_factory, user_code):
    root = tmp_path_factory.mktemp("sides")
    (root / "snapbench_cmp_textonly.py").write_text(TEXT_ONLY)
    with user_code(root, "snapbench_cmp_textonly"):
        run_encoders(DEFAULT_DATA, ["toy", ENC], root / "multi", _opts(), names=["toy", "textonly"])
        # text-only runs of other plans: another text condition; the same text conditions but
        # other image ones (only the record of what was left out tells it from the same plan)
        run_benchmark(DEFAULT_DATA, ENC, root / "other_text", _opts(conditions=CONDS[:-2]))
        run_benchmark(DEFAULT_DATA, ENC, root / "other_image", _opts(conditions=[c for c in CONDS if c != "img/rotation/s2"]))
    return root


def _cli(*args):
    return runner.invoke(app, ["compare", *map(str, args), "--no-progress"])


def _report(run, target="T2T"):
    return json.loads((run / target / "report.json").read_text())


def test_the_run_records_the_conditions_it_left_out(runs):
    text = json.loads((runs / "multi" / "textonly" / "run.json").read_text())
    assert text["conditions"] == ["clean", "txt/char_swap", "txt/char_add"]
    assert text["conditions_left_out"] == ["img/compression/s1", "img/rotation/s2", "joint/compression+char_add/s1"]
    assert "conditions_left_out" not in json.loads((runs / "multi" / "toy" / "run.json").read_text())


@pytest.mark.parametrize("extra", [[], ["--modes", "T2T"]])
def test_a_text_only_model_is_compared_on_the_conditions_every_model_has(runs, tmp_path, extra):
    out = tmp_path / "out"
    r = _cli(runs / "multi", "--out", out, "--formats", "html", *extra)
    assert r.exit_code == 0, r.output
    warnings = [line for line in r.output.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 1, r.output
    w = warnings[0]
    assert "T2T: compared on the 3 conditions every model has" in w
    assert "3 image/joint condition(s) of 'toy'" in w and "'textonly' evaluated none of them" in w
    assert "reads the query image" in w
    cj = read_compare_json(out / "compare.json")
    assert cj["settings"]["targets"] == ["T2T"]
    assert w[len("warning: "):] in cj["notes"]
    page = (out / "compare.html").read_text()
    assert "compared on the 3 conditions every model has" in page
    # wide tables scroll inside the page (main: the R@1 table ran past its width); no fit, no curve
    assert page.count('<div class="table-scroll" style="overflow-x:auto;max-width:100%"><table') >= 4
    assert "no fit drawn" in page and "the curve is the logit-space fit" not in page
    for name in ("toy", "textonly"):
        rep = _report(runs / "multi" / name)
        got = {x["condition"]: x for x in cj["models"]
               if x["model"] == name and x["metric"] == "hit@1" and not x["condition"].startswith("group:")}
        assert set(got) == {"clean", "txt/char_swap", "txt/char_add"}
        for c in ("txt/char_swap", "txt/char_add"):
            assert got[c]["delta"] == rep["paired"][c]["hit@1"]["delta"]
            assert [got[c]["ci_low"], got[c]["ci_high"]] == rep["paired"][c]["hit@1"]["ci"]


def test_a_text_only_run_of_another_plan_is_refused(runs, tmp_path):
    r = _cli(runs / "multi" / "toy", runs / "other_text", "--out", tmp_path / "o")
    assert r.exit_code == 2, r.output
    assert r.output.startswith("error: the runs cannot be compared, they differ in their conditions of T2T")
    assert "lacks 2 of the conditions of 'toy'" in r.output and "txt/char_add" in r.output


def test_a_difference_on_the_side_the_run_does_not_read_is_still_refused(runs, tmp_path):
    """The same text conditions, other image conditions planned: run.json conditions_left_out tells."""
    r = _cli(runs / "multi" / "toy", runs / "other_image", "--out", tmp_path / "o")
    assert r.exit_code == 2, r.output
    assert "conditions of T2T" in r.output and "img/rotation/s2" in r.output


def test_a_text_only_run_without_the_record_is_compared_on_its_side(runs, tmp_path):
    """A run of an older snapbench (no conditions_left_out): what it left out is inferred from the
    sides its modes read, so the comparison goes on (the trial's runs/multi)."""
    shutil.copytree(runs / "multi", tmp_path / "m")
    rj = tmp_path / "m" / "textonly" / "run.json"
    body = json.loads(rj.read_text())
    del body["conditions_left_out"]
    rj.write_text(json.dumps(body))
    r = _cli(tmp_path / "m", "--out", tmp_path / "o", "--formats", "md")
    assert r.exit_code == 0, r.output
    assert "warning: T2T: compared on the 3 conditions every model has" in r.output


def test_refusals_name_the_runs_without_a_parameter_prefix_and_quote_hashes_whole(runs, tmp_path):
    shutil.copytree(runs / "multi" / "textonly", tmp_path / "other_gallery")
    rj = tmp_path / "other_gallery" / "run.json"
    body = json.loads(rj.read_text())
    body["fingerprint"]["dataset_gallery_sha256"] = "f" * 64
    rj.write_text(json.dumps(body))
    r = _cli(runs / "multi" / "toy", tmp_path / "other_gallery", "--out", tmp_path / "o")
    assert r.exit_code == 2, r.output
    assert r.output.startswith("error: the runs cannot be compared") and "RUN_DIR" not in r.output
    gallery = r.output[r.output.index("gallery (hash"):].split(" -- ")[0]
    assert '"' not in gallery, gallery  # main: has "a6416ebc8d0d1d71... (a JSON string cut before its end)
    assert re.search(r"'toy' \(.*\) has '[0-9a-f]{16}…', ", gallery) and gallery.endswith("has 'ffffffffffffffff…'")


@pytest.mark.parametrize("what, message", [
    ("queries.jsonl", "is neither a run folder nor a report file (not valid JSON: Extra data at line 2"),
    ("qrels.json", "is neither a run folder nor a report file (it is JSON without a report's"),
    ("queries/astronaut.jpg", "is neither a run folder nor a report file (it is not text)"),
    ("run_report", "is a report of the run folder"),
])
def test_a_path_that_is_no_run_says_what_compare_takes(runs, tmp_path, what, message):
    path = runs / "multi" / "toy" / "T2T" / "report.json" if what == "run_report" else DEFAULT_DATA / what
    if not path.exists():
        path = next((DEFAULT_DATA / "queries").iterdir())
    r = _cli(runs / "multi" / "toy", path, "--out", tmp_path / "o")
    assert r.exit_code == 2, r.output
    assert r.output.startswith(f"error: {path}: ") and message in r.output, r.output
    if what != "run_report":
        assert "compare takes run folders" in r.output
    else:
        assert "give the run folder to compare the run" in r.output


def test_plans_of_a_side_no_model_evaluated_may_differ(runs, tmp_path):
    """Two text-only runs that planned other image conditions compare the same text conditions:
    no number of the comparison comes from the image side (as released vs generated variants)."""
    r = _cli(runs / "multi" / "textonly", runs / "other_image", "--name", "a", "--name", "b",
             "--out", tmp_path / "o", "--formats", "md")
    assert r.exit_code == 0, r.output
    assert "warning:" not in r.output


def test_the_terminal_says_when_several_encoders_tables_are_over_different_conditions(tmp_path, user_code):
    """A text-only encoder's T2T mean is over the text conditions only, toy's over text and joint ones:
    the two tables `run -e toy -e text-only` prints look comparable row by row and are not."""
    (tmp_path / "snapbench_cmp_textonly.py").write_text(TEXT_ONLY)
    with user_code(tmp_path, "snapbench_cmp_textonly"):
        r = runner.invoke(app, ["run", str(DEFAULT_DATA), "-e", "toy", "-e", ENC, "--out", str(tmp_path / "o"),
                                "--conditions", ",".join(CONDS), "--resamples", "150", "--no-report", "--no-progress",
                                "--no-cache"])
    assert r.exit_code == 0, r.output
    counts = {}
    for folder in sorted(p for p in (tmp_path / "o").iterdir() if (p / "headline.json").is_file()):
        rows = json.loads((folder / "headline.json").read_text())["targets"]
        counts[folder.name] = {row["target"]: row["mean_delta"]["n_conditions"] for row in rows}
    assert len(counts) == 2, r.output
    toy, text = sorted(counts, key=lambda n: len(counts[n]), reverse=True)  # toy has the image modes too
    assert counts[toy]["T2T"] != counts[text]["T2T"]  # toy's T2T reads the joint condition too
    note = [line for line in r.output.splitlines() if line.startswith("note: the encoders' mean Δ")]
    assert len(note) == 1, r.output
    assert f"T2T: {toy} {counts[toy]['T2T']}, {text} {counts[text]['T2T']})" in note[0], note[0]
    # one encoder twice: the same conditions, no note
    r = runner.invoke(app, ["run", str(DEFAULT_DATA), "-e", "toy", "-e", "toy", "--name", "a", "--name", "b",
                            "--out", str(tmp_path / "same"),
                            "--conditions", ",".join(CONDS), "--resamples", "150", "--no-report", "--no-progress",
                            "--no-cache"])
    assert r.exit_code == 0, r.output
    assert "note: the encoders' mean Δ" not in r.output
