"""Helpers for the reliability suite: real processes, real files, and checks that storage, HMS and index agree.

Importable from child processes as ``tests.reliability.util`` (children run with ``PYTHONPATH`` = the repository).
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[2]
HSH = [sys.executable, "-m", "storage_handler.cli.main"]


# ---------------------------------------------------------------- the real command line
def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.update(extra or {})
    return env


def hsh(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run ``hsh`` in a subprocess and wait for it."""
    return subprocess.run([*HSH, *args], capture_output=True, text=True, timeout=timeout, env=child_env(env),
                          cwd=REPO)


def hsh_popen(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """Start ``hsh`` in a subprocess (stdout/stderr piped) and return at once."""
    return subprocess.Popen([*HSH, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=child_env(env), cwd=REPO)


def python_popen(code: str, *args: str) -> subprocess.Popen[str]:
    """Run ``python -c code args...`` with the repository importable (for children that patch a hook first)."""
    return subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=child_env(), cwd=REPO)


def ok_json(proc: subprocess.CompletedProcess[str]) -> Any:
    """The ``--json`` output of a command that must have succeeded without a traceback."""
    assert proc.returncode == 0, (proc.returncode, proc.stdout[-2000:], proc.stderr[-4000:])
    assert "Traceback" not in proc.stderr, proc.stderr
    return json.loads(proc.stdout)


def clean_error(returncode: int, stderr: str, *needles: str) -> str:
    """Exit code 2, no traceback, exactly one ``error:`` line and it is the last line; returns that line.

    Lines before it (warnings of retried calls, progress narration) are allowed.
    """
    assert "Traceback" not in stderr, stderr
    assert returncode == 2, (returncode, stderr[-3000:])
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == 1 and lines[-1] == errors[0], stderr[-3000:]
    for needle in needles:
        assert needle in errors[0], (needle, errors[0])
    return errors[0]


def fails_clearly(proc: subprocess.CompletedProcess[str], *needles: str) -> str:
    return clean_error(proc.returncode, proc.stderr, *needles)


def kill_pid(proc: subprocess.Popen[Any]) -> None:
    """SIGKILL a child this test started (by its PID) and reap it."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


# ---------------------------------------------------------------- data on storage
def write_parquet(path: Path, table: pa.Table, **kwargs: Any) -> Path:
    """Write atomically, as real engines do: a hidden temp file in the same folder, then a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.parent / f".tmp-{uuid.uuid4().hex}"
    pq.write_table(table, temp, **kwargs)
    os.replace(temp, path)
    return path


def ints(values: Iterable[int], **extra: Sequence[Any]) -> pa.Table:
    return pa.table({"v": pa.array(list(values), pa.int64()), **{k: list(v) for k, v in extra.items()}})


def write_partitions(root: Path, keys: Iterable[int], key: str = "k", name: str = "f.parquet") -> None:
    """One one-row file per ``key=<n>`` folder, ``v = n`` (fast: 2,000 of them take about a second)."""
    for n in keys:
        folder = root / f"{key}={n}"
        folder.mkdir(parents=True, exist_ok=True)
        pq.write_table(ints([n]), folder / name)


def storage_files(root: Path | str) -> list[str]:
    """Visible data files under ``root`` (a local folder or an s3a:// URI; hidden names skipped at every level),
    relative POSIX paths, sorted."""
    if isinstance(root, Path) or "://" not in root:
        found = []
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if not d.startswith(("_", "."))]
            for name in filenames:
                if not name.startswith(("_", ".")):
                    found.append((Path(dirpath) / name).relative_to(root).as_posix())
        return sorted(found)
    from storage_handler.storage import storage_for

    return sorted(f.name for f in storage_for(root).walk(root, skip=lambda n: n.startswith(("_", "."))))


def read_parquet(root: Path | str, rel: str) -> pa.Table:
    """A data file under ``root`` (local or s3a://), read whole."""
    from storage_handler.storage import parse_location, storage_for

    uri = parse_location(str(root)).join(rel).uri
    with storage_for(uri).open_input(uri) as source:
        return pq.read_table(source)


def storage_partitions(root: Path | str) -> list[str]:
    """Partition folder paths (``k=v`` or ``a=1/b=2``) that hold at least one visible data file."""
    return sorted({f.rsplit("/", 1)[0] for f in storage_files(root) if "/" in f})


# ---------------------------------------------------------------- storage == HMS == index
def assert_hms_matches_storage(client: Any, db: str, table: str, root: Path | str) -> list[str]:
    """Every partition folder is in the metastore exactly once, with its own location, and nothing else is."""
    names = client.get_partition_names(db, table)
    assert len(names) == len(set(names)), "a partition is listed twice"
    on_storage = storage_partitions(root)
    missing = sorted(set(on_storage) - set(names))
    extra = sorted(set(names) - set(on_storage))
    assert not missing and not extra, f"missing from HMS: {missing[:10]} ({len(missing)}); extra: {extra[:10]}"
    from storage_handler.hive_paths import HIVE_DEFAULT_PARTITION, partition_path

    hms_table = client.get_table(db, table)
    location = hms_table.sd.location.rstrip("/")
    keys = [k.name for k in hms_table.partitionKeys]
    for part in client.get_partitions(db, table):
        values = [None if v == HIVE_DEFAULT_PARTITION else v for v in part.values]
        folder = partition_path(list(zip(keys, values, strict=True)))
        assert folder in on_storage, (folder, part.values)
        assert part.sd.location == f"{location}/{folder}", (part.sd.location, folder)
    return names


def assert_index_matches_storage(location: str, root: Path | str) -> Any:
    """The committed index lists every data file exactly once, with its current size, and no other file."""
    from storage_handler.stats import list_data_files, load

    snap = load(location)
    assert snap is not None, f"no index under {location}"
    paths = snap.table.column("path").to_pylist()
    assert len(paths) == len(set(paths)), "the index lists a file twice"
    assert sorted(paths) == storage_files(root), (
        sorted(set(storage_files(root)) - set(paths))[:10], sorted(set(paths) - set(storage_files(root)))[:10])
    real = {f.path: f for f in list_data_files(location)}
    sizes = dict(zip(paths, snap.table.column("size").to_pylist(), strict=True))
    stale = [p for p in paths if real[p].size != sizes[p]]
    assert not stale, f"index rows with a stale size: {stale[:10]}"
    return snap


# ---------------------------------------------------------------- waiting
def wait_until(check: Callable[[], Any], what: str, timeout: float = 120.0, interval: float = 0.1,
               proc: subprocess.Popen[Any] | None = None) -> Any:
    """Poll ``check`` until it returns something truthy; fail with ``what`` (and the child's stderr) otherwise."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"{what}: the child exited with {proc.returncode} first\n{out[-2000:]}\n{err[-4000:]}")
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not reached within {timeout:.0f}s")
        time.sleep(interval)


def partition_count(uri: str, db: str, table: str) -> int:
    """Partitions the metastore has right now (0 if the table does not exist yet or the call fails)."""
    from metastore.client import MetastoreClient
    from storage_handler.errors import MetastoreError

    try:
        with MetastoreClient(uri, connect_timeout=2, socket_timeout=20, retries=0) as client:
            return len(client.get_partition_names(db, table))
    except MetastoreError:
        return 0


# ---------------------------------------------------------------- sockets
_TCP_LISTEN = "0A"


def _decode_address(hex_addr: str) -> str:
    raw = bytes.fromhex(hex_addr)
    if len(raw) == 4:
        return str(ipaddress.IPv4Address(raw[::-1]))
    # /proc/net/tcp6 prints four 32-bit words, each in host (little-endian) order
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
    return str(ipaddress.IPv6Address(words))


def socket_inodes(pid: int) -> set[str]:
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    return inodes


def listening_sockets(pid: int) -> list[tuple[str, int]]:
    """(address, port) of every listening TCP socket (IPv4 and IPv6) owned by process ``pid``."""
    inodes = socket_inodes(pid)
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(FileNotFoundError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                local, state, inode = fields[1], fields[3], fields[9]
                if state == _TCP_LISTEN and inode in inodes:
                    addr, port = local.split(":")
                    found.append((_decode_address(addr), int(port, 16)))
    return found


def is_loopback(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback
