"""albumentations both ways (the ``albumentations`` extra).

**snapbench operators as albumentations transforms**, for people who train with albumentations
pipelines and want the same corruptions they evaluate on::

    import albumentations as A
    from snapbench.interop.albumentations import SnapbenchCorruption

    aug = A.Compose([SnapbenchCorruption("motion_blur", severity=(1, 2, 3), p=0.5)], seed=137)
    out = aug(image=img)["image"]

Inside albumentations the random parameters are drawn from the transform's own generator
(``Compose(seed=...)`` / ``set_random_seed``), so a pipeline is reproducible the albumentations way.
The pixels for given parameters are exactly those of :func:`snapbench.corruptions.corrupt_image`:
both call the same ``sample`` / ``apply`` pair.  ``cropping`` and ``downscale`` change the image
size (that is their meaning), so use them only where no mask/bbox target must stay aligned.

**albumentations transforms as snapbench operators**, to evaluate with a corruption that
albumentations (or an ImageNet-C port built on it) already has::

    from snapbench.interop.albumentations import register_albumentations_operator

    register_albumentations_operator(
        "alb_gauss_noise",
        {1: A.GaussNoise(std_range=(0.04, 0.04), p=1), 2: A.GaussNoise(std_range=(0.08, 0.08), p=1),
         3: A.GaussNoise(std_range=(0.16, 0.16), p=1)},
        primitive="degrade",
    )
    corrupt_image(img, "alb_gauss_noise", 2, seed=0, key="q1")   # condition img/alb_gauss_noise/s2

Seeding: the operator's ``sample`` draws one 32-bit integer from snapbench's generator for
(seed, query key, operator, severity) (:func:`snapbench.core.seeding.image_rng`) and the transform runs
inside ``A.Compose([t], seed=that integer)``, albumentations' own seeding; so the output depends
on those four values only, in any process and worker.  Re-seeding a transform mutates it, so calls
are serialised by a module lock (albumentations transforms are not thread-safe anyway).  The
recorded parameters are ``{"severity", "albumentations_seed", "transform"}`` plus ``"applied"``:
what albumentations reports as applied (``save_applied_params``), made JSON-safe -- arrays with more
than :data:`_MAX_ARRAY_ITEMS` entries (noise maps, ...) are summarised by shape and dtype.
``"applied"`` is filled in by ``apply`` (it is only known once the image has been seen), which is
why it appears in :func:`~snapbench.corruptions.corrupt_image_with_params`' result and the manifest.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

try:
    import albumentations as _A
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    from ..core.install_hint import install_hint

    raise ImportError(
        f"snapbench.interop.albumentations needs albumentations: {install_hint('albumentations')}"
    ) from exc

from ..core.errors import ConfigError, InputError, arg
from ..core.jsonable import to_json
from ..corruptions import get_image_operator, level_params, register_image_operator

__all__ = ["AlbumentationsOperator", "SnapbenchCorruption", "register_albumentations_operator"]

_MAX_ARRAY_ITEMS = 16
_LOCK = threading.RLock()  # module-level (not per instance) so operator objects stay picklable


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
        self.operator = self._op.name  # an alias is seeded and looked up as the operator it names
        levels = (severity,) if isinstance(severity, (int, np.integer)) else tuple(severity)
        if not levels:
            raise ConfigError("must be a level or a non-empty sequence of levels", param="severity")
        for level in levels:
            level_params(self.operator, int(level), grid)  # fails early on a missing level
        self.severity = severity
        self._levels = tuple(int(s) for s in levels)
        self.grid = grid

    def get_params_dependent_on_data(self, params: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
        rng = self.random_generator
        level = self._levels[int(rng.integers(len(self._levels)))] if len(self._levels) > 1 else self._levels[0]
        h, w = params["shape"][:2]
        sampled = self._op.sample(rng, level_params(self.operator, level, self.grid), (int(h), int(w)))
        return {"snapbench_params": sampled, "snapbench_severity": level}

    def apply(self, img: np.ndarray, snapbench_params: Mapping[str, Any], **kwargs: Any) -> np.ndarray:
        if img.dtype != np.uint8:
            raise InputError(f"SnapbenchCorruption({self.operator!r}) needs uint8 images, got {img.dtype}")
        gray = img.ndim == 2 or img.shape[-1] == 1
        if gray:
            rgb = np.repeat(img.reshape(img.shape[0], img.shape[1], 1), 3, axis=2)
        elif img.shape[-1] == 3:
            rgb = img
        else:
            raise InputError(f"SnapbenchCorruption({self.operator!r}) needs 1- or 3-channel images, got {img.shape}")
        out = np.ascontiguousarray(self._op.apply(np.ascontiguousarray(rgb), snapbench_params), dtype=np.uint8)
        if gray:
            # luminance back to one channel, keeping the input's layout
            g = (out.astype(np.float32) @ np.array([0.299, 0.587, 0.114], np.float32)).round().astype(np.uint8)
            return g if img.ndim == 2 else g[..., None]
        return out

    def get_transform_init_args_names(self) -> tuple[str, ...]:
        return ("operator", "severity")


# ------------------------------------------------------------------------------------------------
# albumentations transforms as snapbench operators
# ------------------------------------------------------------------------------------------------


class AlbumentationsOperator:
    """A snapbench image operator backed by one albumentations transform per severity.

    A module-level class (not a closure) so that the registered operator pickles: a multi-process
    ``run_corruption`` ships runtime registrations to its workers.  ``sample`` / ``apply`` follow
    the protocol of :func:`snapbench.corruptions.register_image_operator`.
    """

    def __init__(self, name: str, transforms: Mapping[int, Any], *, changes_size: bool = False) -> None:
        if not transforms:
            raise ConfigError(f"albumentations operator {name!r}: give at least one severity -> transform",
                              param="transforms")
        self.name = name
        self.changes_size = bool(changes_size)
        self.composes: dict[int, Any] = {}
        self.labels: dict[int, str] = {}
        for sev, t in transforms.items():
            if isinstance(sev, bool) or not isinstance(sev, (int, np.integer)) or int(sev) < 1:
                raise ConfigError(f"albumentations operator {name!r}: severities must be integers >= 1, got {sev!r}",
                                  param="transforms")
            if not isinstance(t, _A.BasicTransform) and not isinstance(t, _A.BaseCompose):
                raise ConfigError(
                    f"albumentations operator {name!r}, severity {sev}: expected an albumentations transform, "
                    f"got {type(t).__name__}", param="transforms"
                )
            self.composes[int(sev)] = _A.Compose([t], save_applied_params=True)
            self.labels[int(sev)] = type(t).__name__

    def sample(self, rng: np.random.Generator, level: Mapping[str, Any], shape: tuple[int, int]) -> dict[str, Any]:
        sev = int(level["severity"])
        if sev not in self.composes:
            raise ConfigError(f"albumentations operator {self.name!r} has no transform for severity {sev}",
                              param="grid")
        return {
            "severity": sev,
            "albumentations_seed": int(rng.integers(0, 2**32, dtype=np.uint64)),
            "transform": self.labels[sev],
        }

    def apply(self, image: np.ndarray, params: dict[str, Any]) -> np.ndarray:
        compose = self.composes[int(params["severity"])]
        with _LOCK:
            compose.set_random_seed(int(params["albumentations_seed"]))
            res = compose(image=image)
        out = res["image"]
        if not isinstance(out, np.ndarray) or out.dtype != np.uint8 or out.ndim != 3 or out.shape[2] != 3:
            raise ConfigError(
                f"albumentations operator {self.name!r} ({params['transform']}) returned "
                f"{getattr(out, 'dtype', type(out).__name__)} {getattr(out, 'shape', '')}, expected HxWx3 uint8"
            )
        if not self.changes_size and out.shape != image.shape:
            raise ConfigError(
                f"albumentations operator {self.name!r} ({params['transform']}) changed the image size "
                f"{image.shape[:2]} -> {out.shape[:2]}; register it with {arg('changes_size')} set to true if resizing is its meaning",
                param="changes_size"
            )
        # Known only after albumentations has seen the image: recorded in the params dict that
        # corrupt_image_with_params returns (and the manifest writes).
        params["applied"] = to_json([[n, p] for n, p in res.get("applied_transforms", [])], max_array_items=_MAX_ARRAY_ITEMS)
        return out


def register_albumentations_operator(
    name: str,
    transforms: Mapping[int, Any],
    *,
    primitive: str = "custom",
    changes_size: bool = False,
    replace: bool = False,
) -> AlbumentationsOperator:
    """Register albumentations transforms (one per severity) as snapbench image operator ``name``.

    After this, :func:`~snapbench.corruptions.corrupt_image` ``(image, name, severity, seed=, key=)``
    and the conditions ``img/<name>/s<k>`` work for every severity ``k`` in ``transforms``; the grid
    entry is ``{k: {"severity": k}}``.  ``primitive`` is the taxonomy label (degrade / transform /
    remove / add or anything); ``changes_size`` must be True for transforms that crop or resize.
    Returns the (picklable) operator object.
    """
    op = AlbumentationsOperator(name, transforms, changes_size=changes_size)
    register_image_operator(
        name,
        apply=op.apply,
        sample=op.sample,
        primitive=primitive,
        changes_size=changes_size,
        grid={sev: {"severity": sev} for sev in op.composes},
        replace=replace,
    )
    return op
