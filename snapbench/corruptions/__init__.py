"""Query-side corruptions: image operators, text operators, and one query's variants.

Modules: ``image/`` (the fifteen image operators: one registration each, with their severity
levels and knobs), ``text`` (the eight text operators and their table), ``entity`` (the word model
and entity finder), ``plugins`` (operators from installed packages), ``pixels`` / ``io`` /
``codecs`` (the pixel array, image decoding, lossless writing), ``manifest`` (query sets in),
``plan`` (grid + conditions of a run), ``variants`` (one query's variants in memory), ``workers``
(what worker processes are sent), ``preview`` (contact sheets), ``measure`` (measured strength of a
variant), ``target`` (a knob searched to a measured strength; severity levels as targets).  The
resumable batch run to disk is ``snapbench corrupt``'s: :mod:`snapbench.app.corrupt`.
"""

from ..core.errors import ImageLoadError, ManifestError, TextCorruptionError
from ..core.records import QueryRecord
from .image import (
    BUILTIN_KNOBS,
    Knob,
    corrupt_image,
    corrupt_image_with_params,
    default_grid,
    get_image_operator,
    image_operators,
    level_params,
    register_image_operator,
)
from .io import load_image
from .manifest import load_manifest
from .measure import image_reference, measure_image, measure_text
from .plan import plan_conditions, resolve_conditions, resolve_grid
from .target import SeverityTarget, parse_severity_target, target_outcome, target_summary
from .text import (
    EntityNotFoundError,
    corrupt_text,
    corrupt_text_with_params,
    register_text_operator,
    text_operators,
)
from .variants import Skip, Variant, generate_variants, iter_variants, stream_corruptions

__all__ = [
    "ImageLoadError",
    "ManifestError",
    "QueryRecord",
    "Skip",
    "Variant",
    "generate_variants",
    "iter_variants",
    "plan_conditions",
    "resolve_conditions",
    "resolve_grid",
    "load_image",
    "load_manifest",
    "stream_corruptions",
    "corrupt_image",
    "corrupt_image_with_params",
    "corrupt_text",
    "corrupt_text_with_params",
    "EntityNotFoundError",
    "TextCorruptionError",
    "register_text_operator",
    "text_operators",
    "default_grid",
    "get_image_operator",
    "image_operators",
    "level_params",
    "register_image_operator",
    "image_reference",
    "measure_image",
    "measure_text",
    "BUILTIN_KNOBS",
    "Knob",
    "SeverityTarget",
    "parse_severity_target",
    "target_outcome",
    "target_summary",
]
