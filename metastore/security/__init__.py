"""Kerberos (SASL/GSSAPI) for every connection to a secured Hive Metastore or HiveServer2 (issue 29).

Modules:

* :mod:`~metastore.security.config` -- :class:`KerberosSettings` from Hive's and Spark's own keys
  (``hive.metastore.sasl.enabled``, ``hive.metastore.kerberos.principal`` with ``_HOST``, ``hadoop.rpc.protection``,
  ``spark.kerberos.keytab/principal``), site files on ``HADOOP_CONF_DIR`` / ``HIVE_CONF_DIR``, flags, ``HSH_*``.
* :mod:`~metastore.security.credentials` -- a keytab's tickets in a private in-memory cache, renewed on use;
  keytab diagnostics.
* :mod:`~metastore.security.sasl` -- :func:`kerberos_transport`: an open-able Thrift transport (thrift-sasl +
  pure-sasl GSSAPI over the ``kerberos`` package), and :func:`explain`: one-line errors.
* :mod:`~metastore.security.spark` -- Spark conf, Hadoop conf folder and Thrift server arguments.
* :mod:`~metastore.security.server` -- the Kerberos identity of a service we start on 127.0.0.1 (the embedded
  metastore's ``SecureLoopbackMetaStore`` flags, HiveServer2's principal and keytab).

Nothing here changes the default: with ``sasl_enabled`` False connections stay plain Thrift. Every connection goes
through :class:`metastore.client.MetastoreClient`, whose ``security`` defaults to :func:`config.current`.
"""

from __future__ import annotations

from metastore.security.config import KerberosSettings, configure_process, current, expand_host, resolve
from metastore.security.credentials import KeytabLogin, check_keytab, ticket_cache_lifetime
from metastore.security.errors import KerberosConfigurationError, MetastoreAuthError
from metastore.security.sasl import (
    GssapiSaslClient,
    KerberosTransport,
    credentials_scope,
    explain,
    kerberos_transport,
    login_for,
)

__all__ = [
    "GssapiSaslClient",
    "KerberosConfigurationError",
    "KerberosSettings",
    "KerberosTransport",
    "KeytabLogin",
    "MetastoreAuthError",
    "check_keytab",
    "configure_process",
    "credentials_scope",
    "current",
    "expand_host",
    "explain",
    "kerberos_transport",
    "login_for",
    "resolve",
    "ticket_cache_lifetime",
]
