"""Batches of metastore calls run a few at a time, each on a lane of its own (a connection, or an object holding
one): how ``register`` adds partitions and how statistics are published.

Why in parallel: the metastore spends most of a batch per partition (rows written, its database waited on) and
serves connections in parallel, and batches never depend on each other. Why a lane per call: a Thrift connection
carries one call at a time. Why stop at the first failure: a failed batch means a refusal that ends the command or
a metastore gone, and every further batch would wait out the client's whole retry budget.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

Job = TypeVar("Job")
Lane = TypeVar("Lane")
Result = TypeVar("Result")


def in_lanes(jobs: Sequence[Job], lanes: Sequence[Lane], run: Callable[[Lane, Job], Result], *,
             name: str, on_result: Callable[[Result], None] | None = None) -> list[Result]:
    """``run(lane, job)`` for every job, ``len(lanes)`` at a time, each on a lane no other job holds meanwhile.
    Results in the jobs' order (``on_result`` sees each as it is collected, in that order). After the first
    failure no queued job starts, and the failure is raised once the running ones have ended."""
    if not jobs:
        return []
    free: queue.SimpleQueue[Lane] = queue.SimpleQueue()
    for lane in lanes:
        free.put(lane)
    failed = threading.Event()

    def job(item: Job) -> Result | None:
        if failed.is_set():
            return None
        lane = free.get()
        try:
            return run(lane, item)
        except BaseException:
            failed.set()
            raise
        finally:
            free.put(lane)

    results: list[Result] = []
    pool = ThreadPoolExecutor(max_workers=max(1, len(lanes)), thread_name_prefix=name)
    try:
        for future in [pool.submit(job, item) for item in jobs]:
            result = future.result()  # the first failure ends the loop: queued jobs are cancelled below
            if result is not None:
                results.append(result)
                if on_result is not None:
                    on_result(result)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return results
