"""Evaluate reports compared with run folders: the target an evaluate report stands for (recorded by
`snapbench evaluate` in meta.mode: --mode, or MOOR for a `snapbench moor` folder; named with
compare --modes when the scores' origin is unknown), and the variant source of a report, which is
not recorded and so is no reason for a warning."""

from __future__ import annotations

import json
import shutil
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from snapbench.cli import app
from snapbench.core.defaults import DEFAULT_DATA
from snapbench.render.compare import compare_findings

runner = CliRunner()
CONDS = "clean,img/compression/s1,img/rotation/s2,txt/char_add"
QRELS = str(DEFAULT_DATA / "qrels.json")


def _ok(*args):
    r = runner.invoke(app, [*map(str, args)])
    assert r.exit_code == 0, r.output
    return r


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A run of toy, and evaluate reports of toy's MOOR (`snapbench moor` on its embeddings) and of
    its IT2IT (encode's path scores with --mode), from a corrupt folder of the same conditions."""
    root = tmp_path_factory.mktemp("evt")
    q = DEFAULT_DATA / "queries.jsonl"
    _ok("run", q, "-e", "toy", "--out", root / "run", "--conditions", CONDS, "--resamples", "100", "--no-report",
        "--no-progress", "--no-cache")
    _ok("corrupt", q, "--out", root / "cor", "--conditions", CONDS, "--no-progress")
    _ok("encode", root / "cor", "-e", "toy", "--out", root / "enc", "--gallery", DEFAULT_DATA / "gallery.jsonl",
        "--no-progress")
    _ok("moor", "--embeddings-dir", root / "enc" / "embeddings", "--out", root / "fused")
    # the same scores without moor's run.json: score files of unknown origin
    shutil.copytree(root / "fused", root / "plain", ignore=shutil.ignore_patterns("run.json"))
    for scores, out, extra in (("fused", "moor.json", ()), ("plain", "plain.json", ()),
                               ("enc/paths", "it2it.json", ("--mode", "IT2IT")),
                               ("enc/paths", "t2t.json", ("--mode", "T2T")), ("enc/paths", "i2i.json", ("--mode", "I2I"))):
        _ok("evaluate", root / scores, "--qrels", QRELS, "--out", root / out, "--per-query", "-q", "--resamples",
            "100", *extra)
    return root


def _compare(made, tmp_path, *args):
    return runner.invoke(app, ["compare", str(made / "run"), *map(str, args), "--out", str(tmp_path / "o"),
                               "--formats", "md", "--no-progress"])


def test_evaluate_records_moor_for_a_moor_folder(made):
    assert json.loads((made / "moor.json").read_text())["meta"]["mode"] == "MOOR"
    assert json.loads((made / "plain.json").read_text())["meta"]["mode"] is None


@pytest.mark.parametrize("mode", ["IT2IT", "T2T", "I2I"])
def test_run_and_evaluate_record_a_mode_the_same_way(made, mode):
    evaluated = json.loads((made / f"{mode.lower()}.json").read_text())
    run = json.loads((made / "run" / mode / "report.json").read_text())
    assert evaluated["meta"]["mode"] == run["meta"]["mode"] == mode
    # the coarse-text drag of the same scores: the same numbers and the same joint (trial: evaluate wrote
    # "IT→IT = (clean.II + clean.TT) / 2" where run writes "IT2IT", and took IT→IT's drag for --mode T2T)
    assert evaluated.get("coarse_text_drag") == run.get("coarse_text_drag")
    assert (run.get("coarse_text_drag") or {}).get("joint") == (None if mode == "I2I" else mode)
    # every result of the run's report is evaluate's too (meta says where each came from: it differs)
    results = set(run) - {"meta"}
    assert results <= set(evaluated) and ("coarse_text_drag" in results) == (mode != "I2I")
    assert {k: evaluated[k] for k in results} == {k: run[k] for k in results}


def test_a_report_of_moor_output_is_compared_as_moor(made, tmp_path):
    r = _compare(made, tmp_path, made / "moor.json")
    assert r.exit_code == 0, r.output
    cj = json.loads((tmp_path / "o" / "compare.json").read_text())
    assert cj["settings"]["targets"] == ["MOOR"]
    findings = json.loads((tmp_path / "o" / "findings.json").read_text())
    assert not [f for f in findings if f["id"] == "variants"]  # generated vs not recorded: no warning


def test_a_report_of_unknown_target_is_named_with_modes(made, tmp_path):
    r = _compare(made, tmp_path, made / "plain.json")
    assert r.exit_code == 2, r.output
    assert r.output.startswith(f"error: 'plain' ({made / 'plain.json'}) is an evaluate report that does "
                               "not record which target its scores are")
    assert "e.g. --modes MOOR" in r.output
    assert _compare(made, tmp_path, made / "plain.json", "--modes", "MOOR,IT2IT").exit_code == 2
    r = _compare(made, tmp_path, made / "plain.json", "--modes", "MOOR")
    assert r.exit_code == 0, r.output
    assert json.loads((tmp_path / "o" / "compare.json").read_text())["settings"]["targets"] == ["MOOR"]


def test_a_mode_report_warns_of_no_variant_source(made, tmp_path):
    r = _compare(made, tmp_path, made / "it2it.json")
    assert r.exit_code == 0, r.output
    findings = json.loads((tmp_path / "o" / "findings.json").read_text())
    assert [f["id"] for f in findings if f["id"] == "variants"] == []


@pytest.mark.parametrize("variants, said", [
    (["generated", None], None),
    (["generated", "released"], "come from different sources (a: generated, b: released)"),
    (["released", None], "a evaluated the released query variants; the variant source of b is not recorded"),
    (["generated", "released", None], "come from different sources (a: generated, b: released, c: not recorded)"),
])
def test_variant_finding_reads_an_unrecorded_source_as_unknown(variants, said):
    sources = [SimpleNamespace(name=n, variants=v) for n, v in zip("abc", variants)]
    found = [f.text for f in compare_findings([], sources, "a", "holm") if f.id == "variants"]
    assert found == [] if said is None else said in found[0]
