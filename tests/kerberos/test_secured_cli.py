"""``hsh`` against the Kerberos-secured metastore: register, sync, index refresh, describe and scan with each way of
saying it (flags, the ticket cache, ``HSH_*``, hive-site.xml), and every failure of issue 29's point 3 as its exact
one line -- after which nothing was registered and the dataset folder is untouched."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from metastore.client import MetastoreClient
from metastore.security.config import KerberosSettings
from tests.kerberos.conftest import REPO, TABLE, Hsh, SecuredTable, Service, service_settings
from tests.kerberos.kdc import Realm


def test_register_sync_and_refresh_through_kerberos(realm: Realm, secured_metastore: Service,
                                                    secured_table: SecuredTable) -> None:
    assert secured_table.registered["partitions_total"] == 3 and secured_table.registered["files"] == 6
    assert secured_table.synced["partitions_to_add"] == ["dt=2024-01-04"]
    assert secured_table.refreshed["changed"] == ["dt=2024-01-04/part-00001.parquet"]
    assert secured_table.refreshed["index_version"] == 3
    assert secured_table.described["table"] == TABLE and secured_table.described["type"] == "EXTERNAL_TABLE"
    with MetastoreClient(secured_metastore.uri, security=service_settings(realm)) as client:
        names = client.get_partition_names("krb", "events")
        table = client.get_table("krb", "events")
    assert names == [f"dt=2024-01-0{d}" for d in range(1, 5)]
    assert table.sd.location.endswith(str(secured_table.root))


def test_the_table_belongs_to_the_principal_that_registered_it(realm: Realm, secured_table: SecuredTable) -> None:
    """Registered with svc's keytab by an operating-system user of another name: the metastore records svc as the
    table's owner, as Hive does for what an authenticated client creates (not the process's login name)."""
    import getpass

    assert getpass.getuser() != "svc"
    assert secured_table.described["owner"] == realm.svc.split("@")[0] == "svc"


def test_the_embedded_metastore_tells_hsh_its_principal(realm: Realm, hsh: Hsh, secured_metastore: Service,
                                                         secured_table: SecuredTable) -> None:
    """No principal anywhere: ``hsh`` using the embedded metastore (no --metastore) takes it from its record."""
    described = hsh.ok("describe", TABLE, KRB5CCNAME=realm.alice_ccache)
    assert (described["table"], described["location"]) == (TABLE, secured_table.described["location"])


def test_scan_prunes_through_kerberos(realm: Realm, hsh: Hsh, secured_metastore: Service,
                                      secured_table: SecuredTable) -> None:
    result = hsh.ok("scan", TABLE, "--where", "dt = '2024-01-02'", "--metastore", secured_metastore.uri,
                    KRB5CCNAME=realm.alice_ccache, HSH_METASTORE_PRINCIPAL=f"hive/_HOST@{realm.kdc.realm}")
    text = str(result)
    assert "2024-01-02" in text and "2024-01-03" not in text


# ------------------------------------------------------------------------------------------------ failures
@pytest.fixture(scope="module")
def small_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from storage_handler.demo.data import generate_events

    return generate_events(tmp_path_factory.mktemp("krb_fail") / "d", days=1, files_per_day=1, rows_per_file=10)


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.fixture()
def nothing_registered(realm: Realm, secured_metastore: Service, small_dataset: Path):  # type: ignore[no-untyped-def]
    """After the failing command: no table, and no file added to the dataset (no index half-written)."""
    before = _tree(small_dataset)
    yield "krb_fail.t"
    with MetastoreClient(secured_metastore.uri, security=service_settings(realm)) as client:
        assert not client.table_exists("krb_fail", "t")
    assert _tree(small_dataset) == before


def _register_fails(hsh: Hsh, uri: str, dataset: Path, *flags: str, prefix: tuple[str, ...] = (),
                    **env: str | None) -> str:
    return hsh.error("register", "krb_fail.t", str(dataset), "--metastore", uri, *flags, prefix=prefix, **env)


def test_no_ticket(realm: Realm, hsh: Hsh, secured_metastore: Service, small_dataset: Path,
                   nothing_registered: str) -> None:
    cache = realm.root / "nobody.ccache"
    line = _register_fails(hsh, secured_metastore.uri, small_dataset, "--metastore-principal",
                           f"hive/_HOST@{realm.kdc.realm}", KRB5CCNAME=f"FILE:{cache}")
    assert line == (
        f"no Kerberos ticket to authenticate to the metastore at {secured_metastore.uri} (principal "
        f"{realm.service}): run kinit, or pass --keytab and --principal (No Kerberos credentials available "
        f"(default cache: FILE:{cache}))")


def test_expired_ticket_and_renewal_from_a_keytab(realm: Realm, hsh: Hsh, secured_metastore: Service,
                                                  small_dataset: Path, nothing_registered: str) -> None:
    """5-second tickets. From a ticket cache they expire: one line. From a keytab a connection opened after they
    expired gets new ones (a long-running process -- the prune service, the Thrift server -- opens a connection
    per query), and an open connection outlives its tickets."""
    ccache = realm.kdc.kinit(realm.short, realm.short_keytab, realm.root / "short.ccache")
    conf = KerberosSettings(sasl_enabled=True, service_principal=f"hive/_HOST@{realm.kdc.realm}",
                            keytab=str(realm.short_keytab), client_principal=realm.short)
    with MetastoreClient(secured_metastore.uri, security=conf) as long_lived:
        assert "default" in long_lived.get_all_databases()
        time.sleep(6)
        assert "default" in long_lived.get_all_databases()
        with MetastoreClient(secured_metastore.uri, security=conf) as fresh:
            assert "default" in fresh.get_all_databases()
    line = _register_fails(hsh, secured_metastore.uri, small_dataset, "--metastore-principal",
                           f"hive/_HOST@{realm.kdc.realm}", KRB5CCNAME=ccache)
    assert line == (
        f"the Kerberos ticket has expired; cannot authenticate to the metastore at {secured_metastore.uri} "
        f"(principal {realm.service}): run kinit again, or use --keytab/--principal so tickets are renewed")


def test_service_principal_unknown_to_the_kdc(realm: Realm, hsh: Hsh, secured_metastore: Service,
                                              small_dataset: Path, nothing_registered: str) -> None:
    line = _register_fails(hsh, secured_metastore.uri, small_dataset, "--metastore-principal",
                           f"hive2/_HOST@{realm.kdc.realm}", KRB5CCNAME=realm.alice_ccache)
    wrong = f"hive2/127.0.0.1@{realm.kdc.realm}"
    assert line == (
        f"the KDC does not know the service principal of the metastore at {secured_metastore.uri} (principal "
        f"{wrong}): check hive.metastore.kerberos.principal (Server {wrong} not found in Kerberos database)")


def test_service_principal_the_server_does_not_run_as(realm: Realm, hsh: Hsh, secured_metastore: Service,
                                                      small_dataset: Path, nothing_registered: str) -> None:
    line = _register_fails(hsh, secured_metastore.uri, small_dataset, "--metastore-principal",
                           realm.other_service, KRB5CCNAME=realm.alice_ccache)
    assert line == (
        f"the metastore at {secured_metastore.uri} (principal {realm.other_service}) rejected the Kerberos "
        "authentication (GSS initiate failed): it does not run as that principal (compare "
        "hive.metastore.kerberos.principal with the server's), or its clock differs from this machine's by more "
        "than 5 minutes; the server's log says which")


@pytest.mark.skipif(shutil.which("faketime") is None, reason="libfaketime's `faketime` is not installed")
def test_clock_skew(realm: Realm, hsh: Hsh, secured_metastore: Service, small_dataset: Path,
                    nothing_registered: str) -> None:
    """This machine's clock 10 minutes ahead, with a ticket-granting ticket from before: the KDC refuses the
    service ticket. (Tickets obtained under the skew itself work: MIT corrects for the KDC's time.)"""
    ccache = realm.kdc.kinit(realm.alice, realm.alice_keytab, realm.root / "skewed.ccache")
    line = _register_fails(hsh, secured_metastore.uri, small_dataset, "--metastore-principal",
                           f"hive/_HOST@{realm.kdc.realm}", KRB5CCNAME=ccache, prefix=("faketime", "-f", "+10m"))
    assert line == (
        "clock skew too great between this machine and the KDC while authenticating to the metastore at "
        f"{secured_metastore.uri} (principal {realm.service}): synchronise the clocks (NTP); Kerberos tolerates "
        "5 minutes")


def test_unreadable_keytab(realm: Realm, hsh: Hsh, secured_metastore: Service, small_dataset: Path,
                           nothing_registered: str, tmp_path: Path) -> None:
    missing = tmp_path / "missing.keytab"
    line = _register_fails(hsh, secured_metastore.uri, small_dataset, "--metastore-principal",
                           f"hive/_HOST@{realm.kdc.realm}", "--keytab", str(missing), "--principal", realm.svc)
    assert line == (
        f"cannot authenticate to the metastore at {secured_metastore.uri} (principal {realm.service}): cannot read "
        f"the keytab {missing} for {realm.svc}: No such file or directory")
    garbage = tmp_path / "garbage.keytab"
    garbage.write_bytes(b"\x05\x02" + b"\x00" * 30)
    line = _register_fails(hsh, secured_metastore.uri, small_dataset, "--metastore-principal",
                           f"hive/_HOST@{realm.kdc.realm}", "--keytab", str(garbage), "--principal", realm.svc)
    assert line.startswith(f"cannot authenticate to the metastore at {secured_metastore.uri} (principal "
                           f"{realm.service}): the keytab {garbage} is unusable for {realm.svc}: ")


def test_server_requires_kerberos_and_the_client_does_not_use_it(
    realm: Realm, hsh: Hsh, secured_metastore: Service, small_dataset: Path, nothing_registered: str
) -> None:
    """The secured metastore closes an unauthenticated client's first call without answering; one SASL probe
    says why at once, instead of after every retry. (Another state folder: ``hsh`` commands that use the
    embedded metastore learn its principal from its record, so this one stands for any other metastore.)"""
    line = _register_fails(hsh, secured_metastore.uri, small_dataset, KRB5CCNAME=realm.alice_ccache,
                           HSH_HOME=str(realm.root / "other-home"))
    assert hsh.seconds < 10
    assert line == (
        f"the metastore at {secured_metastore.uri} requires Kerberos (SASL) but this client connects without it "
        "(no principal configured): set hive.metastore.sasl.enabled=true and hive.metastore.kerberos.principal "
        "(e.g. hive/_HOST@REALM) in hive-site.xml on $HIVE_CONF_DIR or $HADOOP_CONF_DIR, or pass "
        "--metastore-principal; then kinit, or pass --keytab and --principal")


def test_follow_and_sql_say_so_before_anything_starts(realm: Realm, hsh: Hsh, secured_metastore: Service) -> None:
    """Opening a connection is only a TCP connect; the mismatch shows at the first call. ``hsh follow`` with no
    table named made that call only in its retried discovery (an incident every poll, forever), and ``hsh sql``
    left it to Spark (its raw error after a JVM start)."""
    home = str(realm.root / "other-home")
    follow = hsh.error("follow", "--metastore", secured_metastore.uri, prefix=("timeout", "60"),
                       KRB5CCNAME=realm.alice_ccache, HSH_HOME=home)
    sql = hsh.error("sql", "show databases", "--metastore", secured_metastore.uri, KRB5CCNAME=realm.alice_ccache,
                    HSH_HOME=home)
    assert hsh.seconds < 20
    for line in (follow, sql):
        assert line.startswith(f"the metastore at {secured_metastore.uri} requires Kerberos (SASL) but this client "
                               "connects without it"), line


def test_client_uses_kerberos_and_the_server_does_not(realm: Realm, hsh: Hsh, metastore_uri: str,
                                                      small_dataset: Path) -> None:
    """Against the plain embedded metastore (its launcher reads strictly, so the SASL frame is refused at once)."""
    line = hsh.error("register", "krb_fail.t", str(small_dataset), "--metastore", metastore_uri,
                     "--metastore-principal", f"hive/_HOST@{realm.kdc.realm}", KRB5CCNAME=realm.alice_ccache)
    assert hsh.seconds < 10
    assert line == (
        f"the metastore at {metastore_uri} (principal {realm.service}) closed the connection during the Kerberos "
        "(SASL) handshake: it does not require Kerberos; connect without it (hive.metastore.sasl.enabled=false "
        "and no --metastore-principal), or secure that metastore")
    with MetastoreClient(metastore_uri) as client:
        assert not client.table_exists("krb_fail", "t")


def test_configuration_mistakes_are_one_line(realm: Realm, hsh: Hsh, secured_metastore: Service) -> None:
    line = hsh.error("describe", TABLE, "--metastore", secured_metastore.uri, "--metastore-principal",
                     f"hive@{realm.kdc.realm}")
    assert line == (f"the metastore principal 'hive@{realm.kdc.realm}' is not of the form service/host@REALM "
                    "(e.g. hive/_HOST@EXAMPLE.COM or hive/metastore.example.com@EXAMPLE.COM)")
    line = hsh.error("describe", TABLE, "--metastore", secured_metastore.uri, "--metastore-principal",
                     f"hive/_HOST@{realm.kdc.realm}", "--keytab", str(realm.svc_keytab))
    assert line == ("a Kerberos keytab was given without a principal: pass both --keytab and --principal "
                    "(spark.kerberos.keytab and spark.kerberos.principal), or neither to use the ticket cache (kinit)")



def test_a_kdc_that_does_not_answer_is_named_while_kerberos_waits(realm: Realm, hsh: Hsh, secured_metastore: Service,
                                                                  small_dataset: Path, nothing_registered: str,
                                                                  tmp_path: Path) -> None:
    """A KDC that takes connections but never answers (a firewall's drop, a hung KDC): MIT Kerberos waits about a
    minute before it fails, so after 5 s the command says what it is waiting for, in one line naming the server,
    the principal, the realm and krb5.conf; the command is then stopped (by its PID)."""
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    port = udp.getsockname()[1]
    tcp = socket.socket()
    tcp.bind(("127.0.0.1", port))
    tcp.listen(8)  # connections complete in the kernel; nothing is ever read or answered
    conf = tmp_path / "krb5.conf"
    conf.write_text(realm.krb5_conf.read_text().replace(f"127.0.0.1:{realm.kdc.port}", f"127.0.0.1:{port}"))
    proc = subprocess.Popen(
        hsh.command("register", "krb_fail.t", str(small_dataset), "--metastore", secured_metastore.uri,
                    "--metastore-principal", f"hive/_HOST@{realm.kdc.realm}", "--keytab", str(realm.svc_keytab),
                    "--principal", realm.svc),
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=hsh.env(KRB5_CONFIG=str(conf)), cwd=REPO)
    try:
        started = time.monotonic()
        assert proc.stderr is not None
        line = proc.stderr.readline()  # the first line it writes: nothing else comes before the notice
        waited = time.monotonic() - started
    finally:
        proc.kill()
        proc.wait()
        udp.close()
        tcp.close()
    hsh.secrets.assert_absent(line, "stderr of hsh register (a KDC that does not answer)")
    assert line.strip() == (
        f"warning: still authenticating as {realm.svc} to the metastore at {secured_metastore.uri} "
        f"after 5 s: Kerberos is waiting for a KDC of {realm.kdc.realm} or for the server. MIT Kerberos gives up on "
        f"a KDC that does not answer after about a minute; check the realm's kdc in krb5.conf ({conf})"), line
    assert 4 < waited < 40, waited
