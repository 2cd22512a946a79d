"""Encoding on Ray: a pool of actors, each loading the model once (on a GPU of the cluster when there is one).

:class:`RayEncoderPool` is an encoder (``encode_images`` / ``encode_texts``, ``name``,
``fingerprint``, ``modalities``) whose batches are split into contiguous parts, one per actor, and
put back together in order, so callers (``snapbench run``, ``snapbench encode``) use it like any
other encoder, including through the embedding cache.

Decisions:

* **One model load per actor.**  An actor is created once per pool and keeps its model; a batch
  costs one remote call per actor.  With ``gpus_per_actor=None`` each actor asks for one GPU when
  the cluster has at least as many GPUs as actors, and for none otherwise (CPU encoders).
* **Same numbers as the driver** for an encoder whose output for an item does not depend on the
  other items of its batch (every encoder of :mod:`snapbench.models` pads per item or to a fixed
  length); the split never reorders items.
* **Which Ray** follows :mod:`snapbench.engines.ray_engine`: an existing session is reused and left
  running; otherwise the pool connects to ``address`` or starts a private local instance (with CPUs
  for the actors and the corruption workers) that :meth:`RayEncoderPool.close` shuts down.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..core.validate import positive_int
from .ray_engine import connect, import_ray

__all__ = ["EncoderActor", "RayEncoderPool"]


class EncoderActor:
    """The body of one Ray actor: an encoder loaded from its spec string, kept for the actor's life."""

    def __init__(self, spec: str, device: str | None, batch_size: int | None) -> None:
        from ..models import load_encoder

        self.encoder = load_encoder(spec, device=device, batch_size=batch_size)

    def describe(self) -> dict[str, Any]:
        enc = self.encoder
        return {"name": str(getattr(enc, "name", "")), "fingerprint": getattr(enc, "fingerprint", None),
                "modalities": sorted(getattr(enc, "modalities", {"image", "text"}))}

    def encode_images(self, images: Sequence[np.ndarray]) -> np.ndarray:
        return np.asarray(self.encoder.encode_images(list(images)), dtype=np.float32)

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self.encoder.encode_texts(list(texts)), dtype=np.float32)


class RayEncoderPool:
    """``actors`` Ray actors encoding for the driver (see the module docstring)."""

    def __init__(self, spec: str, *, actors: int = 1, device: str | None = None, batch_size: int | None = None,
                 gpus_per_actor: float | None = None, address: str | None = None, workers: int = 1) -> None:
        actors = positive_int(actors, "actors")
        self._ray = ray = import_ray()
        self._owns = connect(ray, address, int(workers) + int(actors))
        try:
            if gpus_per_actor is None:
                gpus_per_actor = 1 if ray.cluster_resources().get("GPU", 0) >= actors else 0
            actor_cls = ray.remote(num_cpus=1, num_gpus=gpus_per_actor)(EncoderActor)
            self.actors = [actor_cls.remote(spec, device, batch_size) for _ in range(int(actors))]
            info = ray.get(self.actors[0].describe.remote())  # also surfaces a model that fails to load
        except BaseException:
            self.close()
            raise
        self.name = f"{info['name'] or spec} (ray x{actors})"
        self.fingerprint = info["fingerprint"]  # the same model: the cache is shared with local runs
        self.modalities = frozenset(info["modalities"])

    def _map(self, method: str, items: Sequence[Any]) -> np.ndarray:
        n = len(items)
        if n == 0:
            return np.zeros((0, 0), dtype=np.float32)
        k = min(len(self.actors), n)
        bounds = [round(i * n / k) for i in range(k + 1)]
        refs = [getattr(actor, method).remote(list(items[a:b])) for actor, a, b in zip(self.actors, bounds, bounds[1:])]
        return np.concatenate(self._ray.get(refs))

    def encode_images(self, images: Sequence[np.ndarray]) -> np.ndarray:
        return self._map("encode_images", images)

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        return self._map("encode_texts", texts)

    def close(self) -> None:
        """Release the actors (and the private Ray instance this pool started, if any)."""
        for actor in getattr(self, "actors", []):
            self._ray.kill(actor)
        self.actors = []
        if self._owns:
            self._ray.shutdown()
            self._owns = False
