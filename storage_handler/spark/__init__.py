"""Spark integration: the session helper, the session extension (native scan), the ``hsh`` data source,
``read_table`` and scan metrics."""

from __future__ import annotations

from storage_handler.spark.jvm import native_scan_conf
from storage_handler.spark.metrics import last_scan_metrics, scan_history
from storage_handler.spark.native import read_table
from storage_handler.spark.session import session

__all__ = ["last_scan_metrics", "native_scan_conf", "read_table", "scan_history", "session"]
