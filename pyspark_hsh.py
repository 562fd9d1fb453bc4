"""Spark's entry point for the handler's Python data source.

Spark registers every installed top-level module named ``pyspark_*`` that exposes ``DefaultSource`` in every
session (the Thrift server's included). The data source itself lives in :mod:`storage_handler.spark`; this module
only re-exports it so the import stays cheap when the data source is not used.
"""

from __future__ import annotations
