"""A tiny handcrafted dual encoder (no weights, no torch) for demos and tests."""

from __future__ import annotations

import hashlib
import re
import zlib
from collections.abc import Sequence
from pathlib import Path

import cv2
import numpy as np

_DIM = 256


class ToyEncoder:
    """Images -> 4x4 Lab colour layout (48) + 4x4x8 gradient-orientation histograms (128) + 80-bin
    hue/saturation histogram; texts -> 256 hashed character trigrams (CRC32, stable across processes).
    Deterministic, fast, and sensitive to the corruptions, which is all a demo needs."""

    dim = _DIM
    name = "toy"
    modalities = frozenset({"image", "text"})
    #: Computing its features is cheaper than reading them from the embedding cache: not cached unless asked.
    cheap = True
    #: The features are this file's code: a change to it changes the fingerprint (and the cache key).
    fingerprint = "toy:" + hashlib.sha256(Path(__file__).read_bytes()).hexdigest()

    def encode_images(self, images: Sequence[np.ndarray]) -> np.ndarray:
        return np.stack([self._image(im) for im in images]).astype(np.float32) if len(images) else np.zeros((0, _DIM), np.float32)

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self._text(t) for t in texts]).astype(np.float32) if len(texts) else np.zeros((0, _DIM), np.float32)

    @staticmethod
    def _image(img: np.ndarray) -> np.ndarray:
        small = cv2.resize(img, (64, 64), interpolation=cv2.INTER_AREA)
        lab = cv2.cvtColor(small, cv2.COLOR_RGB2LAB).astype(np.float32) / 255.0
        layout = cv2.resize(lab, (4, 4), interpolation=cv2.INTER_AREA).reshape(-1)  # 48
        gray = cv2.cvtColor(small, cv2.COLOR_RGB2GRAY).astype(np.float32)
        gx, gy = cv2.Sobel(gray, cv2.CV_32F, 1, 0), cv2.Sobel(gray, cv2.CV_32F, 0, 1)
        mag, ang = cv2.cartToPolar(gx, gy)
        bins = np.minimum((ang % np.pi) / np.pi * 8, 7).astype(np.int64)
        cell = (np.arange(64) // 16)
        idx = (cell[:, None] * 4 + cell[None, :]) * 8 + bins
        hog = np.bincount(idx.ravel(), weights=mag.ravel(), minlength=128)
        hog = hog / (np.linalg.norm(hog) + 1e-6)  # 128
        hsv = cv2.cvtColor(small, cv2.COLOR_RGB2HSV)
        h = (hsv[..., 0].astype(np.int64) * 16) // 180
        s = (hsv[..., 1].astype(np.int64) * 5) // 256
        hist = np.bincount((h * 5 + s).ravel(), minlength=80).astype(np.float64)
        hist = np.sqrt(hist / hist.sum())  # 80
        return np.concatenate([layout - 0.5, hog, hist])

    @staticmethod
    def _text(text: str) -> np.ndarray:
        vec = np.zeros(_DIM, np.float64)
        for word in re.findall(r"\w+", text.lower()):
            padded = f"#{word}#"
            for i in range(len(padded) - 2):
                h = zlib.crc32(padded[i : i + 3].encode("utf-8"))
                vec[h % _DIM] += 1.0 if (h >> 16) & 1 else -1.0
        return vec
