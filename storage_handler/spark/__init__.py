"""Spark integration: the session helper (and, later, the data source and the native-reader path)."""

from __future__ import annotations

from storage_handler.spark.session import session

__all__ = ["session"]
