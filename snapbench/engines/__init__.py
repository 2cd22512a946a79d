"""Where snapbench's batch work runs: a local process pool, or a Ray cluster.

One entry point, :func:`ordered_map`, maps a picklable function over tasks and yields the results
**in task order** with a bounded number of tasks in flight.  Both ``snapbench run`` (corrupting
query variants while the driver encodes) and ``snapbench corrupt`` (writing variant files) consume
results in order, so their outputs (memmap rows, manifest lines, resume checkpoints) never depend
on which worker, machine or retry produced a result.

Engines (the table :data:`ENGINE_TABLE`; an unknown name is an error listing the known ones):

``local``
    A ``spawn`` process pool of ``workers`` processes (OpenCV limited to one thread in each);
    ``workers=1`` runs in the calling process.  See :mod:`snapbench.engines.local`.
``ray``
    Ray remote tasks (one CPU each) on an existing cluster (``address``, e.g. ``"auto"`` or
    ``"ray://head:10001"``) or on a local Ray instance started on demand with ``workers`` CPUs.
    A task whose worker process dies is retried by Ray.  Needs the ``ray`` extra.
    See :mod:`snapbench.engines.ray`.

Decisions:

* **Order, not completion order.**  Results are fetched oldest first from a sliding window of
  ``window`` tasks (default ``2 * workers``): the caller can checkpoint after every result and
  memory holds at most ``window`` results (plus what the caller keeps).
* **Tasks are pure.**  A task's output depends only on its inputs (seeds are derived inside the
  task from :mod:`snapbench.core.seeding`, never from a worker id, a partition or the order), so a
  retried task gives the same bytes and both engines give the same results.
* **Engines do not decide what a task writes.**  Tasks that write files (``snapbench corrupt``)
  need the output folder on a filesystem every worker node sees; tasks that only return data
  (``snapbench run``) need nothing shared but the inputs they read.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, TypeVar

from ..core.errors import ConfigError, arg
from ..core.registry import Table
from ..core.validate import positive_int

# the submodules, not their functions: a map is looked up when it runs (tests count the calls)
from . import local as local_engine
from . import ray as ray_engine

__all__ = ["ENGINES", "ENGINE_TABLE", "ordered_map", "check_engine", "runs_inline"]

T = TypeVar("T")
R = TypeVar("R")


def _local_map(fn: Callable[[Any], Any], tasks: Iterable[Any], *, workers: int, address: str | None, window: int,
               initializer: Callable[..., Any] | None, initargs: tuple, meanwhile: Callable[[], None] | None) -> Iterator[Any]:
    return local_engine.local_ordered_map(fn, tasks, workers=workers, window=window, initializer=initializer, initargs=initargs,
                             meanwhile=meanwhile)


def _ray_map(fn: Callable[[Any], Any], tasks: Iterable[Any], *, workers: int, address: str | None, window: int,
             initializer: Callable[..., Any] | None, initargs: tuple, meanwhile: Callable[[], None] | None) -> Iterator[Any]:
    return ray_engine.ray_ordered_map(fn, tasks, workers=workers, address=address, window=window, initializer=initializer,
                           initargs=initargs, meanwhile=meanwhile)


def runs_inline(engine: str, workers: int, n_tasks: int) -> bool:
    """Whether a caller should map ``n_tasks`` tasks in its own process (``workers=1`` on the local
    engine) rather than on ``engine``: one worker on the local engine, or a single task (starting
    workers or a Ray instance costs more than it could save).  ``run`` and ``corrupt`` both decide here."""
    return n_tasks <= 1 or (engine == "local" and workers <= 1)


def _ray_check() -> None:
    ray_engine.import_ray()


#: The engines: name -> (ordered map, availability check run before any work, takes an address).
ENGINE_TABLE: Table[tuple[Callable[..., Iterator[Any]], Callable[[], None] | None, bool]] = Table("engine", param="engine")
ENGINE_TABLE.register("local", (_local_map, None, False))
ENGINE_TABLE.register("ray", (_ray_map, _ray_check, True))

#: Engine names accepted by :func:`ordered_map` (the names of :data:`ENGINE_TABLE`).
ENGINES: tuple[str, ...] = tuple(ENGINE_TABLE.names())


def check_engine(engine: str, workers: int, address: str | None = None) -> None:
    """Refuse an unknown engine, ``workers < 1``, an ``address`` given to an engine that takes none, or an
    engine whose extra is missing (Ray).

    Called before any work starts, so that a missing extra is reported before hours of encoding.
    """
    _, available, takes_address = ENGINE_TABLE.get(engine)
    positive_int(workers, "workers")
    if address is not None and not takes_address:
        raise ConfigError(f"{arg('address')} {address!r} is only used by the ray engine ({arg('engine')} is {engine!r})",
                          param="address")
    if available is not None:
        available()


def ordered_map(
    fn: Callable[[T], R],
    tasks: Iterable[T],
    *,
    engine: str = "local",
    workers: int = 1,
    address: str | None = None,
    window: int | None = None,
    initializer: Callable[..., Any] | None = None,
    initargs: tuple = (),
    meanwhile: Callable[[], None] | None = None,
) -> Iterator[R]:
    """Yield ``fn(task)`` for every task, in task order, computed by ``engine``.

    ``fn`` must be picklable (a module-level function or an instance of a module-level class) and
    pure: the same task gives the same result wherever and however often it runs.  ``tasks`` is
    consumed lazily, ``window`` at a time (default ``2 * workers``), so an unbounded iterable is
    fine and memory stays bounded.  ``workers`` is the parallelism: processes of the local pool,
    CPUs of a local Ray instance started on demand, or tasks run at once on an existing Ray
    cluster (``address``).  An exception raised by ``fn`` is re-raised here (the remaining tasks
    are cancelled); closing the iterator early cancels what is in flight.

    ``initializer(*initargs)`` (picklable, like ``fn``) runs once in every worker process before
    its first task of this map: e.g. to re-register operators the caller registered at run time.
    It never runs in the calling process (``workers=1`` on the local engine runs inline, where the
    caller's state is already there).  On Ray a worker process is shared and long-lived and is not
    a child of the calling process: an initializer must not tie the worker's life to its parent.

    ``meanwhile()`` runs once in the calling process, on the first ``next()``, as soon as the first
    ``window`` tasks are handed to the workers and before waiting for any result: work the caller
    would otherwise do before the map (``snapbench run`` encodes the gallery there) overlaps the
    workers' start-up and first tasks.  Inline (``workers=1`` on the local engine) it runs before the
    first task.  An exception it raises cancels the map, as one of ``fn`` does.
    """
    check_engine(engine, workers, address)
    size = int(workers) * 2 if window is None else positive_int(window, "window")
    run_map = ENGINE_TABLE.get(engine)[0]
    return run_map(fn, tasks, workers=int(workers), address=address, window=size, initializer=initializer,
                   initargs=tuple(initargs), meanwhile=meanwhile)
