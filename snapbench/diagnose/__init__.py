"""Diagnose real queries: which signal-level issues a query set has, and how often.

``snapbench diagnose QUERIES --out DIR`` runs image detectors (``blur``, ``low_light``,
``overexposure``, ``compression``, ``low_resolution``) and question detectors (``oov``,
``few_content_tokens``, ``no_entity``) over every query, plus query-set checks for benchmark builders,
and writes ``diagnose.csv``, ``summary.json`` and ``diagnose.html`` -- the SnapBench pilot's table
for the user's own traffic.  Modules: ``image`` / ``jpeg`` / ``text`` (detectors), ``thresholds``
(the detector table + ``thresholds.toml``), ``detect`` (one query), ``checks`` (query-set checks),
``summary`` (shares and Wilson CIs), ``queries`` (inputs), ``html`` (the page), ``run`` (the engine);
``mix`` (the flag -> conditions table and the traffic mix).  The expected R@k of a run under that
mix (traffic.json and its section of report.html) reads a run folder: :mod:`snapbench.app.traffic`.
"""

from .detect import Detection, QueryResult, diagnose_image, diagnose_question, diagnose_record
from .summary import wilson_interval
from .thresholds import DETECTORS, IMAGE_DETECTORS, TEXT_DETECTORS, default_thresholds, load_thresholds

__all__ = [
    "DETECTORS",
    "IMAGE_DETECTORS",
    "TEXT_DETECTORS",
    "Detection",
    "QueryResult",
    "default_thresholds",
    "diagnose_image",
    "diagnose_question",
    "diagnose_record",
    "load_thresholds",
    "wilson_interval",
]
