"""The declarative records of snapbench: the evaluation report (below), the query record, the
severity-target outcome.

The evaluation report as types: what ``evaluate`` writes and ``report``, ``additivity``, ``compare``
and the traffic view read.

One report = one retrieval target (a mode, MOOR or a fusion baseline) under every condition of a run.
On disk it is ``report.json`` (SPEC §11 keys first); in code it is a :class:`Report`, built with
:meth:`Report.from_json` (which checks the shape and names the file and key of a problem) and written
with :meth:`Report.to_json` (same keys in the same order, so files stay byte-identical).  Readers use
attributes (``report.paired[c][m].ci``), never string keys.

Conventions, fixed here for every reader:

* values are in [0, 1]; an undefined value (no query counts for it) is ``None``;
* ``paired``: delta = condition − clean (negative = worse), ``ci`` its paired bootstrap interval,
  ``p`` Holm-adjusted over conditions per metric, ``p_raw`` unadjusted;
* ``additivity``: drops = clean − condition (positive = worse); δ = Obs − Exp (> 0 super-additive);
* optional sections are ``None`` when the report has none (they are then absent from the file).

Records are declarative: a :class:`Record` dataclass declares its fields, and both directions derive
from them and their type hints (:func:`read_fields`, :meth:`Record.to_json`): the keys are the field
names in field order; a field with a default may be absent (it then takes the default); a field whose
default is ``None`` (or :data:`MISSING`) is left out of the file while it holds that default.  Types:
:data:`Value` (a number or null), :data:`CI` (written ``[lo, hi]``), ``float`` (null = NaN), ``int``,
``str``, ``bool``, ``X | None``, nested records, ``list[X]``, ``dict[str, X]`` and ``Any`` (kept as
read).  :func:`spec` marks the few fields that differ (a renamed key, a field written only when a
condition holds, a check of the raw value).  A :class:`Reader` names the file and the key path of
every problem.
"""

from __future__ import annotations

import math
import os
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import MISSING as _NO_DEFAULT
from dataclasses import dataclass, field, fields, is_dataclass
from functools import cache
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from .errors import InputError

__all__ = ['CI', 'MISSING', 'Reader', 'Record', 'Value', 'read_fields', 'spec', 'Paired', 'GroupPaired', 'Additivity', 'AdditivitySummary', 'SeverityCurve', 'Stability', 'FirstRank', 'Displacement', 'GroupReport', 'CoarseTextDrag', 'DepthLimit', 'PerQuery', 'REPORT_SCHEMA_VERSION', 'ReportMeta', 'Report']

Value = float | None
CI = tuple[Value, Value]
R = TypeVar("R", bound="Record")


class _Missing:
    """Marks a meta field the report does not have (absent from the file, unlike ``null``)."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


class Reader:
    """Where a JSON value lies: every problem names the file and the key path (``where``)."""

    __slots__ = ("where", "path", "prefix")

    def __init__(self, where: str = "", path: str | os.PathLike | None = None,
                 prefix: str = "not a snapbench report: ") -> None:
        self.where, self.path, self.prefix = where, path, prefix

    def fail(self, problem: str) -> NoReturn:
        raise InputError(f"{self.prefix}{self.where or 'top level'} {problem}", path=self.path)

    def at(self, key: str | int) -> Reader:
        """The reader of ``key`` (a list index: ``where[i]``) in this object."""
        where = f"{self.where}[{key}]" if isinstance(key, int) else f"{self.where}.{key}" if self.where else key
        return Reader(where, self.path, self.prefix)


# A codec reads a JSON value (``read(value, reader of the parent, key)``) and writes one back
# (``write(value)``; None = the value as it is).
_Read = Callable[[Any, Reader, Any], Any]
_Write = Callable[[Any], Any] | None


def spec(*, key: str | None = None, when: Callable[[Any], bool] | None = None,
         check: _Read | None = None, **kw: Any) -> Any:
    """A record field that differs on disk: its ``key`` (another name than the field's), ``when``
    (written only when ``when(record)`` holds), ``check`` (``check(raw JSON value, reader of the
    record, key)``, before the value is read).  ``kw`` goes to :func:`dataclasses.field`."""
    return field(metadata={"json": (key, when, check)}, **kw)


def _as_read(v: Any, r: Reader, key: Any) -> Any:
    return v


def _value(v: Any, r: Reader, key: Any) -> Value:
    if v is None or type(v) is float:
        return v
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        r.at(key).fail(f"must be a number or null, got {v!r}")
    return float(v)


def _number(v: Any, r: Reader, key: Any) -> float:
    return math.nan if v is None else _value(v, r, key)  # type: ignore[return-value]


def _integer(v: Any, r: Reader, key: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        r.at(key).fail(f"must be an integer, got {v!r}")
    return v


def _string(v: Any, r: Reader, key: Any) -> str:
    if not isinstance(v, str):
        r.at(key).fail(f"must be a string, got {v!r}")
    return v


def _boolean(v: Any, r: Reader, key: Any) -> bool:
    if not isinstance(v, bool):
        r.at(key).fail(f"must be true or false, got {v!r}")
    return v


def _ci(v: Any, r: Reader, key: Any) -> CI:
    if not isinstance(v, list) or len(v) != 2:
        r.at(key).fail(f"must be [low, high], got {v!r}")
    at = r.at(key)
    return (_value(v[0], at, "lo"), _value(v[1], at, "hi"))


_SCALARS: dict[Any, _Read] = {Any: _as_read, Value: _value, float: _number, int: _integer, str: _string,
                              bool: _boolean, CI: _ci}


@cache
def _codec(tp: Any) -> tuple[_Read, _Write]:
    """How a value of type ``tp`` is read and written."""
    if tp in _SCALARS:
        return _SCALARS[tp], (lambda ci: [ci[0], ci[1]]) if tp == CI else None
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (types.UnionType, typing.Union) and len(args) == 2 and type(None) in args:
        read, write = _codec(args[0] if args[1] is type(None) else args[1])
        return ((lambda v, r, key: None if v is None else read(v, r, key)),
                None if write is None else (lambda v: None if v is None else write(v)))
    if origin is list:
        read, write = _codec(args[0])

        def read_list(v: Any, r: Reader, key: Any) -> list:
            if not isinstance(v, list):
                r.at(key).fail(f"must be a list, got {v!r}")
            if read is _value:  # one value per query: the long lists, read without a reader per item
                return [x if type(x) is float or x is None else _value(x, r.at(key), i) for i, x in enumerate(v)]
            at = r.at(key)
            return [read(x, at, i) for i, x in enumerate(v)]

        return read_list, list if write is None else (lambda v: [write(x) for x in v])
    if origin is dict:
        read, write = _codec(args[1])

        def read_dict(v: Any, r: Reader, key: Any) -> dict:
            at = r.at(key)
            if not isinstance(v, Mapping):
                at.fail("must be a JSON object")
            return {k: read(x, at, k) for k, x in v.items()}

        return read_dict, dict if write is None else (lambda v: {k: write(x) for k, x in v.items()})
    if is_dataclass(tp):
        return (lambda v, r, key: tp.read(v, r.at(key))), (lambda rec: rec.to_json())
    raise TypeError(f"no JSON form for {tp!r}")


@dataclass(frozen=True)
class _Field:
    name: str
    key: str
    required: bool
    omit: Any  # the value left out of the file (the default None or MISSING), else a private marker
    when: Callable[[Any], bool] | None
    check: _Read | None
    read: _Read
    write: _Write


_NEVER = object()


@cache
def _fields(cls: type) -> tuple[_Field, ...]:
    hints = typing.get_type_hints(cls)
    as_read = cls.__dict__.get("_AS_READ", False)
    out = []
    for f in fields(cls):
        key, when, check = f.metadata.get("json", (None, None, None))
        read, write = (_as_read, None) if as_read else _codec(hints[f.name])
        has_default = f.default is not _NO_DEFAULT or f.default_factory is not _NO_DEFAULT
        omit = f.default if f.default is None or f.default is MISSING else _NEVER
        out.append(_Field(f.name, key or f.name, not has_default, omit, when, check, read, write))
    return tuple(out)


def read_fields(cls: type, obj: Any, r: Reader) -> dict[str, Any]:
    """The fields of a ``cls`` record from its JSON object (absent keys of fields with a default
    left out), each checked and typed; :class:`InputError` naming ``r`` and the key otherwise."""
    if not isinstance(obj, Mapping):
        r.fail("must be a JSON object")
    out = {}
    for f in _fields(cls):
        if f.key not in obj:
            if f.required:
                r.fail(f"has no {f.key!r}")
            continue
        v = obj[f.key]
        if f.check is not None:
            f.check(v, r, f.key)
        out[f.name] = f.read(v, r, f.key)
    return out


class Record:
    """A declarative JSON record (a dataclass): :meth:`read` and :meth:`to_json` derive from its
    fields and their type hints (see the module docstring)."""

    @classmethod
    def read(cls: type[R], obj: Any, r: Reader) -> R:
        """The record of a JSON object; :class:`InputError` naming ``r`` and the key of a problem."""
        return cls(**read_fields(cls, obj, r))

    def to_json(self) -> dict[str, Any]:
        """The record as JSON values, keys in field order."""
        out = {}
        for f in _fields(type(self)):
            v = getattr(self, f.name)
            if v is f.omit or (f.when is not None and not f.when(self)):
                continue
            out[f.key] = v if f.write is None else f.write(v)
        return out


@dataclass
class Paired(Record):
    """A condition vs clean for one metric."""

    delta: Value
    ci: CI
    p: Value
    p_raw: Value


@dataclass
class GroupPaired(Record):
    """A condition vs clean for one metric, within a query group (no test)."""

    delta: Value
    ci: CI


@dataclass
class Additivity(Record):
    """Drops of a joint condition's parts and of the joint condition (SPEC §8); ``n`` = joint
    conditions averaged (summaries only)."""

    delta_image: Value
    delta_text: Value
    exp: Value
    obs: Value
    delta: Value
    ci: CI
    n: int | None = None


def _summarised(s: AdditivitySummary) -> bool:
    return bool(s.by_pair) or s.mean is not None


@dataclass
class AdditivitySummary(Record):
    """Means of the per-joint additivity: per pair (over severities), per severity (over pairs), overall
    (the file has all of them or none)."""

    by_pair: dict[str, dict[str, Additivity]] = spec(when=_summarised, default_factory=dict)
    by_severity: dict[str, dict[str, Additivity]] = spec(when=_summarised, default_factory=dict)
    mean: dict[str, Additivity] | None = None


@dataclass
class SeverityCurve(Record):
    """Drops (clean − s; s − clean where higher is worse, flip@k) per severity of one image operator, and
    its cliff/gradual/flat label."""

    drops: dict[str, Value]
    label: str


@dataclass
class Stability(Record):
    """Queries by (clean correct?, condition correct?) for a hit@k metric."""

    metric: str
    stably_correct: int
    drag: int
    persistently_wrong: int
    boost: int
    n: int


@dataclass
class FirstRank(Record):
    """Rank of the first positive (queries with positives; not retrieved = beyond the gallery)."""

    mean: Value
    median: Value
    n_not_retrieved: int


@dataclass
class Displacement(Record):
    """Corrupted − clean rank of the first positive (positive = moved down), with a bootstrap CI."""

    mean: Value
    median: Value
    ci: CI
    n: int


@dataclass
class GroupReport(Record):
    """Values and paired deltas within one query group (``--group-by``)."""

    n_queries: int
    n_excluded_zero_gt: int
    conditions: dict[str, dict[str, Value]]
    paired: dict[str, dict[str, GroupPaired]]


@dataclass
class CoarseTextDrag(Record):
    """hit@1 of a fused mode minus hit@1 of image-only I→I on clean queries, with a paired CI."""

    metric: str
    value: Value
    ci: CI
    joint: str
    joint_value: Value
    image_value: Value


@dataclass
class DepthLimit(Record):
    """A condition whose runs list only ``depth`` items: ``metrics`` are lower bounds there."""

    depth: int
    metrics: list[str]


@dataclass
class PerQuery(Record):
    """Per-query values of every condition and metric (``None`` = the query does not count)."""

    query_ids: list[str]
    values: dict[str, dict[str, list[Value]]]

    @classmethod
    def read(cls, obj: Any, r: Reader) -> PerQuery:
        pq = super().read(obj, r)
        for c, per in pq.values.items():
            for m, vals in per.items():
                if len(vals) != len(pq.query_ids):
                    r.at("values").at(c).fail(f"{m!r} must list one value per query ({len(pq.query_ids)})")
        return pq

    @classmethod
    def from_arrays(cls, query_ids: Sequence[str], values: Mapping[str, Mapping[str, Any]]) -> PerQuery:
        """From ``{condition: {metric: one number per query}}`` (NaN = the query does not count)."""
        import numpy as np

        qids = [str(q) for q in query_ids]
        out: dict[str, dict[str, list[Value]]] = {}
        for c, per in values.items():
            out[str(c)] = {}
            for m, arr in per.items():
                a = np.asarray(arr, dtype=np.float64).reshape(-1)
                if a.size != len(qids):
                    raise InputError(f"per-query values of {c!r}/{m!r} have {a.size} entries for {len(qids)} query ids")
                out[str(c)][str(m)] = [float(v) if np.isfinite(v) else None for v in a.tolist()]
        return cls(qids, out)

    def array(self, condition: str, metric: str) -> Any:
        """One condition's per-query values of ``metric`` as a float array (NaN = does not count);
        ``None`` when the table has no such condition or metric."""
        import numpy as np

        vals = self.values.get(condition, {}).get(metric)
        return None if vals is None else np.array([np.nan if v is None else v for v in vals], dtype=np.float64)


REPORT_SCHEMA_VERSION = 1


def _whole(minimum: int | None = None) -> _Read:
    """A check: an integer (``>= minimum``)."""
    def check(v: Any, r: Reader, key: str) -> None:
        if isinstance(v, bool) or not isinstance(v, int) or (minimum is not None and v < minimum):
            r.at(key).fail(f"must be an integer{'' if minimum is None else f' >= {minimum}'}, got {v!r}")
    return check


def _level(v: Any, r: Reader, key: str) -> None:
    level = _value(v, r, key)
    if level is None or not 0 < level < 1:
        r.at(key).fail(f"must be in (0, 1), e.g. 0.95; got {level!r}")  # validate.ci_level's words


@dataclass
class ReportMeta(Record):
    """How the report was computed (settings, rules in words) and where its scores came from.

    Every report has the fields up to ``stability_metric``; the rest say where the scores came from
    (evaluate: ``scores_dir`` ... ``depth_limited_metrics``; run: ``mode``, ``dataset``, ...) and are
    :data:`MISSING` (absent from the file) when the report has none.  The fields are kept as the file
    has them; only the settings `snapbench report` recomputes the report's intervals with are checked
    (no default stands in)."""

    _AS_READ = True

    snapbench_version: str
    schema_version: int
    seed: int = spec(check=_whole())
    resamples: int = spec(check=_whole(1))
    permutations: int
    ci_level: float = spec(check=_level)
    ci_method: str
    ks: list[int]
    metrics: list[str]
    tie_rule: str
    tests: dict[str, str]
    correction: str
    zero_gt: str
    n_zero_gt: int | None  # None (and graded_labels, stability_metric) without relevance labels: labelled false
    n_gallery: int
    graded_labels: bool | None
    set_threshold: float | None
    paired_delta: str
    additivity_drops: str
    cliff_rule: str
    cliff_tol: float
    cliff_ratio: float
    stability_metric: str | None
    scores_dir: Any = MISSING
    qrels: Any = MISSING
    input_format: Any = MISSING
    mode: Any = MISSING
    qrels_without_scores: Any = MISSING
    depth_limited_metrics: Any = MISSING
    dataset: Any = MISSING
    n_dropped_queries: Any = MISSING
    labelled: Any = MISSING  # False: evaluated without relevance labels (only stability measures)
    stability_measures: Any = MISSING  # {"rule", "rbo_p", "rbo_depth"} when overlap@k / rbo / flip@k were evaluated
    notes: Any = MISSING  # list of sentences about the whole report (run --limit: the first N of M queries only)

    def get(self, key: str, default: Any = None) -> Any:
        """A context field, ``default`` when the report does not have it."""
        v = getattr(self, key)
        return default if v is MISSING else v


def _has_clean(v: Any, r: Reader, key: str) -> None:
    if isinstance(v, Mapping) and "clean" not in v:
        r.fail("has no 'clean' condition")


def _label_free_shape(v: Any, r: Reader, key: str) -> None:
    if not isinstance(v, dict) or not all(isinstance(e, dict) for e in v.values()):
        r.at(key).fail("must be an object {condition: {metric: {mean, ci}}}")


@dataclass
class Report(Record):
    """One target's paired robustness report (see the module docstring for the conventions); the
    fields in the file's order."""

    conditions: dict[str, dict[str, Value]] = spec(check=_has_clean)
    paired: dict[str, dict[str, Paired]]
    additivity: dict[str, dict[str, Additivity]]
    n_queries: int
    n_excluded_zero_gt: int
    additivity_summary: AdditivitySummary = field(default_factory=AdditivitySummary)
    additivity_skipped: dict[str, str] | None = None
    severity_curves: dict[str, dict[str, SeverityCurve]] = field(default_factory=dict)
    stability: dict[str, Stability] | None = None
    first_positive_rank: dict[str, FirstRank] = field(default_factory=dict)
    rank_displacement: dict[str, Displacement] | None = None
    groups: dict[str, GroupReport] | None = None
    meta: ReportMeta = field(kw_only=True)
    coarse_text_drag: CoarseTextDrag | None = None
    n_qrels_without_scores: int | None = None
    depth_limited: dict[str, DepthLimit] | None = None
    warnings: list[str] | None = None
    # {condition: {stability metric: {"mean": v, "ci": [lo, hi]}}}: each label-free measure's own
    # bootstrap interval (the paired one of ``paired`` is against clean's 1, or 0 for flip@k)
    label_free: dict[str, dict[str, dict[str, Any]]] | None = spec(check=_label_free_shape, default=None)
    per_query: PerQuery | None = None

    # ---------------------------------------------------------------- reading
    @property
    def metrics(self) -> list[str]:
        return list(self.meta.metrics)

    @property
    def condition_ids(self) -> list[str]:
        """Every condition, clean first."""
        return list(self.conditions)

    def value(self, condition: str, metric: str) -> Value:
        return self.conditions.get(condition, {}).get(metric)

    @classmethod
    def from_json(cls, obj: Any, *, path: str | os.PathLike | None = None) -> Report:
        """Check and type a parsed report; :class:`InputError` naming ``path`` and the key otherwise."""
        return cls.read(obj, Reader("", path))


@dataclass(frozen=True)
class TargetOutcome(Record):
    """How a run's image variants met their severity targets: ``variants`` searched, ``missed`` (not
    within the tolerance: ``"reached": false``) and ``inverted`` -- (query, operator) pairs whose
    achieved measure does not fall from level to level (a harsher level measures milder than the one
    before it: a missed target, most often).  :meth:`to_json` is how run.json records it."""

    variants: int = 0
    missed: int = 0
    inverted: int = 0

    @classmethod
    def from_json(cls, obj: Any) -> TargetOutcome | None:
        """What :meth:`to_json` recorded (run.json's ``severity_target_outcome``), or None when ``obj``
        is not such a record (a run without a severity target)."""
        if not isinstance(obj, Mapping):
            return None
        return cls.read(obj, Reader("severity_target_outcome", prefix="run.json: "))


@dataclass(frozen=True, eq=True)
class QueryRecord:
    """One query of a query set. ``image`` is resolved against the manifest's directory."""

    id: str
    image: Path | None
    question: str | None
    entity: str | None = None
    tags: dict[str, Any] = field(default_factory=dict)
