"""The identity of a Kerberos-secured service we start on 127.0.0.1: the embedded metastore or HiveServer2.

Verified facts behind this module (tests/kerberos/FINDINGS.md has the commands):

* Hive's own ``HiveMetaStore`` main needs ``hadoop.security.authentication=kerberos`` in a ``core-site.xml`` on
  its class path -- Hadoop's ``UserGroupInformation`` never reads ``-D`` system properties, and with SASL on but UGI
  left at "simple" it dies with "Kerberos principal should have 3 parts: root". It also binds every interface.
  ``metastore/java/SecureLoopbackMetaStore.java`` does what Hive's secure start does, bound to one address, and
  copies ``-Dhadoop.*`` into the configuration UGI uses, so the ``-D`` flags of :meth:`ServiceKerberos.
  metastore_properties` are enough.
* The principal must be explicit: a server expands ``_HOST`` to the machine's canonical host name, not the
  address clients use. We bind 127.0.0.1, so ``_HOST`` here becomes ``127.0.0.1`` -- what Hive's Java client and
  ours ask the KDC for when they connect to ``thrift://127.0.0.1:PORT``.
* The JDK reads ``-Djava.security.krb5.conf`` only: not ``$KRB5_CONFIG`` (with it alone, Java used
  /etc/krb5.conf and failed with "Unable to locate KDC for realm").
* A bad keytab or principal makes the launcher exit with status 3 and one line on stderr; we check the keytab
  first, so the usual mistakes are one line before any JVM starts.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from metastore.security.config import KerberosSettings, expand_host, krb5_conf_path, split_principal
from metastore.security.errors import KerberosConfigurationError

LAUNCHER_CLASS = "SecureLoopbackMetaStore"
EXIT_LOGIN_FAILED = 3
PROTECTIONS = ("authentication", "integrity", "privacy")


@dataclass(frozen=True, slots=True)
class ServiceKerberos:
    """A service's own Kerberos identity: its keytab and explicit principal (``hive/127.0.0.1@REALM``), the
    metastore's quality of protection (``hadoop.rpc.protection``) and the krb5.conf its JVM reads."""

    keytab: str
    principal: str
    protection: str = "authentication"
    krb5_conf: str | None = None

    @classmethod
    def on_loopback(cls, keytab: str | None, principal: str | None, *, protection: str = "authentication",
                    krb5_conf: str | None = None, check: bool = True) -> ServiceKerberos:
        """The identity of a service bound to 127.0.0.1 (``_HOST`` -> ``127.0.0.1``); with ``check``, the keytab is
        read (needs the ``gssapi`` package, skipped without it) so a wrong one fails in one line before a JVM
        starts."""
        if not keytab or not principal:
            raise KerberosConfigurationError(
                "--kerberos needs the service's --keytab and --principal (e.g. --principal hive/127.0.0.1@REALM)")
        split_principal(principal)
        if protection not in PROTECTIONS:
            raise KerberosConfigurationError(
                f"--rpc-protection {protection!r}: expected one of {', '.join(PROTECTIONS)}")
        # absolute: the service's JVM runs in its own folder, where a relative path names nothing
        service = cls(os.path.abspath(keytab), expand_host(principal, "127.0.0.1"), protection,
                      krb5_conf or krb5_conf_path())
        if check:
            try:
                import gssapi  # noqa: F401 - only to know whether the check can run
            except ImportError:
                return service
            from metastore.security.credentials import check_keytab

            check_keytab(service.keytab, service.principal)
        return service

    def metastore_properties(self) -> list[str]:
        """The ``-D`` flags that make ``SecureLoopbackMetaStore`` require Kerberos as this principal."""
        flags = [
            "-Dhive.metastore.sasl.enabled=true",
            f"-Dhive.metastore.kerberos.keytab.file={self.keytab}",
            f"-Dhive.metastore.kerberos.principal={self.principal}",
            "-Dhadoop.security.authentication=kerberos",
            f"-Dhadoop.rpc.protection={self.protection}",
        ]
        return ([f"-Djava.security.krb5.conf={self.krb5_conf}"] if self.krb5_conf else []) + flags

    def as_client(self, service_principal: str | None = None) -> KerberosSettings:
        """Settings under which this service's own identity is a client of a metastore: the readiness probe of
        the embedded metastore, the Thrift server's metastore connection (``service_principal`` defaults to this
        one)."""
        return KerberosSettings(sasl_enabled=True, service_principal=service_principal or self.principal,
                                keytab=self.keytab, client_principal=self.principal)


def secure_metastore_properties(
    *, keytab: str, principal: str, krb5_conf: str, protection: str = "authentication"
) -> list[str]:
    """The ``-D`` flags of :meth:`ServiceKerberos.metastore_properties` for an explicit principal."""
    return ServiceKerberos(keytab, principal, protection, krb5_conf).metastore_properties()
