"""The bottom layer that talks to a Hive Metastore: the Thrift client (``client``: timeouts, safe retries, error
mapping), table locks (``locks``), addresses (``uri``), Hive's table names (``names``), and the embedded metastore
and HiveServer2 launchers (``local``).

It imports nothing from ``storage_handler`` but the bottom modules (errors, home, toolchain), so every layer may
use it; registration, sync and describe live above the handler, in :mod:`storage_handler.registration`.
"""

from __future__ import annotations
