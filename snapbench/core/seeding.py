"""Stable seed derivation.

Every random choice in snapbench comes from a ``numpy.random.Generator`` built here from an explicit
global seed plus the names that identify *what* is being randomised (query key, operator,
severity, ...).  The derivation uses BLAKE2b over a canonical encoding of those parts, so the same
inputs give the same stream in any process, thread, worker count or Python version -- unlike
Python's salted ``hash()`` or a shared global RNG whose state depends on call order.
"""

from __future__ import annotations

import hashlib

import numpy as np

__all__ = ["stable_hash", "derive_generator", "image_rng", "text_rng"]

_SEP = b"\x1f"  # unit separator: cannot appear in ids produced by str(int) and is rare in keys


def stable_hash(*parts: object, n_bytes: int = 16) -> int:
    """Return a process-independent integer hash of ``parts``.

    Each part is converted with ``str`` and encoded as UTF-8; parts are joined with a separator and
    prefixed with their type so that ``("1",)`` and ``(1,)`` differ.
    """
    h = hashlib.blake2b(digest_size=n_bytes, person=b"snapbench-v1")
    for part in parts:
        h.update(type(part).__name__.encode())
        h.update(b":")
        h.update(str(part).encode("utf-8", "surrogatepass"))
        h.update(_SEP)
    return int.from_bytes(h.digest(), "little")


def derive_generator(*parts: object) -> np.random.Generator:
    """A fresh, instance-local PCG64 generator determined only by ``parts``."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(stable_hash(*parts))))


def image_rng(seed: int, key: str, operator: str, severity: int) -> np.random.Generator:
    """Generator for one image corruption of one query (seed, key, operator, severity)."""
    return derive_generator("image", int(seed), str(key), str(operator), int(severity))


def text_rng(seed: int, key: str, operator: str, attempt: int = 0) -> np.random.Generator:
    """Generator for one text corruption of one query; ``attempt`` counts retries."""
    return derive_generator("text", int(seed), str(key), str(operator), int(attempt))
