"""What a comparison reads: one :class:`ModelSource` per model, from the paths a user gives.

A path is

* a **run folder** (``snapbench run`` DIR: ``<target>/report.json`` + ``<target>/per_query.csv``);
  the model is called by its run.json ``encoder`` (what was given to ``--encoder``), or the folder
  name when there is no run.json;
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
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigError, InputError, arg
from ..layout import RunDir, read_run_json, run_json_kind
from ..modes import target_id
from ..report.rundir import read_target_values
from ..schema import Report, read_report
from ..textio import read_json

__all__ = ["UNNAMED", "ModelSource", "open_sources"]

#: The target of an evaluate report that does not record which target its scores are.
UNNAMED = "evaluate"

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


_ACCEPTED = ("compare takes run folders ('snapbench run' output), folders of a several-encoder run and report files "
             "of 'snapbench evaluate --per-query'")


def _run_of_report(path: Path) -> Path | None:
    """The run folder a ``<target>/report.json`` (or ``fusion/<name>/report.json``) lies in."""
    for folder in (path.parent.parent, path.parent.parent.parent):
        if (folder / "run.json").is_file() and path.parent.name and RunDir(folder).targets():
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
        what = ("a compare.json" if isinstance(obj, dict) and obj.get("kind") == "snapbench compare" else
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
    target = target_id(str(mode)) if mode else UNNAMED
    return ModelSource(path.stem, path, "report", _targets=[target], _reports={target: rep})


def _run_folder(path: Path, run: dict[str, Any], name: str | None = None, parent: Path | None = None) -> ModelSource:
    targets = RunDir(path).targets()
    if not targets:
        raise InputError("is not a run folder: it holds no <target>/report.json (target: a mode, MOOR or "
                         "fusion/<name>)", path=path)
    default = name or str(run.get("encoder") or path.resolve().name)
    return ModelSource(default, path, "run", run, parent, _targets=targets)


def _expand(path: Path) -> list[ModelSource]:
    """The model(s) one path stands for."""
    if not path.exists():
        raise InputError("no such file or folder", path=path)
    if path.is_file():
        return [_report_file(path)]
    run = read_run_json(path) or {}
    kind = run_json_kind(run) if run else "run"
    if kind != "run":
        from ..layout.inputs import run_dir_instead

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
