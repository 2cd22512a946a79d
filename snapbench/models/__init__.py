"""Encoders: anything with ``encode_images`` / ``encode_texts``, chosen by one spec string.

::

    from snapbench.models import load_encoder, CachedEncoder

    enc = load_encoder("hf:openai/clip-vit-base-patch32", device="cuda", batch_size=64)
    enc = CachedEncoder(enc, "~/.cache/snapbench")     # each distinct image/text encoded once
    enc.encode_images([rgb_uint8_array, ...])          # (n, d) float32
    enc.encode_texts(["a photo of a dog", ...])        # (n, d) float32

Spec strings (the same on every command): ``toy``; ``sentence-transformers:NAME_OR_PATH``;
``open_clip:ARCH[:PRETRAINED_OR_FILE]``; ``hf:NAME_OR_PATH``; ``package.module:attribute`` (your
own class, factory or instance); a name registered with :func:`register_encoder`; or the name of
an installed plugin (entry point group ``snapbench.encoders``).  Names and adapter prefixes are
tables that fail loudly (an unknown one is an error with the close names): see
:mod:`snapbench.models.spec`.

Every encoder :func:`load_encoder` returns has ``name``, ``fingerprint`` (identity of weights +
preprocessing + precision, the embedding cache's key; ``None`` for a user encoder that does not
define one, which then is not cached) and ``modalities`` (⊆ {"image", "text"}: a text model such as
all-MiniLM-L6-v2 has only ``"text"`` and its ``encode_images`` refuses; callers use this to choose
the retrieval paths they can score).

torch, transformers, sentence-transformers and open_clip are the optional extra
``snapbench[models]``, imported only when such an encoder is asked for.  ``toy`` needs none of them:
a dependency-free handcrafted encoder (colour layout, gradient orientations, hashed character
trigrams) for the demo and the tests; its cross-modal similarities carry no meaning.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from ..core.targets import PATH_SIDES
from ..core.vectors import l2_normalize
from .spec import ENCODERS, known_names

__all__ = [
    "Encoder",
    "available_encoders",
    "cosine_path_scores",
    "encoders",
    "get_encoder",
    "load_encoder",
    "register_encoder",
]


@runtime_checkable
class Encoder(Protocol):
    """A dual encoder: images and texts into spaces of the same dimension.

    Encoders from :func:`load_encoder` also carry ``name: str``, ``fingerprint: str | None`` and
    ``modalities: frozenset[str]``; a model with a native joint embedding may set ``joint = True``
    and offer ``encode_queries(images, texts)``; a model so cheap that caching its embeddings costs
    more than computing them (``toy``) sets ``cheap = True`` (not cached unless asked).
    """

    def encode_images(self, images: Sequence[np.ndarray]) -> np.ndarray: ...

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray: ...


def register_encoder(name: str, *, replace: bool = False):
    """Decorator registering a factory ``(**kwargs) -> Encoder`` under ``name`` (in :data:`snapbench.models.spec.ENCODERS`)."""

    def _register(factory: Callable[..., Encoder]) -> Callable[..., Encoder]:
        ENCODERS.names()  # the built-ins first, so that a clash with one is seen
        return ENCODERS.register(name, factory, replace=replace)

    return _register


def encoders() -> list[str]:
    """Registered encoder names (see :func:`available_encoders` for plugins too)."""
    return sorted(ENCODERS.names())


def available_encoders() -> list[str]:
    """Encoder names usable as a spec as they are: registered names and installed plugins.

    The adapter forms (``hf:...``, ``sentence-transformers:...``, ``open_clip:...``,
    ``module:attribute``) take a model name or path and are not listed.
    """
    return known_names()


def get_encoder(name: str, **kwargs) -> Encoder:
    """Build the encoder registered as ``name`` (the factory's own object, unwrapped)."""
    return ENCODERS.get(name)(**kwargs)


def load_encoder(spec: str, *, device: str | None = None, batch_size: int | None = None) -> Encoder:
    """Build the encoder a spec string names (forms in the module docstring).

    ``device``: ``None`` = ``"cuda"`` when torch sees a GPU, else ``"cpu"``; mixed precision
    (autocast bfloat16/float16) is used on GPU only.  ``batch_size``: items per forward pass
    (default 32).  Both are ignored by encoders that take no such argument (``toy``), but a
    ``device`` that is no torch device (``"tpu"``, ``"gpu"``) is a ``ConfigError`` for every spec
    (:func:`snapbench.models.device.check_device`).
    Raises :class:`~snapbench.core.errors.ConfigError` for an unknown spec, a missing extra (with the
    command that installs the ``models`` extra) or a model that is neither local nor downloadable.
    """
    from .device import check_device
    from .spec import resolve

    return resolve(spec, {"device": check_device(device), "batch_size": batch_size})


def cosine_path_scores(q_image: np.ndarray | None, q_text: np.ndarray | None, g_image: np.ndarray | None,
                       g_text: np.ndarray | None, *, paths: Collection[str] | None = None) -> dict[str, np.ndarray]:
    """Cosine similarities of the four paths of :data:`snapbench.core.targets.PATH_SIDES` (II, TT, IT, TI), or of
    ``paths`` only.

    A side given as ``None`` (no images, or a text-only model) leaves out the paths that need it.
    Rows are normalised with :func:`snapbench.core.vectors.l2_normalize` (float32 embeddings stay float32).
    """
    unit = {k: None if a is None else l2_normalize(np.asarray(a, dtype=np.float32))
            for k, a in {("q", "image"): q_image, ("q", "text"): q_text, ("g", "image"): g_image, ("g", "text"): g_text}.items()}
    out = {}
    for path, (qs, gs) in PATH_SIDES.items():
        if paths is not None and path not in paths:
            continue
        a, b = unit[("q", qs)], unit[("g", gs)]
        if a is not None and b is not None:
            out[path] = a @ b.T
    return out
