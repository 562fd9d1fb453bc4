"""What a Spark driver (a session, or the Spark Thrift Server) needs to talk to a Kerberos-secured metastore.

Verified with pyspark 4.3 in local mode (FINDINGS.md, "Spark"):

* ``spark.hadoop.hadoop.security.authentication=kerberos`` alone is not enough: Spark's launcher creates
  Hadoop's login user (as "root (auth:SIMPLE)") before it applies ``spark.hadoop.*``, and the metastore client
  then fails with "GSS initiate failed ... Failed to find any Kerberos tgt". The setting must be in a
  ``core-site.xml`` on the driver's class path: ``HADOOP_CONF_DIR`` (spark-submit's launcher puts it there),
  which real clusters have anyway. With it, the login user is read from the ticket cache (``KRB5CCNAME``, with or
  without the ``FILE:`` prefix) -- or, with ``spark.kerberos.keytab`` + ``spark.kerberos.principal``, spark-submit
  logs in from the keytab, also with ``local[*]`` masters, and Spark's ``HadoopDelegationTokenManager`` keeps
  that login fresh.
* ``spark.hadoop.hive.metastore.sasl.enabled=true`` and ``spark.hadoop.hive.metastore.kerberos.principal``
  (``_HOST`` is expanded to the metastore URI's host by Hive's client) switch its metastore client to SASL.
* Quality of protection: Java's metastore client offers only the levels of its own ``hadoop.rpc.protection``
  (default ``authentication``); against a metastore with ``privacy`` it fails with "No common protection layer
  between client and server". ``spark.hadoop.hadoop.rpc.protection`` works (no core-site.xml needed for this
  key); a list such as ``privacy,integrity,authentication`` accepts whatever the server requires, strongest
  first. So it is always written here, from the settings' ``qops``.
* The JVM needs ``-Djava.security.krb5.conf`` (it ignores ``$KRB5_CONFIG``): ``spark.driver.extraJavaOptions``,
  which pyspark passes to spark-submit, so it works for a session built from Python too.
* The Spark Thrift Server: ``--hiveconf hive.server2.authentication=KERBEROS``, ``...kerberos.principal`` (an
  explicit principal: ``_HOST`` expands to the machine's canonical name) and ``...kerberos.keytab``; clients such
  as ``pyhive.hive.connect(auth="KERBEROS", kerberos_service_name="hive")`` then must authenticate, unauthenticated
  ones are refused ("Unsupported mechanism type PLAIN"; NOSASL: the connection is closed).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from xml.sax.saxutils import escape

from metastore.security.config import (
    AUTHENTICATION_KEY,
    ENV_CLIENT_PRINCIPAL,
    ENV_KEYTAB,
    PRINCIPAL_KEY,
    RPC_PROTECTION_KEY,
    SASL_KEY,
    KerberosSettings,
    read_site_xml,
    to_environment,
)

_PROTECTION = {"auth": "authentication", "auth-int": "integrity", "auth-conf": "privacy"}


def _site_xml(values: dict[str, str]) -> str:
    props = "".join(
        f"  <property><name>{escape(k)}</name><value>{escape(v)}</value></property>\n" for k, v in values.items()
    )
    return f'<?xml version="1.0"?>\n<configuration>\n{props}</configuration>\n'


def hadoop_site_values(settings: KerberosSettings, *, kerberos: bool | None = None
                       ) -> tuple[dict[str, str], dict[str, str]]:
    """(core-site, hive-site) key/values for these settings. ``kerberos`` forces Hadoop's authentication to
    Kerberos even for an unsecured metastore (a Thrift server that requires Kerberos itself)."""
    secured = settings.sasl_enabled if kerberos is None else kerberos or settings.sasl_enabled
    core = {AUTHENTICATION_KEY: "kerberos" if secured else "simple"}
    if settings.sasl_enabled:  # Java's client offers only these levels (Hadoop's default: authentication)
        core[RPC_PROTECTION_KEY] = ",".join(_PROTECTION[q] for q in settings.qops)
    hive = {SASL_KEY: "true" if settings.sasl_enabled else "false"}
    if settings.service_principal:
        hive[PRINCIPAL_KEY] = settings.service_principal
    return core, hive


def write_hadoop_conf_dir(folder: Path, settings: KerberosSettings, *, base: Path | None = None,
                          kerberos: bool | None = None) -> Path:
    """Write ``core-site.xml`` and ``hive-site.xml`` for ``settings`` into ``folder`` (for ``HADOOP_CONF_DIR``).

    ``base`` is the Hadoop conf folder in use, if any: its other files (hdfs-site.xml, ...) are copied and its
    core-site/hive-site values kept under ours, so pointing ``HADOOP_CONF_DIR`` here loses nothing of a cluster's
    configuration. Each file is replaced atomically: sessions starting at once never read half a file.
    """
    folder.mkdir(parents=True, exist_ok=True)
    core, hive = hadoop_site_values(settings, kerberos=kerberos)
    if base is not None and base.is_dir() and base.resolve() != folder.resolve():
        for other in sorted(base.glob("*.xml")):
            if other.name not in ("core-site.xml", "hive-site.xml") and other.is_file():
                _replace(folder / other.name, other.read_bytes())
        for name, ours in (("core-site.xml", core), ("hive-site.xml", hive)):
            if (base / name).is_file():
                ours.update({k: v for k, v in read_site_xml(base / name).items() if k not in ours})
    _replace(folder / "core-site.xml", _site_xml(core).encode())
    _replace(folder / "hive-site.xml", _site_xml(hive).encode())
    return folder


def _replace(path: Path, data: bytes) -> None:
    with tempfile.NamedTemporaryFile("wb", dir=path.parent, prefix=f".{path.name}-", delete=False) as tmp:
        tmp.write(data)
    os.replace(tmp.name, path)


def spark_kerberos_conf(settings: KerberosSettings, *, krb5_conf: str | None = None,
                        extra_java_options: str = "") -> dict[str, str]:
    """Spark conf entries for a driver that talks to a secured metastore (empty when SASL is off).

    ``extra_java_options`` is whatever ``spark.driver.extraJavaOptions`` already holds: the krb5.conf flag is
    appended, never replacing it.
    """
    if not settings.sasl_enabled:
        return {}
    conf = {
        f"spark.hadoop.{SASL_KEY}": "true",
        f"spark.hadoop.{PRINCIPAL_KEY}": settings.service_principal or "",
        f"spark.hadoop.{AUTHENTICATION_KEY}": "kerberos",
    }
    core, _hive = hadoop_site_values(settings)
    if RPC_PROTECTION_KEY in core:
        conf[f"spark.hadoop.{RPC_PROTECTION_KEY}"] = core[RPC_PROTECTION_KEY]
    if settings.keytab and settings.client_principal:
        conf["spark.kerberos.keytab"] = settings.keytab
        conf["spark.kerberos.principal"] = settings.client_principal
    if krb5_conf:
        conf["spark.driver.extraJavaOptions"] = " ".join(
            x for x in (extra_java_options, f"-Djava.security.krb5.conf={krb5_conf}") if x
        )
    return conf


def spark_kerberos_env(settings: KerberosSettings, *, conf_dir: Path, krb5_conf: str | None = None) -> dict[str, str]:
    """Environment for the process that launches the Spark JVM (and so for its Python workers and the prune
    service, which inherit it): the Hadoop conf folder, the krb5.conf for MIT (Python side) and the ``HSH_*``
    settings of :func:`~metastore.security.config.to_environment`."""
    env = {"HADOOP_CONF_DIR": str(conf_dir), **to_environment(settings)}
    if krb5_conf:
        env["KRB5_CONFIG"] = krb5_conf
    return env


def without_credentials(env: dict[str, str]) -> dict[str, str | None]:
    """``env`` with the keytab hand-over variables removed (None): for a JVM whose own credentials are its Spark
    settings (``spark.kerberos.keytab/principal``), which it passes on to the prune service itself."""
    return {**env, ENV_KEYTAB: None, ENV_CLIENT_PRINCIPAL: None}


def thriftserver_kerberos_hiveconf(*, principal: str, keytab: str) -> dict[str, str]:
    """:func:`thriftserver_kerberos_args` as ``--hiveconf`` key/values."""
    args = thriftserver_kerberos_args(principal=principal, keytab=keytab)
    return dict(a.split("=", 1) for a in args[1::2])


def thriftserver_kerberos_args(*, principal: str, keytab: str) -> list[str]:
    """``--hiveconf`` arguments that make the Spark Thrift Server require Kerberos. ``principal`` must be
    explicit (``hive/127.0.0.1@REALM``): the server expands ``_HOST`` to the machine's canonical host name.

    The server also needs ``spark.kerberos.keytab``/``spark.kerberos.principal`` (or a ticket cache): its own
    metastore connection is made before it logs in with the keytab given here (without them it dies at start:
    "Failed to find any Kerberos tgt"). ``doAs`` is off: with Hive's default (on), the server fetches a metastore
    delegation token per user (needs ``hadoop.proxyuser.<server user>.hosts/groups`` on the metastore) and then
    still fails the user's queries ("Failed to find any Kerberos tgt" under the proxy user) -- verified with
    pyspark 4.3."""
    return [
        "--hiveconf", "hive.server2.authentication=KERBEROS",
        "--hiveconf", f"hive.server2.authentication.kerberos.principal={principal}",
        "--hiveconf", f"hive.server2.authentication.kerberos.keytab={keytab}",
        "--hiveconf", "hive.server2.enable.doAs=false",
    ]
