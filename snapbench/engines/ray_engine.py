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
"""

from __future__ import annotations

import logging
import uuid
from collections import deque
from typing import Any, Callable, Iterable, Iterator

from ..core.errors import ConfigError, SnapbenchError
from ..core.install_hint import install_hint
from .local import run_once, worker_init

#: Times Ray re-runs a task whose worker process died before it returned.
MAX_RETRIES = 3


def import_ray() -> Any:
    """The ``ray`` module, or a :class:`ConfigError` saying how to install it."""
    try:
        import ray
    except ImportError as exc:
        raise ConfigError(f"the ray engine needs Ray ({exc}): {install_hint('ray')}", param="engine") from None
    return ray


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
