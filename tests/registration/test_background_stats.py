"""Partition statistics handed to a background publish (issue 27, ``storage_handler.registration.background``):
``hsh register`` returns with the table's statistics written, the detached ``hsh stats publish`` it started writes
every partition's, and the metastore then holds exactly what a registration that waited for them writes."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from metastore.names import parse_table_name
from storage_handler.errors import ConfigurationError
from storage_handler.registration import background
from tests.helpers import run_hsh
from tests.registration import stats_data as D
from tests.registration.test_statistics import _params, _partition_stats, _table_stats

PARTS = [f"dt={p}" for p in D.PARTITIONS]


def _finished(name: str, timeout: float = 120.0) -> dict[str, Any]:
    """The background publish's final state, once it has recorded its result and released its lock; a publish
    still running after ``timeout`` is stopped by its PID and the test fails."""
    deadline = time.monotonic() + timeout
    while True:
        state = background.status(parse_table_name(name))
        assert state is not None
        if not state["running"] and "finished_at" in state:
            return state
        if time.monotonic() > deadline:
            os.kill(int(state["pid"]), signal.SIGKILL)
            pytest.fail(f"the background publish of {name} did not finish in {timeout} s: {state}")
        time.sleep(0.1)


def _comparable(params: dict[str, str]) -> dict[str, Any]:
    """Parameters without what differs between two registrations of the same files: the times, the location."""
    out: dict[str, Any] = {k: v for k, v in params.items() if k not in ("transient_lastDdlTime", "hsh.index.location")}
    if "hsh.stats" in out:
        out["hsh.stats"] = {k: v for k, v in json.loads(out["hsh.stats"]).items() if k != "at"}
    return out


def _decoded(objs: dict[str, Any]) -> dict[str, Any]:
    return {name: D.decoded(obj) for name, obj in objs.items()}


@pytest.mark.jvm
def test_a_background_publish_writes_what_a_waiting_register_writes(hms: Any, metastore_uri: str,
                                                                    tmp_path: Path) -> None:
    later, now = D.generate(tmp_path / "later"), tmp_path / "now"
    shutil.copytree(later, now)
    proc = run_hsh("register", "bgst.later", str(later), "--partition-stats", "background", "--json",
                   "--metastore", metastore_uri)
    assert proc.returncode == 0, proc.stderr
    stats = json.loads(proc.stdout)["statistics"]
    assert (stats["partitions_deferred"], stats["partitions_written"], stats["table_level"]) == (3, 0, "written")
    assert stats["background"]["pid"] > 0 and Path(stats["background"]["log"]).parent.name == "stats"
    # before the partitions': the table's numbers, which a plain Spark session plans with
    assert _params(hms, "bgst", "later")["numRows"] == str(sum(D.oracle(later / p)["rows"] for p in PARTS))

    state = _finished("bgst.later")
    assert state["ok"] and state["result"]["partitions_written"] == 3, state
    proc = run_hsh("register", "bgst.now", str(now), "--partition-stats", "now", "--metastore", metastore_uri)
    assert proc.returncode == 0, proc.stderr
    for part in PARTS:
        assert _comparable(_params(hms, "bgst", "later", part)) == _comparable(_params(hms, "bgst", "now", part))
    assert {p: _decoded(o) for p, o in _partition_stats(hms, "bgst", "later", PARTS).items()} == \
        {p: _decoded(o) for p, o in _partition_stats(hms, "bgst", "now", PARTS).items()}
    assert _comparable(_params(hms, "bgst", "later")) == _comparable(_params(hms, "bgst", "now"))
    assert _decoded(_table_stats(hms, "bgst", "later")) == _decoded(_table_stats(hms, "bgst", "now"))

    described = run_hsh("describe", "bgst.later", "--metastore", metastore_uri)
    assert "published in the background" in " ".join(described.stdout.split()), described.stdout
    assert json.loads(run_hsh("describe", "bgst.now", "--json", "--metastore", metastore_uri).stdout)[
        "statistics_background"] is None


@pytest.mark.jvm
def test_stats_publish_publishes_a_table_registered_without_statistics(hms: Any, metastore_uri: str,
                                                                        tmp_path: Path) -> None:
    root = D.generate(tmp_path / "t")
    assert run_hsh("register", "bgst.bare", str(root), "--no-stats", "--metastore", metastore_uri).returncode == 0
    assert "numRows" not in _params(hms, "bgst", "bare", PARTS[0])
    proc = run_hsh("stats", "publish", "bgst.bare", "--json", "--metastore", metastore_uri)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["partitions_written"] == 3
    assert _params(hms, "bgst", "bare", PARTS[0])["numRows"] == str(D.oracle(root / PARTS[0])["rows"])
    again = json.loads(run_hsh("stats", "publish", "bgst.bare", "--json", "--metastore", metastore_uri).stdout)
    assert (again["partitions_written"], again["partitions_unchanged"]) == (0, 3)  # only what differs is written


def test_when_partition_statistics_go_to_the_background(monkeypatch: pytest.MonkeyPatch) -> None:
    assert not background.defer("auto", background.AUTO_ABOVE) and background.defer("auto", background.AUTO_ABOVE + 1)
    assert background.defer("background", 1) and not background.defer("background", 0)
    assert not background.defer("now", 100_000)
    monkeypatch.setenv(background.ENV_MODE, "background")
    assert background.chosen_mode(None) == "background" and background.chosen_mode("now") == "now"
    monkeypatch.setenv(background.ENV_MODE, "later")
    with pytest.raises(ConfigurationError, match="HSH_PARTITION_STATS='later': give one of auto, now, background"):
        background.chosen_mode(None)


def test_a_publish_that_died_without_a_result_says_so(tmp_path: Path) -> None:
    name = parse_table_name("bgst.killed")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    state_path = tmp_path / "stats" / "bgst.killed.json"
    state_path.parent.mkdir()
    state_path.write_text(json.dumps({"table": str(name), "pid": dead.pid, "started_at": time.time(),
                                      "log": str(tmp_path / "stats" / "bgst.killed.log")}))
    state = background.status(name, tmp_path)
    assert state is not None and not state["running"] and state["ok"] is False
    assert "ended without a result" in background.describe(state) and "hsh stats publish bgst.killed" in \
        background.describe(state)
    assert background.status(parse_table_name("bgst.never"), tmp_path) is None
