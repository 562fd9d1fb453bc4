"""The embedded services' lifecycle: reuse, status, stop by PID, Java missing."""

from __future__ import annotations

import json
import os
from pathlib import Path

from metastore.local import LocalMetastore
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


def test_start_and_stop_by_pid(tmp_path: Path) -> None:
    service = LocalMetastore(tmp_path)
    info = service.start()
    assert info.alive() and Path(f"/proc/{info.pid}").exists()
    stopped = service.stop()
    assert stopped is not None and stopped.pid == info.pid
    assert not info.alive()
    assert service.status() is None and not service.info_path.exists()
    assert service.stop() is None


def test_java_missing_is_one_clear_line(tmp_path: Path) -> None:
    env = {"PATH": "/nonexistent", "JAVA_HOME": "", "HSH_HOME": str(tmp_path)}
    proc = run_hsh("metastore", "start", env=env)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Java 17 is required" in lines[0]
    assert "Traceback" not in proc.stderr
