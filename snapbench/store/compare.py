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

What a comparison reads: one :class:`ModelSource` per model, from the paths a user gives.

A path is

* a **run folder** (``snapbench run`` DIR: ``<target>/report.json`` + ``<target>/per_query.csv``);
  the model is called by its run.json ``encoder`` (what was given to ``--encoder``), or the folder
  name when there is no run.json; one encoder's folder of a several-encoder run is called by its name
  there (the parent's run.json ``encoder_runs``), given alone or through its parent;
* a **several-encoder run folder** (``snapbench run -e A -e B --out DIR``: its run.json lists
  ``encoder_runs``): it stands for each of its encoder runs, called by their folder names;
* an **evaluate report file** (``snapbench evaluate --per-query``: a report.json that carries the
  per-query values): one target, called by the file's stem.  Its target is the one its
  ``meta.mode`` records (``--mode``, or ``MOOR`` for a ``snapbench moor`` folder); scores of unknown
  origin record none: the target is then :data:`UNNAMED` until the comparison names it
  (:meth:`ModelSource.name_target`: ``--modes`` with one target).

``names`` (``--name``, one per model after the expansion, in order) override the names; two models
with one name are an error.  Reports and per-query tables are read when first needed, only for the
targets compared.

Which files of a compare folder the previous compare wrote, so that a new compare into the folder
leaves none of them behind that it does not write itself (other targets, metrics or formats, or an
interrupted compare).

The folder is compare's own (run.json ``kind: "compare"``), but only the files compare itself wrote
are removed, never a file it does not name.  run.json records them:

* ``files`` -- the folder's compare files (relative paths), with ``status: "complete"`` once written;
* while a compare writes (``status: "writing"``), ``files`` holds the previous compare's files and
  every file this one may write (:func:`possible_files`), so a compare interrupted half-way is
  cleaned up by the next one too.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path, PurePosixPath
from typing import Any, get_args, get_type_hints

import numpy as np

from .._version import __version__
from ..compare.records import Comparison
from ..core.errors import ConfigError, InputError, arg
from ..core.records import Reader, Report, read_fields
from ..core.userfiles import read_json
from . import CompareDir, RunDir, read_run_json, run_json_kind
from .atomic import write_json
from .folders import COMPARE_JSON, RUN_CONFIG, SCHEMA_VERSIONS, check_schema_version, refuse_unfinished, unfinished_run
from .rundir import read_report, read_target_values

__all__ = ['COMPARE_FIGURES', 'RECORD_TYPES', 'read_compare_json', 'write_compare_json', 'UNNAMED', 'ModelSource', 'open_sources', 'possible_files', 'previous_files', 'relative_names']

_KIND = "snapbench compare"
#: The figures a compare writes per target and metric (``figures/<stem>_<name>.png|pdf``), in report order.
COMPARE_FIGURES = ("effective", "heatmap", "primitives", "ranks")
#: The record lists of compare.json and the type of their records, in file order: the lists of
#: :class:`~snapbench.compare.records.Comparison`.
RECORD_TYPES: dict[str, type] = {name: get_args(hint)[0] for name, hint in get_type_hints(Comparison).items()
                                 if name != "meta"}
_HEAD = ("kind", "schema_version", "snapbench_version", "runs", "reference", "correction", "correction_method",
         "settings", "n_queries", "notes", "definitions")
_META_OWN = ("models", "reference", "correction", "correction_method", "config", "n_queries")


def write_compare_json(path: str | os.PathLike, comparison: Comparison, runs: list[dict[str, Any]],
                       settings: dict[str, Any], notes: list[str], records: dict[str, Any] | None = None) -> None:
    """Write the compare.json of a comparison (see the module docstring; strict JSON, NaN as null,
    compact), atomically; ``records`` = ``comparison.records()`` when the caller has them already."""
    meta = comparison.meta
    cfg = meta.get("config", {})
    out: dict[str, Any] = {
        "kind": _KIND, "schema_version": SCHEMA_VERSIONS[COMPARE_JSON], "snapbench_version": __version__,
        "runs": runs, "reference": meta.get("reference"), "correction": meta.get("correction"),
        "correction_method": meta.get("correction_method"),
        "settings": {**settings, "permutations": cfg.get("permutations"), "clip": cfg.get("clip")},
        "n_queries": meta.get("n_queries"), "notes": list(notes),
        "definitions": {k: v for k, v in meta.items() if k not in _META_OWN},
    }
    rec = records if records is not None else comparison.records()
    out.update({name: rec[name] for name in RECORD_TYPES})
    write_json(path, out, indent=None)


def _record(rec: Any, rtype: type, names: list[str], r: Reader) -> dict[str, Any]:
    """One record of a list: exactly its type's fields, each checked (an undefined number as NaN)."""
    if not isinstance(rec, dict) or rec.keys() != set(names):
        r.fail(f"must be an object with the fields {', '.join(names)}")
    return read_fields(rtype, rec, r)


def read_compare_json(path: str | os.PathLike) -> dict[str, Any]:
    """A compare.json, checked (:class:`InputError` naming the file and the key), with every
    undefined number of the record lists as NaN."""
    obj = read_json(path, what=COMPARE_JSON)
    if not isinstance(obj, dict) or obj.get("kind") != _KIND:
        raise InputError(f"is not a compare.json (no \"kind\": \"{_KIND}\")", path=path)
    check_schema_version(obj, COMPARE_JSON, path)
    missing = [k for k in (*_HEAD, *RECORD_TYPES) if k not in obj]
    if missing:
        raise InputError(f"lacks {', '.join(missing)}", path=path)
    out = {k: obj[k] for k in _HEAD}
    for name, rtype in RECORD_TYPES.items():
        if not isinstance(obj[name], list):
            raise InputError(f"{name} must be a list of records", path=path)
        names, r = [f.name for f in fields(rtype)], Reader(name, path, prefix="")
        out[name] = [_record(rec, rtype, names, r.at(i)) for i, rec in enumerate(obj[name])]
    return out


#: The target of an evaluate report that does not record which target its scores are.
UNNAMED = "evaluate"


_ACCEPTED = ("compare takes run folders ('snapbench run' output), folders of a several-encoder run and report files "
             "of 'snapbench evaluate --per-query'")


def _run_of_report(path: Path) -> Path | None:
    """The run folder a ``<target>/report.json`` (or ``fusion/<name>/report.json``) lies in."""
    for folder in (path.parent.parent, path.parent.parent.parent):
        if (folder / RUN_CONFIG).is_file() and path.parent.name and RunDir(folder).targets():
            return folder
    return None


def _not_json(path: Path, error: InputError) -> str:
    """Why a file is no report: not text at all (an image: the decoder's "save as UTF-8" would
    mislead), or the JSON reader's problem (with its line and column)."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return error.problem
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as e:
        if e.start < len(head) - 3:  # not a character cut by the 4 KiB boundary
            return "it is not text"
    return "it is not text" if b"\0" in head else error.problem


def _report_file(path: Path) -> ModelSource:
    try:
        obj = read_json(path, what="report")
    except InputError as e:  # not JSON (a JSONL manifest, a CSV table, an image...)
        raise InputError(f"is neither a run folder nor a report file ({_not_json(path, e)}); {_ACCEPTED}",
                         path=path) from None
    if not isinstance(obj, dict) or not {"conditions", "meta"} <= obj.keys():
        what = ("a compare.json" if isinstance(obj, dict) and obj.get("kind") == _KIND else
                "JSON without a report's 'conditions' and 'meta'")
        raise InputError(f"is neither a run folder nor a report file (it is {what}); {_ACCEPTED}", path=path)
    rep = Report.from_json(obj, path=path)
    if rep.per_query is None:
        run = _run_of_report(path)
        if run is not None:
            raise InputError(f"is a report of the run folder {run} (without per-query values); give the run folder "
                             "to compare the run", path=path)
        raise InputError("is a report without per-query values; write it with 'snapbench evaluate --per-query' "
                         "to compare it", path=path)
    mode = rep.meta.get("mode")
    target = str(mode) if mode else UNNAMED
    return ModelSource(path.stem, path, "report", _targets=[target], _reports={target: rep})


def _run_folder(path: Path, run: dict[str, Any], name: str | None = None, parent: Path | None = None) -> ModelSource:
    targets = RunDir(path).targets()
    if not targets:
        raise InputError("is not a run folder: it holds no <target>/report.json (target: a mode, MOOR or "
                         "fusion/<name>)", path=path)
    default = name or _name_in_parent(path) or str(run.get("encoder") or path.resolve().name)
    return ModelSource(default, path, "run", run, parent, _targets=targets)


def _name_in_parent(path: Path) -> str | None:
    """The name of ``path`` in the several-encoder run that holds it (its parent's run.json lists it under
    ``encoder_runs``), so that one encoder's run is called the same given alone or through its parent."""
    try:
        listed = (read_run_json(path.resolve().parent) or {}).get("encoder_runs")
    except (OSError, InputError, ConfigError):
        return None
    here = path.resolve().name
    return next((str(e["name"]) for e in listed or () if isinstance(e, dict) and e.get("path") == here
                 and e.get("name")), None)


def _expand(path: Path) -> list[ModelSource]:
    """The model(s) one path stands for."""
    if not path.exists():
        raise InputError("no such file or folder", path=path)
    if path.is_file():
        return [_report_file(path)]
    run = read_run_json(path) or {}
    kind = run_json_kind(run) if run else "run"
    if kind != "run":
        from .folders import run_dir_instead

        raise InputError(f"is not a run folder: its run.json was written by "
                         f"{'snapbench ' + kind if kind else 'something other than snapbench'}"
                         f"{run_dir_instead(path, kind, run)}", path=path)
    listed = run.get("encoder_runs")
    if not isinstance(listed, list):
        return [_run_folder(path, run)]
    out = []
    for entry in listed:
        if not isinstance(entry, dict) or not entry.get("path") or not entry.get("name"):
            raise InputError(f"run.json lists an encoder run without name and path: {entry!r}", path=path)
        sub = path / str(entry["path"])
        if not sub.is_dir():
            raise InputError(f"run.json lists the encoder run {entry['name']!r} but {sub} is missing", path=path)
        out.append(_run_folder(sub, read_run_json(sub, kind="run") or {}, str(entry["name"]), path))
    return out


def open_sources(paths: Sequence[str | os.PathLike], names: Sequence[str] | None = None) -> list[ModelSource]:
    """The models ``paths`` stand for (see the module docstring), named by ``names`` when given."""
    if not paths:
        raise ConfigError("needs at least one run folder or report file", param="paths")
    for p in paths:
        refuse_unfinished(p)
    sources = [s for p in paths for s in _expand(Path(p))]
    if names is not None:
        names = [str(n) for n in names]
        if len(names) != len(sources):
            raise ConfigError(f"needs one name per model: {len(names)} for {len(sources)} models "
                              f"({', '.join(s.label for s in sources)})", param="names")
        if any(not n.strip() for n in names):
            raise ConfigError("a model name must not be empty", param="names")
        for s, n in zip(sources, names):
            s.name = n
    seen: dict[str, ModelSource] = {}
    for s in sources:
        if s.name in seen:
            raise ConfigError(f"two models are called {s.name!r}: {seen[s.name].path} and {s.path}; give each model "
                              f"its own name with {arg('names')} (one per model, in order)", param="names")
        seen[s.name] = s
    if len(sources) < 2:
        # no param: the CLI would put the argument's placeholder (RUN_DIR) in front, naming nothing typed
        raise ConfigError(f"a comparison needs at least two models; {', '.join(s.label for s in sources)} is one "
                          "(give more run folders, or a run folder of several encoders)")
    return sources


_TABLE_SUFFIXES = ("", "_delta", "_ranking", "_pairs")


def possible_files(out: CompareDir, targets: Sequence[str], metrics: Sequence[str]) -> set[Path]:
    """Every file a compare of ``targets`` x ``metrics`` can write in ``out``, in any format."""
    files = {out.compare_json, out.findings, out.html, out.run_json}
    files |= {out.record_file(name, ext) for name in RECORD_TYPES for ext in ("csv", "parquet")}
    for t in targets:
        for m in metrics:
            stem = CompareDir.stem(t, m)
            files |= {out.table(stem + s, ext) for s in _TABLE_SUFFIXES for ext in ("md", "tex")}
            files |= {out.figure(f"{stem}_{f}", ext) for f in COMPARE_FIGURES for ext in ("png", "pdf")}
    return files


def _inside(out: CompareDir, name: Any) -> Path | None:
    """``out/name`` for a relative path that stays inside the folder (a hand-edited run.json must
    not make compare remove a file elsewhere)."""
    if not isinstance(name, str) or not name:
        return None
    rel = PurePosixPath(name)
    if rel.is_absolute() or ".." in rel.parts:
        return None
    return out.root.joinpath(*rel.parts)


def previous_files(out: CompareDir, run_json: Mapping[str, Any] | None) -> set[Path]:
    """The files the compare that wrote ``run_json`` (the folder's parsed run.json) left in ``out``."""
    if run_json is None:
        return set()
    names = run_json.get("files")
    if not isinstance(names, list):
        return set()
    return {p for p in (_inside(out, n) for n in names) if p is not None}


def relative_names(out: CompareDir, files: Iterable[Path]) -> list[str]:
    """``files`` as sorted paths relative to the folder, ``/``-separated (run.json ``files``)."""
    return sorted({p.relative_to(out.root).as_posix() for p in files})


PerQueryArrays = tuple[list[str], dict[str, dict[str, np.ndarray]]]


@dataclass
class ModelSource:
    """One model of a comparison: where it was read from and its reports, target by target.

    ``kind`` is ``"run"`` (a run folder) or ``"report"`` (an evaluate report file); ``run`` the
    run.json body (empty when there is none); ``parent`` the several-encoder run folder it was
    listed in."""

    name: str
    path: Path
    kind: str
    run: dict[str, Any] = field(default_factory=dict)
    parent: Path | None = None
    _targets: list[str] = field(default_factory=list)
    _reports: dict[str, Report] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """``'name' (path)``: how messages name the model."""
        return f"{self.name!r} ({self.path})"

    def to_json(self) -> dict[str, Any]:
        """The model as compare.json ``runs`` lists it (and the page's table of models shows it)."""
        return {"name": self.name, "path": str(self.path), "kind": self.kind, "encoder": self.run.get("encoder"),
                "variants": self.variants, "dataset": self.run.get("dataset"),
                "parent": None if self.parent is None else str(self.parent)}

    @property
    def targets(self) -> list[str]:
        """The targets it has a report of (modes, ``MOOR``, ``fusion/<name>``; a report file: one)."""
        return list(self._targets)

    @property
    def target_named(self) -> bool:
        """``False`` for an evaluate report that does not record its target (see :data:`UNNAMED`)."""
        return self._targets != [UNNAMED] or self.kind != "report"

    def name_target(self, target: str) -> None:
        """Take the report of an evaluate report that records no target as the report of ``target``."""
        if not self.target_named:
            self._reports = {target: self._reports[UNNAMED]}
            self._targets = [target]

    @property
    def unfinished(self) -> str | None:
        """The warning for a run that stopped before it wrote every report (``None``: finished, or a
        report file); see :func:`snapbench.store.folders.unfinished_run`."""
        return unfinished_run(self.run, self.path) if self.kind == "run" and self.run else None

    @property
    def variants(self) -> str | None:
        """Where its query variants came from (``generated`` / ``released``; ``None``: not recorded)."""
        v = self.run.get("variants")
        return None if v is None else str(v)

    def report(self, target: str) -> Report:
        """The report of ``target`` (read once)."""
        if target not in self._reports:
            self._reports[target] = read_report(RunDir(self.path).report(target))
        return self._reports[target]

    def per_query(self, target: str) -> PerQueryArrays:
        """``(query_ids, {condition: {metric: values}})`` of ``target``; :class:`InputError` when the
        run or report has none."""
        if self.kind == "report":
            pq = self.report(target).per_query
            if pq is None:  # checked when the file was opened; kept for a report replaced since
                raise InputError("carries no per-query values", path=self.path)
            return list(pq.query_ids), {c: {m: pq.array(c, m) for m in per} for c, per in pq.values.items()}
        got = read_target_values(self.path, target)
        if got is None:
            raise InputError(f"the run has no per-query values of {target} ({RunDir(self.path).per_query(target)} "
                             "is missing): it cannot be compared query by query", path=self.path)
        return got
