"""Image operators: four primitives (degrade, transform, remove, add), fifteen operators.

Importing this package registers every built-in operator: the primitive modules are imported
here explicitly (not lazily by the registry), so the registry is complete as soon as any part of
the package is importable, in the main process and in every worker process alike.  Each built-in
is registered once, in its primitive module; the tables below are read from those registrations
(:func:`~.base.builtin_image_operators`), never written a second time.
"""

import copy

from .base import (
    CorruptedImage,
    DiagnoseFlag,
    ImageOperator,
    Knob,
    builtin_image_operators,
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

# Registration happens at import of each primitive module; the order is irrelevant (the built-ins are
# listed in the paper's order from snapbench.core.conditions).
from . import degrade, transform, remove, add  # noqa: E402,F401  isort: skip

_BUILTIN = builtin_image_operators()

#: The severity grid of the built-ins: operator -> severity -> parameters (the grid of the authors'
#: release of SnapBench, SPEC §3).  A copy: :func:`default_grid` adds the registered operators.
DEFAULT_GRID: dict[str, dict[int, dict]] = {name: copy.deepcopy(dict(op.grid or {})) for name, op in _BUILTIN.items()}
#: The knob of every built-in operator (what a severity target searches).
BUILTIN_KNOBS: dict[str, Knob] = {name: op.knob for name, op in _BUILTIN.items() if op.knob is not None}

__all__ = [
    "BUILTIN_KNOBS",
    "CorruptedImage",
    "DEFAULT_GRID",
    "DiagnoseFlag",
    "ImageOperator",
    "Knob",
    "builtin_image_operators",
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
