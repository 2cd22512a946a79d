"""``hf:NAME_OR_PATH`` — a transformers model with ``get_image_features`` / ``get_text_features``
(CLIP, SigLIP, ALIGN, ...) and its ``AutoProcessor``.

``sentence-transformers:NAME_OR_PATH`` — a sentence-transformers model.

Text models (all-MiniLM-L6-v2, ...) encode texts only; their ``modalities`` is ``{"text"}`` and
``encode_images`` refuses.  sentence-transformers' CLIP models (``clip-ViT-B-32``, ...) encode both.

``open_clip:ARCH[:PRETRAINED_OR_FILE]`` — an OpenCLIP model (``open_clip_torch``).

``PRETRAINED`` is an OpenCLIP tag (``laion2b_s34b_b79k``, ``openai``...; downloaded once into the
Hugging Face cache) or the path of a checkpoint file.  Without it the architecture's first listed
pretrained tag is used (not random weights: a random model would silently measure nothing).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..core.errors import ConfigError
from ..core.install_hint import import_extra
from ..core.validate import hint_and_known
from .loading import load_or_explain, local_model_folder, model_source
from .torch_support import (
    TorchEncoderBase,
    file_sha256,
    fingerprint_of,
    hash_model_dir,
    to_pil,
)

__all__ = ['HFEncoder', 'SentenceTransformersEncoder', 'OpenClipEncoder']

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
        what = f"encoder 'hf:{source}'"
        transformers = import_extra("transformers", "models", f"{what} needs the Python package 'transformers'",
                                    error=ConfigError)
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
        what = f"encoder 'sentence-transformers:{source}'"
        st = import_extra("sentence_transformers", "models", f"{what} needs the Python package 'sentence-transformers'",
                          error=ConfigError)
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


class OpenClipEncoder(TorchEncoderBase):
    """``model.encode_image(preprocess(img))`` and ``model.encode_text(tokenizer(texts))``."""

    extra = "openclip"

    def __init__(self, arch: str, pretrained: str | None = None, *, device: str | None = None,
                 batch_size: int | None = None) -> None:
        super().__init__(device, batch_size)
        spec = f"open_clip:{arch}" + (f":{pretrained}" if pretrained else "")
        open_clip = import_extra("open_clip", self.extra, f"encoder {spec!r} needs the Python package 'open_clip_torch'",
                                 error=ConfigError)
        if arch.startswith(("hf-hub:", "local-dir:")):
            folder = local_model_folder(arch.split(":", 1)[1])
            weights_id: dict = {"files": hash_model_dir(folder)} if folder is not None else {"repo": arch}
            pretrained = None
        elif arch not in open_clip.list_models():
            raise ConfigError(f"encoder {spec!r}: unknown OpenCLIP architecture {arch!r} (open_clip.list_models() lists them)")
        else:
            pretrained, weights_id = self._weights(open_clip, spec, arch, pretrained)
        model, _, preprocess = load_or_explain(
            f"encoder {spec!r}", pretrained or arch,
            lambda: open_clip.create_model_and_transforms(arch, pretrained=pretrained, device=self.device),
        )
        self.model = model.eval()
        self.preprocess = preprocess
        self.tokenizer = open_clip.get_tokenizer(arch)
        self.name = spec
        self.modalities = frozenset({"image", "text"})
        self.dim = None
        self.fingerprint = fingerprint_of(
            {"adapter": "open_clip/1", "arch": arch, "weights": weights_id, "precision": self.precision,
             "open_clip": getattr(open_clip, "__version__", None)}
        )

    @staticmethod
    def _weights(open_clip: Any, spec: str, arch: str, pretrained: str | None) -> tuple[str, dict]:
        """The pretrained tag or checkpoint file to load, and what identifies those weights."""
        if not pretrained:
            tags = [tag for a, tag in open_clip.list_pretrained() if a == arch]
            if not tags:
                raise ConfigError(f"encoder {spec!r}: OpenCLIP has no pretrained weights for {arch!r}; give a checkpoint file")
            pretrained = tags[0]
        weights_file = Path(os.path.expanduser(pretrained))
        if weights_file.is_file():
            weights_id = {"file_sha256": file_sha256(weights_file)}
            pretrained = str(weights_file)
        elif pretrained.startswith((".", "/", "~")) or os.sep in pretrained:
            raise ConfigError(f"encoder {spec!r}: checkpoint file {pretrained!r} does not exist")
        else:
            tags = open_clip.list_pretrained_tags_by_model(arch)
            if pretrained not in tags:
                raise ConfigError(f"encoder {spec!r}: {pretrained!r} is neither a file nor an OpenCLIP pretrained tag of {arch}"
                                  f"{hint_and_known(pretrained, tags)}")
            weights_id = {"tag": pretrained}
        return pretrained, weights_id

    def encode_images(self, images: Sequence[np.ndarray]) -> np.ndarray:
        torch = self._torch

        def run(batch: Sequence[np.ndarray]) -> Any:
            x = torch.stack([self.preprocess(to_pil(im)) for im in batch]).to(self.device)
            return self.model.encode_image(x)

        return self._batched(list(images), run)

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        def run(batch: Sequence[str]) -> Any:
            return self.model.encode_text(self.tokenizer(list(batch)).to(self.device))

        return self._batched(list(texts), run)
