"""The Spark footer engine (issue 16, points 3 and 5): the same index as the local engine, on a real standalone
cluster (a master and two one-core workers started from the wheel on 127.0.0.1, stopped by PID), and its faults:
a corrupt footer, an executor lost mid-job, the driver killed before the commit.

Jobs run in child processes: a process holds one SparkContext, and the session-scoped ``spark`` fixture of other
test modules may hold this one's. Each Spark application costs a driver JVM and two executors (seconds to tens of
seconds on a busy machine), so the scenarios share applications where they can.
"""

from __future__ import annotations

import argparse
import os
import pickle
import signal
import subprocess
import time
from collections.abc import Iterator
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from storage_handler.cli.common import footer_engine
from storage_handler.errors import ConfigurationError
from storage_handler.stats import (
    DataFile,
    FooterJob,
    LocalEngine,
    StatsOptions,
    build_index,
    list_data_files,
    load,
)
from storage_handler.stats.engines.chunks import read_chunk
from storage_handler.stats.engines.pool import LOCAL_THREADS_PER_CPU, usable_cpus
from storage_handler.stats.engines.spark import (
    AUTO_THRESHOLD,
    AutoEngine,
    SparkEngine,
    SparkMasterUnreachableError,
    _cause,
    choose_engine,
)
from storage_handler.stats.footers.native_reader import native_reader
from storage_handler.stats.index.store import commit
from storage_handler.storage import storage_for
from storage_handler.types import parse_schema_text
from tests.reliability.util import HSH, fails_clearly, hsh, kill_pid, ok_json, python_popen, wait_until
from tests.spark_cluster import StandaloneCluster, alive, descendants

COLUMNS = parse_schema_text("id bigint, name string, amount decimal(10,2), day date")


# ---------------------------------------------------------------- data
def write_file(path: Path, n: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({
        "id": pa.array([n * 10 + i for i in range(3)] + [None], pa.int64()),
        "name": pa.array([f"n{n}", "é" * (n % 3), None, "z"], pa.string()),
        "amount": pa.array([Decimal(f"{n}.25"), None, Decimal("-1.50"), Decimal("0.00")], pa.decimal128(10, 2)),
        "day": pa.array([date(2024, 1, 1 + n % 28)] * 4, pa.date32()),
    }), path)


def make_table(root: Path, per_day: int = 100, corrupt: bool = True) -> None:
    """dt=1..3 × ``per_day`` tiny files, and one corrupt footer."""
    for d in (1, 2, 3):
        for j in range(per_day):
            write_file(root / f"dt={d}" / f"part-{j:04d}.parquet", d * 1000 + j)
    if corrupt:
        (root / "dt=2" / "part-corrupt.parquet").write_bytes(b"PAR1 not a footer PAR1")


def outside_files(folder: Path) -> list[DataFile]:
    """A partition registered outside the table folder: its files are indexed by absolute path."""
    files = []
    for j in range(5):
        path = folder / "dt=9" / f"part-{j}.parquet"
        write_file(path, 9000 + j)
        entry = storage_for(str(path)).stat(str(path))
        assert entry is not None
        files.append(DataFile(str(path), entry.size, entry.mtime_ms, {"dt": "9"}, entry.version))
    return files


def snapshot_bytes(location: Path) -> bytes:
    snap = load(str(location))
    assert snap is not None
    return Path(snap.path).read_bytes()


# ---------------------------------------------------------------- without a cluster
class Recorder:
    def __init__(self, name: str) -> None:
        self.name = name
        self.calls: list[int] = []

    def read(self, job: FooterJob, files: Any, progress: Any = None) -> pa.Table:
        self.calls.append(len(files))
        return read_chunk(job, files)


def test_auto_engine_decides_at_read_time_by_the_files_to_read(tmp_path: Path) -> None:
    make_table(tmp_path / "t", per_day=2)
    files = sorted(list_data_files(str(tmp_path / "t"), ["dt"]), key=lambda f: f.path)
    job = FooterJob(str(tmp_path / "t"), tuple(COLUMNS), StatsOptions())
    local, spark = Recorder("local"), Recorder("spark")
    auto = AutoEngine(local, spark, threshold=5)
    auto.read(job, files[:4])
    assert auto.last_used == "local"
    auto.read(job, files[:5])
    assert auto.last_used == "spark" and local.calls == [4] and spark.calls == [5]


def test_choose_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HSH_SPARK_MASTER", raising=False)
    monkeypatch.delenv("HSH_SPARK_THRESHOLD", raising=False)
    assert isinstance(choose_engine("local"), LocalEngine)
    assert isinstance(choose_engine("auto"), LocalEngine)  # no master configured: never Spark
    spark = choose_engine("spark", max_workers=3)
    assert isinstance(spark, SparkEngine) and spark.master == "local[*]" and spark.max_workers == 3
    auto = choose_engine("auto", master="spark://127.0.0.1:7077")
    assert isinstance(auto, AutoEngine) and auto.threshold == AUTO_THRESHOLD
    monkeypatch.setenv("HSH_SPARK_MASTER", "spark://h:7077")
    monkeypatch.setenv("HSH_SPARK_THRESHOLD", "1000")
    auto = choose_engine("auto")
    assert isinstance(auto, AutoEngine) and auto.threshold == 1000
    assert isinstance(auto.spark, SparkEngine) and auto.spark.master == "spark://h:7077"
    assert choose_engine("auto", threshold=7).threshold == 7  # type: ignore[attr-defined]
    monkeypatch.setenv("HSH_SPARK_THRESHOLD", "many")
    with pytest.raises(ConfigurationError, match="HSH_SPARK_THRESHOLD"):
        choose_engine("auto")
    args = argparse.Namespace(workers=None, engine="auto", spark_master=None, engine_threshold=0)
    with pytest.raises(ConfigurationError, match="--engine-threshold 0"):
        footer_engine(args)


def test_unreachable_master_is_one_line_naming_it(tmp_path: Path) -> None:
    from metastore.service import free_port

    make_table(tmp_path / "t", per_day=1)
    files = list_data_files(str(tmp_path / "t"), ["dt"])
    url = f"spark://127.0.0.1:{free_port()}"
    with pytest.raises(SparkMasterUnreachableError) as err:
        build_index(str(tmp_path / "t"), COLUMNS, files, engine=SparkEngine(master=url))
    assert url in str(err.value) and "\n" not in str(err.value)
    # nothing to read: no application at all, and the same (empty) table as the local engine
    empty = build_index(str(tmp_path / "t"), COLUMNS, [], engine=SparkEngine(master=url))
    assert empty.equals(build_index(str(tmp_path / "t"), COLUMNS, []), check_metadata=True)


def test_a_failed_job_says_why_in_one_line() -> None:
    text = ("An error occurred while calling o1.collectAndServe.\n: org.apache.spark.SparkException: Job aborted due "
            "to stage failure: Task 0 in stage 0.0 failed 4 times\n  File \"x.py\", line 3, in f\n"
            "storage_handler.stats.engines.spark.SparkEngineError: table folder /t is not visible on executor host h\n")
    assert _cause(RuntimeError(text)) == "table folder /t is not visible on executor host h"
    assert _cause(RuntimeError("boom\nJava stack")) == "boom"


@pytest.mark.jvm
def test_a_task_sizes_its_footer_pool_by_its_own_cores(spark: Any) -> None:
    """Inside a Spark task the footer pool gets the task's cores (``spark.task.cpus``), not the executor
    machine's: an executor runs a task per core at once, and each sizing its pool by the machine would run
    cores x cores CPU-bound threads. Outside a task, every core of the machine."""

    def inside(_: Iterator[int]) -> Iterator[tuple[int, int]]:
        from storage_handler.stats.engines.pool import pool_plan, usable_cpus
        from storage_handler.stats.index.file_stats import StatsOptions as Options

        yield usable_cpus(), pool_plan(True, 100_000, Options(), processes=False).workers

    task_cpus = int(spark.conf.get("spark.task.cpus", "1"))
    [(cpus, workers)] = spark.sparkContext.parallelize([0], 1).mapPartitions(inside).collect()
    assert cpus == task_cpus
    threads_per_cpu = 1 if native_reader() is not None else LOCAL_THREADS_PER_CPU
    assert workers == threads_per_cpu * task_cpus
    assert usable_cpus() == (os.cpu_count() or 1)


# ---------------------------------------------------------------- on a standalone cluster
@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    started = StandaloneCluster(tmp_path_factory.mktemp("spark_cluster"), workers=2, cores=1).start()
    try:
        yield started
    finally:
        started.stop()


READ_ON_SPARK = r"""
import json, pickle, sys
from storage_handler.stats.engines.spark import SparkEngine

job_file, master, slices, out = sys.argv[1:]
with open(job_file, "rb") as fh:
    job, files = pickle.load(fh)
# a fresh Python per task makes every task take a while: the test can lose an executor mid-job
with SparkEngine(master=master, slices=int(slices), conf={"spark.python.worker.reuse": "false"}) as engine:
    table = engine.read(job, files, lambda done, total: print("progress", done, total, flush=True))
    # registration's one pass (schemas + rows) in the same application, over the files under the table folder
    under = [f for f in files if not f.path.startswith("/")]
    scan = engine.scan(job.table_location, under, job.options)
    with open(out + ".scan", "wb") as fh:
        pickle.dump((scan.schemas, scan.index_for(job.columns, job.options), len(scan.unreadable)), fh)
    with open(out + ".log", "w") as fh:  # the driver log goes when the application stops
        fh.write(engine.log_path.read_text(errors="replace"))
import pyarrow as pa
with pa.OSFile(out, "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
    writer.write_table(table)
print("log removed", not engine.log_path, flush=True)
"""


@pytest.fixture(scope="module")
def lost_executor_run(cluster: StandaloneCluster, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One footer job on the cluster (40 tasks over 306 files: a corrupt footer, a partition outside the table
    folder), during which an executor JVM running a task is SIGKILLed once a task has finished."""
    tmp = tmp_path_factory.mktemp("spark_job")
    root = tmp / "t"
    make_table(root)
    files = sorted(list_data_files(str(root), ["dt"]) + outside_files(tmp / "elsewhere"), key=lambda f: f.path)
    job = FooterJob(str(root), tuple(COLUMNS), StatsOptions())
    with open(tmp / "job.pickle", "wb") as fh:
        pickle.dump((job, files), fh)
    apps_before = cluster.app_dirs()
    proc = python_popen(READ_ON_SPARK, str(tmp / "job.pickle"), cluster.url, "40", str(tmp / "spark.arrow"))
    assert proc.stdout is not None
    lines: list[str] = []
    killed: dict[str, Any] = {}
    try:
        for line in proc.stdout:
            lines.append(line.strip())
            if line.startswith("progress") and not killed:
                done, total = map(int, line.split()[1:])
                # an executor the driver is using: one running a task now (its Python daemon has forked a
                # worker). An executor still starting would be lost before the driver ever knew of it.
                executors = wait_until(lambda: cluster.busy_executors(), "an executor running a task", timeout=120)
                os.kill(executors[0], signal.SIGKILL)  # a JVM a worker we started launched, by its PID
                killed = {"pid": executors[0], "done": done, "total": total, "child_running": proc.poll() is None}
        proc.wait(timeout=600)
    finally:
        if proc.poll() is None:
            kill_pid(proc)
    err = proc.stderr.read() if proc.stderr is not None else ""
    assert proc.returncode == 0, (lines[-5:], err[-4000:])
    assert "log removed True" in lines  # a successful application leaves no driver log behind
    with pa.OSFile(str(tmp / "spark.arrow")) as source:
        spark_table = pa.ipc.open_stream(source).read_all()
    return {"job": job, "files": files, "root": root, "tmp": tmp, "spark": spark_table, "killed": killed,
            "lines": lines, "driver_log": (tmp / "spark.arrow.log").read_text(errors="replace"),
            "new_apps": cluster.app_dirs() - apps_before}


@pytest.mark.jvm
def test_same_index_byte_for_byte_as_the_local_engine(lost_executor_run: dict[str, Any]) -> None:
    """Rows, schema and metadata equal; the snapshot ``store.commit`` writes is the same bytes; the corrupt
    footer is a row with its stats_error (the job succeeded); the outside partition's files are indexed."""
    run = lost_executor_run
    local = LocalEngine().read(run["job"], run["files"])
    spark = run["spark"]
    assert spark.equals(local, check_metadata=True)
    assert len(run["new_apps"]) == 1  # the job ran on the cluster's workers
    errors = dict(zip(spark.column("path").to_pylist(), spark.column("stats_error").to_pylist(), strict=True))
    assert errors["dt=2/part-corrupt.parquet"] and sum(e is not None for e in errors.values()) == 1
    assert sum(p.startswith(str(run["tmp"] / "elsewhere")) for p in errors) == 5
    commit(str(run["tmp"] / "copy_local"), local, None)
    commit(str(run["tmp"] / "copy_spark"), spark, None)
    assert snapshot_bytes(run["tmp"] / "copy_spark") == snapshot_bytes(run["tmp"] / "copy_local")


@pytest.mark.jvm
def test_registration_scan_on_spark_equals_the_local_scan(lost_executor_run: dict[str, Any]) -> None:
    """``engine.scan`` (what ``hsh register --engine spark`` runs): same schemas, first files included, and the
    same index rows as the local one-pass scan, the corrupt footer reported unreadable."""
    run = lost_executor_run
    with open(run["tmp"] / "spark.arrow.scan", "rb") as fh:
        schemas, rows, unreadable = pickle.load(fh)
    under = [f for f in run["files"] if not f.path.startswith("/")]
    local = LocalEngine().scan(run["job"].table_location, under, run["job"].options)
    assert [(s.to_string(), f) for s, f in schemas] == [(s.to_string(), f) for s, f in local.schemas]
    assert rows.equals(local.index_for(run["job"].columns, run["job"].options), check_metadata=True)
    assert unreadable == len(local.unreadable) == 1
    assert rows.num_rows == len(under)


@pytest.mark.jvm
def test_an_executor_lost_mid_job_is_retried(lost_executor_run: dict[str, Any], cluster: StandaloneCluster) -> None:
    """An executor SIGKILLed while it ran a task, after the first finished task: the driver saw it lost, Spark
    re-ran what it lost (on a new executor or the other worker) and the job returned the same index."""
    killed = lost_executor_run["killed"]
    assert killed and killed["child_running"] and killed["done"] < killed["total"]
    assert not alive(killed["pid"])
    progress = [int(line.split()[1]) for line in lost_executor_run["lines"] if line.startswith("progress")]
    assert progress[-1] == killed["total"] and len(progress) > 1
    assert "Lost executor" in lost_executor_run["driver_log"], lost_executor_run["driver_log"][-3000:]


# ---------------------------------------------------------------- the command line, the real metastore
CRASHING_HSH = r"""
import sys
from tests.crash_points import install

marker, point, *argv = sys.argv[1:]
install(point, marker)
from storage_handler.cli.main import main
sys.exit(main(argv))
"""


def add_files(root: Path) -> None:
    """After registration (which refuses an unreadable file): new files, a rewritten one, a corrupt one."""
    for j in range(3):
        write_file(root / "dt=3" / f"part-new-{j}.parquet", 4000 + j)
    write_file(root / "dt=1" / "part-0000.parquet", 77)
    (root / "dt=2" / "part-corrupt.parquet").write_bytes(b"PAR1 not a footer PAR1")


@pytest.fixture(scope="module")
def cli_scenario(cluster: StandaloneCluster, metastore_uri: str, tmp_path_factory: pytest.TempPathFactory
                 ) -> Iterator[dict[str, Any]]:
    """A table registered in the real metastore; files added; ``hsh index refresh --engine spark`` SIGKILLed
    after its Spark job, before the new version is created; then ``--engine auto`` with a master and a
    threshold of 1 file does the refresh on the cluster. Two applications in all."""
    from metastore.client import MetastoreClient

    old_master = os.environ.pop("HSH_SPARK_MASTER", None)
    tmp = tmp_path_factory.mktemp("spark_cli")
    root = tmp / "t"
    make_table(root, per_day=20, corrupt=False)
    ok_json(hsh("register", "sparkeng.cli", str(root), "--json", "--metastore", metastore_uri))
    with MetastoreClient(metastore_uri) as hms:
        location = hms.get_table("sparkeng", "cli").sd.location
        before = load(location)
        add_files(root)
        result: dict[str, Any] = {"location": location, "before": before}

        marker = tmp / "marker"
        apps = cluster.app_dirs()
        proc = python_popen(CRASHING_HSH, str(marker), "before_create", "index", "refresh", "sparkeng.cli",
                            "--engine", "spark", "--spark-master", cluster.url, "--json",
                            "--metastore", metastore_uri)
        try:
            wait_until(marker.exists, "the child reaching its commit", timeout=400, interval=0.05, proc=proc)
            jvms = descendants(proc.pid)
        finally:
            kill_pid(proc)
        result.update(crash_returncode=proc.returncode, crash_apps=len(cluster.app_dirs() - apps),
                      after_crash=load(location), param_after_crash=hms.get_table("sparkeng", "cli").parameters)
        leftover = [p for p in jvms if alive(p)]
        try:  # the engine stopped its application after the job; a JVM left would exit when its stdin closes
            result["jvm_exited"] = _eventually(lambda: not any(alive(p) for p in leftover), 60)
            result["executors_exited"] = _eventually(lambda: not cluster.executors(0) and not cluster.executors(1),
                                                     60)
        finally:
            for pid in leftover:
                if alive(pid):
                    os.kill(pid, signal.SIGKILL)  # a descendant of the child started above, by its PID

        result["unreachable"] = hsh("index", "refresh", "sparkeng.cli", "--engine", "spark", "--spark-master",
                                    "spark://127.0.0.1:1", "--json", "--metastore", metastore_uri)
        apps = cluster.app_dirs()
        result["refresh"] = ok_json(hsh("index", "refresh", "sparkeng.cli", "--engine", "auto", "--spark-master",
                                        cluster.url, "--engine-threshold", "1", "--json",
                                        "--metastore", metastore_uri))
        result["refresh_apps"] = len(cluster.app_dirs() - apps)
        result["param"] = hms.get_table("sparkeng", "cli").parameters["hsh.index.version"]
    try:
        yield result
    finally:
        if old_master is not None:
            os.environ["HSH_SPARK_MASTER"] = old_master


def _eventually(check: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


@pytest.mark.jvm
def test_driver_killed_before_commit_keeps_the_previous_index(cli_scenario: dict[str, Any]) -> None:
    """`hsh index refresh --engine spark` SIGKILLed after its Spark job, before the new version is created: the
    previous version stays current and the metastore keeps pointing at it; the driver's JVM and the
    application's executors are gone."""
    run = cli_scenario
    before, after = run["before"], run["after_crash"]
    assert run["crash_returncode"] == -signal.SIGKILL and run["crash_apps"] == 1  # the job ran on the cluster
    assert before is not None and before.version == 1
    assert after is not None and after.version == 1 and after.table.equals(before.table, check_metadata=True)
    assert run["param_after_crash"]["hsh.index.version"] == "1"
    assert run["jvm_exited"] and run["executors_exited"]


@pytest.mark.jvm
def test_cli_engine_auto_reads_on_the_cluster(cli_scenario: dict[str, Any]) -> None:
    """The next `hsh index refresh --engine auto --spark-master URL --engine-threshold 1` reads the new, changed
    and corrupt files' footers on the cluster and commits an index equal to a local build of every file; an
    unreachable master is one error line naming it."""
    run = cli_scenario
    dead = fails_clearly(run["unreachable"], "spark://127.0.0.1:1")
    assert "cannot be reached" in dead
    out = run["refresh"]
    assert out["index_version"] == 2 and out["changed"] == ["dt=1/part-0000.parquet"]
    assert out["added"] == ["dt=2/part-corrupt.parquet", *(f"dt=3/part-new-{j}.parquet" for j in range(3))]
    assert run["refresh_apps"] == 1 and run["param"] == "2"
    location = run["location"]
    snap = load(location)
    assert snap is not None and snap.version == 2
    assert snap.table.equals(build_index(location, COLUMNS, list_data_files(location, ["dt"])), check_metadata=True)
    errors = [p for p, e in zip(snap.table.column("path").to_pylist(), snap.table.column("stats_error").to_pylist(),
                                strict=True) if e is not None]
    assert errors == ["dt=2/part-corrupt.parquet"]


def test_help_documents_the_engine_options() -> None:
    proc = subprocess.run([*HSH, "index", "refresh", "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    for needle in ("--engine {local,spark,auto}", "--spark-master URL", "--engine-threshold N", "200000"):
        assert needle in text, needle
