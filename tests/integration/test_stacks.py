"""The same test bodies against two Hive stacks: the embedded one (always) and real Apache Hive 4 in Docker.

The Docker variants are marked ``docker`` and run by ``make test-docker`` (which starts docker-compose.yml and sets
``HSH_DOCKER=1``, ``HSH_METASTORE_URI``, ``HSH_HIVESERVER2`` and ``HSH_WAREHOUSE``); elsewhere they are skipped with
the reason. Against real Hive, reading back through HiveServer2 proves the registered table is a genuine Hive
table: Hive's own Parquet serde reads it, without our code.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from storage_handler.demo.data import generate_events
from tests.helpers import run_hsh


@dataclass(frozen=True)
class Stack:
    name: str
    metastore_uri: str
    hiveserver2: tuple[str, int]
    data_root: Path


@pytest.fixture(params=[pytest.param("embedded", marks=pytest.mark.jvm), pytest.param("docker", marks=pytest.mark.docker)])
def stack(request, tmp_path: Path) -> Stack:
    if request.param == "docker":
        if not os.environ.get("HSH_DOCKER"):
            pytest.skip("needs the docker-compose Hive 4 stack: run `make test-docker` on a host with a Docker engine")
        host, _, port = os.environ["HSH_HIVESERVER2"].rpartition(":")
        root = Path(os.environ["HSH_WAREHOUSE"]) / "hsh-tests" / uuid.uuid4().hex[:8]
        root.mkdir(parents=True)
        os.chmod(root, 0o777)
        return Stack("docker", os.environ["HSH_METASTORE_URI"], (host, int(port)), root)
    return Stack("embedded", request.getfixturevalue("metastore_uri"), request.getfixturevalue("hiveserver2"),
                 tmp_path)


def _hive(stack: Stack, sql: str) -> list[tuple]:
    from pyhive import hive

    host, port = stack.hiveserver2
    with hive.connect(host=host, port=port, username="hsh") as conn:
        cursor = conn.cursor()
        cursor.execute(sql)
        return [tuple(r) for r in cursor.fetchall()]


def _table_name(stack: Stack) -> str:
    return f"stack_{stack.name}.events_{uuid.uuid4().hex[:6]}"


def test_register_with_hsh_and_read_back_through_hiveserver2(stack: Stack) -> None:
    root = generate_events(stack.data_root / "events", days=2, files_per_day=2, rows_per_file=50)
    name = _table_name(stack)
    proc = run_hsh("register", name, str(root), "--json", "--metastore", stack.metastore_uri)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["partitions_added"] == 2
    expected = ds.dataset(root, format="parquet", partitioning="hive").to_table(
        filter=ds.field("dt") == "2024-01-02"
    )
    got = _hive(stack, f"SELECT count(*), count(kind), max(event_id) FROM {name} WHERE dt = '2024-01-02'")
    assert got == [(expected.num_rows, expected.column("kind").drop_null().length(),
                    max(expected.column("event_id").to_pylist()))]
    described = " ".join(str(c) for row in _hive(stack, f"DESCRIBE FORMATTED {name}") for c in row)
    assert "ParquetHiveSerDe" in described or stack.name == "embedded"  # Spark shows its provider instead


def test_sync_makes_new_partitions_visible(stack: Stack) -> None:
    root = generate_events(stack.data_root / "events", days=1, files_per_day=1, rows_per_file=20)
    name = _table_name(stack)
    assert run_hsh("register", name, str(root), "--metastore", stack.metastore_uri).returncode == 0
    generate_events(root, days=1, files_per_day=1, rows_per_file=30, start=__import__("datetime").date(2024, 2, 1))
    proc = run_hsh("sync", name, "--json", "--metastore", stack.metastore_uri)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["partitions_to_add"] == ["dt=2024-02-01"]
    assert _hive(stack, f"SELECT count(*) FROM {name}") == [(50,)]


def test_describe_shows_handler_and_index(stack: Stack) -> None:
    root = generate_events(stack.data_root / "events", days=2, files_per_day=2, rows_per_file=10)
    name = _table_name(stack)
    assert run_hsh("register", name, str(root), "--metastore", stack.metastore_uri).returncode == 0
    proc = run_hsh("describe", name, "--json", "--metastore", stack.metastore_uri)
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    assert info["handler"] == "storage_handler.handler.StorageHandler"
    assert info["index_version"] == 1 and info["index_files"] == 4 and info["files"] == 4
    assert info["partitions"] == 2
