"""snapbench operators as albumentations transforms (extra: ``pip install snapbench[albumentations]``).

For people who train with albumentations pipelines and want the same corruptions they evaluate on::

    import albumentations as A
    from snapbench.corruptions.albumentations import SnapbenchCorruption

    aug = A.Compose([SnapbenchCorruption("motion_blur", severity=(1, 2, 3), p=0.5)], seed=137)
    out = aug(image=img)["image"]

Inside albumentations the random parameters are drawn from the transform's own generator
(``Compose(seed=...)`` / ``set_random_seed``), so a pipeline is reproducible the albumentations way.
The pixels for given parameters are exactly those of :func:`snapbench.corruptions.corrupt_image`:
both call the same ``sample`` / ``apply`` pair.  ``cropping`` and ``downscale`` change the image
size (that is their meaning), so use them only where no mask/bbox target must stay aligned.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

try:
    import albumentations as _A
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "snapbench.corruptions.albumentations needs albumentations: pip install 'snapbench[albumentations]'"
    ) from exc

from .image.base import _level_params, get_image_operator

__all__ = ["SnapbenchCorruption"]


class SnapbenchCorruption(_A.ImageOnlyTransform):
    """Apply one snapbench image operator at a fixed or randomly chosen severity.

    Args:
        operator: a registered image operator name (see ``snapbench conditions``).
        severity: one level, or a sequence of levels to choose from uniformly per call.
        grid: optional severity grid (defaults to the built-in one, see ``load_grid``).
        p: probability of applying the transform.
    """

    def __init__(
        self,
        operator: str,
        severity: int | Sequence[int] = 1,
        grid: Mapping[str, Mapping[int, Mapping[str, Any]]] | None = None,
        p: float = 1.0,
    ) -> None:
        super().__init__(p=p)
        self._op = get_image_operator(operator)  # fails early on an unknown name
        self.operator = operator
        levels = (severity,) if isinstance(severity, (int, np.integer)) else tuple(severity)
        if not levels:
            raise ValueError("severity must be a level or a non-empty sequence of levels")
        for level in levels:
            _level_params(operator, int(level), grid)  # fails early on a missing level
        self.severity = severity
        self._levels = tuple(int(s) for s in levels)
        self.grid = grid

    def get_params_dependent_on_data(self, params: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
        rng = self.random_generator
        level = self._levels[int(rng.integers(len(self._levels)))] if len(self._levels) > 1 else self._levels[0]
        h, w = params["shape"][:2]
        sampled = self._op.sample(rng, _level_params(self.operator, level, self.grid), (int(h), int(w)))
        return {"snapbench_params": sampled, "snapbench_severity": level}

    def apply(self, img: np.ndarray, snapbench_params: Mapping[str, Any], **kwargs: Any) -> np.ndarray:
        if img.dtype != np.uint8:
            raise ValueError(f"SnapbenchCorruption({self.operator!r}) needs uint8 images, got {img.dtype}")
        gray = img.ndim == 2 or img.shape[-1] == 1
        if gray:
            rgb = np.repeat(img.reshape(img.shape[0], img.shape[1], 1), 3, axis=2)
        elif img.shape[-1] == 3:
            rgb = img
        else:
            raise ValueError(f"SnapbenchCorruption({self.operator!r}) needs 1- or 3-channel images, got {img.shape}")
        out = np.ascontiguousarray(self._op.apply(np.ascontiguousarray(rgb), snapbench_params), dtype=np.uint8)
        if gray:
            # luminance back to one channel, keeping the input's layout
            g = (out.astype(np.float32) @ np.array([0.299, 0.587, 0.114], np.float32)).round().astype(np.uint8)
            return g if img.ndim == 2 else g[..., None]
        return out

    def get_transform_init_args_names(self) -> tuple[str, ...]:
        return ("operator", "severity")
