"""One query through every detector: scores, flags, and what the query-set checks need.

Library entry points: :func:`diagnose_image` (an array or a file) and :func:`diagnose_question`
return ``{detector: Detection(score, flag)}``; :func:`diagnose_record` does one
:class:`~snapbench.corruptions.QueryRecord` and keeps an unreadable image as a skip instead of
raising, so a batch goes on.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..core.errors import ImageLoadError, in_words
from ..core.records import QueryRecord
from ..corruptions.io import image_problem, read_image_bytes
from .image import decode_for_diagnosis, image_scores, perceptual_hash, view_of
from .text import Vocabulary, text_scores
from .thresholds import Thresholds, is_flagged, load_thresholds

__all__ = ["Detection", "QueryResult", "diagnose_image", "diagnose_question", "diagnose_record"]


@dataclass(frozen=True)
class Detection:
    """A detector's score and whether it crosses the threshold."""

    score: float
    flag: bool


@dataclass
class QueryResult:
    """Everything diagnose learned about one query.  ``image_scores`` / ``text_scores`` are ``None``
    when the side is absent or (image) unreadable -- then ``image_skip`` says why."""

    record: QueryRecord
    image_scores: dict[str, float] | None = None
    text_scores: dict[str, float] | None = None
    image_skip: str | None = None
    #: with image_skip, what kind of problem (:func:`~snapbench.corruptions.io.image_problem`):
    #: "file not found", "cannot be read", "too large" or "cannot be decoded"
    image_problem: str | None = None
    width: int | None = None
    height: int | None = None
    phash: int | None = None
    digest: str | None = None
    flags: dict[str, bool] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def image_flagged(self) -> bool:
        return any(self.flags.get(d, False) for d in (self.image_scores or {}))

    @property
    def text_flagged(self) -> bool:
        return any(self.flags.get(d, False) for d in (self.text_scores or {}))


def _detections(scores: dict[str, float], thresholds: Thresholds) -> dict[str, Detection]:
    return {d: Detection(s, is_flagged(d, s, thresholds)) for d, s in scores.items()}


def diagnose_image(image: np.ndarray | str | os.PathLike, thresholds: Thresholds | None = None) -> dict[str, Detection]:
    """Scores and flags of every image detector for an HxWx3 uint8 RGB array or an image file."""
    th = thresholds if thresholds is not None else load_thresholds()
    view = view_of(image) if isinstance(image, np.ndarray) else decode_for_diagnosis(image)
    return _detections(image_scores(view, th), th)


def diagnose_question(question: str, entity: str | None = None, thresholds: Thresholds | None = None,
                      vocabulary: Vocabulary | None = None) -> dict[str, Detection]:
    """Scores and flags of every text detector for one question (``entity``: the record's, if any)."""
    th = thresholds if thresholds is not None else load_thresholds()
    vocab = vocabulary if vocabulary is not None else Vocabulary(th["oov"]["min_count"])
    return _detections(text_scores(question, entity, vocab), th)


def _image_part(result: QueryResult, path: Path, thresholds: Thresholds) -> None:
    try:
        data = read_image_bytes(path)
        view = decode_for_diagnosis(path, data=data)
    except ImageLoadError as exc:
        result.image_skip = exc.render(in_words)  # summary.json is read from the CLI and Python alike
        result.image_problem = image_problem(exc)
        return
    result.digest = hashlib.blake2b(data, digest_size=16).hexdigest()
    result.image_scores = image_scores(view, thresholds)
    result.width, result.height = view.width, view.height
    result.phash = perceptual_hash(view.luma)


def diagnose_record(record: QueryRecord, thresholds: Thresholds, vocabulary: Vocabulary | None) -> QueryResult:
    """Run every detector that applies to ``record`` (``vocabulary`` may be ``None`` when the record
    has no question)."""
    result = QueryResult(record)
    if record.image is not None:
        _image_part(result, Path(record.image), thresholds)
    if record.question is not None and vocabulary is not None:
        result.text_scores = text_scores(record.question, record.entity, vocabulary)
    for scores in (result.image_scores, result.text_scores):
        for d, s in (scores or {}).items():
            result.flags[d] = is_flagged(d, s, thresholds)
    return result
