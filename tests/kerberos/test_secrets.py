"""Secrets stay secret (issue 29, point 4): after a whole secured run -- register, sync, refresh, describe, scan, a
Spark session through the handler, HiveServer2 queried with pyhive, every failure -- no keytab's key material and no
ticket cache's content is in any output or log the project wrote: ``hsh`` stdout and stderr (``--json`` included),
the scan log, the metastore's and the Thrift server's logs, the Hadoop configuration we write, the table's
parameters. Paths and principal names may appear; bytes of the files they name may not."""

from __future__ import annotations

from pathlib import Path

from metastore.client import MetastoreClient
from tests.kerberos.conftest import TABLE, Hsh, SecuredTable, Service, service_settings
from tests.kerberos.kdc import Realm
from tests.kerberos.secrets import Secrets


def test_no_key_material_in_any_output_or_log(
    realm: Realm, hsh: Hsh, secrets: Secrets, krb_home: Path, secured_metastore: Service,
    kerberized_thriftserver: Service, secured_table: SecuredTable, spark_probe: dict,
) -> None:
    assert secrets.needles(), "no key material to look for: the realm's keytabs are empty?"
    looked_at = []
    for label, text in hsh.runs:
        secrets.assert_absent(text, label)
        looked_at.append(label)
    files = [p for p in krb_home.rglob("*") if p.is_file() and p.suffix in (".log", ".jsonl", ".json", ".xml",
                                                                             ".out", ".properties")]
    assert krb_home / "scans" / "scans.jsonl" in files
    assert secured_metastore.log_path in files and kerberized_thriftserver.log_path in files
    for path in files:
        secrets.assert_absent(path.read_bytes().decode("latin-1"), str(path))
        looked_at.append(str(path))
    with MetastoreClient(secured_metastore.uri, security=service_settings(realm)) as client:
        database, table = TABLE.split(".")
        parameters = dict(client.get_table(database, table).parameters)
        for partition in client.get_partitions(database, table):
            parameters.update({f"{partition.values}:{k}": v for k, v in (partition.parameters or {}).items()})
    secrets.assert_absent(repr(parameters), "the table's and its partitions' parameters")
    assert not [k for k, v in parameters.items() if str(realm.svc_keytab) in v or "keytab" in k.lower()]
    assert len(looked_at) > 20, looked_at
