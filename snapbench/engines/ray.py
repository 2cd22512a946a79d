"""The Ray engine: remote tasks (one CPU each) fetched in task order from a sliding window.

Ray is imported here only, when ``engine='ray'`` is asked for; without it the error names the
``ray`` extra and the command that installs it (:func:`snapbench.core.install_hint.install_hint`).

* **Which Ray.**  If the calling process is already connected (``ray.init`` was called, e.g. by a
  notebook or a test), that session is used and left running.  Otherwise ``address`` connects to
  an existing cluster (``"auto"`` on a cluster node, ``"ray://head:10001"`` through Ray Client),
  and without an address a local Ray instance with ``workers`` CPUs is started (no dashboard,
  Ray's own logging at ERROR) and shut down when the map ends.  Starting one costs seconds (about
  13 s on a busy 2-core machine): the local process pool is the better choice on one machine.
* **Failures.**  A task whose worker process dies (killed, out of memory, node lost) is retried by
  Ray up to :data:`MAX_RETRIES` times; tasks are pure functions of their inputs, so a retry yields
  the same bytes and the ordered consumer sees each result exactly once.  An exception raised by
  the task function is not retried (it would raise again) and is re-raised in the driver as the
  original exception.
* **Memory.**  At most ``window`` results live in Ray's object store at once (plus the one the
  caller holds); numpy arrays in a result come back zero-copy, i.e. read-only views into the
  object store, released when the caller drops them.

Encoding on Ray: a pool of actors, each loading the model once (on a GPU of the cluster when there is one).

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
* **Which Ray** follows :mod:`snapbench.engines.ray`: an existing session is reused and left
  running; otherwise the pool connects to ``address`` or starts a private local instance (with CPUs
  for the actors and the corruption workers) that :meth:`RayEncoderPool.close` shuts down.
"""

from __future__ import annotations

import logging
import uuid
from collections import deque
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np

from ..core.errors import ConfigError, SnapbenchError
from ..core.install_hint import import_extra
from ..core.validate import positive_int
from .local import run_once, worker_init

__all__ = ['EncoderActor', 'RayEncoderPool']

#: Times Ray re-runs a task whose worker process died before it returned.
MAX_RETRIES = 3


def import_ray() -> Any:
    """The ``ray`` module, or a :class:`ConfigError` saying how to install it."""
    return import_extra("ray", "ray", "the ray engine needs Ray", error=ConfigError, param="engine")


#: Initializers already run in this (Ray worker) process, by the token of their map.
_initialized: set[str] = set()


def run_task(fn: Callable[[Any], Any], task: Any, init: tuple[str, Callable[..., Any] | None, tuple]) -> Any:
    """Body of every Ray task: the local pool's per-process set-up (once per map), then ``fn(task)``.

    Ray has no per-process initializer for tasks; ``init`` = (token, initializer, initargs), and the
    token (one per map) tells whether this worker process already ran it.
    """
    token, initializer, initargs = init
    if token not in _initialized:
        worker_init(initializer, initargs)
        _initialized.add(token)
    return fn(task)


def check_reachable(address: str, timeout_s: float = 5.0) -> None:
    """Fail fast when an explicit ``host:port`` address does not answer.

    Ray itself keeps retrying an unreachable address for minutes before giving up; a plain TCP
    connection tells in seconds.  ``auto`` and other forms are left to Ray (it fails fast on them).
    """
    import socket

    hostport = address.split("://", 1)[1] if "://" in address else address
    host, sep, port = hostport.rpartition(":")
    if not sep or not host or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as exc:
        raise ConfigError(
            f"no Ray cluster answers at address {address!r} ({exc}); start one with `ray start --head` or check the address"
        ) from None


def connect(ray: Any, address: str | None, workers: int) -> bool:
    """Make sure this process is connected to Ray; True when this call started (and owns) it."""
    if ray.is_initialized():
        return False
    if address is not None:
        check_reachable(address)
    quiet = dict(logging_level=logging.ERROR, log_to_driver=False)
    try:
        if address is not None:
            ray.init(address=address, **quiet)
        else:
            # "local": always a new private instance, even if `ray start` left a cluster on this machine
            ray.init(address="local", num_cpus=workers, include_dashboard=False, **quiet)
    except (ConnectionError, TimeoutError, RuntimeError) as exc:
        where = f"the Ray cluster at address {address!r}" if address is not None else "a local Ray instance"
        raise ConfigError(f"could not connect to {where}: {exc}") from None
    return True


def ray_ordered_map(
    fn: Callable[[Any], Any],
    tasks: Iterable[Any],
    *,
    workers: int,
    address: str | None,
    window: int,
    initializer: Callable[..., Any] | None = None,
    initargs: tuple = (),
    meanwhile: Callable[[], None] | None = None,
) -> Iterator[Any]:
    """Results of ``fn`` over ``tasks`` in task order, computed as Ray tasks (see the module docstring).
    ``meanwhile``: see :func:`snapbench.engines.ordered_map`."""

    begin = run_once(meanwhile)
    ray = import_ray()
    started = connect(ray, address, workers)
    try:
        remote = ray.remote(num_cpus=1, max_retries=MAX_RETRIES, retry_exceptions=False)(run_task)
        fn_ref = ray.put(fn)  # shipped once, not with every task
        # a token, not a seed: it only names this map so that workers run its initializer once
        init_ref = ray.put((uuid.uuid4().hex, initializer, tuple(initargs)))
        pending: deque[tuple[int, Any]] = deque()
        try:
            for i, t in enumerate(tasks):
                pending.append((i, remote.remote(fn_ref, t, init_ref)))
                if len(pending) >= window:
                    begin()
                    yield fetch(ray, *pending.popleft())
            begin()
            while pending:
                yield fetch(ray, *pending.popleft())
        except BaseException:  # an error, or the consumer closed the generator: drop queued work
            for _, ref in pending:
                ray.cancel(ref)
            raise
    finally:
        if started:
            ray.shutdown()


def fetch(ray: Any, index: int, ref: Any) -> Any:
    """The result behind ``ref``; the task's own exception re-raised, Ray's failures as SnapbenchError."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as err:
        cause = getattr(err, "cause", None)
        if isinstance(cause, BaseException):
            raise cause from err
        raise
    except ray.exceptions.RayError as err:
        raise SnapbenchError(
            f"task {index} failed in Ray after {MAX_RETRIES} retries ({type(err).__name__}): {err}"
        ) from err


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
