"""snapbench: paired robustness evaluation of image+text retrieval.

The main entry points, re-exported here::

    from snapbench import corrupt_image, corrupt_text, list_conditions, moor, evaluate_directory

Sub-packages: :mod:`snapbench.corruptions` (load -> corrupt), :mod:`snapbench.models` and
:mod:`snapbench.encode` (encode -> score), :mod:`snapbench.fusion` (fuse), :mod:`snapbench.evaluate`
(evaluate -> report).
"""

__version__ = "0.1.0"

from .conditions import Condition, list_conditions, parse_condition  # noqa: E402
from .corruptions import corrupt_image, corrupt_text, load_image, run_corruption  # noqa: E402
from .evaluate import EvaluationConfig, evaluate_directory  # noqa: E402
from .fusion import MOORIndex, moor, moor_from_scores  # noqa: E402

__all__ = [
    "__version__",
    "Condition",
    "list_conditions",
    "parse_condition",
    "corrupt_image",
    "corrupt_text",
    "load_image",
    "run_corruption",
    "EvaluationConfig",
    "evaluate_directory",
    "MOORIndex",
    "moor",
    "moor_from_scores",
]
