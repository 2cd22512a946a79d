"""The output folders of the stages as objects: every writer and reader of a folder names its files here.

::

    CorruptDir(out).image_relpath("img/motion_blur/s2", "q1", ".png")  # images/img__motion_blur__s2/q1.png
    EncodeDir(out).path_scores("clean", "II")                        # paths/clean.II.npy
    RunDir(out).report("MOOR")                                       # MOOR/report.json

A *target* of a run is what one report evaluates: a retrieval mode (``I2I`` ... ``T2IT``), ``MOOR``,
or a fusion baseline ``fusion/<name>``; its folder is ``DIR/<target>``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..conditions import condition_to_filename
from ..modes import MODES
from .arrays import path_score_file
from .names import (
    DROPPED_QUERIES,
    EMBEDDINGS_DIR,
    GALLERY_IDS,
    GALLERY_STEM,
    MANIFEST,
    MODALITIES,
    PATHS_DIR,
    QUERY_IDS,
    RUN_CONFIG,
    SKIPS,
)

__all__ = ["CorruptDir", "EncodeDir", "RunDir", "TARGET_ORDER", "PRIMARY_ORDER", "FUSION_PREFIX", "CompareDir",
           "primary_target"]

#: Targets in the order reports, tables and figures list them (fusion baselines follow, by name).
TARGET_ORDER: tuple[str, ...] = (*MODES, "MOOR")
#: The targets in the order of preference for the one the findings speak of first (the paper's joint
#: mode IT→IT, then MOOR, ...): of a run's report and of a comparison.
PRIMARY_ORDER: tuple[str, ...] = ("IT2IT", "MOOR", "I2I", "I2IT", "T2IT", "T2T")
FUSION_PREFIX = "fusion/"


def primary_target(targets: Iterable[str]) -> str:
    """The target of ``targets`` the findings speak of first: the first in :data:`PRIMARY_ORDER`, else
    the first given (a fusion baseline)."""
    given = list(targets)
    return next((t for t in PRIMARY_ORDER if t in given), given[0])


@dataclass(frozen=True)
class CorruptDir:
    """``snapbench corrupt`` OUT: run.json, manifest.jsonl, skips.jsonl, images/<condition>/<id><ext>."""

    root: Path

    def __init__(self, root: str | os.PathLike) -> None:
        object.__setattr__(self, "root", Path(root))

    @property
    def run_json(self) -> Path:
        return self.root / RUN_CONFIG

    @property
    def manifest(self) -> Path:
        return self.root / MANIFEST

    @property
    def skips(self) -> Path:
        return self.root / SKIPS

    @property
    def images(self) -> Path:
        return self.root / "images"

    def image_dir(self, condition_id: str) -> Path:
        """The folder of one condition's variants."""
        return self.images / condition_to_filename(condition_id)

    def image_relpath(self, condition_id: str, query_id: str, extension: str) -> str:
        """The manifest's ``path`` of a variant (relative to the folder, "/"-separated): a file of
        :meth:`image_dir`."""
        return f"{self.image_dir(condition_id).relative_to(self.root).as_posix()}/{query_id}{extension}"


@dataclass(frozen=True)
class EncodeDir:
    """``snapbench encode`` OUT: id lists, embeddings/<stem>.<modality>.npy, paths/<stem>.<path>.npy."""

    root: Path

    def __init__(self, root: str | os.PathLike) -> None:
        object.__setattr__(self, "root", Path(root))

    @property
    def query_ids(self) -> Path:
        return self.root / QUERY_IDS

    @property
    def gallery_ids(self) -> Path:
        return self.root / GALLERY_IDS

    @property
    def embeddings(self) -> Path:
        return self.root / EMBEDDINGS_DIR

    @property
    def paths(self) -> Path:
        return self.root / PATHS_DIR

    @property
    def dropped_queries(self) -> Path:
        return self.root / DROPPED_QUERIES

    @property
    def run_json(self) -> Path:
        return self.root / RUN_CONFIG

    def embedding(self, condition_id: str | None, modality: str) -> Path:
        """Query embeddings of a condition, or the gallery's (``condition_id=None``); modality
        ``image``, ``text`` or ``joint`` (a native joint model)."""
        if modality not in (*MODALITIES, "joint"):
            raise ValueError(f"modality must be one of {MODALITIES + ('joint',)}, got {modality!r}")
        stem = GALLERY_STEM if condition_id is None else condition_to_filename(condition_id)
        return self.embeddings / f"{stem}.{modality}.npy"

    def path_scores(self, condition_id: str, path: str | None) -> Path:
        """The Q x N scores of one similarity path of a condition; ``path=None``: the native joint scores."""
        stem = condition_to_filename(condition_id)
        return self.paths / f"{stem}.npy" if path is None else path_score_file(self.paths, stem, path)


@dataclass(frozen=True)
class RunDir:
    """``snapbench run`` DIR::

        run.json, dropped_queries.json
        embeddings/gallery.{image,text}.npy | embeddings/gallery/ (shards), embeddings/queries/ (+ blocks.jsonl)
        <target>/report.json, <target>/per_query.csv      target: a mode, MOOR or fusion/<name>
        MOOR/text_share.json
        report.html, tables/, figures/, findings.json, per_query.{csv,parquet}, contact_sheet.png
        traffic.json (report/run --traffic)
    """

    root: Path

    def __init__(self, root: str | os.PathLike) -> None:
        object.__setattr__(self, "root", Path(root))

    @property
    def run_json(self) -> Path:
        return self.root / RUN_CONFIG

    @property
    def dropped_queries(self) -> Path:
        return self.root / DROPPED_QUERIES

    @property
    def embeddings(self) -> Path:
        return self.root / EMBEDDINGS_DIR

    @property
    def gallery_shards(self) -> Path:
        return self.embeddings / GALLERY_STEM

    @property
    def query_embeddings(self) -> Path:
        return self.embeddings / "queries"

    @property
    def blocks_log(self) -> Path:
        return self.query_embeddings / "blocks.jsonl"

    def gallery_embedding(self, modality: str) -> Path:
        return self.embeddings / f"{GALLERY_STEM}.{modality}.npy"

    def target_dir(self, target: str) -> Path:
        return self.root / target

    def report(self, target: str) -> Path:
        return self.root / target / "report.json"

    def per_query(self, target: str) -> Path:
        return self.root / target / "per_query.csv"

    @property
    def text_share(self) -> Path:
        return self.root / "MOOR" / "text_share.json"

    @property
    def fusion(self) -> Path:
        return self.root / FUSION_PREFIX.rstrip("/")

    def targets(self) -> list[str]:
        """The targets whose report.json exists, modes and MOOR in :data:`TARGET_ORDER`, then baselines."""
        found = [t for t in TARGET_ORDER if self.report(t).is_file()]
        if self.fusion.is_dir():
            found += [FUSION_PREFIX + d.name for d in sorted(self.fusion.iterdir()) if (d / "report.json").is_file()]
        return found

    # the report of a run (snapbench report)
    @property
    def report_html(self) -> Path:
        return self.root / "report.html"

    @property
    def findings(self) -> Path:
        return self.root / "findings.json"

    @property
    def stability(self) -> Path:
        """Whether label-free stability tracks the labelled loss, per mode (``snapbench.report.stability``)."""
        return self.root / "stability.json"

    @property
    def contact_sheet(self) -> Path:
        return self.root / "contact_sheet.png"

    @property
    def combined_per_query(self) -> Path:
        return self.root / "per_query.csv"

    # appended: the report's own folders (snapbench report writes them into DIR or its --out)
    @property
    def tables(self) -> Path:
        return self.root / "tables"

    @property
    def figures(self) -> Path:
        return self.root / "figures"

    @property
    def combined_per_query_parquet(self) -> Path:
        return self.root / "per_query.parquet"

    # the query phase of a run (snapbench run)
    def query_embedding(self, source: str, modality: str) -> Path:
        """One query variant source's embeddings (one row per dataset query): ``embeddings/queries/<stem>.<modality>.npy``."""
        if modality not in MODALITIES:
            raise ValueError(f"modality must be one of {MODALITIES}, got {modality!r}")
        return self.query_embeddings / f"{condition_to_filename(source)}.{modality}.npy"

    # the traffic-weighted view (snapbench report --traffic)
    @property
    def traffic(self) -> Path:
        return self.root / "traffic.json"


@dataclass(frozen=True)
class CompareDir:
    """``snapbench compare`` DIR::

        run.json (kind "compare"), compare.json, compare.html, findings.json
        tables/<stem>.{md,tex}, tables/<stem>_delta.{md,tex}, tables/<stem>_ranking.{md,tex}
        records/<list>.{csv,parquet}          one file per record list of compare.json
        figures/<stem>_<figure>.{png,pdf}

    ``<stem>`` = target and metric (:meth:`stem`: ``IT2IT_hit1``, ``fusion-rrf_ndcg10``).
    """

    root: Path

    def __init__(self, root: str | os.PathLike) -> None:
        object.__setattr__(self, "root", Path(root))

    @property
    def run_json(self) -> Path:
        return self.root / RUN_CONFIG

    @property
    def compare_json(self) -> Path:
        return self.root / "compare.json"

    @property
    def html(self) -> Path:
        return self.root / "compare.html"

    @property
    def findings(self) -> Path:
        return self.root / "findings.json"

    @property
    def tables(self) -> Path:
        return self.root / "tables"

    @property
    def records(self) -> Path:
        return self.root / "records"

    @property
    def figures(self) -> Path:
        return self.root / "figures"

    @staticmethod
    def stem(target: str, metric: str) -> str:
        """A file-name stem for a (target, metric): ``/`` -> ``-``, the metric without ``@``."""
        return f"{target.replace('/', '-')}_{metric.replace('@', '')}"

    def table(self, name: str, ext: str) -> Path:
        return self.tables / f"{name}.{ext}"

    def record_file(self, name: str, ext: str) -> Path:
        return self.records / f"{name}.{ext}"

    def figure(self, name: str, ext: str) -> Path:
        return self.figures / f"{name}.{ext}"
