"""7. Security basics: loopback-only listeners, HiveServer2 authentication, no credentials in output or logs

Authentication modes of HiveServer2 and what this suite does with them:

* NONE (SASL PLAIN, any user, pyhive's default): exercised against the embedded Thrift server.
* NOSASL (raw Thrift transport): exercised against a second embedded Thrift server started with
  ``hive.server2.authentication=NOSASL`` (a ~30 s JVM start; ``HSH_RELIABILITY_QUICK=1`` skips it); a NONE
  client against it must fail, not hang.
* KERBEROS: exercised in ``tests/kerberos`` against a real MIT KDC (``hsh thriftserver start --kerberos``, pyhive
  with ``auth='KERBEROS'``, the metastore secured with SASL/GSSAPI, every failure's one line, no key material in
  any output or log). The embedded services this project starts by default stay unauthenticated and loopback-only
  (checked here).
* LDAP, CUSTOM: not exercised. They need an LDAP directory or a ``PasswdAuthenticationProvider`` class on the
  server's class path; the embedded server this project starts never enables them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.reliability.util import hsh, listening_sockets

SECRET = "s3cret-Pa55"


def _assert_loopback_only(pid: int, port: int) -> list[tuple[str, int]]:
    from tests.reliability.util import is_loopback

    sockets = listening_sockets(pid)
    assert port in {p for _, p in sockets}, f"pid {pid} does not listen on {port}: {sockets}"
    exposed = [(a, p) for a, p in sockets if not is_loopback(a)]
    assert not exposed, f"pid {pid} listens on non-loopback addresses: {exposed}"
    return sockets


def test_embedded_metastore_listens_on_loopback_only(metastore_uri: str, hsh_home: Path) -> None:
    """Every listening TCP socket (IPv4 and IPv6, /proc/net/tcp{,6}) of the embedded metastore's PID is on a loopback address."""
    if os.environ.get("HSH_METASTORE_URI"):
        pytest.skip("an external metastore is in use: nothing embedded to inspect")
    from metastore.local import LocalMetastore

    info = LocalMetastore(hsh_home).status()
    assert info is not None and info.uri == metastore_uri
    _assert_loopback_only(info.pid, info.port)


def test_embedded_metastore_refuses_a_kerberos_client_at_once(metastore_uri: str) -> None:
    """A Kerberos (SASL) client's first frame sent to the unauthenticated embedded metastore: the connection is closed at once (strict Thrift reads), not left waiting until the client's timeout."""
    import socket
    import time

    from metastore.uri import parse_metastore_uri

    address = parse_metastore_uri(metastore_uri)
    with socket.create_connection((address.host, address.port), timeout=10) as sock:
        start = time.monotonic()
        sock.sendall(b"\x01\x00\x00\x00\x06GSSAPI")  # SASL START, mechanism GSSAPI (thrift-sasl's framing)
        sock.sendall(b"\x02\x00\x00\x00\x10" + b"\x00" * 16)
        assert sock.recv(1) == b""  # closed by the server
        assert time.monotonic() - start < 3


def test_default_is_unauthenticated(metastore_uri: str, hsh_home: Path) -> None:
    """With no Kerberos setting anywhere (flags, hive-site.xml, HSH_*), clients connect without SASL and the embedded metastore runs without it."""
    if os.environ.get("HSH_METASTORE_URI"):
        pytest.skip("an external metastore is in use: nothing embedded to inspect")
    from metastore.client import MetastoreClient
    from metastore.local import LocalMetastore
    from metastore.security.config import KerberosSettings, current

    if current().sasl_enabled:
        pytest.skip("this environment configures Kerberos (hive-site.xml or HSH_*): not the default")
    with MetastoreClient(metastore_uri) as client:
        assert client.security == KerberosSettings()
        assert "default" in client.get_all_databases()
    info = LocalMetastore(hsh_home).status()
    assert info is not None and info.kerberos_principal == ""
    assert "sasl" not in Path(f"/proc/{info.pid}/cmdline").read_bytes().decode(errors="replace")


def test_thrift_server_listens_on_loopback_only(hiveserver2, metastore_uri: str, hsh_home: Path) -> None:
    """Every listening socket of the embedded HiveServer2's JVM (Thrift port, Spark driver and block manager) is on loopback."""
    if os.environ.get("HSH_HIVESERVER2"):
        pytest.skip("an external HiveServer2 is in use: nothing embedded to inspect")
    from metastore.local import LocalThriftServer

    info = LocalThriftServer(home=hsh_home).status()
    assert info is not None and info.port == hiveserver2[1]
    sockets = _assert_loopback_only(info.pid, info.port)
    assert len(sockets) >= 2  # the Thrift port and at least the Spark driver's own


def test_pyhive_auth_none(hiveserver2) -> None:
    """pyhive with auth NONE (SASL PLAIN, any user name) connects to the embedded Thrift server and runs queries."""
    from pyhive import hive

    host, port = hiveserver2
    with hive.connect(host=host, port=port, auth="NONE", username="reliability") as conn:
        cursor = conn.cursor()
        cursor.execute("SELECT 1 + 1")
        assert cursor.fetchall() == [(2,)]
        cursor.execute("SHOW DATABASES")
        assert ("default",) in cursor.fetchall()


class _NoSaslThriftServer:
    def __new__(cls, metastore_uri: str, home: Path):  # type: ignore[no-untyped-def]
        from metastore.local import LocalThriftServer
        from storage_handler.spark.config import spark_conf

        class NoSasl(LocalThriftServer):
            def command(self, port: int) -> list[str]:
                args = super().command(port)
                at = args.index("spark-internal")
                return [*args[:at], "--hiveconf", "hive.server2.authentication=NOSASL", *args[at:]]

        return NoSasl(spark_conf(metastore_uri, warehouse=str(home / "warehouse")), home)


@pytest.fixture()
def nosasl_server(metastore_uri: str, tmp_path: Path) -> Iterator[tuple[str, int, int]]:
    if os.environ.get("HSH_RELIABILITY_QUICK") == "1":
        pytest.skip("HSH_RELIABILITY_QUICK=1: the second Thrift server (~30 s) is not started")
    server = _NoSaslThriftServer(metastore_uri, tmp_path / "ts")
    info = server.start()
    try:
        yield "127.0.0.1", info.port, info.pid
    finally:
        server.stop()


def test_pyhive_auth_nosasl(nosasl_server) -> None:
    """A second embedded Thrift server with hive.server2.authentication=NOSASL: pyhive auth NOSASL works, auth NONE is refused (no hang), and it listens on loopback only."""
    from pyhive import hive
    from thrift.transport.TTransport import TTransportException

    host, port, pid = nosasl_server
    _assert_loopback_only(pid, port)
    with hive.connect(host=host, port=port, auth="NOSASL") as conn:
        cursor = conn.cursor()
        cursor.execute("SELECT 40 + 2")
        assert cursor.fetchall() == [(42,)]
    with pytest.raises(TTransportException):
        hive.connect(host=host, port=port, auth="NONE")


# ---------------------------------------------------------------- credentials
def _with_secret(uri: str) -> str:
    return uri.replace("thrift://", f"thrift://alice:{SECRET}@")


@pytest.fixture(scope="module")
def secret_table(tmp_path_factory: pytest.TempPathFactory, metastore_uri: str) -> str:
    import pyarrow as pa

    from tests.reliability.util import ok_json, write_parquet

    root = tmp_path_factory.mktemp("secret") / "t"
    write_parquet(root / "d=1" / "f.parquet", pa.table({"v": pa.array([1, 2], pa.int64())}))
    ok_json(hsh("register", "sec.t", str(root), "--json", "--metastore", _with_secret(metastore_uri)))
    return "sec.t"


@pytest.mark.parametrize("case", [
    "unreachable", "malformed", "wrong_scheme", "describe", "scan_verbose", "sync_verbose", "refresh_verbose",
    "env_uri",
])
def test_credentials_never_printed(metastore_uri: str, secret_table: str, case: str) -> None:
    """A metastore URI with user:password@ (option or $HSH_METASTORE_URI), failing or working, with -v logging and --json: the password appears nowhere on stdout or stderr."""
    good = _with_secret(metastore_uri)
    env = None
    if case == "unreachable":
        args = ["describe", secret_table, "--metastore", f"thrift://alice:{SECRET}@127.0.0.1:1"]
    elif case == "malformed":
        args = ["describe", secret_table, "--metastore", f"thrift://alice:{SECRET}@localhost"]
    elif case == "wrong_scheme":
        args = ["describe", secret_table, "--metastore", f"http://alice:{SECRET}@127.0.0.1:9083"]
    elif case == "describe":
        args = ["describe", secret_table, "--json", "--metastore", good]
    elif case == "scan_verbose":
        args = ["-v", "scan", secret_table, "--where", "v = 1", "--json", "--metastore", good]
    elif case == "sync_verbose":
        args = ["-v", "sync", secret_table, "--json", "--metastore", good]
    elif case == "refresh_verbose":
        args = ["-v", "index", "refresh", secret_table, "--json", "--metastore", good]
    else:
        args, env = ["-v", "describe", secret_table, "--json"], {"HSH_METASTORE_URI": good}
    proc = hsh(*args, env=env)
    assert "Traceback" not in proc.stderr
    assert proc.returncode in (0, 2), proc.stderr
    assert SECRET not in proc.stdout and SECRET not in proc.stderr, (proc.stdout[-1000:], proc.stderr[-1000:])
    if proc.returncode == 2:
        assert "alice" not in proc.stderr  # the user name goes too (`***@host`)


def test_credentials_stay_out_of_spark_and_thriftserver_configuration(tmp_path: Path) -> None:
    """The Spark configuration and the Thrift server's command line built from a URI with user:password@ do not contain the password.

    Found by this suite (a strict xfail until the fix): storage_handler/spark/config.py spark_conf (used
    by spark.session() and metastore/local.py LocalThriftServer) passes the metastore URI verbatim:
    user:password@ lands on the Thrift server's command line (visible to every local user in ps) and in
    its log (Hive logs 'Trying to connect to metastore with URI thrift://alice:...'); the binary HMS
    protocol never uses URI credentials, so strip them (parse_metastore_uri(uri).uri)
    """
    from storage_handler.spark.config import spark_conf, thrift_server

    uri = f"thrift://alice:{SECRET}@127.0.0.1:9083"
    assert not [k for k, v in spark_conf(uri).items() if SECRET in v]
    command = thrift_server(uri, tmp_path).command(10000)
    assert not [a for a in command if SECRET in a]


def test_thrift_client_cannot_name_a_program_for_the_server_to_run(hiveserver2, metastore_uri: str,
                                                                   tmp_path: Path) -> None:
    """A Thrift server's client that SETs `spark.hsh.python` to its own program: its query of a registered table is
    refused naming the setting, the program never runs on the server, and the client reads again once it RESETs."""
    import sys

    from pyhive import hive

    from metastore.client import MetastoreClient
    from metastore.names import parse_table_name
    from storage_handler.registration.register import apply_registration, plan_registration
    from tests.spark.typed_data import generate_typed

    table = "reliability.hs2_program"
    root = generate_typed(tmp_path / "t", files_per_partition=1)
    with MetastoreClient(metastore_uri) as client:
        apply_registration(client, plan_registration(client, parse_table_name(table), str(root)))
    marker = tmp_path / "ran"
    program = tmp_path / "clients-program"
    program.write_text(f'#!/bin/sh\ntouch {marker}\nexec {sys.executable} "$@"\n')
    program.chmod(0o755)
    query = f"SELECT count(*) FROM {table} WHERE c_bigint = 5"
    host, port = hiveserver2
    with hive.connect(host=host, port=port, auth="NONE", username="reliability") as conn:
        cursor = conn.cursor()
        cursor.execute(query)
        expected = cursor.fetchall()
        cursor.execute(f"SET spark.hsh.python={program}")
        with pytest.raises(Exception, match=r"this session sets spark\.hsh\.python to .* It names a program the "
                                            r"driver runs"):
            cursor.execute(query)
            cursor.fetchall()
        cursor.execute("RESET spark.hsh.python")
        cursor.execute(query)
        assert cursor.fetchall() == expected == [(1,)]
    assert not marker.exists()
