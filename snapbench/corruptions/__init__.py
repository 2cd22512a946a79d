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
from .text import (
    CorruptedText,
    EntityNotFoundError,
    TextCorruptionError,
    corrupt_text,
    corrupt_text_with_params,
    find_entity,
    register_text_operator,
    text_operators,
)
from .io import ImageLoadError, load_image, save_png
from .pipeline import QueryRecord, RunSummary, Variant, iter_variants, load_manifest, run_corruption, stream_corruptions

__all__ = [
    "ImageLoadError",
    "QueryRecord",
    "RunSummary",
    "Variant",
    "iter_variants",
    "load_image",
    "load_manifest",
    "run_corruption",
    "save_png",
    "stream_corruptions",
    "DEFAULT_GRID",
    "corrupt_image",
    "corrupt_image_with_params",
    "corrupt_text",
    "corrupt_text_with_params",
    "CorruptedText",
    "EntityNotFoundError",
    "TextCorruptionError",
    "find_entity",
    "register_text_operator",
    "text_operators",
    "default_grid",
    "get_image_operator",
    "image_operators",
    "load_grid",
    "register_image_operator",
]
