"""``run.json``: what made an output folder, and the one resume check every resumable command uses.

Every command that owns an output folder writes ``run.json`` starting with ``"kind"`` (the
command: ``corrupt``, ``encode``, ``run``, ``compare``, ``diagnose``) and ``"schema_version"``,
then its own fields, among them ``"fingerprint"``: everything the folder's outputs depend on.
:func:`check_resume` compares a new invocation's fingerprint with the recorded one: the same ->
resume; different -> refuse, naming what differs, unless forced; a folder another command (or
something else) wrote is never reused, even when forced.

Files written before ``kind`` existed are recognised by their keys (``corrupt``: ``seed`` and
``grid``; ``run``: ``schema`` and ``fingerprint``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, InputError, arg
from ..jsonable import write_json
from ..textio import read_json
from .names import RUN_CONFIG

__all__ = ["FINGERPRINT_WORDS", "RUN_KINDS", "RUN_JSON_SCHEMA", "write_run_json", "read_run_json", "run_json_kind", "check_resume",
           "read_run_config", "claim_output_dir", "open_run_dir", "output_kind"]

RUN_KINDS: tuple[str, ...] = ("corrupt", "encode", "run", "compare", "diagnose", "moor", "report")
RUN_JSON_SCHEMA = 2


def write_run_json(folder: str | os.PathLike, kind: str, body: Mapping[str, Any]) -> Path:
    """Write ``folder/run.json`` = ``{"kind", "schema_version", **body}`` atomically."""
    if kind not in RUN_KINDS:
        raise ValueError(f"unknown run.json kind {kind!r}")  # a programming error, not a user's
    path = Path(folder) / RUN_CONFIG
    write_json(path, {"kind": kind, "schema_version": RUN_JSON_SCHEMA, **body})
    return path


def run_json_kind(cfg: Mapping[str, Any]) -> str | None:
    """The command that wrote a parsed run.json (``None``: not snapbench's)."""
    kind = cfg.get("kind")
    if kind in RUN_KINDS:
        return str(kind)
    if kind is None and "fingerprint" in cfg and "schema" in cfg:
        return "run"
    if kind is None and "grid" in cfg and "seed" in cfg:
        return "corrupt"
    return None


def read_run_json(folder: str | os.PathLike, *, kind: str | None = None) -> dict[str, Any] | None:
    """``folder/run.json`` as a dict (``None`` when absent).

    With ``kind``: a run.json written by another command, or not by snapbench, is a
    :class:`ConfigError` (the folder holds someone else's outputs).  Malformed -> :class:`InputError`.
    """
    path = Path(folder) / RUN_CONFIG
    if not path.exists():
        return None
    cfg = read_json(path)
    if not isinstance(cfg, dict):
        raise InputError("must hold a JSON object", path=path)
    found = run_json_kind(cfg)
    if kind is not None and found != kind:
        raise _not_ours(Path(folder), found, kind)
    return cfg


def _not_ours(folder: Path, found: str | None, command: str) -> ConfigError:
    """The refusal of a folder whose run.json another command (``found``; ``None``: not snapbench) wrote."""
    who = f"'snapbench {found}'" if found else "something other than snapbench"
    return ConfigError(f"{folder} holds the output of {who}, not of 'snapbench {command}' (see its run.json); "
                       "use a new output folder")


def output_kind(folder: str | os.PathLike) -> str | None:
    """The command whose output ``folder`` holds, as its run.json says: the one way to ask what a
    folder is (``None``: no run.json, an unreadable one, or one that is not snapbench's)."""
    try:
        cfg = read_run_json(folder)
    except (OSError, InputError, ConfigError):
        return None
    return run_json_kind(cfg) if cfg is not None else None


def read_run_config(corrupt_dir: str | os.PathLike) -> dict[str, Any] | None:
    """``corrupt_dir/run.json`` as a dict, whatever wrote it (``None`` when absent)."""
    return read_run_json(corrupt_dir)


#: fingerprint key -> (what it is called in a refusal, words for some of its values).  A key not
#: listed is named as it is (``revision.<operator>``, ``opencv_major``...); a value without words is
#: shown as JSON, and a missing one (null) as "none".  Parameter names are :func:`arg` references, so
#: the CLI shows the flag (``--seed``, ``--no-measure``).
FINGERPRINT_WORDS: dict[str, tuple[str, dict[Any, str]]] = {
    "seed": (arg("seed"), {}),
    "grid": (arg("grid"), {None: "the default grid"}),
    "image_format": (arg("image_format"), {}),
    "variants": (arg("variants"), {}),
    "block_queries": (arg("block_queries"), {}),
    "gallery_shard_rows": (arg("gallery_shard_rows"), {None: "none (one gallery file)"}),
    "batch_size": (arg("batch_size"), {}),
    "severity_target": (arg("severity_target"), {}),
    "measure": ("measuring:", {False: f"off ({arg('measure')})", None: "on, the default"}),
    "dataset_queries_sha256": ("list of queries", {}),
    "dataset_gallery_sha256": ("gallery", {}),
    "encoder_fingerprint": (f"encoder ({arg('encoder')})", {}),
    "sources": ("variant sources (modes and conditions)", {}),
}


def _words(key: str, value: Any) -> str:
    words = FINGERPRINT_WORDS.get(key, ("", {}))[1]
    if isinstance(value, (bool, type(None))) and value in words:  # (1 == True: only bools and None)
        return words[value]
    return "none" if value is None else json.dumps(value, default=str)


def _describe(key: str, before: Any, now: Any) -> str:
    label = FINGERPRINT_WORDS.get(key, (key, {}))[0]
    short = all(isinstance(v, (int, float, str, bool, type(None))) for v in (before, now))
    if short and len(json.dumps([before, now], default=str)) < 80:
        return f"{label} {_words(key, before)} (this run: {_words(key, now)})"
    return label


def check_resume(folder: str | os.PathLike, kind: str, fingerprint: Mapping[str, Any], *,
                 force: bool = False, assume: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """The previous run.json of ``folder`` if this invocation may resume (or, forced, replace) it.

    ``None`` when there is none.  A different ``fingerprint`` is a :class:`ConfigError` listing every
    differing entry unless ``force``; a folder of another kind is refused even when forced.
    Values are compared as JSON (what the file holds).  ``assume`` gives the value of an entry that a
    folder written before that entry existed lacks (e.g. an operator revision: 1).
    """
    previous = read_run_json(folder, kind=kind)
    if previous is None:
        return None
    recorded = previous.get("fingerprint")
    now = json.loads(json.dumps(fingerprint, default=str))
    if not isinstance(recorded, dict):
        why = "made by an older snapbench (its run.json has no fingerprint)"
    else:
        recorded = {**json.loads(json.dumps(dict(assume or {}), default=str)), **recorded}
        keys = list(now) + [k for k in recorded if k not in now]
        diffs = [_describe(k, recorded.get(k), now.get(k)) for k in keys if recorded.get(k) != now.get(k)]
        why = f"made with a different {', '.join(diffs)}" if diffs else ""
    if why and not force:
        raise ConfigError(
            f"{Path(folder)} holds the output of a 'snapbench {kind}' {why}; use a new output folder, "
            f"or {arg('force')} to discard it", param="force")
    return previous


#: (command, kind of the output folder above ``--out``) -> where that command may write instead
_INSIDE_HINTS: dict[tuple[str, str], str] = {
    ("report", "run"): f" (or, without {arg('out')}, the run folder itself)",
}


def claim_output_dir(folder: str | os.PathLike, kind: str, *subdirs: str, command: str | None = None,
                     within: str | os.PathLike | None = None) -> dict[str, Any] | None:
    """Create (or reuse) ``folder`` (and ``subdirs`` inside it) as the output folder of ``snapbench <kind>``;
    return its previous run.json (``None`` when it has none).

    The rule, the same for every command: an output folder belongs to one command and holds no other
    command's output folder.  So a :class:`ConfigError`, before anything is created, when

    * ``folder`` holds a run.json of another kind, or one that is not snapbench's;
    * ``folder`` is inside another output folder: a folder above it holds a snapbench run.json, of any
      kind (a run inside a run's ``fusion/`` would become one of its baselines);
    * ``folder`` is the folder of one target of a run (``<target>/report.json`` without a run.json of
      its own: a copied ``RUN/IT2IT``), whose per_query.csv the new output would overwrite.

    ``within`` is the one exception: the output folder the caller itself owns (a run of several
    encoders claims ``OUT/<name>`` within ``OUT``).  ``command`` names the command in the refusals when
    it is not ``kind`` (``snapbench demo`` writes a run).  A folder that cannot hold outputs is an
    :class:`~snapbench.errors.OutputError` (:func:`snapbench.atomic.prepare_output_dir`).  Call it
    first, before any work: before a dataset is loaded or a model opened."""
    from ..atomic import prepare_output_dir

    name = command or kind
    try:
        previous = read_run_json(folder)  # what the folder itself holds is named first
    except PermissionError:
        previous = None  # a folder it cannot read: prepare_output_dir says so
    found = None if previous is None else run_json_kind(previous)
    if previous is not None and found != kind:
        raise _not_ours(Path(folder), found, name)
    _refuse_nested(Path(folder), name, within)
    prepare_output_dir(folder)
    if subdirs:
        prepare_output_dir(folder, *subdirs)
    return previous


def _refuse_nested(folder: Path, command: str, within: str | os.PathLike | None) -> None:
    """The part of :func:`claim_output_dir`'s rule about the folders above ``folder``, and about
    ``folder`` being a run's target folder."""
    from .dirs import RunDir

    here = Path(os.path.abspath(folder))
    allowed = None if within is None else Path(os.path.abspath(within))
    for above in here.parents:
        found = output_kind(above) if above != allowed else None
        if found is not None:
            shown = above if folder.is_absolute() else Path(os.path.relpath(above))
            raise ConfigError(f"{folder} is inside {shown}, the output folder of 'snapbench {found}' (see its "
                              f"run.json); the output of 'snapbench {command}' goes to a folder of its own: use one "
                              f"outside {shown}{_INSIDE_HINTS.get((command, found), '')}")
    try:
        target = RunDir(here.parent).report(here.name).is_file() and not (here / RUN_CONFIG).exists()
    except OSError:
        return
    if target:
        raise ConfigError(f"{folder} is the folder of one target of a run (it holds report.json and no run.json, "
                          f"like RUN/IT2IT), not an output folder of 'snapbench {command}'; use a new output folder")


# appended: the one check that a folder is a run directory to read (report, report --traffic, compare)
if TYPE_CHECKING:
    from .dirs import RunDir


def _soft_run_json(folder: Path) -> dict[str, Any]:
    """run.json when it can be read, else ``{}`` (only used to explain what a folder is instead)."""
    try:
        return read_run_json(folder) or {}
    except (InputError, ConfigError):
        return {}


def open_run_dir(folder: str | os.PathLike) -> RunDir:
    """``folder`` as a run directory to read (a :class:`~snapbench.layout.RunDir` holding at least one
    ``<target>/report.json``); otherwise an :class:`InputError` that says what ``folder`` is instead
    and what to give: a file, the parent folder of a several-encoder run (naming its encoder folders),
    another command's output folder, or a run that has not written a report yet."""
    from .dirs import RunDir

    rd = RunDir(folder)
    what = "a snapbench run directory (the output folder of 'snapbench run' or 'snapbench demo', with <MODE>/report.json)"
    if not rd.root.exists():
        raise InputError(f"no such folder (expected {what})", path=rd.root)
    if not rd.root.is_dir():
        raise InputError(f"is a file, not {what}", path=rd.root)
    if rd.targets():
        return rd
    run = _soft_run_json(rd.root)
    kind = run_json_kind(run) if run else None
    runs = run.get("encoder_runs") if kind == "run" else None
    if isinstance(runs, list) and runs:
        subs = [str(rd.root / str(r.get("path"))) for r in runs if isinstance(r, dict) and r.get("path")]
        raise InputError(f"is the folder of a run of {len(runs)} encoders; each encoder's run directory is a "
                         f"folder inside it: give one of {', '.join(subs)}", path=rd.root)
    if kind is not None and kind != "run":
        from .inputs import run_dir_instead

        raise InputError(f"holds the output of 'snapbench {kind}', not {what}{run_dir_instead(rd.root, kind, run)}",
                         path=rd.root)
    if kind == "run" and run.get("status") != "complete":
        raise InputError("holds a run that has not written any report yet (interrupted?); rerun the same "
                         "'snapbench run' command to finish it", path=rd.root)
    raise InputError(f"holds no <MODE>/report.json: not {what}", path=rd.root)
