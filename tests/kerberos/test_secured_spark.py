"""Spark on the Kerberos-secured metastore: a session built by the project (``spark.sql`` through the handler, whose
prune service must authenticate; ``read_table``; the Python data source), and HiveServer2 started with
``hsh thriftserver start --kerberos`` queried with ``pyhive(auth='KERBEROS')`` (issue 29)."""

from __future__ import annotations

from pathlib import Path

import pyarrow.dataset as ds
import pytest

from storage_handler.errors import MetastoreAuthError
from tests.kerberos.conftest import TABLE, WHERE, SecuredTable, Service, scans
from tests.kerberos.kdc import Realm

HOST = "127.0.0.1"


def expected(root: Path, where: bool = True) -> int:
    dataset = ds.dataset(root, format="parquet", partitioning="hive")
    if not where:
        return dataset.count_rows()
    return dataset.count_rows(filter=(ds.field("dt") >= "2024-01-02") & (ds.field("kind") == "view"))


@pytest.mark.jvm
def test_spark_session_reads_the_table_through_the_handler(realm: Realm, spark_probe: dict,
                                                           secured_table: SecuredTable) -> None:
    assert "error" not in spark_probe, spark_probe.get("error")
    assert spark_probe["user"] == realm.svc and spark_probe["kerberos"] is True
    assert spark_probe["conf"]["spark.kerberos.keytab"] == str(realm.svc_keytab)
    assert spark_probe["sql"] == spark_probe["read_table"] == spark_probe["data_source"] == \
        expected(secured_table.root) > 0
    assert spark_probe["sql_all"] == expected(secured_table.root, where=False)
    # a count of whole partitions answered from the index: no file read
    assert spark_probe["aggregate"] == ds.dataset(secured_table.root, format="parquet", partitioning="hive").count_rows(
        filter=ds.field("dt") >= "2024-01-02") > 0
    assert "HshAggregateFromIndex" in spark_probe["aggregate_plan"], spark_probe["aggregate_plan"]
    native = [s for s in spark_probe["new_scans"] if s.get("path") == "spark-native" and s.get("table") == TABLE]
    assert native, spark_probe["new_scans"]  # the prune service planned it: it authenticated to the metastore
    assert any(s["partitions_kept"] < s["partitions_total"] for s in native)


def test_pyhive_kerberos_queries_the_table_through_the_thrift_server(
    realm: Realm, kerberized_thriftserver: Service, secured_table: SecuredTable, krb_home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The Thrift server's driver plans the query with the handler: its prune service gets the server's keytab
    from its Spark settings only (the launcher removes the keytab variables), through PruneProcess."""
    from pyhive import hive

    monkeypatch.setenv("KRB5CCNAME", realm.alice_ccache)
    before = len(scans(krb_home))
    conn = hive.connect(host=HOST, port=kerberized_thriftserver.port, auth="KERBEROS", kerberos_service_name="hive")
    try:
        cursor = conn.cursor()
        cursor.execute("select current_user()")
        assert cursor.fetchall() == [("alice",)]
        cursor.execute(f"select count(*) from {TABLE} where {WHERE}")
        assert cursor.fetchall() == [(expected(secured_table.root),)]
    finally:
        conn.close()
    native = [s for s in scans(krb_home)[before:] if s.get("path") == "spark-native" and s.get("table") == TABLE]
    assert native and native[-1]["partitions_kept"] < native[-1]["partitions_total"]


def test_pyhive_over_the_projects_transport_with_a_keytab(realm: Realm, kerberized_thriftserver: Service) -> None:
    from pyhive import hive

    from metastore.security.config import KerberosSettings
    from metastore.security.sasl import SERVICE_HIVESERVER2, kerberos_transport

    conf = KerberosSettings(sasl_enabled=True, service_principal=f"hive/_HOST@{realm.kdc.realm}",
                            keytab=str(realm.svc_keytab), client_principal=realm.svc)
    transport = kerberos_transport(HOST, kerberized_thriftserver.port, conf, server_kind=SERVICE_HIVESERVER2)
    conn = hive.connect(thrift_transport=transport)
    try:
        cursor = conn.cursor()
        cursor.execute("select current_user()")
        assert cursor.fetchall() == [("svc",)]
    finally:
        conn.close()
    with pytest.raises(MetastoreAuthError, match="the HiveServer2 at 127.0.0.1:"):
        kerberos_transport(HOST, kerberized_thriftserver.port, KerberosSettings(
            sasl_enabled=True, service_principal=f"hive/_HOST@{realm.kdc.realm}"), server_kind=SERVICE_HIVESERVER2,
        ).open()  # no ticket


def test_thrift_server_refuses_unauthenticated_clients(kerberized_thriftserver: Service) -> None:
    from pyhive import hive
    from thrift.transport import TTransport

    with pytest.raises(TTransport.TTransportException, match="Unsupported mechanism type PLAIN"):
        hive.connect(host=HOST, port=kerberized_thriftserver.port, auth="NONE", username="mallory")
    with pytest.raises(TTransport.TTransportException, match="read 0 bytes"):
        hive.connect(host=HOST, port=kerberized_thriftserver.port, auth="NOSASL", username="mallory")


def test_secured_services_listen_on_loopback_only(secured_metastore: Service, kerberized_thriftserver: Service) -> None:
    from tests.reliability.util import is_loopback, listening_sockets

    for service in (secured_metastore, kerberized_thriftserver):
        sockets = listening_sockets(service.pid)
        assert service.port in {p for _, p in sockets}
        assert all(is_loopback(address) for address, _ in sockets), sockets
