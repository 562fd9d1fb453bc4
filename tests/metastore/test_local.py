"""The embedded services' lifecycle: reuse, status, stop by PID, Java missing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from metastore.local import LocalMetastore
from metastore.service import ServiceInfo
from tests.helpers import run_hsh


def test_second_start_reuses_the_running_metastore(metastore_uri: str, hsh_home: Path) -> None:
    if os.environ.get("HSH_METASTORE_URI"):
        return  # external metastore: nothing embedded to reuse
    service = LocalMetastore(hsh_home)
    info = service.status()
    assert info is not None and info.uri == metastore_uri
    again = service.start()
    assert again.pid == info.pid
    proc = run_hsh("metastore", "status", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["pid"] == info.pid


@pytest.mark.jvm
def test_start_and_stop_by_pid(tmp_path: Path) -> None:
    service = LocalMetastore(tmp_path)
    info = service.start()
    assert info.alive() and Path(f"/proc/{info.pid}").exists()
    stopped = service.stop()
    assert stopped is not None and stopped.pid == info.pid
    assert not info.alive()
    assert service.status() is None and not service.info_path.exists()
    assert service.stop() is None


@pytest.mark.jvm
def test_starters_racing_on_a_fresh_state_folder_end_with_one_metastore(tmp_path: Path) -> None:
    """Four `hsh metastore start` at once (scripts, notebooks): all succeed with the same metastore, one JVM runs,
    and its record survives every starter's exit (a losing starter once deleted the winner's record)."""
    env = {**os.environ, "HSH_HOME": str(tmp_path)}
    procs = [subprocess.Popen([sys.executable, "-m", "storage_handler.cli.main", "metastore", "start", "--json"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) for _ in range(4)]
    results = [p.communicate(timeout=300) for p in procs]
    service = LocalMetastore(tmp_path)
    try:
        assert all(p.returncode == 0 for p in procs), [err for _, err in results]
        pids = {json.loads(out)["pid"] for out, _ in results}
        running = service.status()
        assert running is not None and pids == {running.pid}
        assert len(list(tmp_path.glob("metastore/.service-*.tmp"))) == 0
    finally:
        service.stop()
    assert service.status() is None


def test_liveness_is_the_held_lock_not_the_pid(tmp_path: Path) -> None:
    """A record whose process is gone is not alive even when its PID now names another live process (PID
    reuse), and a record with no lock file falls back to the PID."""
    lock = tmp_path / "alive.lock"
    lock.touch()
    other = ServiceInfo("metastore", os.getpid(), 1, "thrift://127.0.0.1:1", "", 0.0, None, alive_lock=str(lock))
    assert not other.alive()  # this very process is alive, but nobody holds the service's lock
    holder = subprocess.Popen([sys.executable, "-c", f"import fcntl,time; f=open({str(lock)!r}); "
                               "fcntl.flock(f, fcntl.LOCK_EX); print(1, flush=True); time.sleep(60)"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "1"
        assert other.alive()
    finally:
        holder.kill()
        holder.wait()
    assert not other.alive()
    legacy = ServiceInfo("metastore", os.getpid(), 1, "thrift://127.0.0.1:1", "", 0.0, None)
    assert legacy.alive()


def test_java_missing_is_one_clear_line(tmp_path: Path) -> None:
    env = {"PATH": "/nonexistent", "JAVA_HOME": "", "HSH_HOME": str(tmp_path)}
    proc = run_hsh("metastore", "start", env=env)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Java 17 is required" in lines[0]
    assert "Traceback" not in proc.stderr


def test_a_list_of_metastores_fails_over_to_one_that_answers(metastore_uri: str) -> None:
    """``hive.metastore.uris`` of a highly available metastore: the first is down, the second answers. Only the
    first was ever tried (the client failed), and Spark's session was given only the first (no failover left)."""
    from metastore.client import MetastoreClient, MetastoreUnavailableError
    from storage_handler.spark.config import spark_conf

    down = "thrift://127.0.0.1:1"
    both = f"{down}, {metastore_uri}"
    with MetastoreClient(both, connect_timeout=2) as client:
        assert isinstance(client.get_all_databases(), list)
        assert client.uri == metastore_uri and client.uris == f"{down},{metastore_uri}"
        assert client.sibling().uris == client.uris
    with pytest.raises(MetastoreUnavailableError, match="127.0.0.1:2"):
        MetastoreClient(f"{down},thrift://127.0.0.1:2", connect_timeout=2).open()
    assert spark_conf(both, native_scan=False)["spark.hadoop.hive.metastore.uris"] == f"{down},{metastore_uri}"
