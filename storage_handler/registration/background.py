"""Partition statistics published in the background, after ``register`` has returned (issue 27).

Why: the metastore writes column statistics one partition per transaction (Hive 2.3's ``ObjectStore``, ~5 ms of
its time per partition on the embedded metastore; ``benchmarks/results/stats.md``), so publishing them for 2,000
partitions took five times as long as registering the table. ``register`` therefore writes what a plain Spark
session plans with -- the table's numbers and column statistics -- before it returns, and hands each partition's
statistics to a detached ``hsh stats publish`` (Hive 3's metastore has a background statistics updater for the
same reason). Nothing is claimed before it is written: until the publish reaches a partition, the partition carries
only the file count and size the metastore itself records when a partition is added (as with ``--no-stats``).

When (``register --partition-stats``, default ``$HSH_PARTITION_STATS``, else ``auto``): ``now`` writes them before
returning, ``background`` always hands them off, ``auto`` hands them off when more than :data:`AUTO_ABOVE`
partitions are added (below that they cost under ~0.3 s).

State: ``$HSH_HOME/stats/<db>.<table>.json`` (pid, log, start; result and end once done), written atomically.
The publisher holds ``<db>.<table>.lock`` (``flock``) while it runs: that is how ``hsh describe`` tells a running
publish from a finished or killed one, and two publishers of one table run one after the other (each writes only
what differs, so the second finds little to do).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from metastore.names import TableName
from storage_handler.errors import ConfigurationError
from storage_handler.home import state_home

MODES = ("auto", "now", "background")
AUTO_ABOVE = 50
ENV_MODE = "HSH_PARTITION_STATS"


def chosen_mode(flag: str | None) -> str:
    """The ``--partition-stats`` mode: the flag, else ``$HSH_PARTITION_STATS``, else ``auto``."""
    mode = flag or os.environ.get(ENV_MODE) or "auto"
    if mode not in MODES:
        raise ConfigurationError(f"{ENV_MODE}={mode!r}: give one of {', '.join(MODES)}")
    return mode


def defer(mode: str, partitions: int) -> bool:
    """Whether ``partitions`` new partitions' statistics go to the background under ``mode``."""
    return partitions > 0 and (mode == "background" or (mode == "auto" and partitions > AUTO_ABOVE))


def _paths(name: TableName, home: Path | None) -> tuple[Path, Path, Path]:
    folder = (home or state_home()) / "stats"
    base = f"{name.database}.{name.table}"
    return folder / f"{base}.json", folder / f"{base}.lock", folder / f"{base}.log"


def _write(path: Path, state: dict[str, Any]) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(state, indent=2, default=str))
    os.replace(temporary, path)


def start(name: TableName, metastore_uri: str, *, overwrite: bool = False, home: Path | None = None) -> dict[str, Any]:
    """Start ``hsh stats publish`` for ``name``, detached (its own session: it outlives this command and a
    Ctrl-C of it), with its output in a log file. Returns what was started (pid, log, state file)."""
    state_path, _, log_path = _paths(name, home)
    state_path.parent.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "storage_handler.cli.main", "stats", "publish", str(name),
               "--metastore", metastore_uri, *(["--overwrite-stats"] if overwrite else [])]
    env = {**os.environ, **({"HSH_HOME": str(home)} if home else {})}
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, close_fds=True, env=env)
    state = {"table": str(name), "pid": proc.pid, "started_at": time.time(), "log": str(log_path),
             "state": str(state_path)}
    _write(state_path, state)
    proc.returncode = 0  # never waited for here: it is not this command's child to reap (no ResourceWarning)
    return state


@contextlib.contextmanager
def publishing(name: TableName, home: Path | None = None) -> Iterator[dict[str, Any]]:
    """Around a publish of ``name``'s statistics: hold the table's publish lock, and record the result (the caller
    fills the yielded dict) in the state file when this process is the one ``register`` started."""
    state_path, lock_path, _ = _paths(name, home)
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {}
    with open(lock_path, "a+", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another publish of this table first: then this one writes only changes
        ok = False
        try:
            yield result
            ok = True
        finally:
            state = _read(state_path)
            if state is not None and state.get("pid") == os.getpid():
                _write(state_path, {**state, "finished_at": time.time(), "ok": ok and not result.get("warning"),
                                    "result": result})


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def status(name: TableName, home: Path | None = None) -> dict[str, Any] | None:
    """The last background publish of ``name`` started on this machine: its state, and ``running`` (its lock is
    held), or None when there was none. A publish that ended without a result was killed: ``ok`` is False."""
    state_path, lock_path, _ = _paths(name, home)
    state = _read(state_path)
    if state is None:
        return None
    running = False
    with contextlib.suppress(FileNotFoundError), open(lock_path, "a+", encoding="utf-8") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            running = True
    state["running"] = running
    if not running and "finished_at" not in state:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(int(state["pid"]), 0)
            state["running"] = True  # started, not yet holding its lock
        if not state["running"]:
            state["ok"] = False
            state["result"] = {"warning": f"the publish (pid {state['pid']}) ended without a result; see "
                                          f"{state.get('log')}, and run `hsh stats publish {name}`"}
    return state


def describe(state: dict[str, Any] | None) -> str | None:
    """``status`` in one line for ``hsh describe``."""
    if state is None:
        return None
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(state["started_at"]))
    if state.get("running"):
        return f"publishing in the background since {started} (pid {state['pid']}, log {state.get('log')})"
    result = state.get("result") or {}
    if state.get("ok"):
        took = state.get("finished_at", state["started_at"]) - state["started_at"]
        return (f"published in the background, started {started}, took {took:.1f} s: "
                f"{result.get('partitions_written', 0)} partitions written")
    return f"background publish started {started} did not finish cleanly: {result.get('warning') or 'see its log'}"
