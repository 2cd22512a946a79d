"""The declarative records (snapbench.core.records): JSON both ways derived from the fields, every
report.json read and written back byte for byte, every problem named by file and key path."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import pytest

from snapbench.core.errors import InputError
from snapbench.core.records import CI, MISSING, Reader, Record, Report, TargetOutcome, Value, spec
from snapbench.store.rundir import read_report, write_report


def test_every_report_of_a_real_run_reads_and_writes_back_byte_for_byte(smoke_multi, tmp_path):
    files = sorted(smoke_multi.glob("*/**/report.json"))
    assert len(files) >= 10, files  # both encoders, every mode, MOOR and the fusion baselines
    for i, f in enumerate(files):
        rep = read_report(f)
        assert Report.from_json(rep.to_json()) == rep
        assert Report.from_json(json.loads(json.dumps(rep.to_json()))) == rep
        write_report(rep, tmp_path / f"{i}.json")
        assert (tmp_path / f"{i}.json").read_bytes() == f.read_bytes(), f


@pytest.fixture(scope="module")
def report_obj(smoke_multi) -> dict:
    return json.loads((smoke_multi / "toy" / "IT2IT" / "report.json").read_text())


def _problem(obj: Any, tmp_path) -> str:
    f = tmp_path / "report.json"
    f.write_text(json.dumps(obj))
    with pytest.raises(InputError) as e:
        read_report(f)
    assert e.value.path == str(f)
    return str(e.value)


@pytest.mark.parametrize("change,words", [
    (lambda o: o["paired"]["txt/char_add"]["hit@1"].update(ci=5), "paired.txt/char_add.hit@1.ci must be [low, high], got 5"),
    (lambda o: o["paired"]["txt/char_add"]["hit@1"].update(ci=[0, "x"]),
     "paired.txt/char_add.hit@1.ci.hi must be a number or null, got 'x'"),
    (lambda o: o["paired"]["txt/char_add"]["hit@1"].pop("p_raw"), "paired.txt/char_add.hit@1 has no 'p_raw'"),
    (lambda o: o["conditions"].pop("clean"), "top level has no 'clean' condition"),
    (lambda o: o.update(additivity=[]), "additivity must be a JSON object"),
    (lambda o: o["stability"]["txt/char_add"].update(drag=1.5), "stability.txt/char_add.drag must be an integer, got 1.5"),
    (lambda o: o["severity_curves"]["motion_blur"]["hit@1"]["drops"].update(s2="a"),
     "severity_curves.motion_blur.hit@1.drops.s2 must be a number or null, got 'a'"),
    (lambda o: o.update(label_free={"clean": 1}), "label_free must be an object {condition: {metric: {mean, ci}}}"),
    (lambda o: o.update(per_query={"query_ids": ["a", "b"], "values": {"clean": {"hit@1": [1.0]}}}),
     "per_query.values.clean 'hit@1' must list one value per query (2)"),
    (lambda o: o["meta"].pop("tie_rule"), "meta has no 'tie_rule'"),
])
def test_a_problem_names_the_key_path(report_obj, tmp_path, change, words):
    obj = json.loads(json.dumps(report_obj))
    change(obj)
    assert _problem(obj, tmp_path).endswith(f"not a snapbench report: {words}")


def test_a_report_that_is_no_object_is_named_at_the_top_level(tmp_path):
    assert _problem([1], tmp_path).endswith("not a snapbench report: top level must be a JSON object")


@dataclass
class _Inner(Record):
    value: Value
    ci: CI


@dataclass
class _Outer(Record):
    name: str = spec(key="Name")
    counts: dict[str, int] = field(default_factory=dict)
    inner: dict[str, dict[str, _Inner]] = spec(when=lambda o: bool(o.counts), default_factory=dict)
    note: str | None = None
    extra: Any = MISSING
    ratio: float = 0.0


def test_a_record_declares_only_its_fields():
    o = _Outer("a", {"x": 1}, {"c": {"m": _Inner(0.5, (None, 1.0))}}, None)
    assert o.to_json() == {"Name": "a", "counts": {"x": 1}, "inner": {"c": {"m": {"value": 0.5, "ci": [None, 1.0]}}},
                           "ratio": 0.0}
    assert _Outer.read(o.to_json(), Reader()) == o
    assert _Outer("b").to_json() == {"Name": "b", "counts": {}, "ratio": 0.0}  # `inner` written only with counts
    back = _Outer.read({"Name": "b", "note": "n", "extra": [1], "ratio": None}, Reader())
    assert (back.note, back.extra, back.ratio != back.ratio) == ("n", [1], True)  # null float = NaN
    with pytest.raises(InputError, match=re.escape("where: x.Name must be a string, got 3")):
        _Outer.read({"Name": 3}, Reader("x", prefix="where: "))
    with pytest.raises(InputError, match=re.escape("x.counts.y must be an integer, got True")):
        _Outer.read({"Name": "a", "counts": {"y": True}}, Reader("x"))


def test_a_target_outcome_round_trips():
    t = TargetOutcome(3, 1, 0)
    assert t.to_json() == {"variants": 3, "missed": 1, "inverted": 0}
    assert TargetOutcome.from_json(t.to_json()) == t
    assert TargetOutcome.from_json({"missed": 2}) == TargetOutcome(0, 2, 0)
    assert TargetOutcome.from_json(None) is None


def test_compare_json_records_are_checked_field_by_field(tmp_path):
    from snapbench.store.compare import RECORD_TYPES, read_compare_json

    # the head of compare.json as docs/compare.md describes it (schema_version 1)
    head = ("kind", "schema_version", "snapbench_version", "runs", "reference", "correction", "correction_method",
            "settings", "n_queries", "notes", "definitions")
    fit = {"mode": "IT2IT", "metric": "hit@1", "condition": "c", "slope": None, "intercept": 0, "n": 3}
    obj = {**dict.fromkeys(head), **{name: [] for name in RECORD_TYPES}, "kind": "snapbench compare",
           "schema_version": 1, "fits": [fit]}
    f = tmp_path / "compare.json"
    f.write_text(json.dumps(obj))
    back = read_compare_json(f)["fits"][0]
    assert list(back) == list(fit) and back["slope"] != back["slope"] and back["intercept"] == 0.0  # null = NaN
    for change, words in (({"n": 2.5}, "fits[0].n must be an integer, got 2.5"),
                          ({"slope": "x"}, "fits[0].slope must be a number or null, got 'x'"),
                          ({"mode": 1}, "fits[0].mode must be a string, got 1"),
                          ({"extra": 1}, "fits[0] must be an object with the fields mode, metric, condition, slope, "
                                         "intercept, n")):
        f.write_text(json.dumps({**obj, "fits": [{**fit, **change}]}))
        with pytest.raises(InputError, match=re.escape(words) + "$") as e:
            read_compare_json(f)
        assert e.value.path == str(f)
