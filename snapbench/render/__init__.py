"""The paper report of a run directory (top layer: it reads what ``snapbench run`` wrote).

``build_report(DIR)`` writes ``DIR/report.html`` (one self-contained page), paper tables
(``DIR/tables/*.md``, ``*.tex``), figures (``DIR/figures/*.png``, ``*.pdf``; needs the ``report``
extra), the per-query values of all modes (``DIR/per_query.csv``, ``.parquet`` with pyarrow) and
``DIR/findings.json``.  The per-mode per-query format ``snapbench run`` writes is
:mod:`snapbench.store.perquery`'s; ``snapbench.store.rundir.read_target_per_query(DIR, target)`` reads one
target's table as a :class:`snapbench.core.records.PerQuery` (the one way to read a run's per-query values).  Reports are
read as :class:`snapbench.core.records.Report`.  The page's traffic section (the expected R@k of the run
under the mix of a ``snapbench diagnose`` folder) is :func:`.build.traffic_fragment` of ``DIR/traffic.json``.
"""

from .build import FORMATS, build_report
from .findings import compute_findings

__all__ = [
    "FORMATS",
    "build_report",
    "compute_findings",
]
