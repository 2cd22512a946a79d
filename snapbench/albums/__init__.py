"""Personal albums: datasets of many galleries, records as text, and record-field stress.

* :func:`load_albums` -- PhotoBench folders of albums and JSONL datasets with ``album`` fields
  (:mod:`snapbench.albums.load`);
* :class:`RecordTemplate` -- a record's fields -> the text a text encoder indexes
  (:mod:`snapbench.albums.records`);
* :data:`OPERATORS`, :func:`parse_conditions`, :func:`apply_condition` -- the record-field stress
  operators (:mod:`snapbench.albums.stress`);
* :func:`run_stress` -- ``snapbench stress`` (:mod:`snapbench.app.stress`).
"""

from __future__ import annotations

from .load import AlbumDataset, load_albums
from .records import DEFAULT_TEMPLATE, AlbumRecord, Face, RecordTemplate
from .stress import OPERATORS, PRESETS, Condition, apply_condition, parse_conditions

__all__ = ["DEFAULT_TEMPLATE", "OPERATORS", "PRESETS", "AlbumDataset", "AlbumRecord", "Condition", "Face",
           "RecordTemplate", "StressOptions", "apply_condition", "load_albums", "parse_conditions", "run_stress"]


def __getattr__(name: str):
    # the suite pulls in encoders and reports: imported when asked for
    if name in ("run_stress", "StressOptions"):
        from ..app import stress as suite

        return getattr(suite, name)
    raise AttributeError(name)
