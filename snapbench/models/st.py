"""``sentence-transformers:NAME_OR_PATH`` — a sentence-transformers model.

Text models (all-MiniLM-L6-v2, ...) encode texts only; their ``modalities`` is ``{"text"}`` and
``encode_images`` refuses.  sentence-transformers' CLIP models (``clip-ViT-B-32``, ...) encode both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core.errors import ConfigError
from .loading import load_or_explain, model_source
from .torch_support import (
    TorchEncoderBase,
    fingerprint_of,
    hash_model_dir,
    local_model_folder,
    require,
    to_pil,
)

__all__ = ["SentenceTransformersEncoder"]


def _supports(model: Any, modality: str) -> bool:
    supports = getattr(model, "supports", None)
    if callable(supports):  # sentence-transformers >= 5.2
        return bool(supports(modality))
    if modality == "text":
        return True
    return any(type(m).__name__ == "CLIPModel" for m in model.modules())


class SentenceTransformersEncoder(TorchEncoderBase):
    """``SentenceTransformer(NAME).encode`` over batches (texts as strings, images as PIL images)."""

    def __init__(self, source: str, *, device: str | None = None, batch_size: int | None = None) -> None:
        super().__init__(device, batch_size)
        st = require("sentence_transformers", for_what=f"encoder 'sentence-transformers:{source}'")
        what = f"encoder 'sentence-transformers:{source}'"
        # sentence-transformers resolves bare names under its own organisation
        hub_names = () if "/" in source else (f"sentence-transformers/{source}",)
        src = model_source(what, source, alternatives=hub_names)
        self.model = load_or_explain(what, src, lambda **kw: st.SentenceTransformer(source, device=str(self.device), **kw))
        self.model.eval()
        self.name = f"sentence-transformers:{source}"
        self.modalities = frozenset(m for m in ("image", "text") if _supports(self.model, m))
        getdim = getattr(self.model, "get_embedding_dimension", None) or getattr(self.model, "get_sentence_embedding_dimension", None)
        self.dim = getdim() if callable(getdim) else None
        folder = local_model_folder(source, alternatives=hub_names)
        self.fingerprint = fingerprint_of(
            {
                "adapter": "sentence-transformers/1",
                "model": source if folder is None else None,
                "files": hash_model_dir(folder) if folder is not None else None,
                "precision": self.precision,
            }
        )

    def _encode(self, batch: Sequence[Any]) -> np.ndarray:
        return self.model.encode(list(batch), batch_size=len(batch), convert_to_numpy=True, show_progress_bar=False)

    def encode_images(self, images: Sequence[np.ndarray]) -> np.ndarray:
        if "image" not in self.modalities:
            raise ConfigError(
                f"encoder {self.name!r} is a text model: it cannot encode images (use a CLIP model such as "
                "'sentence-transformers:clip-ViT-B-32' for image paths)"
            )
        return self._batched(list(images), lambda batch: self._encode([to_pil(im) for im in batch]))

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        if "text" not in self.modalities:
            raise ConfigError(f"encoder {self.name!r} does not encode texts")
        return self._batched(list(texts), self._encode)
