"""How many footers are read at once, and the pool that reads them a chunk at a time.

Why chunks: a task per file costs a future, a lock and a wake-up per file (it was most of the time of indexing
tiny files); a task per chunk costs that once per chunk, and each chunk becomes an Arrow table at once, so memory
holds index rows, never a Python object per file of the whole table.

Why threads: a footer read waits on storage (a ranged GET on S3, a page-cache read locally) and pyarrow parses it
without the GIL; on an object store many reads must be in flight at once. ``max_workers`` bounds them.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import (
    FIRST_COMPLETED,
    Executor,
    Future,
    ProcessPoolExecutor,
    ThreadPoolExecutor,
    wait,
)
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from storage_handler.stats.footers.native_reader import native_reader
from storage_handler.stats.index.file_stats import StatsOptions

log = logging.getLogger(__name__)
ProgressCallback = Callable[[int, int], None]  # (files done, files total)
T = TypeVar("T")
CHUNK_FILES = 256  # files per task when footers are read through pyarrow (one Python object per file)
NATIVE_CHUNK_FILES = 4096  # files per task for the native reader (a fixed cost per chunk, none per file)
PROCESS_MIN_FILES = 20_000  # below this, starting worker processes costs more than it saves
LOCAL_THREADS_PER_CPU = 2  # pyarrow's Python path from the page cache: the CPU bounds it, the GIL is released often
REMOTE_WORKERS = 32  # footers from an object store: latency bounds it


def usable_cpus() -> int:
    """The cores this process may keep busy: inside a Spark task its share (``spark.task.cpus``), elsewhere all.

    Why: an executor runs one task per core at once; a task sizing its pool by the machine's cores would run
    cores x cores CPU-bound threads there. ``pyspark`` is only consulted when it is already imported (a Spark
    Python worker has), so the CLI never pays for importing it.
    """
    if "pyspark" in sys.modules:
        from pyspark import TaskContext  # optional dependency, already loaded: no import cost

        context = TaskContext.get()
        if context is not None:
            return max(1, context.cpus())
    return os.cpu_count() or 1


@dataclass(frozen=True, slots=True)
class PoolPlan:
    """How a local pool reads footers: ``workers`` at once, ``chunk`` files per task, in threads or processes."""

    workers: int
    chunk: int
    processes: bool


def pool_plan(local: bool, total: int, options: StatsOptions, *, max_workers: int | None = None,
              processes: bool | None = None, chunk_files: int | None = None) -> PoolPlan:
    """The one rule for sizing a footer pool (the index build and registration's scan both use it).

    * Local files with the native reader (:mod:`.native_footers`): threads, one per core, chunks of
      :data:`NATIVE_CHUNK_FILES` -- the C++ call and the Arrow work release the GIL, and a chunk costs a fixed few
      hundred microseconds of Python however many files it holds.
    * Local files read through pyarrow: worker processes (one per core) for tables of at least
      :data:`PROCESS_MIN_FILES` files, since that path is Python per file, serialized on the GIL; threads below.
    * Object stores: :data:`REMOTE_WORKERS` threads, since each footer waits on the network.

    Cores are :func:`usable_cpus`: inside a Spark task, the task's share, not the executor machine's, and
    ``processes=False`` is forced there. Chunks shrink while there are few files, so every worker gets some.
    """
    cpus = usable_cpus()
    native = local and options.footer_only and native_reader() is not None
    if processes is None:
        processes = local and not native and total >= PROCESS_MIN_FILES and cpus > 1
    default = cpus if processes or native else (LOCAL_THREADS_PER_CPU * cpus if local else REMOTE_WORKERS)
    workers = max(1, min(max_workers or default, total))
    chunk = chunk_files or (NATIVE_CHUNK_FILES if native else CHUNK_FILES)
    return PoolPlan(workers, max(1, min(chunk, -(-total // workers))), processes)


def run_chunks(plan: PoolPlan, total: int, task: Callable[..., T], args: Callable[[int, int], tuple[Any, ...]],
               progress: ProgressCallback | None = None) -> Iterator[tuple[int, T]]:
    """``task(*args(start, stop))`` over consecutive chunks of ``total`` files on a pool sized by ``plan``;
    yields ``(start, result)`` as chunks finish, in any order, and reports ``progress(done, total)``.

    At most two chunks per worker are in flight, so memory holds a bounded number of results however big the
    table. The first failure propagates; chunks not started yet are cancelled.
    """
    pool: Executor = (ProcessPoolExecutor(plan.workers, mp_context=multiprocessing.get_context("spawn"))
                      if plan.processes else ThreadPoolExecutor(plan.workers, thread_name_prefix="hsh-footer"))
    starts = iter(range(0, total, plan.chunk))
    pending: dict[Future[T], tuple[int, int]] = {}
    done = 0

    def submit() -> None:
        start = next(starts, None)
        if start is not None:
            stop = min(start + plan.chunk, total)
            pending[pool.submit(task, *args(start, stop))] = (start, stop)

    try:
        for _ in range(2 * plan.workers):
            submit()
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                start, stop = pending.pop(future)
                result = future.result()
                done += stop - start
                if progress is not None:
                    progress(done, total)
                yield start, result
                submit()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def with_thread_fallback(plan: PoolPlan, run: Callable[[PoolPlan], T]) -> T:
    """``run(plan)``; when its worker processes could not start or died, ``run`` again on threads (slower, same
    rows), with a warning. The usual cause is a script without a main guard: ``spawn`` re-imports it in every
    worker."""
    try:
        return run(plan)
    except BrokenProcessPool as exc:
        if not plan.processes:
            raise
        log.warning("footer worker processes failed (%s); reading footers with threads instead. A script that "
                    "builds indexes must guard its entry point with `if __name__ == \"__main__\":`", exc)
        return run(replace(plan, processes=False))
