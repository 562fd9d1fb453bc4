"""Batches in lanes (``storage_handler.registration.lanes``): every job on a lane no other job holds meanwhile,
results in the jobs' order, and after a failure no queued job starts."""

from __future__ import annotations

import threading
import time

import pytest

from storage_handler.registration.lanes import in_lanes


def test_each_lane_carries_one_job_at_a_time_and_results_keep_the_jobs_order() -> None:
    busy: set[str] = set()
    guard = threading.Lock()
    seen: list[int] = []

    def run(lane: str, job: int) -> int:
        with guard:
            assert lane not in busy
            busy.add(lane)
        time.sleep(0.001 * (job % 3))
        with guard:
            busy.discard(lane)
        return job * 10

    assert in_lanes(list(range(20)), ["a", "b", "c"], run, name="t", on_result=seen.append) == \
        [j * 10 for j in range(20)]
    assert seen == [j * 10 for j in range(20)]


def test_after_the_first_failure_no_queued_job_starts() -> None:
    started: list[int] = []

    def run(lane: str, job: int) -> int:
        started.append(job)
        if job == 2:
            raise RuntimeError("metastore gone")
        time.sleep(0.01)
        return job

    with pytest.raises(RuntimeError, match="metastore gone"):
        in_lanes(list(range(50)), ["a", "b"], run, name="t")
    assert len(started) < 10, started  # the running ones finish; the other 40-odd never start
