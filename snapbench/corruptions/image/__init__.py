"""Image operators: four primitives (degrade, transform, remove, add), fifteen operators."""

from .base import (
    CorruptedImage,
    ImageOperator,
    corrupt_image,
    corrupt_image_with_params,
    default_grid,
    get_image_operator,
    image_operators,
    register_image_operator,
)
from .grid import DEFAULT_GRID, load_grid, merge_grid

__all__ = [
    "CorruptedImage",
    "ImageOperator",
    "DEFAULT_GRID",
    "corrupt_image",
    "corrupt_image_with_params",
    "default_grid",
    "get_image_operator",
    "image_operators",
    "load_grid",
    "merge_grid",
    "register_image_operator",
]
