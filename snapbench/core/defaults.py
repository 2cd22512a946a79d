"""Default values that several layers and the command line share: each written once, here.

The library modules that use them re-export them under the names they are documented by
(:data:`snapbench.evaluate.paired.DEFAULT_RESAMPLES`, :data:`snapbench.evaluate.metrics.DEFAULT_KS`,
:data:`snapbench.models.torch_support.DEFAULT_BATCH_SIZE`, :data:`snapbench.corruptions.io.DEFAULT_MAX_PIXELS`,
...); the option objects (:class:`snapbench.app.stages.RunOptions`, :class:`snapbench.app.corrupt.CorruptOptions`,
:class:`snapbench.evaluate.EvaluationConfig`) take their field defaults from here, and so do the command
line's flags.  They live in a module that imports nothing because the CLI needs them when it starts (a
flag's default is part of its definition and of ``--help``): importing the packages that use them
(evaluate, corruptions with OpenCV, the pipeline) would add about 0.3 s to every command.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["DEFAULT_SEED", "DEFAULT_RESAMPLES", "DEFAULT_CI", "DEFAULT_KS", "DEFAULT_CLIFF_TOL", "DEFAULT_CLIFF_RATIO",
           "DEFAULT_BATCH_SIZE", "DEFAULT_MAX_PIXELS", "DEFAULT_DATA", "DEFAULT_RBO_P", "DEFAULT_RBO_DEPTH"]

#: Seed of the corruptions and of the bootstrap (``--seed``).
DEFAULT_SEED = 0
#: Bootstrap resamples of the queries (``--resamples``).
DEFAULT_RESAMPLES = 10_000
#: Confidence level of the intervals (``--ci``).
DEFAULT_CI = 0.95
#: Cut-offs of hit@k, recall@k, ndcg@k (``--k``).
DEFAULT_KS: tuple[int, ...] = (1, 5, 10, 20)
#: Severity-curve rule (:data:`snapbench.evaluate.paired.CLIFF_RULE`): drops up to this count as none
#: (``--cliff-tol``) ...
DEFAULT_CLIFF_TOL = 0.01
#: ... and "cliff" when the last drop exceeds this many times the earlier ones (``--cliff-ratio``).
DEFAULT_CLIFF_RATIO = 2.0
#: Persistence p of the label-free ``rbo`` (RBO_ext; ``--rbo-p``) ...
DEFAULT_RBO_P = 0.9
#: ... and the depth it is extrapolated from (``--rbo-depth``).
DEFAULT_RBO_DEPTH = 100
#: Items (images or texts) encoded at a time (``--batch-size``).
DEFAULT_BATCH_SIZE = 32
#: Largest input image (width x height) loaded; larger ones are skipped (``--max-pixels``).
DEFAULT_MAX_PIXELS = 50_000_000


#: The bundled demo set (package data: snapbench/assets/demo), what `snapbench demo` runs on.
DEFAULT_DATA = Path(__file__).resolve().parents[1] / "assets" / "demo"
