"""``compute_traffic`` and ``write_traffic`` under the name the diagnose docs used to give them.

The traffic view reads a run folder, so it lives with the report (:mod:`snapbench.render.traffic`);
this module only re-exports its two public functions for code that imports them from here.  Nothing
in snapbench imports it (the diagnose package itself never imports the report).
"""

from ..render.traffic import compute_traffic, write_traffic

__all__ = ["compute_traffic", "write_traffic"]
