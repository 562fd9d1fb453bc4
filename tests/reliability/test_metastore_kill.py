"""1. Killed in the middle of `hsh sync` / `hsh register` of a table with 2,000 partitions: the metastore, or the sync

Each scenario runs the real command in a subprocess against a private metastore (its own Derby folder and port),
with ``--batch-size 50``, and SIGKILLs the metastore JVM (by the PID it was started with) once partitions start
arriving. Afterwards the metastore's partitions must equal the partition folders on storage exactly and the index
must list every file exactly once.

The scenarios spend most of their time waiting (a metastore boot, a restart, a client's retry budget, a lock
wait), so they are launched in background threads as soon as collection finishes (``launch_in_background``,
called by ``conftest.py``) and run while the rest of the suite does; the tests below assert on what each observed.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from metastore.client import MetastoreClient
from tests.reliability.conftest import KillableMetastore
from tests.reliability.util import (
    assert_hms_matches_storage,
    assert_index_matches_storage,
    clean_error,
    hsh,
    hsh_popen,
    is_loopback,
    listening_sockets,
    ok_json,
    partition_count,
    wait_until,
    write_partitions,
)

pytestmark = pytest.mark.jvm  # every scenario starts (and kills) its own metastore
PARTITIONS = 2000
BATCH = "20"  # small batches: four connections add them, and the kill must still land mid-command
KILL_AFTER = 20  # partitions the metastore must hold before it is killed: the kill lands mid-command
LOCKED_PARTITIONS = 400


def retry_budget() -> float:
    """Seconds the client keeps retrying an idempotent call against a dead metastore (its own defaults)."""
    c = MetastoreClient("thrift://127.0.0.1:1")
    return sum(min(c.max_backoff, c.backoff * 2**i) for i in range(c.retries))


# ---------------------------------------------------------------- background orchestration
class _Background:
    def __init__(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="hsh-reliability-kill-"))
        self.metastores = {"quick": KillableMetastore(self.tmp / "ms_quick"),
                           "down": KillableMetastore(self.tmp / "ms_down")}
        self.procs: list[subprocess.Popen[str]] = []
        self.lock = threading.Lock()
        self.pool = ThreadPoolExecutor(2, thread_name_prefix="kill-scenario")
        self.futures: dict[str, Future[Any]] = {}

    def popen(self, *args: str) -> subprocess.Popen[str]:
        proc = hsh_popen(*args)
        with self.lock:
            self.procs.append(proc)
        return proc

    def log(self, text: str) -> None:
        """To the process's own stderr, never ``sys.stdout``: these threads outlive the test that started them, and a
        line printed while another test holds ``capsys`` lands in that test's captured output (it broke a JSON parse)."""
        print(f"[{time.strftime('%X')}] {text}", file=sys.__stderr__, flush=True)


_BG: _Background | None = None


def launch_in_background() -> None:
    """Start every scenario of this module now (called by conftest.py once collection is finished)."""
    global _BG
    if _BG is not None:
        return
    _BG = bg = _Background()

    def chain(name: str, *steps: Callable[[_Background, KillableMetastore], dict[str, Any]]) -> dict[str, Any]:
        ms = bg.metastores[name]
        ms.start()
        results: dict[str, Any] = {}
        for step in steps:
            try:
                results[step.__name__] = step(bg, ms)
            except BaseException as e:  # noqa: BLE001 - handed to the test that owns the scenario
                results[step.__name__] = e
        return results

    bg.futures["quick"] = bg.pool.submit(chain, "quick", quick_restart, sync_client_killed)
    bg.futures["down"] = bg.pool.submit(chain, "down", stays_down)


def stop_background() -> None:
    """Kill what is still running (children by PID) and stop the private metastores (called at session end)."""
    global _BG
    bg, _BG = _BG, None
    if bg is None:
        return
    with bg.lock:
        for proc in bg.procs:
            if proc.poll() is None:
                proc.kill()
    for ms in bg.metastores.values():
        ms.stop()
    bg.pool.shutdown(wait=True, cancel_futures=True)
    for ms in bg.metastores.values():  # a scenario may have restarted one while we stopped it
        ms.stop()
    shutil.rmtree(bg.tmp, ignore_errors=True)


def observed(chain: str, step: str) -> dict[str, Any]:
    if _BG is None:
        launch_in_background()
    assert _BG is not None
    value = _BG.futures[chain].result(timeout=900)
    if isinstance(value, BaseException):
        raise value
    if isinstance(value[step], BaseException):
        raise value[step]
    return value[step]


# ---------------------------------------------------------------- the scenarios
def _kill_mid_command(bg: _Background, ms: KillableMetastore, proc: Any, db: str, table: str) -> int:
    """Wait until the command has added some partitions, then SIGKILL the metastore; returns the count seen.

    The command is paused (SIGSTOP, by its PID) for every count and resumed after it: a count made while four
    connections add partitions can wait on the metastore's locks until they are done (CI once saw its first count
    at 2,000 of 2,000), so the command only runs between counts and the kill lands while it is still adding.
    """
    def enough() -> int:
        os.kill(proc.pid, signal.SIGSTOP)
        try:
            n = partition_count(ms.uri, db, table)
            if n < KILL_AFTER:
                return 0
            ms.kill()  # while the command is paused: nothing it sends can be half-answered by a live metastore
            return n
        finally:
            os.kill(proc.pid, signal.SIGCONT)

    seen = int(wait_until(enough, f"{KILL_AFTER} partitions in {db}.{table}", timeout=300, interval=0.05, proc=proc))
    bg.log(f"{table}: killed the metastore (pid {ms.pid}) at {seen} partitions")
    return seen


def _finish(proc: Any, timeout: float) -> tuple[str, str, float]:
    t0 = time.monotonic()
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return out, err, time.monotonic() - t0


def quick_restart(bg: _Background, ms: KillableMetastore) -> dict[str, Any]:
    """sync of 2,000 new partitions; kill the metastore mid-way; restart it on the same port at once."""
    root = bg.tmp / "quick"
    write_partitions(root, range(1))
    ok_json(hsh("register", "rel.quick", str(root), "--metastore", ms.uri, "--json"))
    write_partitions(root, range(1, PARTITIONS))
    proc = bg.popen("sync", "rel.quick", "--batch-size", BATCH, "--json", "--metastore", ms.uri)
    try:
        seen = _kill_mid_command(bg, ms, proc, "rel", "quick")
        t0 = time.monotonic()
        ms.restart()
        restart_seconds = time.monotonic() - t0
        bg.log(f"quick: metastore back after {restart_seconds:.1f}s")
        after_restart = partition_count(ms.uri, "rel", "quick")
        sockets = listening_sockets(ms.pid)
    finally:
        out, err, _ = _finish(proc, 300)
    bg.log(f"quick: sync exited with {proc.returncode}")
    rerun = hsh("sync", "rel.quick", "--batch-size", BATCH, "--json", "--metastore", ms.uri)
    with MetastoreClient(ms.uri) as client:
        names = assert_hms_matches_storage(client, "rel", "quick", root)
        table = client.get_table("rel", "quick")
    return {"seen": seen, "after_restart": after_restart, "sockets": sockets, "returncode": proc.returncode,
            "out": out, "err": err, "rerun": rerun, "names": names, "table": table, "root": root, "ms": ms,
            "restart_seconds": restart_seconds}


def stays_down(bg: _Background, ms: KillableMetastore) -> dict[str, Any]:
    """register of 2,000 partitions; kill the metastore mid-way; leave it down until the command gives up."""
    root = bg.tmp / "down"
    write_partitions(root, range(PARTITIONS))
    proc = bg.popen("register", "rel.down", str(root), "--batch-size", BATCH, "--json", "--metastore", ms.uri)
    try:
        seen = _kill_mid_command(bg, ms, proc, "rel", "down")
    finally:
        out, err, elapsed = _finish(proc, retry_budget() + 120)
    bg.log(f"down: register gave up after {elapsed:.1f}s with {proc.returncode}")
    ms.restart()
    present = partition_count(ms.uri, "rel", "down")
    rerun = hsh("register", "rel.down", str(root), "--batch-size", BATCH, "--json", "--metastore", ms.uri)
    third = hsh("register", "rel.down", str(root), "--batch-size", BATCH, "--json", "--metastore", ms.uri)
    with MetastoreClient(ms.uri) as client:
        names = assert_hms_matches_storage(client, "rel", "down", root)
        table = client.get_table("rel", "down")
    bg.log("down: done")
    return {"seen": seen, "returncode": proc.returncode, "out": out, "err": err, "elapsed": elapsed,
            "present": present, "rerun": rerun, "third": third, "names": names, "table": table, "root": root}


def sync_client_killed(bg: _Background, ms: KillableMetastore) -> dict[str, Any]:
    """The sync process (not the metastore) SIGKILLed while it holds the table lock, then `hsh sync` again."""
    root = bg.tmp / "locked"
    write_partitions(root, range(1))
    ok_json(hsh("register", "rel.locked", str(root), "--metastore", ms.uri, "--json"))
    write_partitions(root, range(1, LOCKED_PARTITIONS))
    proc = bg.popen("sync", "rel.locked", "--batch-size", "10", "--json", "--metastore", ms.uri)
    wait_until(lambda: partition_count(ms.uri, "rel", "locked") >= 20, "the sync adding partitions", timeout=300,
               interval=0.05, proc=proc)
    proc.kill()  # SIGKILL, by the PID of the child this scenario started
    proc.wait()
    bg.log("locked: sync process killed")
    t0 = time.monotonic()
    rerun = hsh("sync", "rel.locked", "--json", "--metastore", ms.uri, timeout=300)
    bg.log(f"locked: re-run exited with {rerun.returncode} after {time.monotonic() - t0:.1f}s")
    return {"killed_returncode": proc.returncode, "rerun": rerun, "seconds": time.monotonic() - t0, "root": root,
            "ms": ms}


# ---------------------------------------------------------------- the assertions
def test_sync_finishes_after_a_quick_metastore_restart() -> None:
    """`hsh sync` adding 2,000 partitions (batches of 50), metastore SIGKILLed mid-way and restarted on the same port (127.0.0.1 only again): the command reconnects and finishes; a re-run converges; HMS == folders, index lists every file once."""
    r = observed("quick", "quick_restart")
    assert KILL_AFTER <= r["seen"] < PARTITIONS, "the kill did not land in the middle of the command"
    assert r["after_restart"] >= r["seen"]  # committed batches survived the crash
    assert {p for _, p in r["sockets"]} == {r["ms"].port} and all(is_loopback(a) for a, _ in r["sockets"])
    assert r["returncode"] == 0, r["err"][-4000:]
    assert "Traceback" not in r["err"] and "retrying" in r["err"]  # it really lost the connection
    result = json.loads(r["out"])
    assert result["partitions_added"] == PARTITIONS - 1 and result["locked"] is True
    again = ok_json(r["rerun"])
    assert again["partitions_to_add"] == [] and again["partitions_added"] == 0 and again["index_added"] == 0
    assert len(r["names"]) == PARTITIONS
    snap = assert_index_matches_storage(r["table"].sd.location, r["root"])
    assert r["table"].parameters["hsh.index.version"] == str(snap.version)


def test_register_fails_clearly_when_the_metastore_stays_down() -> None:
    """`hsh register` of 2,000 partitions, metastore SIGKILLed mid-way and left down: exit 2 with one `error:` line within the client's retry budget; after a restart a re-run adds exactly the rest and a third run nothing; HMS == folders, index lists every file once."""
    r = observed("down", "stays_down")
    assert KILL_AFTER <= r["seen"] < PARTITIONS, "the kill did not land in the middle of the command"
    clean_error(r["returncode"], r["err"], "lost the connection", "partitions of rel.down")
    assert r["out"].strip() == ""  # no half-written --json result
    budget = retry_budget()
    assert budget - 5 <= r["elapsed"] <= budget + 30, (r["elapsed"], budget)
    present = r["present"]
    assert r["seen"] <= present < PARTITIONS  # nothing committed was lost
    rerun = ok_json(r["rerun"])
    assert rerun["create_table"] is False and rerun["partitions_added"] == PARTITIONS - present
    third = ok_json(r["third"])
    assert third["partitions_to_add"] == 0 and third["partitions_added"] == 0
    assert len(r["names"]) == PARTITIONS
    assert_index_matches_storage(r["table"].sd.location, r["root"])


def test_sync_rerun_after_the_sync_process_was_killed() -> None:
    """`hsh sync` SIGKILLed while it holds the table lock (mid partition adds): re-running `hsh sync` finishes the job; HMS == folders, index lists every file once.

    Found by this suite (a strict xfail until the fix): metastore/client.py table_lock: the EXCLUSIVE HMS
    lock of a sync that was killed is never released (Hive 2.3 times locks out only in its compactor
    housekeeper, which the embedded metastore does not run, so the lock outlives hive.txn.timeout and even
    metastore restarts): every later `hsh sync` of the table waits 60 s and fails with 'timed out after
    60s waiting for the lock'
    """
    r = observed("quick", "sync_client_killed")
    assert r["killed_returncode"] == -9
    ok_json(r["rerun"])
    with MetastoreClient(r["ms"].uri) as client:
        assert len(assert_hms_matches_storage(client, "rel", "locked", r["root"])) == LOCKED_PARTITIONS
        location = client.get_table("rel", "locked").sd.location
    assert_index_matches_storage(location, r["root"])
