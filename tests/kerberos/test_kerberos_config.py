"""Kerberos settings from Hive's and Spark's keys, site files and the HSH_* hand-over (no KDC needed)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from metastore.security.config import (
    KerberosSettings,
    expand_host,
    from_environment,
    from_spark_conf,
    read_site_xml,
    resolve,
    to_environment,
)
from metastore.security.errors import KerberosConfigurationError
from metastore.security.spark import spark_kerberos_conf, write_hadoop_conf_dir


def _site(path: Path, values: dict[str, str]) -> Path:
    props = "".join(f"<property><name>{k}</name><value>{v}</value></property>" for k, v in values.items())
    path.write_text(f"<?xml version='1.0'?><configuration>{props}</configuration>")
    return path


def test_host_expansion_is_hives() -> None:
    assert expand_host("hive/_HOST@EX.COM", "Metastore.Example.COM") == "hive/metastore.example.com@EX.COM"
    assert expand_host("hive/_HOST@EX.COM", "127.0.0.1") == "hive/127.0.0.1@EX.COM"
    assert expand_host("hive/fixed.host@EX.COM", "127.0.0.1") == "hive/fixed.host@EX.COM"
    with pytest.raises(KerberosConfigurationError, match="service/host@REALM"):
        expand_host("hive@EX.COM", "h")


def test_default_is_unsecured(tmp_path: Path) -> None:
    assert resolve(environ={}) == KerberosSettings()
    assert spark_kerberos_conf(KerberosSettings()) == {}


def test_site_files_hive_conf_dir_wins(tmp_path: Path) -> None:
    hadoop, hive = tmp_path / "hadoop", tmp_path / "hive"
    hadoop.mkdir()
    hive.mkdir()
    _site(hadoop / "core-site.xml", {"hadoop.rpc.protection": "privacy"})
    _site(hadoop / "hive-site.xml", {"hive.metastore.sasl.enabled": "false", "hive.metastore.kerberos.principal": "x/y@Z"})
    _site(hive / "hive-site.xml", {"hive.metastore.sasl.enabled": "true",
                                   "hive.metastore.kerberos.principal": "hive/_HOST@EX.COM"})
    got = resolve(environ={"HADOOP_CONF_DIR": str(hadoop), "HIVE_CONF_DIR": str(hive)})
    assert got == KerberosSettings(sasl_enabled=True, service_principal="hive/_HOST@EX.COM", qops=("auth-conf",))


def test_precedence_flags_over_spark_over_environment(tmp_path: Path) -> None:
    hive = tmp_path / "hive"
    hive.mkdir()
    _site(hive / "hive-site.xml", {"hive.metastore.sasl.enabled": "true", "hive.metastore.kerberos.principal": "a/_HOST@R"})
    env = {"HIVE_CONF_DIR": str(hive), "HSH_METASTORE_PRINCIPAL": "b/_HOST@R"}
    assert resolve(environ=env).service_principal == "b/_HOST@R"
    spark = {"spark.hadoop.hive.metastore.kerberos.principal": "c/_HOST@R", "spark.kerberos.keytab": "/k",
             "spark.kerberos.principal": "u@R"}
    got = resolve(environ=env, spark_conf=spark)
    assert (got.service_principal, got.keytab, got.client_principal) == ("c/_HOST@R", "/k", "u@R")
    assert resolve(environ=env, spark_conf=spark, service_principal="d/_HOST@R").service_principal == "d/_HOST@R"
    assert resolve(environ=env, sasl=False).sasl_enabled is False


def test_missing_or_half_settings_fail_in_one_line() -> None:
    with pytest.raises(KerberosConfigurationError, match="hive.metastore.kerberos.principal is not set"):
        resolve(environ={"HSH_METASTORE_SASL": "true"})
    with pytest.raises(KerberosConfigurationError, match="keytab was given without a principal"):
        resolve(environ={}, service_principal="hive/_HOST@R", keytab="/k")
    with pytest.raises(KerberosConfigurationError, match="neither true nor false"):
        resolve(environ={"HSH_METASTORE_SASL": "maybe"})


def test_environment_hand_over_round_trips() -> None:
    conf = KerberosSettings(sasl_enabled=True, service_principal="hive/_HOST@R", keytab="/k", client_principal="u@R")
    assert from_environment(to_environment(conf)) == conf
    assert from_spark_conf(spark_kerberos_conf(conf, krb5_conf="/etc/x.conf")) == conf


def test_hadoop_conf_dir_is_readable_back(tmp_path: Path) -> None:
    conf = KerberosSettings(sasl_enabled=True, service_principal="hive/_HOST@R", qops=("auth-conf",))
    folder = write_hadoop_conf_dir(tmp_path / "conf", conf)
    assert read_site_xml(folder / "core-site.xml") == {"hadoop.security.authentication": "kerberos",
                                                        "hadoop.rpc.protection": "privacy"}
    assert resolve(environ={"HADOOP_CONF_DIR": str(folder)}) == conf
    spark = spark_kerberos_conf(conf, krb5_conf="/k5.conf", extra_java_options="-Xss4m")
    assert spark["spark.driver.extraJavaOptions"] == "-Xss4m -Djava.security.krb5.conf=/k5.conf"
    default = spark_kerberos_conf(KerberosSettings(sasl_enabled=True, service_principal="hive/_HOST@R"))
    assert default["spark.hadoop.hadoop.rpc.protection"] == "privacy,integrity,authentication"


# ------------------------------------------------------------------------------------ this process and its children
def test_current_follows_the_environment_and_configure_process_hands_over(monkeypatch: pytest.MonkeyPatch,
                                                                           tmp_path: Path) -> None:
    from metastore.security.config import configure_process, current

    for key in ("HSH_METASTORE_SASL", "HSH_METASTORE_PRINCIPAL", "HSH_KERBEROS_KEYTAB", "HSH_KERBEROS_PRINCIPAL",
                "HADOOP_CONF_DIR", "HIVE_CONF_DIR", "SPARK_CONF_DIR", "SPARK_HOME"):
        monkeypatch.setenv(key, "")  # so that monkeypatch restores the variable however this test leaves it
        monkeypatch.delenv(key)
    assert current() == KerberosSettings()
    assert configure_process(KerberosSettings()) == KerberosSettings()  # the default writes nothing
    assert "HSH_METASTORE_SASL" not in os.environ
    hive = tmp_path / "hive"
    hive.mkdir()
    _site(hive / "hive-site.xml", {"hive.metastore.sasl.enabled": "true",
                                   "hive.metastore.kerberos.principal": "hive/_HOST@R"})
    monkeypatch.setenv("HIVE_CONF_DIR", str(hive))
    assert current() == KerberosSettings(sasl_enabled=True, service_principal="hive/_HOST@R")
    wanted = KerberosSettings(sasl_enabled=True, service_principal="hive/_HOST@R", keytab="/k", client_principal="u@R")
    assert configure_process(wanted) == wanted
    assert from_environment() == wanted  # what a child process resolves


def test_spark_conf_and_hive_conf_folders_are_read(tmp_path: Path) -> None:
    spark = tmp_path / "spark" / "conf"
    spark.mkdir(parents=True)
    _site(spark / "hive-site.xml", {"hive.metastore.sasl.enabled": "true",
                                    "hive.metastore.kerberos.principal": "hive/_HOST@S"})
    assert resolve(environ={"SPARK_HOME": str(tmp_path / "spark")}).service_principal == "hive/_HOST@S"
    assert resolve(environ={"SPARK_CONF_DIR": str(spark)}).sasl_enabled


def test_krb5_conf_path(tmp_path: Path) -> None:
    from metastore.security.config import krb5_conf_path

    conf = tmp_path / "krb5.conf"
    conf.write_text("[libdefaults]\n")
    assert krb5_conf_path({"KRB5_CONFIG": f"{tmp_path / 'missing'}:{conf}"}) == str(conf)
    assert krb5_conf_path({}) is None


def test_hadoop_conf_dir_keeps_a_clusters_own_files(tmp_path: Path) -> None:
    base = tmp_path / "cluster"
    base.mkdir()
    _site(base / "core-site.xml", {"fs.defaultFS": "hdfs://nn:8020", "hadoop.security.authentication": "simple"})
    _site(base / "hdfs-site.xml", {"dfs.replication": "3"})
    conf = KerberosSettings(sasl_enabled=True, service_principal="hive/_HOST@R")
    folder = write_hadoop_conf_dir(tmp_path / "ours", conf, base=base)
    core = read_site_xml(folder / "core-site.xml")
    assert core["hadoop.security.authentication"] == "kerberos" and core["fs.defaultFS"] == "hdfs://nn:8020"
    assert read_site_xml(folder / "hdfs-site.xml") == {"dfs.replication": "3"}


def test_service_identity_on_loopback(tmp_path: Path) -> None:
    from metastore.security.server import ServiceKerberos

    service = ServiceKerberos.on_loopback("/k.keytab", "hive/_HOST@R", protection="privacy", krb5_conf="/k5",
                                          check=False)
    assert service.principal == "hive/127.0.0.1@R"
    assert "-Dhive.metastore.kerberos.principal=hive/127.0.0.1@R" in service.metastore_properties()
    assert "-Dhadoop.rpc.protection=privacy" in service.metastore_properties()
    assert service.as_client().client_principal == "hive/127.0.0.1@R"
    with pytest.raises(KerberosConfigurationError, match="--kerberos needs the service's --keytab and --principal"):
        ServiceKerberos.on_loopback(None, "hive/_HOST@R")
    with pytest.raises(KerberosConfigurationError, match="--rpc-protection 'secret'"):
        ServiceKerberos.on_loopback("/k", "hive/_HOST@R", protection="secret", check=False)


def test_secured_launchers_commands(tmp_path: Path) -> None:
    """The embedded metastore's secured command line, and the Thrift server's: Kerberos on, loopback only, its
    credentials in its Spark settings and not in inherited variables; no default changes."""
    from metastore.local import LocalMetastore
    from metastore.security.server import ServiceKerberos
    from storage_handler.spark.config import spark_conf, thrift_server

    service = ServiceKerberos("/k.keytab", "hive/127.0.0.1@R", "authentication", "/k5.conf")
    (tmp_path / "metastore").mkdir()
    command = LocalMetastore(tmp_path, kerberos=service).command(9999)
    assert command[-3:] == ["SecureLoopbackMetaStore", "127.0.0.1", "9999"]
    assert "-Dhive.metastore.sasl.enabled=true" in command and "-Djava.security.krb5.conf=/k5.conf" in command
    plain = LocalMetastore(tmp_path).command(9999)
    assert plain[-3:] == ["LoopbackMetaStore", "127.0.0.1", "9999"] and not [a for a in plain if "sasl" in a]

    metastore = KerberosSettings(sasl_enabled=True, service_principal="hive/_HOST@R")
    server = thrift_server("thrift://127.0.0.1:9083", tmp_path, security=metastore, kerberos=service)
    args = server.command(10000)
    assert "hive.server2.authentication=KERBEROS" in args and "hive.server2.enable.doAs=false" in args
    assert "spark.kerberos.keytab=/k.keytab" in args and "hive.server2.thrift.bind.host=127.0.0.1" in args
    assert args[-1] == "spark-internal"
    env = server.env()
    assert "HSH_KERBEROS_KEYTAB" not in env and env["HSH_METASTORE_PRINCIPAL"] == "hive/_HOST@R"
    assert read_site_xml(Path(env["HADOOP_CONF_DIR"]) / "core-site.xml")["hadoop.security.authentication"] == \
        "kerberos"
    assert not [k for k in spark_conf("thrift://127.0.0.1:9083", security=KerberosSettings()) if "kerberos" in k]


def test_a_principal_in_the_environment_alone_switches_kerberos_on() -> None:
    """As ``--metastore-principal`` does; a parent's explicit ``HSH_METASTORE_SASL`` still decides."""
    assert resolve(environ={"HSH_METASTORE_PRINCIPAL": "hive/_HOST@R"}) == \
        KerberosSettings(sasl_enabled=True, service_principal="hive/_HOST@R")
    assert not resolve(environ={"HSH_METASTORE_PRINCIPAL": "hive/_HOST@R", "HSH_METASTORE_SASL": "false"}).sasl_enabled


def test_a_session_on_the_ticket_cache_drops_a_parents_keytab(monkeypatch: pytest.MonkeyPatch,
                                                              tmp_path: Path) -> None:
    """After ``eval "$(hsh spark-conf --env --keytab svc.keytab --principal svc@R)"``, a session asked to use the
    ticket cache: the prune service and the Python workers (which resolve from the environment) must not log in
    from svc's keytab while the JVM runs as the ticket's principal."""
    from metastore.security.config import current
    from storage_handler.spark.session import prepare_process

    _restored(monkeypatch)
    monkeypatch.setenv("HSH_HOME", str(tmp_path))
    for key, value in {"HSH_METASTORE_SASL": "true", "HSH_METASTORE_PRINCIPAL": "hive/_HOST@R",
                       "HSH_KERBEROS_KEYTAB": "/svc.keytab", "HSH_KERBEROS_PRINCIPAL": "svc@R"}.items():
        monkeypatch.setenv(key, value)
    for key in ("HADOOP_CONF_DIR", "KRB5_CONFIG"):
        monkeypatch.setenv(key, "")
        monkeypatch.delenv(key)
    ticket = KerberosSettings(sasl_enabled=True, service_principal="hive/_HOST@R")
    prepare_process(ticket)
    assert "HSH_KERBEROS_KEYTAB" not in os.environ and "HSH_KERBEROS_PRINCIPAL" not in os.environ
    assert from_environment() == ticket and current().keytab is None
    keytab = KerberosSettings(sasl_enabled=True, service_principal="hive/_HOST@R", keytab="/u.keytab",
                              client_principal="u@R")
    prepare_process(keytab)
    assert from_environment() == keytab


def test_a_callers_jvm_options_keep_the_krb5_conf_flag() -> None:
    from storage_handler.spark.session import merged_conf

    ours = {"spark.driver.extraJavaOptions": "-Djava.security.krb5.conf=/k5", "spark.app.name": "a"}
    merged = merged_conf(ours, {"spark.driver.extraJavaOptions": "-Xss4m", "spark.app.name": "b"})
    assert merged == {"spark.driver.extraJavaOptions": "-Djava.security.krb5.conf=/k5 -Xss4m", "spark.app.name": "b"}
    assert merged_conf({}, {"spark.driver.extraJavaOptions": "-Xss4m"}) == {"spark.driver.extraJavaOptions": "-Xss4m"}


def test_a_relative_keytab_names_the_same_file_from_the_services_folder(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from metastore.security.server import ServiceKerberos

    monkeypatch.chdir(tmp_path)
    service = ServiceKerberos.on_loopback("state/hive.keytab", "hive/_HOST@R", check=False)
    assert service.keytab == str(tmp_path / "state" / "hive.keytab")


def test_a_running_metastore_is_not_reused_at_a_weaker_protection(tmp_path: Path) -> None:
    """``start --kerberos --rpc-protection privacy`` next to one that accepts ``authentication``: a client that
    accepts any level would send in the clear what was meant to be encrypted."""
    from metastore.local import LocalMetastore
    from metastore.security.server import ServiceKerberos
    from metastore.service import ServiceInfo
    from storage_handler.errors import ProcessError

    def running(protection: str) -> ServiceInfo:
        return ServiceInfo("metastore", 1, 9083, "thrift://127.0.0.1:9083", "log", 0.0, None,
                           kerberos_principal="hive/127.0.0.1@R", kerberos_protection=protection)

    private = LocalMetastore(tmp_path, kerberos=ServiceKerberos("/k", "hive/127.0.0.1@R", "privacy"))
    with pytest.raises(ProcessError, match="at rpc protection authentication; stop it first"):
        private.check_reuse(running("authentication"))
    private.check_reuse(running("privacy"))
    with pytest.raises(ProcessError, match="did not record"):
        private.check_reuse(running(""))
    LocalMetastore(tmp_path).check_reuse(running("authentication"))  # a plain start reuses whatever runs


def test_sessions_with_other_settings_do_not_rewrite_each_others_hadoop_conf(monkeypatch: pytest.MonkeyPatch,
                                                                             tmp_path: Path) -> None:
    """A running session's prune service and workers re-read its core-site.xml: a second session under the same
    ``$HSH_HOME`` with another protection must not turn the first one's ``privacy`` into ``authentication``."""
    from storage_handler.spark.config import kerberos_environment

    monkeypatch.setenv("HADOOP_CONF_DIR", "")
    monkeypatch.delenv("HADOOP_CONF_DIR")
    private = KerberosSettings(sasl_enabled=True, service_principal="hive/_HOST@R", qops=("auth-conf",))
    plain = KerberosSettings(sasl_enabled=True, service_principal="hive/_HOST@R", qops=("auth",))
    first = Path(kerberos_environment(private, tmp_path)["HADOOP_CONF_DIR"])
    second = Path(kerberos_environment(plain, tmp_path)["HADOOP_CONF_DIR"])
    assert first != second
    assert read_site_xml(first / "core-site.xml")["hadoop.rpc.protection"] == "privacy"
    assert Path(kerberos_environment(private, tmp_path)["HADOOP_CONF_DIR"]) == first  # the same settings: reused


def test_a_ticket_cache_java_cannot_read_is_one_line_before_spark_starts(monkeypatch: pytest.MonkeyPatch,
                                                                          tmp_path: Path) -> None:
    """``DIR:``, ``KEYRING:`` and ``KCM:`` caches work for the Python side and not for Spark's Java client, which
    failed later with "Failed to find any Kerberos tgt"."""
    from storage_handler.errors import ConfigurationError
    from storage_handler.spark.session import prepare_process

    _restored(monkeypatch)
    monkeypatch.setenv("HSH_HOME", str(tmp_path))
    ticket = KerberosSettings(sasl_enabled=True, service_principal="hive/_HOST@R")
    monkeypatch.setenv("KRB5CCNAME", "DIR:/run/user/0/krb5cc")
    with pytest.raises(ConfigurationError, match="KRB5CCNAME=DIR:... is one Java cannot read"):
        prepare_process(ticket)
    prepare_process(KerberosSettings(sasl_enabled=True, service_principal="hive/_HOST@R", keytab="/k",
                                     client_principal="u@R"))  # a keytab: the cache is not used
    monkeypatch.setenv("KRB5CCNAME", "FILE:/tmp/krb5cc_0")
    prepare_process(ticket)


def _restored(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every variable ``prepare_process`` may set, restored as it was after the test (it writes ``os.environ``)."""
    for key in ("HSH_METASTORE_SASL", "HSH_METASTORE_PRINCIPAL", "HSH_KERBEROS_KEYTAB", "HSH_KERBEROS_PRINCIPAL",
                "HADOOP_CONF_DIR", "KRB5_CONFIG", "KRB5CCNAME", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON",
                "SPARK_LOCAL_IP"):
        monkeypatch.setenv(key, os.environ.get(key, ""))
        if not os.environ.get(key):
            monkeypatch.delenv(key)
