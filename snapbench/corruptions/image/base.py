"""Image operator protocol and registry.

An operator is two functions, as in ImageNet-C-bar: ``sample(rng, level, shape) -> params`` draws
every random choice (offsets, placements, noise seeds) from a ``numpy.random.Generator`` and returns
the complete parameter dict that will be applied; ``apply(image, params) -> image`` is then a pure
function of the image and those parameters.  ``params`` is JSON-serialisable so it can be written
to the manifest ("the parameters actually applied").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from ...seeding import image_rng
from .grid import DEFAULT_GRID, Grid

__all__ = [
    "ImageOperator",
    "CorruptedImage",
    "register_image_operator",
    "get_image_operator",
    "image_operators",
    "corrupt_image",
    "corrupt_image_with_params",
]

SampleFn = Callable[[np.random.Generator, Mapping[str, Any], tuple[int, int]], dict[str, Any]]
ApplyFn = Callable[[np.ndarray, Mapping[str, Any]], np.ndarray]


def _no_randomness(rng: np.random.Generator, level: Mapping[str, Any], shape: tuple[int, int]) -> dict[str, Any]:
    return dict(level)


@dataclass(frozen=True)
class ImageOperator:
    """A registered image corruption.

    ``primitive`` is one of degrade / transform / remove / add (or anything for user operators);
    ``changes_size`` is True only for operators whose meaning is a size change.
    """

    name: str
    apply: ApplyFn
    sample: SampleFn = _no_randomness
    primitive: str = "custom"
    changes_size: bool = False
    doc: str = field(default="", compare=False)


@dataclass(frozen=True)
class CorruptedImage:
    image: np.ndarray
    operator: str
    severity: int
    params: dict[str, Any]


_REGISTRY: dict[str, ImageOperator] = {}
_CUSTOM_GRID: Grid = {}


def register_image_operator(
    name: str,
    *,
    apply: ApplyFn | None = None,
    sample: SampleFn | None = None,
    primitive: str = "custom",
    changes_size: bool = False,
    grid: Mapping[int, Mapping[str, Any]] | None = None,
    replace: bool = False,
):
    """Register an operator; usable as a decorator on the ``apply`` function.

    ``grid`` gives the default parameters per severity for a new operator (built-in operators take
    theirs from :data:`DEFAULT_GRID`).  Re-registering a name needs ``replace=True``.
    """

    def _register(apply_fn: ApplyFn) -> ApplyFn:
        if name in _REGISTRY and not replace:
            raise ValueError(f"image operator {name!r} is already registered (pass replace=True)")
        _REGISTRY[name] = ImageOperator(
            name=name,
            apply=apply_fn,
            sample=sample or _no_randomness,
            primitive=primitive,
            changes_size=changes_size,
            doc=(apply_fn.__doc__ or "").strip(),
        )
        if grid is not None:
            _CUSTOM_GRID[name] = {int(k): dict(v) for k, v in grid.items()}
        return apply_fn

    if apply is not None:
        return _register(apply)
    return _register


def get_image_operator(name: str) -> ImageOperator:
    _ensure_builtins()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown image operator {name!r}; known: {', '.join(sorted(_REGISTRY))}") from None


def image_operators() -> dict[str, ImageOperator]:
    """All registered operators (built-ins first, in the paper's taxonomy order)."""
    _ensure_builtins()
    from ...conditions import IMAGE_OPERATORS

    builtin = [n for n in IMAGE_OPERATORS if n in _REGISTRY]
    return {n: _REGISTRY[n] for n in builtin + sorted(set(_REGISTRY) - set(builtin))}


def default_grid() -> Grid:
    """The built-in grid plus the default levels of user-registered operators."""
    return {**DEFAULT_GRID, **_CUSTOM_GRID}


def _ensure_builtins() -> None:
    # Built-in operator modules register themselves on import; import lazily to avoid cycles.
    from . import add, degrade, remove, transform  # noqa: F401


def _level_params(operator: str, severity: int, grid: Mapping[str, Mapping[int, Mapping[str, Any]]] | None) -> Mapping[str, Any]:
    table = default_grid() if grid is None else grid
    if operator not in table:
        raise ValueError(f"image operator {operator!r} has no severity table in the grid")
    levels = table[operator]
    if int(severity) not in levels:
        raise ValueError(
            f"image operator {operator!r} has no severity {severity} (levels: {sorted(levels)})"
        )
    return levels[int(severity)]


def _as_rgb_uint8(image: np.ndarray) -> np.ndarray:
    if not isinstance(image, np.ndarray) or image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3:
        raise ValueError(
            "image must be an HxWx3 uint8 RGB array (use snapbench.corruptions.load_image for files); got "
            f"{getattr(image, 'dtype', type(image).__name__)} {getattr(image, 'shape', '')}"
        )
    if image.shape[0] < 1 or image.shape[1] < 1:
        raise ValueError(f"image is empty: shape {image.shape}")
    return np.ascontiguousarray(image)


def corrupt_image_with_params(
    image: np.ndarray,
    operator: str,
    severity: int,
    *,
    seed: int = 0,
    key: str = "",
    grid: Mapping[str, Mapping[int, Mapping[str, Any]]] | None = None,
) -> CorruptedImage:
    """Corrupt ``image`` (HxWx3 uint8 RGB) and return it with the parameters actually applied.

    Randomness comes only from ``seed``, ``key`` (the query id), ``operator`` and ``severity``.
    """
    op = get_image_operator(operator)
    image = _as_rgb_uint8(image)
    level = _level_params(operator, severity, grid)
    rng = image_rng(seed, key, operator, severity)
    params = op.sample(rng, level, (int(image.shape[0]), int(image.shape[1])))
    out = op.apply(image, params)
    out = np.ascontiguousarray(out, dtype=np.uint8)
    return CorruptedImage(out, operator, int(severity), params)


def corrupt_image(
    image: np.ndarray,
    operator: str,
    severity: int,
    *,
    seed: int = 0,
    key: str = "",
    grid: Mapping[str, Mapping[int, Mapping[str, Any]]] | None = None,
) -> np.ndarray:
    """Corrupt ``image`` (HxWx3 uint8 RGB) with ``operator`` at ``severity``; returns uint8 RGB."""
    return corrupt_image_with_params(image, operator, severity, seed=seed, key=key, grid=grid).image
