"""Reading a report's JSON: typed access that names the file and key path of every problem, and the
small JSON value helpers the report's records share (:mod:`snapbench.core.records` is the public face).

Kept apart from the records so each record's ``read`` / ``to_json`` pair stays short: a record asks
a :class:`Reader` for ``value`` / ``ci`` / ``table`` and never checks types itself.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from .errors import InputError

__all__ = ["CI", "MISSING", "Reader", "Value", "ci_json", "metric_values", "per_metric"]

Value = float | None
CI = tuple[Value, Value]
T = TypeVar("T")


class _Missing:
    """Marks a meta field the report does not have (absent from the file, unlike ``null``)."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


class Reader:
    """Typed access to one JSON object; every problem names the file and the key path."""

    def __init__(self, obj: Any, where: str, path: str | os.PathLike | None) -> None:
        self.where, self.path = where, path
        if not isinstance(obj, Mapping):
            self.fail("must be a JSON object")
        self.obj = obj

    def fail(self, problem: str) -> None:
        raise InputError(f"not a snapbench report: {self.where or 'top level'} {problem}", path=self.path)

    def sub(self, key: str) -> Reader:
        return Reader(self.need(key), f"{self.where}.{key}" if self.where else key, self.path)

    def need(self, key: str) -> Any:
        if key not in self.obj:
            self.fail(f"has no {key!r}")
        return self.obj[key]

    def value(self, key: str) -> Value:
        v = self.need(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
            self.fail_at(key, f"must be a number or null, got {v!r}")
        return None if v is None else float(v)

    def fail_at(self, key: str, problem: str) -> None:
        """Fail naming the key path of ``key`` in this object."""
        Reader({}, f"{self.where}.{key}" if self.where else key, self.path).fail(problem)

    def integer(self, key: str, *, minimum: int | None = None) -> int:
        v = self.need(key)
        if isinstance(v, bool) or not isinstance(v, int) or (minimum is not None and v < minimum):
            self.fail_at(key, f"must be an integer{'' if minimum is None else f' >= {minimum}'}, got {v!r}")
        return v

    def ci(self, key: str = "ci") -> CI:
        v = self.need(key)
        if not isinstance(v, list) or len(v) != 2:
            self.fail_at(key, f"must be [low, high], got {v!r}")
        r = Reader({"lo": v[0], "hi": v[1]}, f"{self.where}.{key}", self.path)
        return (r.value("lo"), r.value("hi"))

    def table(self, key: str, build: Callable[[Reader, str], T]) -> dict[str, T]:
        """``{name: build(reader of obj[key][name], name)}``."""
        outer = self.sub(key)
        return {str(k): build(outer.sub(k), str(k)) for k in outer.obj}


def ci_json(ci: CI) -> list[Value]:
    return [ci[0], ci[1]]



def per_metric(build: Callable[[Reader, str], T]) -> Callable[[Reader, str], dict[str, T]]:
    return lambda r, _name: {str(m): build(r.sub(m), str(m)) for m in r.obj}


def metric_values(r: Reader, _name: str) -> dict[str, Value]:
    return {str(m): r.value(m) for m in r.obj}
