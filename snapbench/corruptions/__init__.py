"""Query-side corruptions: image operators, text operators, and the batch pipeline."""

from .image import (
    DEFAULT_GRID,
    corrupt_image,
    corrupt_image_with_params,
    default_grid,
    get_image_operator,
    image_operators,
    load_grid,
    register_image_operator,
)
from .text import corrupt_text

__all__ = [
    "DEFAULT_GRID",
    "corrupt_image",
    "corrupt_image_with_params",
    "corrupt_text",
    "default_grid",
    "get_image_operator",
    "image_operators",
    "load_grid",
    "register_image_operator",
]
