"""Session-scoped real processes shared by the integration tests: a metastore, a SparkSession, a HiveServer2.

Each is started once, in a private state folder, and stopped by PID at the end of the session. If
``HSH_METASTORE_URI`` / ``HSH_HIVESERVER2`` are set (``make test-docker``), those external services are used instead
and nothing is started or stopped.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import s3 as s3_support

s3_support.configure_environment()  # before any Spark JVM or subprocess starts: they inherit it
# `hsh register` writes every partition's statistics before it returns, whatever the partition count: a background
# publish (``--partition-stats auto`` above 50 partitions) would outlive the test that started it. The tests of the
# background publish ask for it with the flag, and wait for it by PID.
os.environ.setdefault("HSH_PARTITION_STATS", "now")

#: fixtures that start a JVM (the metastore, Spark, the Thrift server, Hive's own classes as oracles, the secured
#: services): a test that uses one, directly or through another fixture, is marked ``jvm`` at collection, so
#: ``make test-fast`` (``-m "not jvm"``) leaves it out without anyone marking tests by hand. A test that starts a
#: JVM some other way (an ``hsh`` command on the embedded metastore) says ``@pytest.mark.jvm`` itself.
JVM_FIXTURES = frozenset({
    "metastore_uri", "spark", "hiveserver2", "oracle_pool", "hive_oracle", "realm", "secured_metastore",
    "kerberized_thriftserver", "cluster", "jvm_doubles",
})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if JVM_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.jvm)


@pytest.fixture(scope="session")
def hsh_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("hsh_home")
    old = os.environ.get("HSH_HOME")
    os.environ["HSH_HOME"] = str(home)
    yield home
    if old is None:
        os.environ.pop("HSH_HOME", None)
    else:
        os.environ["HSH_HOME"] = old


@pytest.fixture(scope="session")
def metastore_uri(hsh_home: Path) -> Iterator[str]:
    external = os.environ.get("HSH_METASTORE_URI")
    if external:
        yield external
        return
    from metastore.local import LocalMetastore

    service = LocalMetastore(hsh_home)
    info = service.start()
    try:
        yield info.uri
    finally:
        service.stop()


@pytest.fixture()
def hms(metastore_uri: str) -> Iterator:
    from metastore.client import MetastoreClient

    with MetastoreClient(metastore_uri) as client:
        yield client


@pytest.fixture(scope="session")
def spark(metastore_uri: str) -> Iterator:
    from storage_handler.spark import session

    spark = session(metastore_uri, app_name="hsh-tests")
    gateway = spark.sparkContext._gateway
    try:
        yield spark
    finally:
        spark.stop()
        proc = getattr(gateway, "proc", None)
        gateway.shutdown()
        if proc is not None and proc.poll() is None:
            proc.terminate()  # the Spark JVM this session launched, by its Popen/PID
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


@pytest.fixture(scope="session")
def hiveserver2(metastore_uri: str, hsh_home: Path) -> Iterator[tuple[str, int]]:
    external = os.environ.get("HSH_HIVESERVER2")
    if external:
        host, _, port = external.rpartition(":")
        yield host or "127.0.0.1", int(port)
        return
    from storage_handler.spark.config import thrift_server

    service = thrift_server(metastore_uri, hsh_home)
    info = service.start()
    try:
        yield "127.0.0.1", info.port
    finally:
        service.stop()


@pytest.fixture()
def events_dataset(tmp_path: Path) -> Path:
    from storage_handler.demo.data import generate_events

    return generate_events(tmp_path / "events", days=3, files_per_day=3, rows_per_file=100)


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[s3_support.S3Server]:
    """A real S3 endpoint (moto's server) on 127.0.0.1, started once and stopped by PID."""
    server = s3_support.S3Server(tmp_path_factory.mktemp("s3"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(params=["local", "s3"])
def storage_root(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh folder for a table: on the local disk, or in a new bucket of the test S3 endpoint."""
    if request.param == "local":
        return str(tmp_path / "table")
    request.getfixturevalue("s3_server")
    return f"s3a://{s3_support.new_bucket()}/warehouse/table"
