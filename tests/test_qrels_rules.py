"""One rule matches qrels with the ids, for the data loaders and for ``evaluate`` alike
(snapbench.data.qrels.align_qrels): grade > 0 is relevant, grade <= 0 a judged non-relevant item, as in
trec_eval (ir_measures); an unjudged query is zero-GT.  Expected values are written by hand and the
metrics checked against ir_measures on the raw file, zero and negative grades included."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from snapbench.core.errors import InputError
from snapbench.data import load_dataset
from snapbench.data.qrels import load_qrels, load_tags
from snapbench.evaluate import first_positive_rank, parse_metrics, query_stats, topk_indices

QIDS = ["q0", "q1", "q2", "q3"]
GIDS = [f"g{j}" for j in range(8)]
TREC = """\
q0 0 g0 2
q0 0 g1 1
q0 0 g2 0
q0 0 g3 -1
q1 0 g4 0
q2 0 g5 1
q2 0 g6 0
"""
# q1: judged, nothing relevant; q3: not judged at all -- both zero-GT
EXPECTED = {"q0": {"g0": 2.0, "g1": 1.0}, "q1": {}, "q2": {"g5": 1.0}, "q3": {}}


def _dataset(tmp_path: Path) -> tuple[Path, Path]:
    queries = tmp_path / "queries.jsonl"
    queries.write_text("".join(json.dumps({"id": q, "question": f"question {q}?"}) + "\n" for q in QIDS))
    gallery = tmp_path / "gallery.jsonl"
    gallery.write_text("".join(json.dumps({"id": g, "caption": f"caption {g}"}) + "\n" for g in GIDS))
    return queries, gallery


def _as_dict(labels) -> dict[str, dict[str, float]]:
    out = {}
    for i, q in enumerate(QIDS):
        a, b = labels.indptr[i], labels.indptr[i + 1]
        out[q] = {GIDS[j]: float(g) for j, g in zip(labels.items[a:b], labels.grades[a:b])}
    return out


def test_the_data_loader_and_evaluate_read_one_qrels_file_alike(tmp_path):
    queries, gallery = _dataset(tmp_path)
    qrels = tmp_path / "qrels.txt"
    qrels.write_text(TREC)
    ds = load_dataset(queries, gallery=gallery, qrels=qrels)
    assert ds.qrels == EXPECTED
    labels, notes = load_qrels(qrels, QIDS, GIDS)
    assert _as_dict(labels) == EXPECTED
    zero_gt = "1 query id(s) have no judgements and are treated as zero-GT: 'q3'"
    assert any(zero_gt in n for n in ds.notes) and any(zero_gt in n for n in notes)
    # the same file as JSON: the same labels
    j = tmp_path / "qrels.json"
    j.write_text(json.dumps({"q0": {"g0": 2, "g1": 1, "g2": 0, "g3": -1}, "q1": {"g4": 0}, "q2": {"g5": 1, "g6": 0}}))
    assert load_dataset(queries, gallery=gallery, qrels=j).qrels == EXPECTED
    assert _as_dict(load_qrels(j, QIDS, GIDS)[0]) == EXPECTED


def test_unknown_ids_the_data_loader_refuses_and_evaluate_leaves_out(tmp_path):
    queries, gallery = _dataset(tmp_path)
    qrels = tmp_path / "qrels.txt"
    qrels.write_text(TREC + "zz 0 g0 1\n")
    # a data set's qrels name its own queries: an unknown one is an error
    with pytest.raises(InputError, match=r"qrels.txt: 1 query id\(s\) are not in the query set: 'zz'"):
        load_dataset(queries, gallery=gallery, qrels=qrels)
    # scores may lack a query (encode skipped it): left out, listed
    dropped: list[str] = []
    labels, notes = load_qrels(qrels, QIDS, GIDS, dropped=dropped)
    assert _as_dict(labels) == EXPECTED and dropped == ["zz"]
    assert any("1 judged query id(s) have no scores and are left out: 'zz'" in n for n in notes)
    qrels.write_text(TREC + "q0 0 gX 1\n")
    with pytest.raises(InputError, match=r"qrels.txt: 1 gallery id\(s\) are not in the gallery: 'gX'"):
        load_dataset(queries, gallery=gallery, qrels=qrels)
    with pytest.raises(InputError, match=r"qrels.txt: 1 gallery id\(s\) are not in gallery_ids: 'gX'"):
        load_qrels(qrels, QIDS, GIDS)


def test_json_or_text_is_told_apart_once_for_qrels_and_tags(tmp_path):
    for name, read in (("qrels", lambda p: load_qrels(p, QIDS, GIDS)), ("tags", lambda p: load_tags(p, QIDS))):
        bad = tmp_path / f"{name}.json"
        bad.write_text('{"q0": [1,\n')
        with pytest.raises(InputError, match=rf"{name}.json: not valid JSON: .* at line 2, column 1"):
            read(bad)
        bad.write_text("[]")
        with pytest.raises(InputError, match=rf"{name}.json: JSON {name} must be an object \{{query_id: \["):
            read(bad)
        missing = tmp_path / f"nothing_{name}.txt"
        with pytest.raises(InputError, match=rf"nothing_{name}.txt: {name} file not found"):
            read(missing)


def test_grades_as_trec_eval_reads_them(tmp_path):
    ir_measures = pytest.importorskip("ir_measures")
    from ir_measures import RR, R, Success, nDCG

    qrels = tmp_path / "qrels.txt"
    qrels.write_text(TREC)
    labels, _ = load_qrels(qrels, QIDS, GIDS)
    rng = np.random.default_rng(7)
    scores = rng.standard_normal((len(QIDS), len(GIDS)))  # no ties: no tie rule is compared
    ks = (1, 3, 8)
    ours = query_stats(topk_indices(scores, len(GIDS)), first_positive_rank(scores, labels.pos_rows, labels.items),
                       labels, parse_metrics("hit,recall,ndcg,mrr", ks))
    names = {str(Success @ k): f"hit@{k}" for k in ks} | {str(R @ k): f"recall@{k}" for k in ks}
    names |= {str(nDCG @ k): f"ndcg@{k}" for k in ks} | {str(RR): "mrr"}
    ref_qrels: dict[str, dict[str, int]] = {}
    for line in TREC.splitlines():  # the file as written: zero and negative grades handed over too
        q, _, d, rel = line.split()
        ref_qrels.setdefault(q, {})[d] = int(rel)
    run = {q: {g: float(scores[i, j]) for j, g in enumerate(GIDS)} for i, q in enumerate(QIDS)}
    seen = set()
    for m in ir_measures.iter_calc([Success @ k for k in ks] + [R @ k for k in ks] + [nDCG @ k for k in ks] + [RR],
                                   ref_qrels, run):
        q = QIDS.index(m.query_id)
        stat = ours[names[str(m.measure)]]
        if q == 1:  # only a grade-0 judgement: trec_eval finds nothing relevant, we exclude it as zero-GT
            assert m.value == 0 and stat.den[q] == 0
        else:
            assert stat.den[q] == 1 and stat.num[q] == pytest.approx(m.value, abs=1e-12), (m.measure, m.query_id)
        seen.add(m.query_id)
    assert seen == {"q0", "q1", "q2"}
    assert ours["hit@1"].den[3] == 0  # unjudged q3: zero-GT too


def test_run_says_what_to_do_about_an_unknown_gallery_id(tmp_path):
    """Trial 4: run named the unknown id and stopped; evaluate's hint (--allow-unknown-items) is no flag of run."""
    from typer.testing import CliRunner

    from snapbench.cli import app

    queries, gallery = _dataset(tmp_path)
    qrels = tmp_path / "unknown_g.json"
    qrels.write_text(json.dumps({"q0": ["g0", "g_nope"]}))
    r = CliRunner().invoke(app, ["run", str(queries), "--gallery", str(gallery), "--qrels", str(qrels), "-e", "toy",
                                 "--out", str(tmp_path / "o"), "--no-progress"])
    assert r.exit_code == 2, r.output
    assert " ".join(r.output.split()) == (
        f"error: {qrels}: 1 gallery id(s) are not in the gallery: 'g_nope'; fix the qrels or the gallery (a data "
        "set's qrels judge only its gallery items; only 'snapbench evaluate --allow-unknown-items' drops unknown "
        "ones, from score files)")
    # evaluate keeps naming its own flag
    with pytest.raises(InputError, match=r"are not in gallery_ids: 'g_nope' \(set unknown_items to drop them"):
        load_qrels(qrels, QIDS, GIDS)
