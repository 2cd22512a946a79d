"""An on-disk embedding cache: each distinct image or text is encoded once per model.

Layout (no pickles, one ``.npy`` per item, written atomically)::

    CACHE_DIR/<fingerprint[:32]>/model.json                  name + full fingerprint (for people)
    CACHE_DIR/<fingerprint[:32]>/image/<k[:2]>/<k>.npy       k = sha256 of the image array
    CACHE_DIR/<fingerprint[:32]>/text/<k[:2]>/<k>.npy        k = sha256 of the UTF-8 text
    CACHE_DIR/<fingerprint[:32]>/joint/<k[:2]>/<k>.npy       native joint (image, text) embeddings

The key of an image is its decoded pixels (shape + bytes), not its file, so a re-encoded or moved
file with the same pixels hits and a changed one misses.  The model part is the encoder's
``fingerprint`` (weights + preprocessing + precision).  Two processes sharing the folder are safe:
each file appears complete or not at all (``os.replace``), and two writers of one key write the
same bytes.  An unreadable or mis-shaped entry is treated as a miss and rewritten.  An entry holding
embeddings of another dimension than the encoder returns (another model under the same fingerprint) is
refused, and what this process had added to it before finding out (say images, before the texts showed
the mismatch) is removed: the entry is left as it was found.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..core.errors import ConfigError, arg
from .atomic import nearest_existing, save_npy_atomic, write_json

__all__ = ["CachedEncoder", "check_cache_dir"]


def _default_cache_dir() -> Path:
    """``$SNAPBENCH_CACHE`` if set, else ``~/.cache/snapbench``."""
    env = os.environ.get("SNAPBENCH_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "snapbench"


def check_cache_dir(cache_dir: str | os.PathLike | None) -> Path:
    """The cache folder (``None``: :func:`_default_cache_dir`), refused with a :class:`ConfigError`
    naming it when it cannot be one: a file is there, or above it.  The folder itself need not exist
    yet (entries create it).  Commands call this before any work, so a wrong ``cache_dir`` fails
    before a model is loaded, not on the first batch."""
    given = cache_dir is not None
    folder = Path(cache_dir).expanduser() if given else _default_cache_dir()
    what = arg("cache_dir") if given else "the embedding cache ($SNAPBENCH_CACHE or ~/.cache/snapbench)"
    param = "cache_dir" if given else None
    probe = nearest_existing(folder)
    if probe is not None and not probe.is_dir():
        where = "a file is there" if probe == folder else f"{probe} is a file"
        raise ConfigError(f"{what} is not a folder ({where})", path=folder, param=param)
    return folder


def _image_key(image: np.ndarray) -> str:
    """sha256 over the array's shape, dtype and bytes."""
    a = np.ascontiguousarray(image)
    h = hashlib.sha256(f"image {a.dtype.str} {a.shape}\n".encode())
    h.update(memoryview(a).cast("B"))
    return h.hexdigest()


def _text_key(text: str) -> str:
    """sha256 of the UTF-8 text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class CachedEncoder:
    """Wrap an encoder; ``encode_images`` / ``encode_texts`` read hits from disk and encode only misses.

    The wrapped encoder needs a ``fingerprint`` string (weights + preprocessing); without one the
    embeddings could not be told apart from another model's, so a :class:`ConfigError` is raised.
    Everything else (``name``, ``modalities``, ``dim``...) is the wrapped encoder's.
    """

    def __init__(self, encoder: Any, cache_dir: str | os.PathLike | None = None) -> None:
        fp = getattr(encoder, "fingerprint", None)
        if not isinstance(fp, str) or not fp:
            raise ConfigError(
                f"encoder {getattr(encoder, 'name', type(encoder).__name__)!r} has no 'fingerprint' "
                "(a string identifying its weights and preprocessing), so its embeddings cannot be cached: "
                "give it that attribute, or do not use the embedding cache"
            )
        self.encoder = encoder
        self.cache_dir = check_cache_dir(cache_dir)
        self.root = self.cache_dir / hashlib.sha256(fp.encode()).hexdigest()[:32]
        self.hits = 0
        self.misses = 0
        self._meta_written = False
        # kinds the entry already held, whose dimension this encoder has not yet matched: while there are any,
        # the files this object adds are remembered, to be removed if the entry proves to be another model's
        self._unchecked = {k for k in ("image", "text", "joint") if any((self.root / k).glob("*/*.npy"))}
        self._written: list[Path] = []
        self._dims: dict[str, int | None] = {}  # kind -> the entry's dimension (a stored file's, then the encoder's)

    def __getattr__(self, attr: str) -> Any:  # name, fingerprint, modalities, dim, joint...
        if attr == "encoder":  # not yet set (during unpickling/copy): avoid infinite recursion
            raise AttributeError(attr)
        inner = getattr(self.encoder, attr)
        if attr == "encode_queries" and callable(inner):  # present only when the wrapped encoder has it
            return self._encode_queries
        return inner

    def _encode_queries(self, images: Sequence[np.ndarray], texts: Sequence[str]) -> np.ndarray:
        """Native joint embeddings of (image, text) pairs, cached under the pair's two keys."""
        pairs = list(zip(images, texts, strict=True))
        keys = [hashlib.sha256(f"{_image_key(im)} {_text_key(t)}".encode()).hexdigest() for im, t in pairs]
        return self._cached("joint", pairs, keys,
                            lambda ps: self.encoder.encode_queries([p[0] for p in ps], [p[1] for p in ps]))

    def _path(self, kind: str, key: str) -> Path:
        return self.root / kind / key[:2] / f"{key}.npy"

    def _read(self, path: Path) -> np.ndarray | None:
        try:
            v = np.load(path, allow_pickle=False)
        except (OSError, ValueError, EOFError):
            return None
        return v if v.dtype == np.float32 and v.ndim == 1 else None

    def _write_meta(self) -> None:
        if self._meta_written:
            return
        meta = self.root / "model.json"
        if not meta.exists():
            write_json(meta, {"name": getattr(self.encoder, "name", None), "fingerprint": self.encoder.fingerprint},
                       indent=1)
            self._remember(meta)
        self._meta_written = True

    def _cached(self, kind: str, items: Sequence[Any], keys: list[str], encode: Callable[[list], np.ndarray]) -> np.ndarray:
        found: dict[str, np.ndarray] = {}
        for k in dict.fromkeys(keys):
            v = self._read(self._path(kind, k))
            if v is not None:
                found[k] = v
        dims = {v.shape[0] for v in found.values()}
        if len(dims) > 1:  # entries of two shapes under one fingerprint: trust none of them
            found.clear()
            dims = set()
        elif dims and kind in self._dims and self._dims[kind] != next(iter(dims)):
            self._refuse(kind, next(iter(dims)), self._dims[kind])  # hits only, but of another dimension
        todo = [i for i, k in enumerate(keys) if k not in found]
        first_todo: list[int] = []  # the first index of each distinct missing key
        pending: set[str] = set()
        for i in todo:
            if keys[i] not in pending:
                pending.add(keys[i])
                first_todo.append(i)
        self.hits += len(keys) - len(todo)
        self.misses += len(first_todo)
        if first_todo:
            fresh = np.asarray(encode([items[i] for i in first_todo]), dtype=np.float32)
            if fresh.ndim != 2 or fresh.shape[0] != len(first_todo):
                raise ConfigError(f"encoder {getattr(self.encoder, 'name', '?')!r} returned shape {fresh.shape} "
                                  f"for {len(first_todo)} {kind}s")
            # checked against the entry even when every item is a miss: a stored file tells its dimension
            held = next(iter(dims)) if dims else self._entry_dim(kind)
            if held is not None and fresh.shape[1] != held:
                self._refuse(kind, held, int(fresh.shape[1]))
            self._dims[kind] = int(fresh.shape[1])
            self._unchecked.discard(kind)  # the entry's embeddings of this kind match this encoder's
            if not self._unchecked:
                self._written.clear()
            self._write_meta()
            for i, v in zip(first_todo, fresh):
                found[keys[i]] = v
                path = self._path(kind, keys[i])
                if np.isfinite(v).all():  # a NaN row is refused by the caller; kept, it would stay after a fix
                    if not path.exists():
                        self._remember(path)
                    save_npy_atomic(path, np.ascontiguousarray(v))
        if not keys:
            return np.asarray(encode([]), dtype=np.float32)
        return np.stack([found[k] for k in keys]).astype(np.float32, copy=False)

    def _entry_dim(self, kind: str) -> int | None:
        """The dimension of the entry's ``kind`` embeddings (one stored file's); ``None``: it holds none."""
        if kind not in self._dims:
            sample = next((self.root / kind).glob("*/*.npy"), None)
            v = None if sample is None else self._read(sample)
            self._dims[kind] = None if v is None else int(v.shape[0])
        return self._dims[kind]

    def _refuse(self, kind: str, held: int, returned: int) -> None:
        self._undo()  # the entry is left as it was found: no embeddings of two models side by side
        raise ConfigError(
            f"embedding cache {self.root}: holds {kind} embeddings of dimension {held} but encoder "
            f"{getattr(self.encoder, 'name', '?')!r} returns {returned}: its fingerprint does not change "
            "with its weights; delete that folder (or use no cache)"
        )

    def _remember(self, path: Path) -> None:
        if self._unchecked:
            self._written.append(path)

    def _undo(self) -> None:
        """Remove the files this object added to the entry (then empty folders): a foreign entry -- another
        model's embeddings under the same fingerprint, found on a later kind -- is left as it was."""
        for path in reversed(self._written):
            path.unlink(missing_ok=True)
            for folder in (path.parent, path.parent.parent):
                if self.root in folder.parents and folder.is_dir() and not any(folder.iterdir()):
                    folder.rmdir()
        self._written.clear()
        self._meta_written = False

    def encode_images(self, images: Sequence[np.ndarray]) -> np.ndarray:
        images = list(images)
        return self._cached("image", images, [_image_key(im) for im in images], self.encoder.encode_images)

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        return self._cached("text", texts, [_text_key(t) for t in texts], self.encoder.encode_texts)
