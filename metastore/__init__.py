"""The bottom layer that talks to a Hive Metastore: the Thrift client (``client``: timeouts, safe retries, error
mapping, Kerberos when configured), table locks (``locks``), addresses (``uri``), Hive's table names (``names``),
the embedded metastore and HiveServer2 launchers (``local``: unauthenticated and on 127.0.0.1 by default), and
Kerberos (``security``: settings from Hive's and Spark's keys, the SASL/GSSAPI transport, one-line errors).

It imports nothing from ``storage_handler`` but the bottom modules (errors, home, toolchain), so every layer may
use it; registration, sync and describe live above the handler, in :mod:`storage_handler.registration`.
"""

from __future__ import annotations
