"""Evaluation inputs: every bad-input case gives an InputError (EvaluationInputError or the layout readers') naming the file and problem."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from snapbench.app.evaluate import evaluate_directory
from snapbench.core.errors import InputError
from snapbench.data.qrels import load_qrels, load_tags, query_groups
from snapbench.evaluate import EvaluationConfig, Labels, evaluate_matrix, topk_indices
from snapbench.store import read_ids
from snapbench.store.scores import ScoresDir, read_run, write_run

Q, N = 6, 8
QIDS = [f"q{i}" for i in range(Q)]
GIDS = [f"g{j}" for j in range(N)]


def make_dir(root: Path, conditions=("clean", "img__blur__s1"), *, qrels: dict | None = None) -> tuple[Path, Path]:
    d = root / "scores"
    d.mkdir()
    (d / "query_ids.txt").write_text("\n".join(QIDS) + "\n")
    (d / "gallery_ids.txt").write_text("\n".join(GIDS) + "\n")
    rng = np.random.default_rng(0)
    for c in conditions:
        np.save(d / f"{c}.npy", rng.standard_normal((Q, N)).astype(np.float32))
    qp = root / "qrels.json"
    qp.write_text(json.dumps(qrels if qrels is not None else {q: [GIDS[i]] for i, q in enumerate(QIDS)}))
    return d, qp


def run_eval(d: Path, qp: Path, **kw):
    return evaluate_directory(d, qp, EvaluationConfig(resamples=50, workers=1), **kw)


# ------------------------------------------------------------------------------ ids
def test_read_ids_errors(tmp_path):
    p = tmp_path / "ids.txt"
    p.write_text("a\nb\na\n")
    with pytest.raises(InputError, match=r"ids.txt: duplicate id 'a' on lines 1 and 3"):
        read_ids(p)
    p.write_text("a\n\nb\n")
    with pytest.raises(InputError, match="line 2 is empty"):
        read_ids(p)
    p.write_text("\n")
    with pytest.raises(InputError, match="empty file"):
        read_ids(p)
    with pytest.raises(InputError, match="not found"):
        read_ids(tmp_path / "nope.txt")
    p.write_text("a\nb\n\n")
    assert read_ids(p) == ["a", "b"]


# ------------------------------------------------------------------------------ score files
def test_row_count_mismatch_names_file(tmp_path):
    d, qp = make_dir(tmp_path)
    np.save(d / "img__blur__s1.npy", np.zeros((Q + 1, N), np.float32))
    with pytest.raises(InputError, match=r"img__blur__s1.npy: 7 rows but query_ids.txt lists 6"):
        run_eval(d, qp)


def test_column_count_mismatch_names_file(tmp_path):
    d, qp = make_dir(tmp_path)
    np.save(d / "clean.npy", np.zeros((Q, N - 1), np.float32))
    with pytest.raises(InputError, match=r"clean.npy: 7 columns but gallery_ids.txt lists 8"):
        run_eval(d, qp)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_scores_name_file_row_and_query(tmp_path, bad):
    d, qp = make_dir(tmp_path)
    a = np.zeros((Q, N), np.float32)
    a[4, 2] = bad
    np.save(d / "img__blur__s1.npy", a)
    with pytest.raises(InputError, match=r"img__blur__s1.npy: non-finite score .* row 4 \(query 'q4'\), column 2"):
        run_eval(d, qp)


def test_object_array_is_refused_without_unpickling(tmp_path):
    d, qp = make_dir(tmp_path)
    np.save(d / "img__blur__s1.npy", np.array([[1, None]] * Q, dtype=object), allow_pickle=True)
    with pytest.raises(InputError, match="img__blur__s1.npy: holds a Python-object array; snapbench never unpickles"):
        run_eval(d, qp)


@pytest.mark.parametrize(
    "arr,msg",
    [
        (np.zeros((Q, N, 2), np.float32), "must be 2-d"),
        (np.array([["a"] * N] * Q), "real numeric array, got dtype <U1"),
        (np.zeros((Q, N), bool), "real numeric array, got dtype bool"),
    ],
)
def test_wrong_shape_or_dtype(tmp_path, arr, msg):
    d, qp = make_dir(tmp_path)
    np.save(d / "img__blur__s1.npy", arr)
    with pytest.raises(InputError, match=msg):
        run_eval(d, qp)


def test_not_a_npy_file(tmp_path):
    d, qp = make_dir(tmp_path)
    (d / "img__blur__s1.npy").write_bytes(b"hello")
    with pytest.raises(InputError, match="img__blur__s1.npy: not a .npy file"):
        run_eval(d, qp)


def test_empty_gallery(tmp_path):
    d, qp = make_dir(tmp_path)
    (d / "gallery_ids.txt").write_text("")
    with pytest.raises(InputError, match="gallery_ids.txt: no gallery ids"):
        run_eval(d, qp)


def test_missing_clean_ids_and_bad_names(tmp_path):
    d, qp = make_dir(tmp_path, conditions=("img__blur__s1",))
    with pytest.raises(InputError, match=r"no clean condition .*paired results are against clean"):
        run_eval(d, qp)
    np.save(d / "clean.npy", np.zeros((Q, N), np.float32))
    np.save(d / "notes.npy", np.zeros((Q, N), np.float32))
    with pytest.raises(InputError, match="notes.npy: file name is not a condition id"):
        run_eval(d, qp)
    (d / "notes.npy").unlink()
    (d / "query_ids.txt").unlink()
    with pytest.raises(InputError, match="needs query_ids.txt and gallery_ids.txt"):
        run_eval(d, qp)


def test_duplicate_query_ids(tmp_path):
    d, qp = make_dir(tmp_path)
    (d / "query_ids.txt").write_text("\n".join(QIDS[:-1] + ["q0"]) + "\n")
    with pytest.raises(InputError, match="query_ids.txt: duplicate id 'q0'"):
        run_eval(d, qp)


# ------------------------------------------------------------------------------ qrels
def test_qrels_queries_without_scores_are_left_out_and_counted(tmp_path):
    # e.g. `snapbench encode` dropped a query: its judgement has no scores (was an error before)
    d, qp = make_dir(tmp_path, qrels={"q0": ["g0"], "zz": ["g1"]})
    rep = run_eval(d, qp)
    assert rep.n_qrels_without_scores == 1 and rep.meta.qrels_without_scores == ["zz"]
    assert any("'zz'" in w and "left out" in w for w in rep.warnings)
    assert rep.n_queries == len(QIDS)  # the scored queries are all still there
    # nothing matching at all is the wrong id list, still an error
    (tmp_path / "other").mkdir()
    d2, qp2 = make_dir(tmp_path / "other", qrels={"zz": ["g1"], "yy": ["g0"]})
    with pytest.raises(InputError, match=r"none of its 2 query id\(s\) is in query_ids"):
        run_eval(d2, qp2)


def test_unknown_gallery_id_error_or_drop(tmp_path):
    d, qp = make_dir(tmp_path, qrels={q: ["g0", "nope"] for q in QIDS})
    with pytest.raises(InputError, match=r"gallery id\(s\) are not in gallery_ids: 'nope'"):
        run_eval(d, qp)
    rep = run_eval(d, qp, unknown_items="drop")
    assert any("'nope'" in w and "dropped" in w for w in rep.warnings)


def test_missing_queries_become_zero_gt_with_warning(tmp_path):
    d, qp = make_dir(tmp_path, qrels={"q0": ["g0"], "q1": [], "q2": {"g2": 2, "g3": 0}})
    rep = run_eval(d, qp)
    assert rep.n_excluded_zero_gt == 4  # q1 (empty list) + q3, q4, q5 (missing)
    assert any("3 query id(s) have no judgements" in w for w in rep.warnings)


def test_trec_qrels_and_errors(tmp_path):
    p = tmp_path / "qrels.txt"
    p.write_text("q0 0 g1 1\nq0 0 g2 0\nq1 0 g3 2\n")
    lab, notes = load_qrels(p, QIDS, GIDS)
    assert lab.n_pos.tolist() == [1, 1, 0, 0, 0, 0] and lab.graded
    assert len(notes) == 1
    p.write_text("q0 0 g1\n")
    with pytest.raises(InputError, match=r"qrels.txt: line 1: expected 'qid 0 docid rel'"):
        load_qrels(p, QIDS, GIDS)
    p.write_text("q0 0 g1 yes\n")
    with pytest.raises(InputError, match=r"qrels.txt: line 1: relevance 'yes' is not a number"):
        load_qrels(p, QIDS, GIDS)
    p.write_text("q0 0 g1 1\nq0 0 g1 1\n")
    with pytest.raises(InputError, match=r"qrels.txt: line 2: duplicate judgement"):
        load_qrels(p, QIDS, GIDS)
    j = tmp_path / "q.json"
    j.write_text('{"q0": "g1"}')
    with pytest.raises(InputError, match="q.json: query 'q0': expected a list"):
        load_qrels(j, QIDS, GIDS)
    j.write_text("{oops")
    with pytest.raises(InputError, match="q.json: not valid JSON"):
        load_qrels(j, QIDS, GIDS)


# ------------------------------------------------------------------------------ runs
def test_run_round_trip_and_tie_order(tmp_path):
    rng = np.random.default_rng(1)
    s = rng.integers(0, 3, size=(Q, N)).astype(float)
    idx = topk_indices(s, N)
    vals = np.take_along_axis(s, idx, 1)
    p = tmp_path / "clean.run"
    write_run(p, QIDS, GIDS, idx, vals)
    # shuffle lines: order must come from scores and gallery order, not from the file
    lines = p.read_text().splitlines()
    rng.shuffle(lines)
    p.write_text("\n".join(lines) + "\n")
    run = read_run(p, QIDS, GIDS)
    np.testing.assert_array_equal(run.idx, idx)
    np.testing.assert_array_equal(run.scores, vals)


def test_run_errors(tmp_path):
    p = tmp_path / "clean.run"
    p.write_text("q0 Q0 g1 1 0.5 x\nq0 Q0 g1 2 0.4 x\n")
    with pytest.raises(InputError, match=r"clean.run: line 2: item 'g1' listed twice"):
        read_run(p, QIDS, GIDS)
    p.write_text("q0 Q0 g1 1 nan x\n")
    with pytest.raises(InputError, match=r"clean.run: line 1: score 'nan' is not finite"):
        read_run(p, QIDS, GIDS)
    p.write_text("q0 Q0 gX 1 0.3 x\n")
    with pytest.raises(InputError, match=r"clean.run: line 1: gallery id 'gX' is not in gallery_ids"):
        read_run(p, QIDS, GIDS)
    p.write_text("q0 g1 0.3\n")
    with pytest.raises(InputError, match=r"clean.run: line 1: expected 'qid Q0 docid rank score tag'"):
        read_run(p, QIDS, GIDS)


def test_mixed_npy_and_runs_is_an_error(tmp_path):
    d, qp = make_dir(tmp_path)
    (d / "txt__char_add.run").write_text("q0 Q0 g1 1 0.5 x\n")
    with pytest.raises(InputError, match="both .npy score files and TREC runs"):
        ScoresDir(d)


# ------------------------------------------------------------------------------ tags
def test_tags_json_tsv_and_groups(tmp_path):
    j = tmp_path / "tags.json"
    j.write_text(json.dumps({"q0": ["food", "indoor"], "q1": {"domain": "animal"}, "q2": "food"}))
    tags = load_tags(j, QIDS)
    assert query_groups(tags, QIDS) == {
        "domain=animal": pytest.approx([1]), "food": pytest.approx([0, 2]), "indoor": pytest.approx([0])}
    assert list(query_groups(tags, QIDS, "domain")) == ["animal"]
    t = tmp_path / "tags.tsv"
    t.write_text("query_id\tdomain\tsource\nq0\tfood\tS_V\nq3\tplant\tS_M\n")
    tags = load_tags(t, QIDS)
    assert tags == {"q0": ["domain=food", "source=S_V"], "q3": ["domain=plant", "source=S_M"]}
    assert {k: v.tolist() for k, v in query_groups(tags, QIDS, "source").items()} == {"S_M": [3], "S_V": [0]}
    t.write_text("zz\tfood\n")
    with pytest.raises(InputError, match=r"tags.tsv: none of its 1 query id\(s\) is in query_ids: 'zz'"):
        load_tags(t, QIDS)
    t.write_text("zz\tfood\nq1\tfood\n")  # tagged queries without scores: left out with a note
    notes: list[str] = []
    assert load_tags(t, QIDS, notes=notes) == {"q1": ["food"]}
    assert len(notes) == 1 and "'zz'" in notes[0]
    with pytest.raises(InputError, match="no query has a tag 'nope=...'"):
        query_groups({"q0": ["a=b"]}, QIDS, "nope")


def test_evaluate_matrix_shape_check():
    lab = Labels.from_lists([[0]] * Q, N)
    with pytest.raises(InputError, match="x.npy: shape"):
        evaluate_matrix(np.zeros((Q, N + 1)), lab, ["hit@1"], name="x.npy")
