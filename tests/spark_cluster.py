"""A real Spark standalone cluster from the pyspark wheel: a master and workers on 127.0.0.1, stopped by PID.

Used by ``tests/stats/engines/test_spark.py`` and ``benchmarks/bench_spark_engine.py``. Every process is started
here with ``start_new_session`` (its process group is its PID), so stopping signals exactly those groups, which
hold the executors the workers launched; nothing is ever found by name.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from metastore.service import free_port
from storage_handler.home import spark_home

LOOPBACK = "127.0.0.1"


def children(pid: int) -> list[int]:
    """PIDs whose parent is ``pid`` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry.name))
    return sorted(found)


def descendants(pid: int) -> list[int]:
    result, todo = [], [pid]
    while todo:
        kids = children(todo.pop())
        result += kids
        todo += kids
    return result


def alive(pid: int) -> bool:
    """Running (a zombie counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


class StandaloneCluster:
    """``org.apache.spark.deploy.master.Master`` and ``workers`` × ``Worker`` (``cores`` each) under ``folder``."""

    def __init__(self, folder: Path, workers: int = 2, cores: int = 1, memory: str = "1g") -> None:
        self.folder = folder
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.port = 0
        self.master: subprocess.Popen[bytes] | None = None
        self.worker_procs: list[subprocess.Popen[bytes]] = []

    @property
    def url(self) -> str:
        return f"spark://{LOOPBACK}:{self.port}"

    @property
    def master_log(self) -> Path:
        return self.folder / "master.log"

    def work_dir(self, i: int) -> Path:
        return self.folder / f"worker{i}"

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update({
            "SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": LOOPBACK, "PYSPARK_PYTHON": sys.executable,
            "SPARK_LOG_DIR": str(self.folder), "SPARK_PID_DIR": str(self.folder),
            "SPARK_DAEMON_MEMORY": "256m",
            # no REST submission server (a fixed port 6066 that two clusters would fight over)
            "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
        })
        return env

    def _spawn(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        with open(self.folder / f"{name}.log", "wb") as log:
            return subprocess.Popen([str(spark_home() / "bin" / "spark-class"), *args], cwd=self.folder,
                                    env=self._env(), stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True)

    def start(self, timeout: float = 240.0) -> StandaloneCluster:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.master = self._spawn("master", "org.apache.spark.deploy.master.Master", "--host", LOOPBACK,
                                  "--port", str(self.port), "--webui-port", "0")
        try:
            for i in range(self.workers):
                self.work_dir(i).mkdir(exist_ok=True)
                self.worker_procs.append(self._spawn(
                    f"worker{i}", "org.apache.spark.deploy.worker.Worker", self.url, "--host", LOOPBACK,
                    "--cores", str(self.cores), "--memory", self.memory, "--webui-port", "0",
                    "--work-dir", str(self.work_dir(i))))
            deadline = time.monotonic() + timeout
            while self.registered() < self.workers:
                for proc in (self.master, *self.worker_procs):
                    if proc.poll() is not None:
                        raise RuntimeError(f"a Spark process exited with {proc.returncode} while starting; "
                                           f"see the logs in {self.folder}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the Spark workers did not register within {timeout:.0f}s; "
                                       f"see {self.master_log}")
                time.sleep(0.3)
        except BaseException:
            self.stop()
            raise
        return self

    def registered(self) -> int:
        """Workers the master has registered (from its log)."""
        try:
            text = self.master_log.read_text(errors="replace")
        except OSError:
            return 0
        return text.count("Master: Registering worker ")

    def executors(self, i: int) -> list[int]:
        """PIDs of the executor JVMs worker ``i`` is running now (its child processes)."""
        return [pid for pid in children(self.worker_procs[i].pid) if alive(pid)]

    def busy_executors(self) -> list[int]:
        """Executor JVMs (of any worker) running a Python task now: the executor's ``pyspark.daemon`` has a forked
        worker, so the executor is registered with the driver and holds a running task."""
        return [pid for i in range(len(self.worker_procs)) for pid in self.executors(i)
                if any(children(daemon) for daemon in children(pid))]

    def app_dirs(self) -> set[str]:
        """Applications that ran executors on any worker (``app-...`` folders in the work dirs)."""
        return {p.name for i in range(self.workers) if self.work_dir(i).exists() for p in self.work_dir(i).iterdir()}

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM each process group started here (executors included), SIGKILL what is left after ``timeout``."""
        procs = [*self.worker_procs, *([self.master] if self.master is not None else [])]
        for proc in procs:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for proc in procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        self.worker_procs = []
        self.master = None
