"""8. Spark's native scan loses its prune service: killed, not startable, or answering garbage

The session extension asks Python processes on the driver which files to read (one per query at a time, up to
``spark.hsh.pruneService.processes``). Whatever happens to them, a query must either return exactly the right rows
or fail with an error naming the table and what to fix; it must never read a wrong set of files, and one query
stuck in planning must not hold up the others. Processes are found by parent PID (this session's Spark JVM) and killed by PID.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from metastore.names import parse_table_name
from storage_handler.registration.register import apply_registration, plan_registration
from tests.spark.typed_data import generate_typed

TABLE = "reliability.prune_service"
QUERY = f"SELECT count(*) FROM {TABLE} WHERE c_bigint = 5"


@pytest.fixture(scope="module")
def table(tmp_path_factory, metastore_uri: str, spark) -> str:
    from metastore.client import MetastoreClient

    root = generate_typed(tmp_path_factory.mktemp("prune_service") / "t", files_per_partition=1)
    with MetastoreClient(metastore_uri) as client:
        apply_registration(client, plan_registration(client, parse_table_name(TABLE), str(root)))
    return TABLE


@pytest.fixture
def driver_python(spark) -> Iterator[Callable[[str], None]]:
    """Sets the Python the driver runs the service with, as if the driver had started with it.

    ``spark.hsh.python`` is read from the driver's Spark configuration only (a session may not name a program the
    driver runs), so this changes the live SparkContext's configuration -- a test-only back door, since Spark
    copies it when it starts -- and the session's copy of it alike; afterwards both are as before."""
    context = spark.sparkContext._jsc.sc().conf()
    before = context.get("spark.hsh.python")

    def use(python: str) -> None:
        context.set("spark.hsh.python", python)
        spark.conf.set("spark.hsh.python", python)

    yield use
    context.set("spark.hsh.python", before)
    spark.conf.set("spark.hsh.python", before)


def prune_service_pids(spark) -> list[int]:
    """Live prune-service children of this session's Spark JVM (by parent PID; the name only confirms)."""
    jvm = spark.sparkContext._gateway.proc.pid
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            text = (proc / "stat").read_text()
            state, ppid = text[text.rindex(")") + 2:].split()[:2]  # after "pid (comm) "
            if int(ppid) == jvm and state != "Z" and \
                    b"storage_handler.spark.prune_service" in (proc / "cmdline").read_bytes():
                found.append(int(proc.name))
        except (OSError, ValueError):
            continue  # a process that ended while we looked
    return found


def _script(path: Path, body: str) -> str:
    """An executable shell script standing in for the Python the service is started with."""
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def _kill_all(spark) -> list[int]:
    pids = prune_service_pids(spark)
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while set(pids) & set(prune_service_pids(spark)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return pids


def test_killed_between_queries(spark, table: str) -> None:
    """SIGKILL the service between two queries: the next query starts a new one and returns the right rows."""
    assert spark.sql(QUERY).collect()[0][0] == 1
    killed = _kill_all(spark)
    assert killed, "no prune service was running after a query"
    assert spark.sql(QUERY).collect()[0][0] == 1
    assert set(prune_service_pids(spark)).isdisjoint(killed)


def test_python_that_does_not_exist(spark, table: str, driver_python: Callable[[str], None], tmp_path: Path) -> None:
    """`spark.hsh.python` names no program: the query fails with PySpark's own one-line error (not a Py4J trace)
    naming the table, the setting, its value and the cause; fixing it heals."""
    from pyspark.errors import IllegalArgumentException

    before = spark.sparkContext._jsc.sc().conf().get("spark.hsh.python")
    missing = tmp_path / "no-such-python"
    driver_python(str(missing))
    with pytest.raises(IllegalArgumentException) as failed:
        spark.sql(QUERY).collect()
    assert f"cannot plan the scan of {TABLE}: spark.hsh.python is '{missing}', which cannot be run (error=2, No such " \
           "file or directory)" in str(failed.value)
    driver_python(before)
    assert spark.sql(QUERY).collect()[0][0] == 1


def test_service_answering_garbage(spark, table: str, driver_python: Callable[[str], None], tmp_path: Path) -> None:
    """A "Python" that answers every request with text that is not JSON: the query fails, it reads nothing."""
    driver_python(_script(tmp_path / "fake-python", "while read line; do echo 'HTTP/1.1 400 Bad Request'; done"))
    with pytest.raises(Exception, match=rf"pruning service .* failed for {TABLE}"):
        spark.sql(QUERY).collect()


def test_service_that_exits_at_once(spark, table: str, driver_python: Callable[[str], None], tmp_path: Path) -> None:
    """A Python without the package (the service exits at start): a clear error with the exit code."""
    driver_python(_script(tmp_path / "python-without-the-package",
                          'echo "No module named storage_handler" >&2; exit 1'))
    with pytest.raises(Exception, match=r"exited \(code 1\)"):
        spark.sql(QUERY).collect()


def test_a_session_cannot_name_the_program_the_driver_runs(spark, table: str, tmp_path: Path) -> None:
    """A session (a Thrift server's client, with `SET`) that names another `spark.hsh.python`: the query is refused
    naming both values and how to undo it, and that program never runs; unset, the session reads again."""
    marker = tmp_path / "ran"
    program = _script(tmp_path / "someone-elses-program", f"touch {marker}; exec {sys.executable} \"$@\"")
    spark.conf.set("spark.hsh.python", program)
    try:
        with pytest.raises(Exception, match=rf"{TABLE}: this session sets spark\.hsh\.python to '{program}', but "
                                            r"the driver started with '.*'\. It names a program the driver runs"):
            spark.sql(QUERY).collect()
    finally:
        spark.conf.unset("spark.hsh.python")
    assert not marker.exists()
    assert spark.sql(QUERY).collect()[0][0] == 1


def test_bad_process_count(spark, table: str) -> None:
    """`spark.hsh.pruneService.processes` is 0: the query fails naming the table and the setting; unset, it heals."""
    spark.conf.set("spark.hsh.pruneService.processes", "0")
    try:
        with pytest.raises(Exception, match=rf"{TABLE}: spark\.hsh\.pruneService\.processes is '0'"):
            spark.sql(QUERY).collect()
    finally:
        spark.conf.unset("spark.hsh.pruneService.processes")
    assert spark.sql(QUERY).collect()[0][0] == 1


def test_a_scan_stuck_on_storage_does_not_hold_up_other_queries(spark, table: str, metastore_uri: str,
                                                                 tmp_path: Path) -> None:
    """One query's planning hangs reading its index (a FIFO stands in for a stalled file system): another
    query is planned by another service process and answers; the stuck one answers right once storage does."""
    import threading

    from metastore.client import MetastoreClient

    stuck = "reliability.stuck"
    root = generate_typed(tmp_path / "stuck", files_per_partition=1)
    with MetastoreClient(metastore_uri) as client:
        apply_registration(client, plan_registration(client, parse_table_name(stuck), str(root)))
    # the index as a release before 0.3 laid it out (a CURRENT pointer, read first), with the pointer a FIFO:
    # opening it for reading blocks until someone opens it for writing
    snapshots = root / "_hsh_index" / "snapshots"
    legacy = f"v00000001-{'c' * 32}.parquet"
    (snapshots / "v00000001.parquet").rename(snapshots / legacy)
    content = json.dumps({"format": 1, "version": 1, "snapshot": f"snapshots/{legacy}"}).encode()
    pointer = root / "_hsh_index" / "CURRENT"
    os.mkfifo(pointer)
    answers: dict[str, object] = {}

    def run(name: str, sql: str) -> None:
        try:
            answers[name] = spark.sql(sql).collect()[0][0]
        except Exception as e:  # noqa: BLE001 - reported by the assertions below
            answers[name] = e

    slow = threading.Thread(target=run, args=("stuck", f"SELECT count(*) FROM {stuck} WHERE c_bigint = 5"),
                            daemon=True)
    slow.start()
    writer = None
    try:
        deadline = time.monotonic() + 60
        while writer is None:  # until the stuck query's service has the FIFO open (ENXIO before that)
            try:
                writer = os.open(pointer, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                assert time.monotonic() < deadline, "the stuck query never opened its index"
                time.sleep(0.05)
        other = threading.Thread(target=run, args=("other", QUERY), daemon=True)
        other.start()
        other.join(timeout=60)
        assert answers.get("other") == 1, f"the other query waited for the stuck one: {answers}"
    finally:
        if writer is not None:
            os.write(writer, content)
            os.close(writer)
        slow.join(timeout=60)
        pointer.unlink()
        pointer.write_bytes(content)
    assert answers.get("stuck") == 1, answers
