"""``compare.json``: the comparison as one strict-JSON file of flat record lists.

Top level (in file order)::

    kind "snapbench compare", schema_version, snapbench_version,
    runs        [{name, path, kind ("run" | "report"), encoder, variants, dataset, parent}]
    reference, correction, correction_method,
    settings    {targets, metrics, metric, resamples, permutations, seed, ci, clip}
    n_queries, notes, definitions (one line per number: deltas, tests, effect sizes, families, tiers)
    models, pairs, normalised, ranking, effective, fits, additivity, additivity_pairs   (record lists)

Each record list is a list of flat objects with the fields of its record type
(:mod:`snapbench.compare.records`), ready for ``pandas.DataFrame(obj["pairs"])``; an undefined
number is ``null``.  The file is written compact (one line: it holds ~10^5 records at the release's
scale).  :func:`read_compare_json` checks a file and gives it back with ``null`` numbers as NaN;
writing that again gives the same bytes.
"""

from __future__ import annotations

import math
import os
from dataclasses import fields
from typing import Any

from .._version import __version__
from ..core.errors import InputError
from ..core.jsonable import write_json
from ..core.textio import read_json
from .records import (
    AdditivityPairRecord,
    AdditivityRecord,
    Comparison,
    EffectiveRecord,
    FitRecord,
    ModelRecord,
    NormalisedRecord,
    PairRecord,
    RankingRecord,
)

__all__ = ["COMPARE_KIND", "COMPARE_SCHEMA_VERSION", "RECORD_TYPES", "compare_json", "read_compare_json",
           "write_compare_json"]

COMPARE_KIND = "snapbench compare"
COMPARE_SCHEMA_VERSION = 1
#: The record lists of compare.json and the type of their records, in file order.
RECORD_TYPES: dict[str, type] = {
    "models": ModelRecord, "pairs": PairRecord, "normalised": NormalisedRecord, "ranking": RankingRecord,
    "effective": EffectiveRecord, "fits": FitRecord, "additivity": AdditivityRecord,
    "additivity_pairs": AdditivityPairRecord,
}
_HEAD = ("kind", "schema_version", "snapbench_version", "runs", "reference", "correction", "correction_method",
         "settings", "n_queries", "notes", "definitions")
_META_OWN = ("models", "reference", "correction", "correction_method", "config", "n_queries")


def compare_json(comparison: Comparison, runs: list[dict[str, Any]], settings: dict[str, Any],
                 notes: list[str], records: dict[str, Any] | None = None) -> dict[str, Any]:
    """The compare.json object of a comparison (see the module docstring); ``records`` =
    ``comparison.records()`` when the caller has them already."""
    meta = comparison.meta
    cfg = meta.get("config", {})
    out: dict[str, Any] = {
        "kind": COMPARE_KIND, "schema_version": COMPARE_SCHEMA_VERSION, "snapbench_version": __version__,
        "runs": runs, "reference": meta.get("reference"), "correction": meta.get("correction"),
        "correction_method": meta.get("correction_method"),
        "settings": {**settings, "permutations": cfg.get("permutations"), "clip": cfg.get("clip")},
        "n_queries": meta.get("n_queries"), "notes": list(notes),
        "definitions": {k: v for k, v in meta.items() if k not in _META_OWN},
    }
    rec = records if records is not None else comparison.records()
    out.update({name: rec[name] for name in RECORD_TYPES})
    return out


def write_compare_json(path: str | os.PathLike, obj: dict[str, Any]) -> None:
    """Write a compare.json object (strict JSON, NaN as null, compact), atomically."""
    write_json(path, obj, indent=None)


def _check_record(rec: Any, kinds: dict[str, str], where: str, path) -> dict[str, Any]:
    if not isinstance(rec, dict) or set(rec) != set(kinds):
        raise InputError(f"{where} must be an object with the fields {', '.join(kinds)}", path=path)
    out = {}
    for k, kind in kinds.items():
        v = rec[k]
        if kind == "float":
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
                raise InputError(f"{where}.{k} must be a number or null, got {v!r}", path=path)
            v = math.nan if v is None else float(v)
        elif kind == "int" and (isinstance(v, bool) or not isinstance(v, int)):
            raise InputError(f"{where}.{k} must be an integer, got {v!r}", path=path)
        elif kind == "str" and not isinstance(v, str):
            raise InputError(f"{where}.{k} must be a string, got {v!r}", path=path)
        out[k] = v
    return out


def read_compare_json(path: str | os.PathLike) -> dict[str, Any]:
    """A compare.json, checked (:class:`InputError` naming the file and the key), with every
    undefined number of the record lists as NaN."""
    obj = read_json(path, what="compare.json")
    if not isinstance(obj, dict) or obj.get("kind") != COMPARE_KIND:
        raise InputError(f"is not a compare.json (no \"kind\": \"{COMPARE_KIND}\")", path=path)
    if obj.get("schema_version") != COMPARE_SCHEMA_VERSION:
        raise InputError(f"has schema_version {obj.get('schema_version')!r}; this snapbench reads "
                         f"{COMPARE_SCHEMA_VERSION}", path=path)
    missing = [k for k in (*_HEAD, *RECORD_TYPES) if k not in obj]
    if missing:
        raise InputError(f"lacks {', '.join(missing)}", path=path)
    out = {k: obj[k] for k in _HEAD}
    for name, rtype in RECORD_TYPES.items():
        if not isinstance(obj[name], list):
            raise InputError(f"{name} must be a list of records", path=path)
        kinds = {f.name: str(f.type) for f in fields(rtype)}
        out[name] = [_check_record(r, kinds, f"{name}[{i}]", path) for i, r in enumerate(obj[name])]
    return out
