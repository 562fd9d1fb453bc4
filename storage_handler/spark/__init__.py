"""Spark integration: the session helper, the ``hsh`` data source, the native-reader path and scan metrics."""

from __future__ import annotations

from storage_handler.spark.metrics import last_scan_metrics, scan_history
from storage_handler.spark.native import read_table
from storage_handler.spark.session import session

__all__ = ["last_scan_metrics", "read_table", "scan_history", "session"]
