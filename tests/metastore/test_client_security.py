"""The client's Kerberos settings and how it tells "this metastore requires Kerberos" from "this metastore died",
without a KDC: servers on loopback that close connections, one of them answering SASL as a secured Hive
metastore does ("Unsupported mechanism type PLAIN"). tests/kerberos has the real thing."""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Iterator

import pytest

from metastore.client import MetastoreClient
from metastore.security.config import KerberosSettings
from metastore.security.errors import SERVER_REQUIRES_SASL
from metastore.security.sasl import speaks_sasl
from storage_handler.errors import KerberosConfigurationError, MetastoreAuthError, MetastoreUnavailableError

SASL_BAD = 3


def _serve(answer_sasl: bool) -> Iterator[tuple[str, list[int]]]:
    """A server that closes every connection after reading its first bytes; with ``answer_sasl``, a connection
    that starts with a SASL START frame gets a SASL BAD status first, as Hive's SASL server sends it."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(0.2)
    stop = threading.Event()
    connections: list[int] = []

    def loop() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                connections.append(1)
                conn.settimeout(2)
                first = b""
                try:
                    first = conn.recv(1)
                    conn.settimeout(0.2)
                    while conn.recv(4096):  # all the client sent: closing then is a clean close, not a reset
                        pass
                except OSError:
                    pass
                if answer_sasl and first == b"\x01":
                    message = b"Unsupported mechanism type PLAIN"
                    conn.sendall(struct.pack(">BI", SASL_BAD, len(message)) + message)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield f"thrift://127.0.0.1:{server.getsockname()[1]}", connections
    finally:
        stop.set()
        thread.join(timeout=5)
        server.close()


@pytest.fixture
def sasl_only_server() -> Iterator[tuple[str, list[int]]]:
    yield from _serve(answer_sasl=True)


@pytest.fixture
def closing_server() -> Iterator[tuple[str, list[int]]]:
    yield from _serve(answer_sasl=False)


def test_default_is_unsecured_and_siblings_keep_the_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("HSH_METASTORE_SASL", "HSH_METASTORE_PRINCIPAL", "HADOOP_CONF_DIR", "HIVE_CONF_DIR",
                "SPARK_CONF_DIR", "SPARK_HOME"):
        monkeypatch.delenv(key, raising=False)
    assert MetastoreClient("thrift://127.0.0.1:9083").security == KerberosSettings()
    secured = KerberosSettings(sasl_enabled=True, service_principal="hive/_HOST@R")
    client = MetastoreClient("thrift://127.0.0.1:9083", security=secured)
    assert client.sibling(retries=1).security == secured


def test_settings_that_cannot_work_fail_when_the_client_is_made() -> None:
    with pytest.raises(KerberosConfigurationError, match="is not of the form service/host@REALM"):
        MetastoreClient("thrift://127.0.0.1:9083", security=KerberosSettings(sasl_enabled=True,
                                                                               service_principal="hive"))


def test_a_metastore_requiring_kerberos_is_named_at_once(sasl_only_server: tuple[str, list[int]]) -> None:
    uri, connections = sasl_only_server
    start = time.monotonic()
    with pytest.raises(MetastoreAuthError) as caught, MetastoreClient(uri, retries=8, backoff=0.5) as client:
        client.get_all_databases()
    assert caught.value.reason == SERVER_REQUIRES_SASL
    assert str(caught.value).startswith(f"the metastore at {uri} requires Kerberos (SASL) but this client "
                                        "connects without it")
    assert time.monotonic() - start < 3 and len(connections) == 2  # the call, and one probe: no retries


def test_a_metastore_that_just_closes_is_retried_as_before(closing_server: tuple[str, list[int]]) -> None:
    uri, connections = closing_server
    with pytest.raises(MetastoreUnavailableError, match="after 3 attempt"), \
            MetastoreClient(uri, retries=2, backoff=0.05) as client:
        client.get_all_databases()
    assert len(connections) == 4  # three attempts and one probe (asked once per client)
    assert speaks_sasl("127.0.0.1", int(uri.rsplit(":", 1)[1])) is False


def test_probe_of_a_port_nobody_listens_on_cannot_tell() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert speaks_sasl("127.0.0.1", port, timeout=1) is None
