"""Everything that talks to a Hive Metastore: the Thrift client, the embedded launchers, registration."""

from __future__ import annotations
