"""Image operators: four primitives (degrade, transform, remove, add), fifteen operators.

Importing this package registers every built-in operator: the primitive modules are imported
here explicitly (not lazily by the registry), so the registry is complete as soon as any part of
the package is importable, in the main process and in every worker process alike.
"""

from .base import (
    CorruptedImage,
    ImageOperator,
    add_image_operator,
    corrupt_image,
    corrupt_image_with_params,
    default_grid,
    get_image_operator,
    image_aliases,
    image_operator_revisions,
    image_operators,
    level_params,
    load_grid,
    merge_grid,
    register_image_operator,
    restore_image_operators,
    unregister_image_operator,
    user_image_operators,
)
from .grid import DEFAULT_GRID
from .knobs import BUILTIN_KNOBS, Knob

# Registration happens at import of each primitive module; the order is irrelevant (image_operators()
# lists the built-ins in the paper's order from snapbench.core.conditions).
from . import degrade, transform, remove, add  # noqa: E402,F401  isort: skip

__all__ = [
    "BUILTIN_KNOBS",
    "CorruptedImage",
    "Knob",
    "ImageOperator",
    "DEFAULT_GRID",
    "add_image_operator",
    "corrupt_image",
    "corrupt_image_with_params",
    "default_grid",
    "get_image_operator",
    "image_aliases",
    "image_operator_revisions",
    "image_operators",
    "level_params",
    "load_grid",
    "merge_grid",
    "register_image_operator",
    "restore_image_operators",
    "unregister_image_operator",
    "user_image_operators",
]
