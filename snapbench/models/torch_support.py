"""Shared plumbing of the torch-based adapters (their packages are imported lazily, through
:func:`snapbench.core.install_hint.import_extra`): device and mixed-precision choice, batching under
``torch.inference_mode`` and the weight fingerprints that key the embedding cache (where a model
comes from and load errors: :mod:`.loading`).

Nothing here is imported unless a torch-based encoder is asked for: ``import snapbench`` never
imports torch.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..core.defaults import DEFAULT_BATCH_SIZE
from ..core.errors import ConfigError
from ..core.install_hint import import_extra
from ..core.validate import positive_int

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "TorchEncoderBase",
    "file_sha256",
    "fingerprint_of",
    "hash_model_dir",
    "to_pil",
]


def fingerprint_of(parts: dict[str, Any]) -> str:
    """sha256 (hex) of a JSON description (sorted keys, so dict order does not matter)."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode("utf-8")).hexdigest()


_HEX = re.compile(r"^[0-9a-f]{40}$|^[0-9a-f]{64}$")
# Weight formats torch loaders never read; hashing them would only cost time.
_SKIP_SUFFIXES = (".md", ".h5", ".msgpack", ".onnx", ".ot", ".tflite", ".mlmodel", ".png", ".jpg")
_SKIP_DIRS = {"onnx", "openvino", "coreml", "tf", "flax"}


def file_sha256(path: str | os.PathLike) -> str:
    """sha256 (hex) of a file's bytes, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def hash_model_dir(folder: str | os.PathLike) -> dict[str, str]:
    """``{relative file name: content hash}`` of a model folder (configs, tokenizer, weights).

    Files of a Hugging Face cache snapshot are symlinks to blobs named by their sha256 (weights)
    or git sha1 (small files): that name *is* the content hash, so multi-GB weights are not read
    again.  Other files are hashed in full (once per load).  Read-me files, hidden files and
    weight formats torch never loads (TF, Flax, ONNX...) are left out.
    """
    root = Path(folder)
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in _SKIP_DIRS)
        for name in sorted(filenames):
            if name.startswith(".") or name.lower().endswith(_SKIP_SUFFIXES):
                continue
            p = Path(dirpath) / name
            rel = p.relative_to(root).as_posix()
            target = p.resolve()
            if p.is_symlink() and _HEX.match(target.name):
                out[rel] = target.name
            elif target.is_file():
                out[rel] = file_sha256(target)
    return out


def to_pil(image: np.ndarray) -> Any:
    """uint8 HxWx3 RGB array -> PIL image (what every model preprocessor takes)."""
    from PIL import Image

    a = np.asarray(image)
    if a.dtype != np.uint8 or a.ndim != 3 or a.shape[2] != 3:
        raise ConfigError(f"an image to encode must be a uint8 HxWx3 RGB array, got {a.dtype} {a.shape}")
    return Image.fromarray(np.ascontiguousarray(a))


class TorchEncoderBase:
    """Device, precision and batching shared by the torch adapters.

    ``device=None`` picks ``"cuda"`` when available, else ``"cpu"``.  On a GPU the forward passes
    run under ``torch.autocast`` (bfloat16 where supported, else float16): 2-3x faster, and
    retrieval rankings are insensitive to the rounding; on CPU they run in float32 (CPU autocast
    is slower than float32 for these models).  The precision is part of :attr:`fingerprint`, so
    cached float16 and float32 embeddings never mix.
    """

    name: str
    fingerprint: str
    modalities: frozenset[str]
    dim: int | None = None
    #: the extra that installs this encoder's packages (torch with them): what a missing torch's hint names
    extra: str = "models"

    def __init__(self, device: str | None, batch_size: int | None) -> None:
        torch = import_extra("torch", self.extra, "a model encoder needs the Python package 'torch'", error=ConfigError)
        self._torch = torch
        if device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        try:
            dev = torch.device(device)
        except (RuntimeError, TypeError) as exc:
            raise ConfigError(f"device {device!r} is not a torch device ({exc})") from None
        if dev.type == "cuda" and not torch.cuda.is_available():
            raise ConfigError(f"device {device!r}: CUDA is not available to torch here (use device 'cpu')")
        self.device = dev
        self.batch_size = DEFAULT_BATCH_SIZE if batch_size is None else positive_int(batch_size, "batch_size")
        if dev.type == "cuda":
            self.amp_dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        else:
            self.amp_dtype = None
        self.precision = "float32" if self.amp_dtype is None else f"autocast-{str(self.amp_dtype).removeprefix('torch.')}"

    @contextlib.contextmanager
    def _inference(self) -> Iterator[None]:
        torch = self._torch
        with torch.inference_mode():
            if self.amp_dtype is not None:
                with torch.autocast(device_type=self.device.type, dtype=self.amp_dtype):
                    yield
            else:
                yield

    def _batched(self, items: Sequence[Any], fn: Callable[[Sequence[Any]], Any]) -> np.ndarray:
        """Run ``fn`` on batches of ``items``; returns one float32 (n, d) array."""
        if len(items) == 0:
            return np.zeros((0, self.dim or 0), np.float32)
        out = []
        with self._inference():
            for i in range(0, len(items), self.batch_size):
                t = fn(items[i : i + self.batch_size])
                if hasattr(t, "detach"):
                    t = t.detach().float().cpu().numpy()
                out.append(np.asarray(t, dtype=np.float32))
        res = np.concatenate(out)
        if self.dim is None:
            self.dim = int(res.shape[1])
        return res
