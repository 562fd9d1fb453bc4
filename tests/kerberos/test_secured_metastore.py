"""The metastore client against the Kerberos-secured embedded metastore: ticket cache, keytab (private cache,
renewal), the protection level, and the failures below the command line (issue 29)."""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path

import pytest

from metastore.client import MetastoreClient
from metastore.security import errors as E
from metastore.security.config import KerberosSettings
from metastore.security.credentials import check_keytab
from metastore.security.sasl import kerberos_transport
from storage_handler.errors import MetastoreAuthError
from tests.kerberos.conftest import Service
from tests.kerberos.kdc import Realm

HOST = "127.0.0.1"


def settings(realm: Realm, principal: str | None = None, *, keytab: Path | None = None,
             client: str | None = None) -> KerberosSettings:
    return KerberosSettings(sasl_enabled=True, service_principal=principal or f"hive/_HOST@{realm.kdc.realm}",
                            keytab=str(keytab) if keytab else None, client_principal=client)


def test_realm_is_private_to_the_test(realm: Realm) -> None:
    text = realm.krb5_conf.read_text()
    assert f"kdc = 127.0.0.1:{realm.kdc.port}" in text
    assert os.environ["KRB5_CONFIG"] == str(realm.krb5_conf)
    assert realm.kdc.proc is not None and realm.kdc.proc.poll() is None


def test_ticket_cache_and_privacy(realm: Realm, secured_metastore: Service, monkeypatch: pytest.MonkeyPatch) -> None:
    """kinit'd tickets; the metastore requires privacy, so every frame is sealed (pyhive's adapter fails here)."""
    monkeypatch.setenv("KRB5CCNAME", realm.alice_ccache)
    with MetastoreClient(secured_metastore.uri, security=settings(realm)) as client:
        transport = client._transport
        assert transport.server_principal == realm.service  # type: ignore[union-attr]  # _HOST -> the URI's host
        assert transport.qop == "auth-conf"  # type: ignore[union-attr]
        client.create_database("krb_alice")
        assert {"default", "krb_alice"} <= set(client.get_all_databases())
        again = client.sibling()
        with again:
            assert again.security == client.security and again.database_exists("krb_alice")


def test_the_user_the_metastore_knows(realm: Realm, secured_metastore: Service, metastore_uri: str,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The owner a registration records: the ticket cache's principal (alice), the keytab's (svc), each as its
    short name; unsecured, the operating-system user. No ticket at all: the one line that says to kinit."""
    import getpass

    from storage_handler.errors import MetastoreAuthError

    monkeypatch.setenv("KRB5CCNAME", realm.alice_ccache)
    assert MetastoreClient(secured_metastore.uri, security=settings(realm)).user_name() == "alice"
    keytab = settings(realm, keytab=realm.svc_keytab, client=realm.svc)
    assert MetastoreClient(secured_metastore.uri, security=keytab).user_name() == "svc"
    assert MetastoreClient(metastore_uri, security=KerberosSettings()).user_name() == getpass.getuser()
    monkeypatch.setenv("KRB5CCNAME", f"FILE:{realm.root / 'nobody.ccache'}")
    with pytest.raises(MetastoreAuthError, match="no Kerberos ticket .*run kinit"):
        MetastoreClient(secured_metastore.uri, security=settings(realm)).user_name()


def test_keytab_without_kinit_uses_a_private_cache(realm: Realm, secured_metastore: Service) -> None:
    default_cache = Path(os.environ["KRB5CCNAME"].removeprefix("FILE:"))
    with MetastoreClient(secured_metastore.uri, security=settings(realm, keytab=realm.svc_keytab,
                                                                  client=realm.svc)) as client:
        assert "default" in client.get_all_databases()
    assert not default_cache.exists()  # tickets went to MEMORY:, not to the process's default cache


def test_keytab_problems_are_named(realm: Realm, tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.keytab"
    garbage.write_bytes(os.urandom(64))
    cases = {
        str(tmp_path / "missing.keytab"): "No such file or directory",
        str(garbage): "Unsupported key table format",
        str(tmp_path): "Is a directory",
        str(realm.alice_keytab): f"No key table entry found for {realm.svc}",
    }
    for keytab, expected in cases.items():
        with pytest.raises(MetastoreAuthError) as caught:
            check_keytab(keytab, realm.svc)
        assert caught.value.reason == E.KEYTAB
        assert expected in str(caught.value) and keytab in str(caught.value) and realm.svc in str(caught.value)


def test_sasl_client_against_the_plain_embedded_metastore_fails_at_once(
    realm: Realm, metastore_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The project's unsecured launcher reads strictly: a SASL client's first frame closes the connection at once
    (before, the client waited out its timeout), and nothing is retried."""
    monkeypatch.setenv("KRB5CCNAME", realm.alice_ccache)
    start = time.monotonic()
    with pytest.raises(MetastoreAuthError) as caught:
        MetastoreClient(metastore_uri, security=settings(realm), connect_timeout=10).open()
    assert caught.value.reason == E.SERVER_NOT_SASL
    assert time.monotonic() - start < 3


def test_server_that_never_answers_the_handshake_times_out(realm: Realm, monkeypatch: pytest.MonkeyPatch) -> None:
    """A lenient unsecured server reads the SASL frame as a Thrift call and waits: the handshake's read timeout
    turns that into one line."""
    monkeypatch.setenv("KRB5CCNAME", realm.alice_ccache)
    listener = socket.socket()
    listener.bind((HOST, 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    accepted: list[socket.socket] = []
    thread = threading.Thread(target=lambda: accepted.append(listener.accept()[0]), daemon=True)
    thread.start()
    try:
        start = time.monotonic()
        with pytest.raises(MetastoreAuthError) as caught:
            kerberos_transport(HOST, port, settings(realm), connect_timeout=1.0).open()
        assert caught.value.reason == E.HANDSHAKE_TIMEOUT
        assert f"127.0.0.1:{port}" in str(caught.value) and realm.service in str(caught.value)
        assert time.monotonic() - start < 5
    finally:
        thread.join(timeout=5)
        for conn in accepted:
            conn.close()
        listener.close()


def test_embedded_metastore_record_names_its_principal_not_its_keytab(
    realm: Realm, secured_metastore: Service, krb_home: Path
) -> None:
    from metastore.local import LocalMetastore, embedded_kerberos_principal

    info = LocalMetastore(krb_home).status()
    assert info is not None and info.kerberos_principal == realm.service
    assert str(realm.service_keytab) not in (krb_home / "metastore" / "service.json").read_text()
    assert embedded_kerberos_principal(secured_metastore.uri, krb_home) == realm.service
    log = secured_metastore.log_path.read_text(errors="replace")
    assert f"hsh: metastore listening on 127.0.0.1:{secured_metastore.port}, Kerberos (SASL/GSSAPI as " \
           f"{realm.service}, qop privacy)" in log

