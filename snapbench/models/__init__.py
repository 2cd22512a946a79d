"""Encoders: anything with ``encode_images`` and ``encode_texts``, found through a small registry.

snapbench does not need a model to corrupt queries, score ``.npy`` files or run MOOR; this module is the
"encode" step for people who want ``snapbench`` to run their encoder over corrupted variants.  Register
your own::

    from snapbench.models import register_encoder

    @register_encoder("my-clip")
    def build(**kwargs):
        return MyClipWrapper(**kwargs)   # has encode_images(list[np.ndarray]) and encode_texts(list[str])

Built in: ``toy`` — a dependency-free handcrafted encoder (colour layout, gradient orientations,
hashed character trigrams) used by the demo and the tests.  It is *not* a retrieval model; its
cross-modal similarities carry no meaning.
"""

from __future__ import annotations

from typing import Callable, Protocol, Sequence, runtime_checkable

import numpy as np

__all__ = ["Encoder", "register_encoder", "get_encoder", "encoders", "cosine_path_scores", "l2_normalize"]


@runtime_checkable
class Encoder(Protocol):
    """A dual encoder: images and texts into spaces of the same dimension."""

    def encode_images(self, images: Sequence[np.ndarray]) -> np.ndarray: ...

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray: ...


_REGISTRY: dict[str, Callable[..., Encoder]] = {}


def register_encoder(name: str, *, replace: bool = False):
    """Decorator registering a factory ``(**kwargs) -> Encoder`` under ``name``."""

    def _register(factory: Callable[..., Encoder]) -> Callable[..., Encoder]:
        if name in _REGISTRY and not replace:
            raise ValueError(f"encoder {name!r} is already registered (pass replace=True)")
        _REGISTRY[name] = factory
        return factory

    return _register


def encoders() -> list[str]:
    _ensure_builtins()
    return sorted(_REGISTRY)


def get_encoder(name: str, **kwargs) -> Encoder:
    """Build the encoder registered as ``name``."""
    _ensure_builtins()
    if name not in _REGISTRY:
        raise ValueError(f"unknown encoder {name!r}; known: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[name](**kwargs)


def _ensure_builtins() -> None:
    from . import toy  # noqa: F401


def l2_normalize(x: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), eps)


def cosine_path_scores(q_image: np.ndarray, q_text: np.ndarray, g_image: np.ndarray, g_text: np.ndarray) -> dict[str, np.ndarray]:
    """Cosine similarities of the four paths (SPEC §6): II, TT, IT (query image vs gallery text), TI."""
    qi, qt, gi, gt = (l2_normalize(a) for a in (q_image, q_text, g_image, g_text))
    return {"II": qi @ gi.T, "TT": qt @ gt.T, "IT": qi @ gt.T, "TI": qt @ gi.T}
