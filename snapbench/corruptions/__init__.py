"""Query-side corruptions: image operators, text operators, and the batch run.

Modules: ``image/`` (the fifteen image operators: one registration each, with their severity
levels and knobs), ``text`` (the eight text operators and their table), ``entity`` (the word model
and entity finder), ``plugins`` (operators from installed packages), ``pixels`` / ``io`` /
``codecs`` (the pixel array, image decoding, lossless writing), ``manifest`` (query sets in),
``plan`` (grid + conditions of a run), ``variants`` (one query's variants in memory), ``run`` (the
resumable batch run to disk), ``query`` (one query of it, in a worker), ``resume`` (its fingerprint
and kept outputs), ``workers`` (its worker processes), ``preview`` (contact sheets), ``measure``
(measured strength of a variant), ``target`` (a knob searched to a measured strength; severity
levels as targets).
"""

from ..core.errors import ImageLoadError, ManifestError, TextCorruptionError
from ..core.records import QueryRecord, TargetOutcome
from .image import (
    BUILTIN_KNOBS,
    DEFAULT_GRID,
    Knob,
    corrupt_image,
    corrupt_image_with_params,
    default_grid,
    get_image_operator,
    image_operators,
    level_params,
    load_grid,
    register_image_operator,
)
from .io import load_image
from .manifest import load_manifest
from .measure import ImageStrength, TextStrength, image_reference, measure_image, measure_text
from .plan import plan_conditions, resolve_conditions, resolve_grid
from .target import (
    KnobSearch,
    SeverityTarget,
    parse_severity_target,
    search_knob,
    target_outcome,
    target_summary,
    target_variant,
)
from .text import (
    CorruptedText,
    EntityNotFoundError,
    corrupt_text,
    corrupt_text_with_params,
    find_entity,
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
    "level_params",
    "load_grid",
    "register_image_operator",
    "ImageStrength",
    "TextStrength",
    "image_reference",
    "measure_image",
    "measure_text",
    "KnobSearch",
    "search_knob",
    "BUILTIN_KNOBS",
    "Knob",
    "SeverityTarget",
    "parse_severity_target",
    "target_variant",
    "TargetOutcome",
    "target_outcome",
    "target_summary",
]
