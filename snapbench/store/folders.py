"""File and folder names shared by the stages (the one copy of each; the names a dataset folder is
searched for, ``queries.jsonl`` ..., live with their reader, :mod:`snapbench.data.jsonl`).

The output folders of the stages as objects: every writer and reader of a folder names its files here.

::

    CorruptDir(out).image_relpath("img/motion_blur/s2", "q1", ".png")  # images/img__motion_blur__s2/q1.png
    EncodeDir(out).path_scores("clean", "II")                        # paths/clean.II.npy
    RunDir(out).report("MOOR")                                       # MOOR/report.json

A *target* of a run is what one report evaluates: a retrieval mode (``I2I`` ... ``T2IT``), ``MOOR``,
or a fusion baseline ``fusion/<name>``; its folder is ``DIR/<target>``.

``run.json``: what made an output folder, and the one resume check every resumable command uses.

Every command that owns an output folder writes ``run.json`` starting with ``"kind"`` (the
command: ``corrupt``, ``encode``, ``run``, ``compare``, ``diagnose``) and ``"schema_version"``,
then its own fields, among them ``"fingerprint"``: everything the folder's outputs depend on.
:func:`check_resume` compares a new invocation's fingerprint with the recorded one: the same ->
resume; different -> refuse, naming what differs, unless forced; a folder another command (or
something else) wrote is never reused, even when forced.

The output folder of ``snapbench stress``: every file name it holds, and its writers.

::

    DIR/run.json                      kind "stress", the fingerprint (resume)
    DIR/records/<condition>.jsonl     the gallery as the encoder saw it (clean included)
    DIR/vectors/queries.npy           query text vectors
    DIR/vectors/clean.npy             clean record text vectors
    DIR/vectors/<condition>.npy       vectors of the records whose text the condition changed
    DIR/vectors/<condition>.rows.npy  their row numbers (int64)
    DIR/per_query.csv                 mode,query_id,condition,metric,value
    DIR/stress.json                   the paired deltas per condition x group
    DIR/report.html

snapbench's own output folders given where an input is expected: say what they are and what to pass.

A run folder given to ``snapbench diagnose`` is a folder of images (the report's figures); a
``snapbench corrupt`` folder given to ``snapbench run`` is a JSONL manifest whose records are
variants.  Both would be read, wrongly or with a puzzling error.  Every command that reads a dataset
or a query set asks :func:`refuse_output_folder` first: a folder whose run.json is snapbench's (the
one way to ask what a folder is: :func:`~snapbench.store.output_kind`), a file or folder inside
one (a run's target folder ``RUN/IT2IT``, its ``figures/``) is an :class:`~snapbench.core.errors.InputError` naming
the command that wrote it, what it holds and, where run.json records it, what to pass instead.

Id lists: one id per line (``query_ids.txt``, ``gallery_ids.txt``).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..core import targets as modes
from ..core.conditions import condition_to_filename
from ..core.errors import ConfigError, InputError, OutputError, arg
from ..core.jsonable import dumps
from ..core.records import REPORT_SCHEMA_VERSION
from ..core.targets import FUSION_PREFIX, TARGET_ORDER
from ..core.userfiles import load_npy, read_json, read_text
from .atomic import being_written, save_npy_atomic, write_json, write_text_atomic

__all__ = ['CorruptDir', 'EncodeDir', 'RunDir', 'MoorDir', 'CompareDir', 'FINGERPRINT_WORDS', 'REPORT_JSON', 'PER_QUERY_CSV', 'COMPARE_JSON', 'TRAFFIC_JSON', 'DIAGNOSE_CSV', 'DIAGNOSE_SUMMARY', 'DIAGNOSE_HTML', 'SCHEMA_VERSIONS', 'check_schema_version', 'write_run_json', 'read_run_json', 'run_json_kind', 'check_resume', 'claim_output_dir', 'refuse_unfinished', 'remove_stale', 'undone_on_failure', 'open_run_dir', 'output_kind', 'StressDir', 'STRESS_RECORDS_DIR', 'STRESS_VECTORS_DIR', 'OutputFolder', 'find_output_folder', 'refuse_output_folder', 'run_dir_instead', 'read_ids', 'write_ids', 'find_ids']

QUERY_IDS = "query_ids.txt"
GALLERY_IDS = "gallery_ids.txt"
MANIFEST = "manifest.jsonl"
SKIPS = "skips.jsonl"
RUN_CONFIG = "run.json"
REPORT_JSON = "report.json"  # each target's report (run: DIR/<target>/, evaluate --out)
PER_QUERY_CSV = "per_query.csv"
COMPARE_JSON = "compare.json"
TRAFFIC_JSON = "traffic.json"
DIAGNOSE_CSV = "diagnose.csv"  # diagnose's OUT: one row per (query, side, detector)
DIAGNOSE_SUMMARY = "summary.json"  # diagnose's OUT: the traffic mix
DIAGNOSE_HTML = "diagnose.html"
EMBEDDINGS_DIR = "embeddings"  # encode's OUT/embeddings, run's DIR/embeddings
PATHS_DIR = "paths"  # encode's OUT/paths
_DROPPED_QUERIES = "dropped_queries.json"  # encode's and run's queries left out of every state
STRESS_RECORDS_DIR = "records"  # stress's OUT/records
STRESS_VECTORS_DIR = "vectors"  # stress's OUT/vectors
#: The four similarity paths of a dual encoder, in this order everywhere (weights, files, reports).
PATH_NAMES: tuple[str, str, str, str] = modes.PATHS  # snapbench.core.targets: the one table of paths and modes
RUN_SUFFIXES = (".run", ".trec")
_GALLERY_STEM = "gallery"
_MODALITIES = ("image", "text")


@dataclass(frozen=True)
class _Folder:
    """An output folder: its ``root``; its files are class attributes (:class:`_Under`) and methods."""

    root: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root))

    @property
    def run_json(self) -> Path:
        """``run.json``: what made the folder (every command writes one)."""
        return self.root / RUN_CONFIG


class _Under:
    """A file or folder at a fixed place under an output folder's root: ``manifest = _Under(MANIFEST)``."""

    def __init__(self, *parts: str) -> None:
        self.parts = parts

    def __get__(self, folder: _Folder | None, owner: type | None = None) -> Any:
        return self if folder is None else folder.root.joinpath(*self.parts)


@dataclass(frozen=True)
class _Reported(_Folder):
    """An output folder with a report's ``tables/<name>.{md,tex}`` and ``figures/<name>.{png,pdf}``."""

    tables = _Under("tables")
    figures = _Under("figures")

    def table(self, name: str, ext: str) -> Path:
        return self.tables / f"{name}.{ext}"

    def figure(self, name: str, ext: str) -> Path:
        return self.figures / f"{name}.{ext}"


@dataclass(frozen=True)
class CorruptDir(_Folder):
    """``snapbench corrupt`` OUT: run.json, manifest.jsonl, skips.jsonl, images/<condition>/<id><ext>."""

    manifest = _Under(MANIFEST)
    skips = _Under(SKIPS)
    images = _Under("images")

    def image_dir(self, condition_id: str) -> Path:
        """The folder of one condition's variants."""
        return self.images / condition_to_filename(condition_id)

    def image_relpath(self, condition_id: str, query_id: str, extension: str) -> str:
        """The manifest's ``path`` of a variant (relative to the folder, "/"-separated): a file of
        :meth:`image_dir`."""
        return f"{self.image_dir(condition_id).relative_to(self.root).as_posix()}/{query_id}{extension}"


@dataclass(frozen=True)
class EncodeDir(_Folder):
    """``snapbench encode`` OUT: id lists, embeddings/<stem>.<modality>.npy, paths/<stem>.<path>.npy."""

    query_ids = _Under(QUERY_IDS)
    gallery_ids = _Under(GALLERY_IDS)
    embeddings = _Under(EMBEDDINGS_DIR)
    paths = _Under(PATHS_DIR)
    dropped_queries = _Under(_DROPPED_QUERIES)

    def embedding(self, condition_id: str | None, modality: str) -> Path:
        """Query embeddings of a condition, or the gallery's (``condition_id=None``); modality
        ``image``, ``text`` or ``joint`` (a native joint model)."""
        if modality not in (*_MODALITIES, "joint"):
            raise ValueError(f"modality must be one of {_MODALITIES + ('joint',)}, got {modality!r}")
        stem = _GALLERY_STEM if condition_id is None else condition_to_filename(condition_id)
        return self.embeddings / f"{stem}.{modality}.npy"

    def path_scores(self, condition_id: str, path: str | None) -> Path:
        """The Q x N scores of one similarity path of a condition; ``path=None``: the native joint scores."""
        stem = condition_to_filename(condition_id)
        return self.paths / f"{stem}.npy" if path is None else _path_score_file(self.paths, stem, path)


@dataclass(frozen=True)
class MoorDir(_Folder):
    """``snapbench moor`` OUT, a SCORES_DIR that ``snapbench evaluate`` reads: per condition (its file
    name) ``<cond>.npy`` fused scores or a ``<cond>.trec`` run, ``moor_weights/<cond>.{csv,npy}``; the
    id lists; ``ann_recall.json`` (with an approximate search)."""

    query_ids = _Under(QUERY_IDS)
    gallery_ids = _Under(GALLERY_IDS)
    weights_dir = _Under("moor_weights")
    ann_recall = _Under("ann_recall.json")

    def scores(self, condition: str) -> Path:
        return self.root / f"{condition}.npy"

    def trec_run(self, condition: str) -> Path:
        return self.root / f"{condition}.trec"

    def results(self, condition: str) -> list[Path]:
        """Every file that can hold a condition's fused result (scores, or a run of any suffix)."""
        return [self.scores(condition)] + [self.root / f"{condition}{s}" for s in RUN_SUFFIXES]

    def weights(self, condition: str, fmt: str) -> Path:
        return self.weights_dir / f"{condition}.{fmt}"


@dataclass(frozen=True)
class RunDir(_Reported):
    """``snapbench run`` DIR::

        run.json, dropped_queries.json
        embeddings/gallery.{image,text}.npy | embeddings/gallery/ (shards), embeddings/queries/ (+ blocks.jsonl)
        <target>/report.json, <target>/per_query.csv      target: a mode, MOOR or fusion/<name>
        MOOR/text_share.json
        report.html, tables/, figures/, findings.json, per_query.{csv,parquet}, contact_sheet.png
        traffic.json (report/run --traffic)
        headline.json (the numbers run prints: per target clean value, mean Δ, worst/mildest operator, δ, MOOR)
    """

    dropped_queries = _Under(_DROPPED_QUERIES)
    embeddings = _Under(EMBEDDINGS_DIR)
    gallery_shards = _Under(EMBEDDINGS_DIR, _GALLERY_STEM)
    query_embeddings = _Under(EMBEDDINGS_DIR, "queries")
    blocks_log = _Under(EMBEDDINGS_DIR, "queries", "blocks.jsonl")

    def gallery_embedding(self, modality: str) -> Path:
        return self.embeddings / f"{_GALLERY_STEM}.{modality}.npy"

    def gallery_shard(self, number: int, modality: str) -> Path:
        """Shard ``number`` of a large gallery's embeddings: ``embeddings/gallery/<number:05d>.<modality>.npy``."""
        return self.gallery_shards / f"{number:05d}.{modality}.npy"

    def target_dir(self, target: str) -> Path:
        return self.root / target

    def report(self, target: str) -> Path:
        return self.root / target / REPORT_JSON

    def per_query(self, target: str) -> Path:
        return self.root / target / PER_QUERY_CSV

    text_share = _Under("MOOR", "text_share.json")
    fusion = _Under(FUSION_PREFIX.rstrip("/"))

    def targets(self) -> list[str]:
        """The targets whose report.json exists, modes and MOOR in :data:`TARGET_ORDER`, then baselines."""
        found = [t for t in TARGET_ORDER if self.report(t).is_file()]
        if self.fusion.is_dir():
            found += [FUSION_PREFIX + d.name for d in sorted(self.fusion.iterdir()) if (d / REPORT_JSON).is_file()]
        return found

    # the report of a run (snapbench report)
    report_html = _Under("report.html")
    findings = _Under("findings.json")

    #: whether label-free stability tracks the labelled loss, per mode (``snapbench.render.stability``)
    stability = _Under("stability.json")
    contact_sheet = _Under("contact_sheet.png")
    combined_per_query = _Under(PER_QUERY_CSV)

    # the report's own folders (tables/, figures/) are :class:`_Reported`'s (snapbench report writes
    # them into DIR or its --out)
    combined_per_query_parquet = _Under("per_query.parquet")

    # the query phase of a run (snapbench run)
    def query_embedding(self, source: str, modality: str) -> Path:
        """One query variant source's embeddings (one row per dataset query): ``embeddings/queries/<stem>.<modality>.npy``."""
        if modality not in _MODALITIES:
            raise ValueError(f"modality must be one of {_MODALITIES}, got {modality!r}")
        return self.query_embeddings / f"{condition_to_filename(source)}.{modality}.npy"

    # the traffic-weighted view (snapbench report --traffic)
    traffic = _Under(TRAFFIC_JSON)

    # the headline numbers per target that snapbench run prints when it is done (snapbench.render.aggregate)
    headline = _Under("headline.json")


@dataclass(frozen=True)
class CompareDir(_Reported):
    """``snapbench compare`` DIR::

        run.json (kind "compare"), compare.json, compare.html, findings.json
        tables/<stem>.{md,tex}, tables/<stem>_delta.{md,tex}, tables/<stem>_ranking.{md,tex}
        records/<list>.{csv,parquet}          one file per record list of compare.json
        figures/<stem>_<figure>.{png,pdf}

    ``<stem>`` = target and metric (:meth:`stem`: ``IT2IT_hit1``, ``fusion-rrf_ndcg10``).
    """

    compare_json = _Under(COMPARE_JSON)
    html = _Under("compare.html")
    findings = _Under("findings.json")
    records = _Under("records")

    @staticmethod
    def stem(target: str, metric: str) -> str:
        """A file-name stem for a (target, metric): ``/`` -> ``-``, the metric without ``@``."""
        return f"{target.replace('/', '-')}_{metric.replace('@', '')}"

    def record_file(self, name: str, ext: str) -> Path:
        return self.records / f"{name}.{ext}"


_RUN_KINDS: tuple[str, ...] = ("corrupt", "encode", "run", "compare", "diagnose", "moor", "report", "stress")
_RUN_JSON_SCHEMA = 2
#: The schema version of every versioned JSON artifact, the one this snapbench writes and reads;
#: readers check it with :func:`check_schema_version` (one rule, one wording).
SCHEMA_VERSIONS: dict[str, int] = {RUN_CONFIG: _RUN_JSON_SCHEMA, REPORT_JSON: REPORT_SCHEMA_VERSION,
                                   COMPARE_JSON: 1, TRAFFIC_JSON: 1}


def check_schema_version(obj: Mapping[str, Any], artifact: str, path: str | os.PathLike) -> None:
    """An :class:`InputError` naming ``path`` when ``obj`` (a decoded ``artifact``, e.g. ``"report.json"``)
    carries a ``schema_version`` other than the one this snapbench reads: a file of another version is
    refused, never read by guesswork."""
    want = SCHEMA_VERSIONS[artifact]
    got = obj.get("schema_version")
    if got != want:
        raise InputError(f"has schema_version {got!r}; this snapbench reads {artifact} of schema_version {want} "
                         "(rerun the command that wrote it)", path=path)


def write_run_json(folder: str | os.PathLike, kind: str, body: Mapping[str, Any]) -> Path:
    """Write ``folder/run.json`` = ``{"kind", "schema_version", **body}`` atomically."""
    if kind not in _RUN_KINDS:
        raise ValueError(f"unknown run.json kind {kind!r}")  # a programming error, not a user's
    path = Path(folder) / RUN_CONFIG
    write_json(path, {"kind": kind, "schema_version": _RUN_JSON_SCHEMA, **body})
    return path


def run_json_kind(cfg: Mapping[str, Any]) -> str | None:
    """The command that wrote a parsed run.json (``None``: not snapbench's)."""
    kind = cfg.get("kind")
    return str(kind) if kind in _RUN_KINDS else None


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
    if kind is not None:  # its contents are about to be used (resume, reading a run): this version's only
        check_schema_version(cfg, RUN_CONFIG, path)
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
    "split": (arg("split"), {None: "not given"}),
    "language": (arg("language"), {}),
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
                 force: bool = False) -> dict[str, Any] | None:
    """The previous run.json of ``folder`` if this invocation may resume (or, forced, replace) it.

    ``None`` when there is none.  A different ``fingerprint`` is a :class:`ConfigError` listing every
    differing entry unless ``force``; a folder of another kind is refused even when forced.
    Values are compared as JSON (what the file holds); an entry one side lacks counts as none.  A
    run.json without a fingerprint is refused like one made with other settings.
    """
    previous = read_run_json(folder, kind=kind)
    if previous is None:
        return None
    recorded = previous.get("fingerprint")
    now = json.loads(json.dumps(fingerprint, default=str))
    if not isinstance(recorded, dict):
        why = "made with other settings (its run.json records no fingerprint)"
    else:
        keys = [k for k in list(now) + [k for k in recorded if k not in now] if recorded.get(k) != now.get(k)]
        # a run made with --limit (run.json "limit": the first N queries only) has another list of
        # queries for that reason: said as such, not as a changed dataset
        limit = previous.get("limit") if "dataset_queries_sha256" in keys else None
        n = limit.get("queries") if isinstance(limit, dict) else None
        cut = isinstance(n, int) and n != limit.get("of")  # a limit at or above the size cut nothing
        parts = [f"{arg('limit')} {n} (a different list of queries)"] if cut else []
        diffs = [_describe(k, recorded.get(k), now.get(k)) for k in keys if not (cut and k == "dataset_queries_sha256")]
        parts += [f"a different {', '.join(diffs)}"] if diffs else []
        why = f"made with {' and '.join(parts)}" if parts else ""
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
    it is not ``kind`` (``snapbench demo`` writes a run).  Inside a command
    (:func:`snapbench.store.atomic.owning_output_dirs`) the folder is locked until the command ends: one
    that another snapbench command is writing is refused.  A folder that cannot hold outputs is an
    :class:`~snapbench.core.errors.OutputError` (:func:`snapbench.store.atomic.prepare_output_dir`).  Call it
    first, before any work: before a dataset is loaded or a model opened."""
    from .atomic import lock_output_dir, prepare_output_dir

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
    lock_output_dir(folder)
    if subdirs:
        prepare_output_dir(folder, *subdirs)
    return read_run_json(folder) if previous is not None else previous  # as it is now that the folder is ours


def remove_stale(candidates: Iterable[Path], written: Iterable[Path], *, empty_dirs: Iterable[Path] = ()) -> list[Path]:
    """The last step of every command that rewrites a folder: remove the ``candidates`` (what an earlier
    run may have left: a glob of the folder's own kinds of files, or folders such as a run's targets)
    that this run did not write, then the ``empty_dirs`` left empty; return what was removed, sorted.
    An output left from an earlier run would otherwise be read with this run's (other conditions,
    paths, targets, formats)."""
    keep = set(written)
    removed = []
    for p in sorted(set(candidates) - keep):
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
            removed.append(p)
        elif p.is_file() or p.is_symlink():
            p.unlink()
            removed.append(p)
    for d in empty_dirs:
        if d.is_dir() and not any(d.iterdir()):
            d.rmdir()
    return removed


@contextlib.contextmanager
def undone_on_failure(folder: str | os.PathLike) -> Iterator[None]:
    """For a command that writes ``folder`` and cannot resume (``snapbench encode``): if the block fails (an
    error, Ctrl-C) and ``folder`` held no file when it began, what the block added is removed -- a folder
    that did not exist goes, one that held only empty folders is left as it was.  A folder that held
    files (the output of an earlier call) is kept as the failed call left it."""
    folder = Path(folder)
    before = set(folder.rglob("*")) if folder.is_dir() else None
    if before is not None and any(p.is_file() or p.is_symlink() for p in before):
        yield
        return
    try:
        yield
    except BaseException as exc:
        if getattr(exc, "exit_code", getattr(exc, "code", 1)) not in (0, None) and folder.is_dir() \
                and not folder.is_symlink():
            if before is None:
                shutil.rmtree(folder, ignore_errors=True)
            else:
                for p in sorted(set(folder.rglob("*")) - before, reverse=True):  # children before their folder
                    if p.is_dir() and not p.is_symlink():
                        shutil.rmtree(p, ignore_errors=True)
                    else:
                        p.unlink(missing_ok=True)
        raise


def _refuse_nested(folder: Path, command: str, within: str | os.PathLike | None) -> None:
    """The part of :func:`claim_output_dir`'s rule about the folders above ``folder``, and about
    ``folder`` being a run's target folder."""
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


def _soft_run_json(folder: Path) -> dict[str, Any]:
    """run.json when it can be read, else ``{}`` (only used to explain what a folder is instead)."""
    try:
        return read_run_json(folder) or {}
    except (OSError, ValueError):
        return {}


def refuse_unfinished(path: str | os.PathLike) -> None:
    """An :class:`InputError` when ``path`` -- an output folder of snapbench given as an input, or a file
    or folder inside one -- is being written by a command still running (it holds the folder's lock):
    read now, it would be read in part.  Every command that reads another's output asks here first."""
    here = Path(os.path.abspath(path))
    for folder in (here, *here.parents):
        if (folder / RUN_CONFIG).is_file():
            if being_written(folder):
                shown = "" if folder == here else f" (its output folder {folder})"
                raise InputError(f"is being written by another snapbench command, still running{shown}; wait "
                                 "for it to end, then run this one", path=path)
            return


def unfinished_run(run: Mapping[str, Any], folder: str | os.PathLike) -> str | None:
    """The warning for a run folder whose run.json says the run did not finish (its ``status`` is not
    ``"complete"``): it was stopped (interrupted, killed) before it wrote every report, so a reader
    that shows its reports shows part of the run.  ``None`` for a finished run or a run.json of
    another command.  (A run still writing the folder is refused before, by :func:`refuse_unfinished`;
    one that wrote no report at all, by :func:`open_run_dir`.)"""
    if run_json_kind(run) != "run" or run.get("status") == "complete":
        return None
    return (f"{folder}: an unfinished run (run.json status {run.get('status')!r}): it stopped before writing every "
            f"report, so what is shown is only what it wrote; rerun 'snapbench {run.get('command') or 'run'}' with "
            "the same arguments to finish it")


def open_run_dir(folder: str | os.PathLike) -> RunDir:
    """``folder`` as a run directory to read (a :class:`~snapbench.store.RunDir` holding at least one
    ``<target>/report.json``); otherwise an :class:`InputError` that says what ``folder`` is instead
    and what to give: a file, the parent folder of a several-encoder run (naming its encoder folders),
    another command's output folder, or a run that has not written a report yet."""
    rd = RunDir(folder)
    refuse_unfinished(rd.root)
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
        from .folders import run_dir_instead

        raise InputError(f"holds the output of 'snapbench {kind}', not {what}{run_dir_instead(rd.root, kind, run)}",
                         path=rd.root)
    if run and unfinished_run(run, rd.root):
        raise InputError("holds a run that has not written any report yet (interrupted?); rerun the same "
                         "'snapbench run' command to finish it", path=rd.root)
    raise InputError(f"holds no <MODE>/report.json: not {what}", path=rd.root)


def _embedding_file(emb_dir: str | os.PathLike, stem: str, modality: str) -> Path:
    """``<emb_dir>/<stem>.<modality>.npy`` (stem = condition file name, or ``gallery``)."""
    if modality not in _MODALITIES:
        raise ValueError(f"modality must be one of {_MODALITIES}, got {modality!r}")
    return Path(emb_dir) / f"{stem}.{modality}.npy"


def find_embeddings(emb_dir: str | os.PathLike) -> tuple[tuple[Path, Path], dict[str, tuple[Path, Path]]]:
    """``((gallery image, gallery text), {condition file stem: (query image, query text)})``.

    InputError when the folder or the gallery files are missing, no query embeddings exist, or a
    condition has one modality only.
    """
    d = Path(emb_dir)
    if not d.is_dir():
        raise InputError("not a directory (expected an embeddings folder)", path=d)
    gallery = (_embedding_file(d, _GALLERY_STEM, "image"), _embedding_file(d, _GALLERY_STEM, "text"))
    missing = [g.name for g in gallery if not g.is_file()]
    if missing:
        raise InputError(f"lacks {', '.join(missing)} (the gallery embeddings)", path=d)
    found: dict[str, dict[str, Path]] = {}
    for f in sorted(d.glob("*.npy")):
        cond, _, modality = f.name[: -len(".npy")].rpartition(".")
        if cond and cond != _GALLERY_STEM and modality in _MODALITIES:
            found.setdefault(cond, {})[modality] = f
    if not found:
        raise InputError("holds no query embeddings (<condition>.image.npy / .text.npy)", path=d)
    conds: dict[str, tuple[Path, Path]] = {}
    for cond, files in found.items():
        lacking = [m for m in _MODALITIES if m not in files]
        if lacking:
            raise InputError(f"condition {cond!r} lacks {cond}.{lacking[0]}.npy", path=d)
        conds[cond] = (files["image"], files["text"])
    return gallery, conds


# ------------------------------------------------------------------------------------------ path scores
def _path_score_file(paths_dir: str | os.PathLike, stem: str, path: str) -> Path:
    """Where encode writes path ``path`` of condition ``stem``: ``<dir>/<stem>.<path>.npy``."""
    if path not in PATH_NAMES:
        raise ValueError(f"path must be one of {PATH_NAMES}, got {path!r}")
    return Path(paths_dir) / f"{stem}.{path}.npy"


def find_path_scores(paths_dir: str | os.PathLike, *, complete: bool = False) -> dict[str, dict[str, Path]]:
    """``{condition file stem: {path name: file}}`` from both PATHS_DIR layouts (flat
    ``<stem>.II.npy`` and sub-folder ``II/<stem>.npy``).

    A condition present in both layouts is an error.  ``complete=True`` also requires all four paths
    of every condition (what fusion needs); evaluate's retrieval modes need only some.
    """
    d = Path(paths_dir)
    found: dict[str, dict[str, Path]] = {}
    origin: dict[str, str] = {}
    for f in sorted(d.glob("*.npy")):
        stem, _, name = f.name[: -len(".npy")].rpartition(".")
        if stem and name in PATH_NAMES:
            found.setdefault(stem, {})[name] = f
            origin[stem] = "flat"
    for name in PATH_NAMES:
        sub = d / name
        if not sub.is_dir():
            continue
        for f in sorted(sub.glob("*.npy")):
            stem = f.name[: -len(".npy")]
            if origin.get(stem) == "flat":
                raise InputError(f"condition {stem!r} appears both as flat files and in {name}/", path=d)
            found.setdefault(stem, {})[name] = f
            origin[stem] = "sub"
    if complete:
        for stem, paths in found.items():
            lacking = [p for p in PATH_NAMES if p not in paths]
            if lacking:
                raise InputError(f"condition {stem!r} lacks the {', '.join(lacking)} path file(s)", path=d)
    return found


DEMO_NAME = "snapbench demo"


def holds_a_demo(out: Path) -> bool:
    """Whether ``out`` holds the output of an earlier ``snapbench demo`` (which the demo may replace).

    run.json says so (``"command": "demo"``).  Anything else is someone's run."""

    cfg = read_run_json(out)
    return cfg is not None and run_json_kind(cfg) == "run" and cfg.get("command") == "demo"


@dataclass(frozen=True)
class StressDir(_Folder):
    """Paths of one ``snapbench stress`` output folder (condition ids are safe file names already)."""

    records_dir = _Under(STRESS_RECORDS_DIR)
    vectors_dir = _Under(STRESS_VECTORS_DIR)

    def records(self, condition: str) -> Path:
        return self.records_dir / f"{condition_to_filename(condition)}.jsonl"

    def vectors(self, name: str) -> Path:
        return self.vectors_dir / f"{condition_to_filename(name)}.npy"

    def vector_rows(self, condition: str) -> Path:
        return self.vectors_dir / f"{condition_to_filename(condition)}.rows.npy"

    per_query = _Under(PER_QUERY_CSV)
    stress_json = _Under("stress.json")
    report_html = _Under("report.html")

    # ---------------------------------------------------------------- writers / readers
    def write_records(self, condition: str, rows: Iterable[Mapping[str, Any]]) -> Path:
        """One JSON object per line, keys in the given order, atomically (the same rows give the same bytes)."""
        path = self.records(condition)
        text = "".join(dumps(r, indent=None) + "\n" for r in rows)
        write_text_atomic(path, text)
        return path

    def remove_other_records(self, conditions: Iterable[str]) -> list[str]:
        """Delete ``records/*.jsonl`` of conditions not in ``conditions`` (an earlier run's, now absent from
        per_query.csv and stress.json); returns their names."""
        records = (self.root / "records").glob("*.jsonl")
        return [p.stem for p in remove_stale(records, [self.records(c) for c in conditions])]

    def write_summary(self, summary: Mapping[str, Any]) -> Path:
        """``stress.json``, strict JSON, atomically."""
        write_json(self.stress_json, dict(summary))
        return self.stress_json

    def write_report(self, page: str) -> Path:
        """``report.html`` (a page rendered by :mod:`snapbench.render.stress`), atomically."""
        write_text_atomic(self.report_html, page)
        return self.report_html

    def save_vectors(self, name: str, array: np.ndarray, rows: np.ndarray | None = None) -> None:
        """Vectors first, then their rows: a run killed in between leaves no rows file, so it is redone."""
        save_npy_atomic(self.vectors(name), np.ascontiguousarray(array, dtype=np.float32))
        if rows is not None:
            save_npy_atomic(self.vector_rows(name), np.asarray(rows, dtype=np.int64))

    def load_vectors(self, name: str, *, with_rows: bool = False) -> tuple[np.ndarray, np.ndarray | None] | None:
        """Saved vectors (and rows), or ``None`` when they are not (all) there."""
        v = self.vectors(name)
        r = self.vector_rows(name)
        if not v.is_file() or (with_rows and not r.is_file()):
            return None
        arr = load_npy(v, what="vectors")
        rows = load_npy(r, what="vector rows").astype(np.int64) if with_rows else None
        return np.asarray(arr, dtype=np.float32), rows


#: What the output folder of each command holds, in words.
_OUTPUT_CONTENTS: dict[str, str] = {
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
        what = f"the output folder of 'snapbench {command}' ({_OUTPUT_CONTENTS.get(self.kind, 'its outputs')})"
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


def read_ids(path: str | os.PathLike, what: str = "ids") -> list[str]:
    """One id per line (surrounding whitespace stripped, trailing empty lines ignored).

    :class:`~snapbench.core.errors.InputError` for a missing file, no ids, an empty line between ids or a
    duplicate id (with both line numbers).
    """
    p = Path(path)
    lines = read_text(p, what=f"{what} file").splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    ids = [ln.strip() for ln in lines]
    if not ids:
        raise InputError(f"no {what} (empty file)", path=p)
    seen: dict[str, int] = {}
    for i, x in enumerate(ids, 1):
        if not x:
            raise InputError(f"line {i} is empty (one id per line)", path=p)
        if x in seen:
            raise InputError(f"duplicate id {x!r} on lines {seen[x]} and {i}", path=p)
        seen[x] = i
    return ids


def write_ids(path: str | os.PathLike, ids: Sequence[str]) -> None:
    """One id per line, written atomically; ids must be non-empty and free of line breaks."""
    for i in ids:
        s = str(i)
        if not s.strip() or "\n" in s or "\r" in s:
            raise OutputError(f"id {s!r} cannot be written one per line", path=path)
    write_text_atomic(path, "".join(f"{i}\n" for i in ids))


def find_ids(name: str, *dirs: str | os.PathLike | None) -> Path | None:
    """The first ``<dir>/<name>`` or ``<dir>/II/<name>`` that exists (``None`` if none does)."""
    for d in dirs:
        if d is None:
            continue
        for cand in (Path(d) / name, Path(d) / "II" / name):
            if cand.is_file():
                return cand
    return None
