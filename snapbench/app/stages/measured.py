"""Measured damage per query: the rows ``psnr``, ``ssim``, ``drift_image``, ``drift_text`` of a run's
per-query tables (``<target>/per_query.csv``, beside the evaluation metrics, in the same long format).

* ``psnr`` / ``ssim``: the image variant against the clean query image, measured where the variant
  was made (:mod:`snapbench.corruptions.measure`, the values ``snapbench corrupt`` records in its
  manifest); for image and joint conditions.  ``psnr`` is ``inf`` where the two lumas are equal,
  ``ssim`` empty where the image is too small for an SSIM window.
* ``drift_image`` / ``drift_text``: the encoder's own drift, 1 − cos(clean query embedding,
  corrupted query embedding) of that side, computed in float64 from the stored (float32)
  embeddings; ``drift_image`` for image and joint conditions, ``drift_text`` for text and joint
  ones.  Each needs that side of the query to be encoded by the run.

With ``--severity-target``, image and joint conditions also get ``target_reached``: 1 where the
image variant met its level's target within the tolerance, 0 where it missed (the manifest's
``"reached"``); without a target the row is not written, so those tables are unchanged.

Every target of a run carries the same rows (they describe the queries, not the target), so each
``per_query.csv`` can be read on its own.  Readers pick metrics by name, so the rows add to the table
without changing what any evaluation metric reads.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ...core.conditions import Condition
from .plan import image_source, text_source

__all__ = ["drift", "measured_rows", "run_target_outcome"]

#: The metrics these rows use in the per-query tables, in the order they are written.
_MEASURED_METRICS: tuple[str, ...] = ("psnr", "ssim", "drift_image", "drift_text")
#: The row of a run with a severity target: 1 where the variant reached it, 0 where it missed.
_TARGET_METRIC = "target_reached"


def drift(clean: np.ndarray, corrupted: np.ndarray) -> np.ndarray:
    """``1 - cos`` of each row pair of two (n, d) embedding arrays, in float64 (NaN for a zero row)."""
    a = np.asarray(clean, dtype=np.float64)
    b = np.asarray(corrupted, dtype=np.float64)
    num = np.einsum("ij,ij->i", a, b)
    den = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
    return 1.0 - cos


def _strength(measured: Mapping[str, Mapping[str, Any]], qids: Sequence[str], source: str,
              key: str) -> np.ndarray:
    out = np.full(len(qids), np.nan)
    for i, q in enumerate(qids):
        per = measured.get(q, {}).get(source)
        if per is None or key not in per:
            continue
        v = per[key]
        # the manifest's null PSNR means identical lumas; a null SSIM, an image too small for it
        out[i] = (math.inf if key == "psnr" else math.nan) if v is None else float(v)
    return out


def measured_rows(
    conditions: Sequence[Condition],
    qids: Sequence[str],
    keep: np.ndarray,
    embeddings: Mapping[tuple[str, str], np.ndarray],
    measured: Mapping[str, Mapping[str, Mapping[str, Any]]],
    *,
    damage: bool = True,
) -> dict[str, dict[str, np.ndarray]]:
    """``{condition: {metric: one value per kept query}}`` for the metrics of :data:`_MEASURED_METRICS`
    (``damage``; off with ``--no-measure``) and :data:`_TARGET_METRIC` (where ``measured`` has targets).

    ``qids`` are the kept queries' ids (rows ``keep`` of the embedding arrays, in that order);
    ``embeddings`` maps ``(side, source)`` to one row per dataset query; ``measured`` maps a query id
    to its image sources' ``{"psnr", "ssim"}``.  A condition gets the rows of the sides it corrupts
    whose embeddings the run has; clean gets none.
    """
    rows: dict[str, dict[str, np.ndarray]] = {}
    for c in conditions:
        per: dict[str, np.ndarray] = {}
        if "image" in c.sides and ("image", "clean") in embeddings:
            src = image_source(c)
            if ("image", src) in embeddings and damage:
                per["psnr"] = _strength(measured, qids, src, "psnr")
                per["ssim"] = _strength(measured, qids, src, "ssim")
                per["drift_image"] = drift(embeddings[("image", "clean")][keep], embeddings[("image", src)][keep])
            if ("image", src) in embeddings and any("reached" in measured.get(q, {}).get(src, {}) for q in qids):
                per[_TARGET_METRIC] = _strength(measured, qids, src, "reached")
        if "text" in c.sides and ("text", "clean") in embeddings and damage:
            src = text_source(c)
            if ("text", src) in embeddings:
                per["drift_text"] = drift(embeddings[("text", "clean")][keep], embeddings[("text", src)][keep])
        if per:
            rows[c.id] = per
    return rows


def run_target_outcome(measured: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> Any:
    """The :class:`~snapbench.corruptions.target.TargetOutcome` of a run's image sources (``measured``:
    query id -> image source -> {"reached", "achieved", ...}, every query the run corrupted)."""
    from ...core.conditions import parse_condition
    from ...corruptions.target import target_outcome

    entries = []
    for q, per in measured.items():
        for src, m in per.items():
            if isinstance(m, Mapping) and "reached" in m:
                c = parse_condition(src)
                entries.append((str(q), str(c.image_operator), int(c.severity), m))
    return target_outcome(entries)
