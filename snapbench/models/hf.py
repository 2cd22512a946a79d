"""``hf:NAME_OR_PATH`` — a transformers model with ``get_image_features`` / ``get_text_features``
(CLIP, SigLIP, ALIGN, ...) and its ``AutoProcessor``."""

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

__all__ = ["HFEncoder"]


def _features(out: Any, kind: str) -> Any:
    """The embedding tensor of a ``get_*_features`` result.

    transformers 4 returns the projected tensor; transformers 5 returns a model output whose
    ``pooler_output`` holds the projected features.
    """
    if hasattr(out, "dim") and hasattr(out, "shape"):
        return out
    for attr in ("pooler_output", f"{kind}_embeds"):
        val = getattr(out, attr, None)
        if val is not None:
            return val
    raise ConfigError(f"get_{kind}_features returned {type(out).__name__}, which holds no feature tensor")


class HFEncoder(TorchEncoderBase):
    """Images through ``model.get_image_features``, texts through ``model.get_text_features``.

    Texts are truncated to the model's maximum length; SigLIP models get ``padding="max_length"``
    (they were trained with it and their embeddings change with other padding).
    """

    def __init__(self, source: str, *, device: str | None = None, batch_size: int | None = None) -> None:
        super().__init__(device, batch_size)
        transformers = require("transformers", for_what=f"encoder 'hf:{source}'")
        what = f"encoder 'hf:{source}'"
        src = model_source(what, source)
        self.model = load_or_explain(what, src, lambda **kw: transformers.AutoModel.from_pretrained(source, **kw))
        self.processor = load_or_explain(what, src, lambda **kw: transformers.AutoProcessor.from_pretrained(source, **kw))
        self.model.eval().to(self.device)
        mods = set()
        if callable(getattr(self.model, "get_image_features", None)):
            mods.add("image")
        if callable(getattr(self.model, "get_text_features", None)):
            mods.add("text")
        if not mods:
            raise ConfigError(
                f"{what}: {type(self.model).__name__} has neither get_image_features nor get_text_features; "
                "for a text embedding model use 'sentence-transformers:NAME'"
            )
        self.modalities = frozenset(mods)
        self.name = f"hf:{source}"
        cfg = self.model.config
        self._siglip = "siglip" in str(getattr(cfg, "model_type", "")).lower()
        self.dim = getattr(cfg, "projection_dim", None) if not self._siglip else None
        folder = local_model_folder(source)
        self.fingerprint = fingerprint_of(
            {
                "adapter": "hf/1",
                "model": source if folder is None else None,
                "revision": getattr(cfg, "_commit_hash", None) if folder is None else None,
                "files": hash_model_dir(folder) if folder is not None else None,
                "precision": self.precision,
                "siglip_padding": self._siglip,
            }
        )

    def _tokenizer_max_length(self) -> int | None:
        tok = getattr(self.processor, "tokenizer", None)
        n = getattr(tok, "model_max_length", None)
        if isinstance(n, int) and 0 < n < 100_000:
            return n
        tcfg = getattr(self.model.config, "text_config", None)
        return getattr(tcfg, "max_position_embeddings", None)

    def _to_device(self, inputs: Any) -> dict[str, Any]:
        return {k: v.to(self.device) for k, v in inputs.items() if hasattr(v, "to")}

    def encode_images(self, images: Sequence[np.ndarray]) -> np.ndarray:
        if "image" not in self.modalities:
            raise ConfigError(f"encoder {self.name!r} does not encode images")

        def run(batch: Sequence[np.ndarray]) -> Any:
            inputs = self.processor(images=[to_pil(im) for im in batch], return_tensors="pt")
            return _features(self.model.get_image_features(**self._to_device(inputs)), "image")

        return self._batched(list(images), run)

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        if "text" not in self.modalities:
            raise ConfigError(f"encoder {self.name!r} does not encode texts")
        max_length = self._tokenizer_max_length()

        def run(batch: Sequence[str]) -> Any:
            kw: dict[str, Any] = {"truncation": True, "return_tensors": "pt"}
            kw["padding"] = "max_length" if self._siglip else True
            if max_length:
                kw["max_length"] = max_length
            inputs = self.processor(text=list(batch), **kw)
            return _features(self.model.get_text_features(**self._to_device(inputs)), "text")

        return self._batched(list(texts), run)
