"""Personal albums: datasets of many galleries, records as text, and record-field stress.

* :func:`load_albums` -- PhotoBench folders of albums and JSONL datasets with ``album`` fields
  (:mod:`snapbench.albums.load`), listed in natural order
  (:func:`snapbench.data.photobench.album_sort_key`: ``album2`` before ``album10``);
* :data:`DEFAULT_TEMPLATE` -- a record's fields -> the text a text encoder indexes
  (:mod:`snapbench.albums.records`);
* :data:`OPERATORS`, :func:`parse_conditions`, :func:`apply_condition` -- the record-field stress
  operators (:mod:`snapbench.albums.stress`).

``snapbench stress`` itself (encode and evaluate under each condition) is a command:
:func:`snapbench.app.stress.run_stress`.
"""

from __future__ import annotations

from .load import load_albums
from .records import DEFAULT_TEMPLATE
from .stress import OPERATORS, apply_condition, parse_conditions

__all__ = ["DEFAULT_TEMPLATE", "OPERATORS", "apply_condition", "load_albums", "parse_conditions"]
