"""Spark's entry point for the handler's Python data source.

Spark registers every installed top-level module named ``pyspark_*`` that exposes ``DefaultSource`` in every
session (the Thrift server's included); the data source itself lives in :mod:`storage_handler.spark.datasource`.
"""

from __future__ import annotations

from storage_handler.spark.datasource import HshDataSource as DefaultSource

__all__ = ["DefaultSource"]
