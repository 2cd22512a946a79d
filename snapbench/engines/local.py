"""The local engine: a ``spawn`` process pool with a bounded, ordered window of futures."""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections import deque
from typing import Any, Callable, Iterable, Iterator

from .signals import STOP_SIGNALS

_PR_SET_PDEATHSIG = 1
_POLL_S = 0.5
#: how long a map that ends early (Ctrl-C, an error) lets the tasks already running finish before
#: it kills the workers still busy
_STOP_GRACE_S = 10.0


def _die_with_parent(parent_pid: int) -> None:
    """End this worker when its parent dies (``kill -9``, the OOM killer) instead of letting it wait
    forever on a task queue it holds both ends of: on Linux the kernel SIGKILLs it
    (``prctl(PR_SET_PDEATHSIG)``); everywhere a daemon thread also polls ``os.getppid()``."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):
            pass  # no prctl: the polling thread below still ends the worker
    if os.getppid() != parent_pid:  # the parent died before the signal was armed
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(_POLL_S)
            if os.getppid() != parent_pid:
                os._exit(1)

    threading.Thread(target=watch, name="snapbench-parent-watch", daemon=True).start()


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc mallopt parameters (malloc.h)


def keep_freed_memory(trim_bytes: int = 256 * 2**20) -> bool:
    """Let glibc keep freed memory for the next allocation instead of returning it to the kernel.

    A corruption worker allocates and frees the same image-sized blocks for every query (a 1024x768
    query's variants are ~100 MB).  By default glibc gives such blocks back to the kernel and takes
    them again page by page, and the page faults cost about as much as the corruptions (measured on
    a VM, 1024x768 queries).  This serves allocations up to 32 MiB from the heap and keeps up to
    ``trim_bytes`` free at its top; the process's resident size then stays near its peak.  Returns
    False where it does not apply (not Linux/glibc).
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # no glibc (musl has no mallopt)
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, 32 * 2**20)) and bool(mallopt(_M_TRIM_THRESHOLD, int(trim_bytes)))


def worker_init(initializer: Callable[..., Any] | None = None, initargs: tuple = ()) -> None:
    """Set-up of every worker process (local pool and Ray), then the caller's ``initializer``."""
    import cv2

    cv2.setNumThreads(1)  # one process per core: OpenCV's own thread pool would oversubscribe
    if initializer is not None:
        initializer(*initargs)


def _local_worker_init(parent_pid: int, initializer: Callable[..., Any] | None = None, initargs: tuple = ()) -> None:
    """A local pool worker: dies with its parent and leaves Ctrl-C, SIGTERM and SIGHUP (sent to the
    whole process group) to it: the parent stops submitting, lets running tasks finish, shuts the
    pool down and says how to resume.  Then keeps freed memory (:func:`keep_freed_memory`) and runs
    :func:`worker_init`."""
    _die_with_parent(parent_pid)
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):  # blocked while the parent started this worker: now ignored
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    keep_freed_memory()  # our own process: its allocator may keep what it frees (not done on shared Ray workers)
    worker_init(initializer, initargs)


@contextlib.contextmanager
def _stop_signals_blocked() -> Iterator[None]:
    """The stop signals blocked in this thread while it starts workers: a spawned worker inherits the
    signal mask, so a Ctrl-C or SIGTERM sent to the whole process group cannot kill it while it
    imports, before its initializer ignores them (:func:`_local_worker_init`).  Blocked, not ignored:
    the parent still gets every one (at once through another thread, or when they are unblocked)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


@contextlib.contextmanager
def _stop_signals_held() -> Iterator[None]:
    """A stop signal that arrives inside the block (a second Ctrl-C, ``timeout``'s SIGINT to the process
    group after the one to the command) is held and acted on when the block ends, as if it arrived then.

    Around the pool's final shutdown: an exception raised while ``shutdown`` joins its manager thread
    leaves that thread running but taken for stopped (Python 3.11's ``Thread.join``), so the
    interpreter exits without waiting for it; multiprocessing's exit handler then closes the queue the
    thread was about to tell the workers to stop through, and waits for those workers forever.  Only
    in the main thread (where Python runs signal handlers); handlers set outside Python are left alone."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    previous = {sig: handler for sig in STOP_SIGNALS if (handler := signal.getsignal(sig)) is not None}
    for sig in previous:
        signal.signal(sig, lambda signum, _frame: held.append(signum))
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for sig in dict.fromkeys(held):
            signal.raise_signal(sig)


def _shut_down(pool: cf.ProcessPoolExecutor, pending: Iterable[cf.Future], grace_s: float = _STOP_GRACE_S) -> None:
    """End ``pool`` in bounded time, whatever ended the map.

    Queued tasks are cancelled; tasks already running get ``grace_s`` seconds to finish (a corruption
    task's files are then complete) or until a further stop signal; workers still busy after that are
    killed (they ignore SIGTERM, see :func:`_local_worker_init`).  The rest runs with the stop signals
    held (:func:`_stop_signals_held`): an interrupted shutdown would leave the process hanging at exit.

    A worker killed while it sends a result (one over 16 KiB goes out as a length header, then the
    body: a loaded machine can preempt the worker between the two) leaves part of a message in the
    result pipe.  The pool's manager thread would wait for the rest forever, and the shutdown with it:
    the parent itself holds the pipe's write end (it hands it to every worker it starts), so the read
    never ends.  So the parent's write end is closed once the workers are killed: the read gets end
    of file when the last of them is gone, and the manager thread takes the pool for broken and stops.
    The queued tasks are cancelled by the manager thread itself (``cancel_futures``): a future the
    caller cancelled but the thread still lists makes Python 3.11's broken-pool path raise."""
    futures = list(pending)
    # shutdown(wait=False) drops the pool's references to these: kept for the kill and the join
    manager, workers = pool._executor_manager_thread, dict(pool._processes or {})  # noqa: SLF001
    result_queue = pool._result_queue  # noqa: SLF001 - the pool's own pipe
    try:
        pool.shutdown(wait=False, cancel_futures=True)
        cf.wait(futures, timeout=grace_s)
    finally:
        with _stop_signals_held():
            if not all(fut.done() for fut in futures):
                for proc in workers.values():
                    proc.kill()
                result_queue._writer.close()  # noqa: SLF001 - see above: no worker is started after this
            if manager is not None:
                manager.join()
            result_queue.close()


def local_ordered_map(
    fn: Callable[[Any], Any],
    tasks: Iterable[Any],
    *,
    workers: int,
    window: int,
    initializer: Callable[..., Any] | None = None,
    initargs: tuple = (),
    meanwhile: Callable[[], None] | None = None,
) -> Iterator[Any]:
    """Results of ``fn`` in task order from ``workers`` spawned processes; inline when ``workers == 1``.
    ``meanwhile``: see :func:`snapbench.engines.ordered_map`.

    ``spawn`` rather than ``fork``: the parent may hold threads (rich's progress refresher, torch's
    pools) that a forked child would inherit in an undefined state; spawn also behaves the same on
    Linux, macOS and Windows.  The cost is that workers import snapbench afresh, so anything
    registered at run time (an operator added inside a function) is unknown to them.
    """

    begin = run_once(meanwhile)
    if workers <= 1:
        begin()
        for t in tasks:
            yield fn(t)
        return
    ctx = multiprocessing.get_context("spawn")
    with _stop_signals_blocked():
        # multiprocessing's resource tracker (it unlinks the pool's semaphores if this process dies)
        # ignores SIGINT and SIGTERM but not SIGHUP: started with SIGHUP blocked, it outlives a SIGHUP
        # to the process group instead of dying and being relaunched mid-shutdown (KeyError tracebacks)
        from multiprocessing import resource_tracker

        resource_tracker.ensure_running()
    from .shm import named_semaphores

    with named_semaphores():  # the pool's queues make their semaphores now; a kill -9 leaves them named after us
        pool = cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_local_worker_init,
                                      initargs=(os.getpid(), initializer, initargs))
    pending: deque[cf.Future] = deque()
    try:
        for n, t in enumerate(tasks):
            # the first `workers` submissions start the worker processes
            with _stop_signals_blocked() if n < workers else contextlib.nullcontext():
                pending.append(pool.submit(fn, t))
            if len(pending) >= window:
                begin()  # the first window is in flight: the caller's own work overlaps it
                # taken off `pending` once it is there: a wait Ctrl-C interrupts leaves the task to _shut_down
                yield pending[0].result()
                pending.popleft()
        begin()
        while pending:
            yield pending[0].result()
            pending.popleft()
    finally:  # done, an error, Ctrl-C, or the consumer closed the generator
        _shut_down(pool, pending)


def run_once(fn: Callable[[], None] | None) -> Callable[[], None]:
    """``fn`` as a function that runs it on its first call only (nothing for ``None``): an engine's
    ``meanwhile`` hook, called where the first window is in flight and again where the tasks ran out."""
    pending = [fn] if fn is not None else []

    def call() -> None:
        while pending:
            pending.pop()()

    return call
