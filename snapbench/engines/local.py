"""The local engine: a ``spawn`` process pool with a bounded, ordered window of futures."""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
from collections import deque
from typing import Any, Callable, Iterable, Iterator


def worker_init(initializer: Callable[..., Any] | None = None, initargs: tuple = ()) -> None:
    """Set-up of every worker process (local pool and Ray), then the caller's ``initializer``."""
    import cv2

    cv2.setNumThreads(1)  # one process per core: OpenCV's own thread pool would oversubscribe
    if initializer is not None:
        initializer(*initargs)


def local_ordered_map(
    fn: Callable[[Any], Any],
    tasks: Iterable[Any],
    *,
    workers: int,
    window: int,
    initializer: Callable[..., Any] | None = None,
    initargs: tuple = (),
) -> Iterator[Any]:
    """Results of ``fn`` in task order from ``workers`` spawned processes; inline when ``workers == 1``.

    ``spawn`` rather than ``fork``: the parent may hold threads (rich's progress refresher, torch's
    pools) that a forked child would inherit in an undefined state; spawn also behaves the same on
    Linux, macOS and Windows.  The cost is that workers import snapbench afresh, so anything
    registered at run time (an operator added inside a function) is unknown to them.
    """
    if workers <= 1:
        for t in tasks:
            yield fn(t)
        return
    ctx = multiprocessing.get_context("spawn")
    with cf.ProcessPoolExecutor(
        max_workers=workers, mp_context=ctx, initializer=worker_init, initargs=(initializer, initargs)
    ) as pool:
        pending: deque[cf.Future] = deque()
        try:
            for t in tasks:
                pending.append(pool.submit(fn, t))
                if len(pending) >= window:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        except BaseException:  # an error, or the consumer closed the generator: drop queued work
            for fut in pending:
                fut.cancel()
            raise
