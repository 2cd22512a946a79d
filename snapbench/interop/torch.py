"""Corrupted query sets for PyTorch (the ``torch`` extra).

* :class:`CorruptedQueries` -- a map-style ``torch.utils.data.Dataset`` over (query, condition)
  pairs of a query manifest; each item is ``{"id", "condition", "image", "question"}``.
* :class:`CorruptedQueriesIterable` -- the same items as an ``IterableDataset`` that shards *queries*
  across DataLoader workers (``get_worker_info``), so each worker loads a query's image once and
  derives all of its conditions from it.
* :class:`SnapbenchTransform` -- a torchvision-v2-style transform applying one image operator to
  HWC uint8 arrays, PIL images or CHW uint8 tensors.

Determinism: every item is computed by :func:`snapbench.corruptions.iter_variants` from (seed, query id,
condition) alone, so a DataLoader gives the same bytes as ``snapbench corrupt`` writes for the same
seed, for any ``num_workers``, shuffle or batch order (only the *order* of an iterable dataset's
items depends on the worker count).  :class:`SnapbenchTransform` keys its randomness by the SHA-256
of the image bytes (plus shape) unless a key is given, never by call order or worker.

Items hold images of different sizes (``cropping`` and ``downscale`` change the size), so batch with
``collate_fn=collate_queries`` (a list of items) or ``batch_size=None``.

Which (query, condition) pairs exist is decided up front as ``snapbench corrupt`` does: a text or
joint condition whose question edit cannot be made (entity not found, no possible edit) and image
conditions of queries without an image are left out (:attr:`CorruptedQueries.skipped` says why).
An image file that cannot be read raises when its item is loaded.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

try:
    import torch as _torch
    from torch.utils.data import Dataset as _Dataset
    from torch.utils.data import IterableDataset as _IterableDataset
    from torch.utils.data import get_worker_info as _get_worker_info
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    from ..core.install_hint import install_hint

    raise ImportError(f"snapbench.interop.torch needs torch: {install_hint('torch')}") from exc

from ..core.conditions import parse_condition
from ..core.errors import InputError
from ..corruptions import (
    corrupt_image,
    corrupt_text,
    get_image_operator,
    iter_variants,
    level_params,
    load_image,
    load_manifest,
)
from ..corruptions.plan import generated_space, plan_conditions, plan_grid, resolve_grid

__all__ = ["CorruptedQueries", "CorruptedQueriesIterable", "SnapbenchTransform", "collate_queries"]

def collate_queries(batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``collate_fn`` for DataLoaders over corrupted queries: the batch as a list (sizes differ)."""
    return list(batch)


def _condition_ids(conditions: Iterable[str] | None, joint: bool, grid: Any) -> tuple[list[str], dict]:
    """The ids of the dataset (validated by the one condition planner) and the resolved grid."""
    plan = plan_conditions(conditions, joint=joint, grid=plan_grid(grid))
    if conditions is None:
        return [c.id for c in plan.conditions], dict(plan.grid)
    space = generated_space(plan.grid)
    # only what was asked for, in that order (no clean or joint parts added)
    return list(dict.fromkeys(space.canonical(parse_condition(str(c))).id for c in conditions)), dict(plan.grid)


def _to_output(image: np.ndarray, as_tensor: bool) -> Any:
    if as_tensor:
        return _torch.from_numpy(np.ascontiguousarray(image.transpose(2, 0, 1)))
    return image


class _Plan:
    """The (record, condition) pairs that exist for a manifest; shared by both dataset classes."""

    def __init__(self, manifest, conditions, seed: int, joint: bool, grid) -> None:
        self.records = load_manifest(manifest) if isinstance(manifest, (str, os.PathLike)) else list(manifest)
        self.seed = int(seed)
        # validated up front, as `corrupt` does, instead of in a DataLoader worker
        self.conditions, self.grid = _condition_ids(conditions, joint, grid)
        parsed = [parse_condition(c) for c in self.conditions]
        self.skipped: list[dict[str, Any]] = []
        self.per_record: list[list[str]] = []
        for rec in self.records:
            text_ok: dict[str, str | None] = {}
            keep: list[str] = []
            for c in parsed:
                if "image" in c.sides and rec.image is None:
                    self.skipped.append({"id": rec.id, "condition": c.id, "reason": "query has no image"})
                    continue
                if "text" in c.sides:
                    if rec.question is None:
                        self.skipped.append({"id": rec.id, "condition": c.id, "reason": "query has no question"})
                        continue
                    op = c.text_operator
                    if op not in text_ok:
                        try:
                            corrupt_text(rec.question, op, entity=rec.entity, seed=self.seed, key=rec.id)
                            text_ok[op] = None
                        except ValueError as exc:
                            text_ok[op] = str(exc)
                    if text_ok[op] is not None:
                        self.skipped.append({"id": rec.id, "condition": c.id, "reason": text_ok[op]})
                        continue
                keep.append(c.id)
            self.per_record.append(keep)

    def variants(self, r: int, conditions: Sequence[str], image: np.ndarray | None) -> Iterator[Any]:
        rec = self.records[r]
        want = set(conditions)
        for v in iter_variants(image, rec.question, key=rec.id, entity=rec.entity, seed=self.seed,
                               conditions=list(conditions), grid=self.grid, errors="raise"):
            if v.condition in want:
                yield v


class CorruptedQueries(_Dataset):
    """Map-style dataset of corrupted queries: item ``i`` is one (query, condition) pair.

    Args:
        manifest: a query manifest path (JSONL/JSON, as for ``snapbench corrupt``) or loaded records.
        conditions: condition ids (default: the 54 states; ``joint=True`` adds the paper's 18 joint ones).
        seed: the global seed (same meaning as ``snapbench corrupt --seed``).
        as_tensor: images as CHW uint8 tensors instead of HWC uint8 numpy arrays.
        grid: severity grid override (file or mapping), as for ``run_corruption``.

    Items are ``{"id", "condition", "image", "question"}`` in manifest order, conditions in the
    given order within a query.
    """

    def __init__(
        self,
        manifest: str | os.PathLike | Iterable[Any],
        conditions: Iterable[str] | None = None,
        seed: int = 0,
        *,
        joint: bool = False,
        as_tensor: bool = False,
        grid: str | os.PathLike | Mapping[str, Any] | None = None,
    ) -> None:
        self._plan = _Plan(manifest, conditions, seed, joint, grid)
        self.as_tensor = bool(as_tensor)
        self.index: list[tuple[int, str]] = [
            (r, c) for r, conds in enumerate(self._plan.per_record) for c in conds
        ]
        self._cache: tuple[int, np.ndarray | None] | None = None  # last image: items of a query are adjacent

    @property
    def conditions(self) -> list[str]:
        return list(self._plan.conditions)

    @property
    def skipped(self) -> list[dict[str, Any]]:
        """``{"id", "condition", "reason"}`` for every pair left out (as ``skips.jsonl`` of ``corrupt``)."""
        return list(self._plan.skipped)

    def __len__(self) -> int:
        return len(self.index)

    def _image(self, r: int) -> np.ndarray | None:
        if self._cache is None or self._cache[0] != r:
            rec = self._plan.records[r]
            self._cache = (r, None if rec.image is None else load_image(rec.image))
        return self._cache[1]

    def __getitem__(self, i: int) -> dict[str, Any]:
        if not -len(self.index) <= int(i) < len(self.index):
            raise IndexError(f"index {i} out of range for {len(self.index)} items")
        r, cond = self.index[int(i)]
        (v,) = list(self._plan.variants(r, [cond], self._image(r)))
        rec = self._plan.records[r]
        image = None if v.image is None else _to_output(v.image, self.as_tensor)
        return {"id": rec.id, "condition": v.condition, "image": image, "question": v.question}


class CorruptedQueriesIterable(_IterableDataset):
    """Iterable variant of :class:`CorruptedQueries`: queries are sharded across DataLoader workers.

    Worker ``w`` of ``n`` takes the queries at positions ``w, w + n, w + 2n, ...``; each query's image
    is loaded once and all of its conditions are derived from it.  Item contents never depend on
    ``n``; the interleaving of items from different workers does.
    """

    def __init__(
        self,
        manifest: str | os.PathLike | Iterable[Any],
        conditions: Iterable[str] | None = None,
        seed: int = 0,
        *,
        joint: bool = False,
        as_tensor: bool = False,
        grid: str | os.PathLike | Mapping[str, Any] | None = None,
    ) -> None:
        self._plan = _Plan(manifest, conditions, seed, joint, grid)
        self.as_tensor = bool(as_tensor)

    @property
    def skipped(self) -> list[dict[str, Any]]:
        return list(self._plan.skipped)

    def __len__(self) -> int:
        return sum(len(c) for c in self._plan.per_record)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        info = _get_worker_info()
        wid, n = (0, 1) if info is None else (info.id, info.num_workers)
        for r in range(wid, len(self._plan.records), n):
            conds = self._plan.per_record[r]
            if not conds:
                continue
            rec = self._plan.records[r]
            image = None if rec.image is None else load_image(rec.image)
            for v in self._plan.variants(r, conds, image):
                img = None if v.image is None else _to_output(v.image, self.as_tensor)
                yield {"id": rec.id, "condition": v.condition, "image": img, "question": v.question}


def _content_key(image: np.ndarray) -> str:
    """The per-sample key :class:`SnapbenchTransform` uses: SHA-256 of the shape and the pixel bytes."""
    h = hashlib.sha256(f"{image.shape[0]}x{image.shape[1]}x{image.shape[2]}:".encode())
    h.update(np.ascontiguousarray(image).tobytes())
    return h.hexdigest()


class SnapbenchTransform(_torch.nn.Module):
    """torchvision-v2-style transform: one snapbench image operator at one severity.

    Accepts an HWC uint8 numpy array, a PIL image or a CHW uint8 tensor, and returns the same kind.
    The randomness is keyed by (``seed``, key, operator, severity) where the key is ``key`` when
    given and otherwise :func:`_content_key` of the image, so the output depends on the image alone
    -- not on the worker, the epoch or the order of samples.  (Hence the same image always gets the
    same corruption; give per-sample keys for different draws.)
    """

    def __init__(self, operator: str, severity: int, seed: int = 0, *, key: str | None = None,
                 grid: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        self.operator = operator
        self.severity = int(severity)
        self.seed = int(seed)
        self.key = key
        self.grid = None if grid is None else resolve_grid(grid)
        self.operator = get_image_operator(operator).name  # fails early on an unknown name
        level_params(self.operator, self.severity, self.grid or resolve_grid(None))  # fails early on a missing level

    def _apply(self, rgb: np.ndarray, key: str | None) -> np.ndarray:
        k = key if key is not None else (self.key if self.key is not None else _content_key(rgb))
        return corrupt_image(rgb, self.operator, self.severity, seed=self.seed, key=k, grid=self.grid)

    def forward(self, image: Any, key: str | None = None) -> Any:
        if isinstance(image, _torch.Tensor):
            if image.dtype != _torch.uint8 or image.ndim != 3 or image.shape[0] != 3:
                raise InputError(f"SnapbenchTransform needs a 3xHxW uint8 tensor, got {tuple(image.shape)} {image.dtype}")
            rgb = image.detach().cpu().permute(1, 2, 0).contiguous().numpy()
            out = self._apply(rgb, key)
            return _torch.from_numpy(np.ascontiguousarray(out.transpose(2, 0, 1))).to(image.device)
        if isinstance(image, np.ndarray):
            return self._apply(image, key)
        try:
            from PIL import Image
        except ImportError:  # pragma: no cover - Pillow is a core dependency
            Image = None
        if Image is not None and isinstance(image, Image.Image):
            return Image.fromarray(self._apply(np.asarray(image.convert("RGB"), dtype=np.uint8), key))
        raise InputError(f"SnapbenchTransform accepts numpy arrays, PIL images or tensors, got {type(image).__name__}")

    def extra_repr(self) -> str:
        return f"operator={self.operator!r}, severity={self.severity}, seed={self.seed}"
