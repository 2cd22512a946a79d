"""snapbench's own output folders given where an input is expected: say what they are and what to pass.

A run folder given to ``snapbench diagnose`` is a folder of images (the report's figures); a
``snapbench corrupt`` folder given to ``snapbench run`` is a JSONL manifest whose records are
variants.  Both would be read, wrongly or with a puzzling error.  Every command that reads a dataset
or a query set asks :func:`refuse_output_folder` first: a folder whose run.json is snapbench's (the
one way to ask what a folder is: :func:`~snapbench.layout.output_kind`), a file or folder inside
one (a run's target folder ``RUN/IT2IT``, its ``figures/``) is an :class:`~snapbench.errors.InputError` naming
the command that wrote it, what it holds and, where run.json records it, what to pass instead.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from .runjson import output_kind, read_run_json

__all__ = ["OUTPUT_CONTENTS", "OutputFolder", "find_output_folder", "refuse_output_folder", "run_dir_instead"]

#: What the output folder of each command holds, in words.
OUTPUT_CONTENTS: dict[str, str] = {
    "corrupt": "corrupted variants of queries and their manifest.jsonl",
    "encode": "embeddings and similarity scores",
    "run": "a run's reports per mode, its report.html and figures",
    "compare": "a comparison of runs (compare.json, compare.html, figures)",
    "diagnose": "a diagnosis of queries (diagnose.csv, summary.json, diagnose.html)",
    "moor": "MOOR scores",
    "report": "a run's report (report.html, tables, figures)",
}


@dataclass(frozen=True)
class OutputFolder:
    """The snapbench output folder an input path is, or is inside of."""

    folder: Path
    kind: str
    #: the input path itself is this folder (False: a file or folder inside it)
    itself: bool
    run: dict[str, Any] = field(default_factory=dict)

    def describe(self, path: Path) -> str:
        """``is the output folder of 'snapbench run' (...)`` / ``is inside RUN, the output folder of ...``."""
        # snapbench demo writes a run and says so in run.json
        command = "demo" if self.kind == "run" and self.run.get("command") == "demo" else self.kind
        what = f"the output folder of 'snapbench {command}' ({OUTPUT_CONTENTS.get(self.kind, 'its outputs')})"
        return f"is {what}" if self.itself else f"is inside {self.folder}, {what}"

    def instead(self) -> str:
        """What run.json says the folder was made from: the thing to pass instead, where known."""
        run = self.run
        if self.kind == "run" and isinstance(run.get("encoder_runs"), list) and "dataset_info" not in run:
            # a run of several encoders: each encoder's run.json records the dataset
            for sub in run["encoder_runs"]:
                if isinstance(sub, dict) and sub.get("path"):
                    return OutputFolder(self.folder / str(sub["path"]), "run", True,
                                        _soft_run_json(self.folder / str(sub["path"]))).instead()
        if self.kind == "run":
            info = run.get("dataset_info")
            root = info.get("root") if isinstance(info, dict) else None
            if root:
                return f"pass the dataset the run was made from: {root}"
            if run.get("dataset"):
                return f"pass the dataset the run was made from ({run['dataset']})"
        if self.kind == "corrupt":
            return ("pass the dataset or query manifest the variants were made from (snapbench makes the variants "
                    "itself); to encode these variants, give this folder to 'snapbench encode'")
        if self.kind == "encode" and run.get("corrupt_dir"):
            return f"pass the dataset itself (these embeddings were made from {run['corrupt_dir']})"
        if self.kind == "report" and run.get("run_dir"):
            return f"pass the dataset itself (this report is of the run {run['run_dir']})"
        return "pass the dataset itself"


def _soft_run_json(folder: Path) -> dict[str, Any]:
    try:
        return read_run_json(folder) or {}
    except (OSError, ValueError):
        return {}


def find_output_folder(path: str | os.PathLike) -> OutputFolder | None:
    """The snapbench output folder ``path`` is or lies inside (the nearest one: a run's target folder
    ``RUN/IT2IT`` lies inside its run); ``None`` otherwise."""
    p = Path(os.path.abspath(path))
    start = p if p.is_dir() else p.parent
    for d in (start, *start.parents):
        kind = output_kind(d)
        if kind is not None:
            return OutputFolder(d, kind, d == p, _soft_run_json(d))
    return None


def refuse_output_folder(path: str | os.PathLike, expected: str, *, accept: Sequence[str] = ()) -> None:
    """An :class:`InputError` when ``path`` is (or is inside) a snapbench output folder whose kind is
    not in ``accept``: ``"RUN: is the output folder of 'snapbench run' (...), not a dataset; pass the
    dataset the run was made from: /data/x"``.  ``expected`` names what the command wanted."""
    found = find_output_folder(path)
    if found is None or found.kind in accept:
        return
    raise InputError(f"{found.describe(Path(path))}, not {expected}; {found.instead()}", path=Path(path))


def run_dir_instead(folder: str | os.PathLike, kind: str | None, run: dict[str, Any] | None = None) -> str:
    """Where a run directory is expected (report, compare) but ``folder`` holds the output of
    ``snapbench <kind>``: what to give instead, in words (``""`` when there is nothing to add)."""
    run = run or {}
    if kind == "diagnose":
        return (f"; to see a run under this traffic, give it to the run's report: snapbench report RUN --traffic "
                f"{folder}")
    if kind == "compare":
        return f"; it is a comparison already: open {Path(folder) / 'compare.html'}"
    if kind == "report" and run.get("run_dir"):
        return f"; it is a report of the run {run['run_dir']}: give that folder"
    if kind in ("corrupt", "encode", "moor"):
        return "; give the output folder of 'snapbench run' (which corrupts, encodes and evaluates in one command)"
    return ""
