"""What a comparison takes: per model, per-query metric values over the same queries.

One :class:`ModelValues` per model holds ``stats[mode][condition][metric]`` as a
:class:`~snapbench.evaluate.metrics.QueryStat` (per-query numerator and denominator, value =
Σnum / Σden -- the form every statistic of :mod:`snapbench.evaluate` resamples).  Build it from the
per-query table a run writes (:meth:`ModelValues.from_values`: one value per query, NaN = the query
does not count for that metric) or from the evaluation's own stats (:meth:`ModelValues.from_stats`,
exact for ratio metrics such as ``reject_f1`` whose per-query value alone does not give Σnum / Σden).

:func:`align_models` checks that the models can be compared -- same queries, modes, conditions and
metrics -- and names what differs when they cannot.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.conditions import parse_condition
from ..core.errors import ConfigError, InputError
from ..evaluate.metrics import QueryStat

__all__ = ["ModelValues", "align_models", "set_diff"]

Stats = Mapping[str, Mapping[str, Mapping[str, QueryStat]]]


@dataclass(frozen=True)
class ModelValues:
    """Per-query metric values of one model: ``stats[mode][condition][metric]`` over ``query_ids``.

    Every condition of a mode carries the same metrics and ``clean`` is one of the conditions.
    """

    name: str
    query_ids: tuple[str, ...]
    stats: Stats

    @classmethod
    def from_values(
        cls, name: str, query_ids: Sequence[str], values: Mapping[str, Mapping[str, Mapping[str, np.ndarray]]]
    ) -> "ModelValues":
        """From ``values[mode][condition][metric]`` = one float per query (NaN = not counted), the
        per-query table of a run.  A counted query has numerator = its value, denominator = 1."""
        qids = _query_ids(name, query_ids)
        dens: dict[bytes, np.ndarray] = {}  # one denominator array per distinct mask (most metrics share one)

        def stat(where: str, arr) -> QueryStat:
            v = _vector(arr, len(qids), where, allow_nan=True)
            counted = ~np.isnan(v)
            den = dens.setdefault(np.packbits(counted).tobytes(), counted.astype(np.float64))
            return QueryStat(np.where(counted, v, 0.0), den)

        return cls(str(name), qids, _per_metric(name, values, stat))

    @classmethod
    def from_stats(cls, name: str, query_ids: Sequence[str], stats: Stats) -> "ModelValues":
        """From per-query (num, den) :class:`QueryStat` (e.g. ``ConditionEval.stats`` of an evaluation)."""
        qids = _query_ids(name, query_ids)

        def stat(where: str, st: QueryStat) -> QueryStat:
            num = _vector(st.num, len(qids), where + " (numerator)", allow_nan=False)
            den = _vector(st.den, len(qids), where + " (denominator)", allow_nan=False)
            if (den < 0).any():
                raise InputError(f"{where}: negative denominator")
            return QueryStat(num, den)

        return cls(str(name), qids, _per_metric(name, stats, stat))

    def reordered(self, query_ids: Sequence[str]) -> "ModelValues":
        """The same values with queries in the order of ``query_ids`` (the same set of ids)."""
        if tuple(query_ids) == self.query_ids:
            return self
        pos = {q: i for i, q in enumerate(self.query_ids)}
        rows = np.asarray([pos[q] for q in query_ids], dtype=np.int64)
        stats = {mode: {c: {m: st.subset(rows) for m, st in ms.items()} for c, ms in conds.items()}
                 for mode, conds in self.stats.items()}
        return ModelValues(self.name, tuple(query_ids), stats)


def _per_metric(name: str, tree: Mapping[str, Mapping[str, Mapping[str, Any]]], make: Callable[[str, Any], QueryStat]) -> Stats:
    """``{mode: {condition: {metric: make(where, leaf)}}}`` (names as strings) of ``tree``; ``where``
    names the leaf in messages."""
    return {str(mode): {str(c): {str(m): make(f"model {name!r}, mode {mode!r}, {c!r}/{m!r}", x) for m, x in ms.items()}
                        for c, ms in conds.items()} for mode, conds in tree.items()}


def _query_ids(name: str, query_ids: Sequence[str]) -> tuple[str, ...]:
    qids = tuple(str(q) for q in query_ids)
    if not qids:
        raise InputError(f"model {name!r}: no queries")
    if len(set(qids)) != len(qids):
        seen: set[str] = set()
        dup = next(q for q in qids if q in seen or seen.add(q))  # type: ignore[func-returns-value]
        raise InputError(f"model {name!r}: query id {dup!r} occurs more than once")
    return qids


def _vector(arr, n: int, where: str, *, allow_nan: bool) -> np.ndarray:
    v = np.asarray(arr)
    if v.dtype.kind not in "fiub":
        raise InputError(f"{where}: values must be numbers, got dtype {v.dtype}")
    v = v.astype(np.float64).reshape(-1)
    if v.shape[0] != n:
        raise InputError(f"{where}: {v.shape[0]} values for {n} queries")
    bad = np.isinf(v) if allow_nan else ~np.isfinite(v)
    if bad.any():
        raise InputError(f"{where}: non-finite value {v[bad][0]} at query row {int(np.flatnonzero(bad)[0])}")
    return v


def set_diff(what: str, a: str, xa: Sequence[str], b: str, xb: Sequence[str]) -> str | None:
    """"B lacks n of the <what> of A (e.g. ...); B has m <what> A lacks (e.g. ...)", or ``None``
    when the two collections hold the same names: how a refusal names what two models differ in
    (``a`` / ``b``: how the message names each, e.g. ``'name'`` or ``'name' (path)``)."""
    sa, sb = set(xa), set(xb)
    if sa == sb:
        return None
    parts = []
    if sa - sb:
        parts.append(f"{b} lacks {len(sa - sb)} of the {what} of {a} (e.g. {', '.join(sorted(sa - sb)[:3])})")
    if sb - sa:
        parts.append(f"{b} has {len(sb - sa)} {what} {a} lacks (e.g. {', '.join(sorted(sb - sa)[:3])})")
    return "; ".join(parts)


def align_models(models: Sequence[ModelValues]) -> list[ModelValues]:
    """Check that ``models`` can be compared and return them with the first model's query order.

    Raises :class:`ConfigError` naming the models and what differs: fewer than two models, a
    repeated name, different query sets, modes, conditions or metrics, a mode without ``clean``, a
    condition id of an unknown shape, or conditions of one mode with different metrics.
    """
    models = list(models)
    if len(models) < 2:
        raise ConfigError(f"a comparison needs at least two models, got {len(models)}")
    names = [m.name for m in models]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ConfigError(f"model names must differ; repeated: {', '.join(dup)}")
    first = models[0]
    _check_one(first)
    for other in models[1:]:
        _check_one(other)
        for what, a, b in [("queries", first.query_ids, other.query_ids), ("modes", list(first.stats), list(other.stats))]:
            if (msg := set_diff(what, repr(first.name), a, repr(other.name), b)) is not None:
                raise ConfigError(f"models differ in their {what}: {msg}")
        for mode in first.stats:
            ca, cb = first.stats[mode], other.stats[mode]
            if (msg := set_diff("conditions", repr(first.name), list(ca), repr(other.name), list(cb))) is not None:
                raise ConfigError(f"mode {mode!r}: models differ in their conditions: {msg}")
            ma, mb = next(iter(ca.values())), next(iter(cb.values()))
            if (msg := set_diff("metrics", repr(first.name), list(ma), repr(other.name), list(mb))) is not None:
                raise ConfigError(f"mode {mode!r}: models differ in their metrics: {msg}")
    return [first] + [m.reordered(first.query_ids) for m in models[1:]]


def _check_one(model: ModelValues) -> None:
    if not model.stats:
        raise ConfigError(f"model {model.name!r} has no modes")
    for mode, conds in model.stats.items():
        if "clean" not in conds:
            raise ConfigError(f"model {model.name!r}, mode {mode!r}: no 'clean' condition (deltas are against clean)")
        for c in conds:
            try:
                cid = parse_condition(c).id
            except ValueError as e:
                raise ConfigError(f"model {model.name!r}, mode {mode!r}: {e}") from None
            if cid != c:
                raise ConfigError(f"model {model.name!r}, mode {mode!r}: condition {c!r} is not in the id form; use {cid!r}")
        metrics = list(conds["clean"])
        if not metrics:
            raise ConfigError(f"model {model.name!r}, mode {mode!r}: no metrics")
        for c, ms in conds.items():
            if (msg := set_diff("metrics", repr("clean"), metrics, repr(c), list(ms))) is not None:
                raise ConfigError(f"model {model.name!r}, mode {mode!r}: conditions differ in their metrics: {msg}")


