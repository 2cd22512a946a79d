"""``open_clip:ARCH[:PRETRAINED_OR_FILE]`` — an OpenCLIP model (``open_clip_torch``).

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
from ..core.validate import hint_and_known
from .torch_support import (
    TorchEncoderBase,
    file_sha256,
    fingerprint_of,
    hash_model_dir,
    load_or_explain,
    local_model_folder,
    require,
    to_pil,
)

__all__ = ["OpenClipEncoder"]


class OpenClipEncoder(TorchEncoderBase):
    """``model.encode_image(preprocess(img))`` and ``model.encode_text(tokenizer(texts))``."""

    def __init__(self, arch: str, pretrained: str | None = None, *, device: str | None = None,
                 batch_size: int | None = None) -> None:
        super().__init__(device, batch_size)
        spec = f"open_clip:{arch}" + (f":{pretrained}" if pretrained else "")
        open_clip = require("open_clip", for_what=f"encoder {spec!r}")
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
