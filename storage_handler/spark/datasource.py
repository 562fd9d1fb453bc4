"""The ``hsh`` Python data source: Spark reads registered tables through the storage handler.

Flow of one query (all on the driver side except ``read``):

1. ``reader(schema)`` learns the table from the schema's field metadata (see :mod:`.table_props`: catalog tables
   hand a data source empty options).
2. ``pushFilters`` decodes Spark's AND-ed filters and calls the handler's ``decompose_predicate``. Every filter is
   handed back to Spark: pruning is inexact and Spark does not re-check a filter a source accepts. A filter whose
   value Spark may have changed on the way to Python is left out of pruning (:mod:`.lossy_values`).
3. ``partitions`` configures the job properties with the handler, runs ``list_status`` once, records the scan's
   metrics and turns each kept file into an ``InputPartition``.
4. ``read`` (on executors) reads one file with pyarrow as batches of exactly the declared schema.

Sessions with the session extension (``spark.sql.extensions=hsh.spark.HshExtensions``, loaded by
:func:`storage_handler.spark.session` and the Thrift server) never get here: it swaps this source for Spark's
native Parquet scan over the same kept files (:mod:`storage_handler.spark.prune_service`). This source serves
sessions without it (no JDK, or a builder that only installed the package), and ``spark.hsh.nativeScan=false``.

Limits of Spark's Python data-source API (4.3), stated so nobody is surprised: it has no column pruning, so
every column is read; and it only receives AND-ed simple filters, so an ``OR`` in a query does not prune on this
path. The native scan and :func:`storage_handler.spark.read_table` have neither limit.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, Filter, InputPartition
from pyspark.sql.types import StructType

from storage_handler.spark.planning import Configured
from storage_handler.spark.reader import Split
from storage_handler.spark.table_props import PROVIDER, TableIdentity, identity_from_metadata


class HshDataSource(DataSource):
    """Registered automatically in every session through the top-level ``pyspark_hsh`` module."""

    @classmethod
    def name(cls) -> str:
        return PROVIDER

    def schema(self) -> StructType:
        from storage_handler.errors import SchemaError

        raise SchemaError(
            "the hsh data source reads tables registered with `hsh register`: query them by name "
            "(spark.sql / spark.table) so Spark supplies their schema"
        )

    def reader(self, schema: StructType) -> DataSourceReader:
        return HshReader(schema)

    def writer(self, schema: StructType, overwrite: bool) -> Any:
        from storage_handler.errors import ConfigurationError

        raise ConfigurationError(
            "tables registered with hsh are read-only through Spark: write Parquet files into the table's folder "
            "(k=v/ partition folders) and run `hsh sync DB.TABLE` to add them and refresh the index"
        )


class HshReader(DataSourceReader):
    """Plans and reads one scan; picklable (only strings, tuples and frozen dataclasses are kept on ``self``)."""

    def __init__(self, schema: StructType) -> None:
        self.schema_json = schema.json()
        self.identity: TableIdentity = identity_from_metadata([(f.name, f.metadata) for f in schema.fields])
        self.configured: Configured | None = None  # set by pushFilters; None when Spark pushed nothing

    def pushFilters(self, filters: list[Filter]) -> Iterator[Filter]:  # noqa: N802 - Spark's name
        from storage_handler.spark.lossy_values import carries_exact_values
        from storage_handler.spark.planning import configure

        self.configured = configure(self.identity, [f for f in filters if carries_exact_values(f)])
        yield from filters  # every filter goes back to Spark: pruning never filters rows exactly

    def partitions(self) -> Sequence[InputPartition]:
        from storage_handler.input_format import ParquetInputFormat, pack_splits
        from storage_handler.spark.planning import configure, list_files

        configured = self.configured or configure(self.identity, [])
        result = list_files(configured, path="spark-datasource")
        splits = ParquetInputFormat().get_splits(configured.job_properties, result)
        return [InputPartition(group) for group in pack_splits(splits, parallelism=2 * (os.cpu_count() or 1))]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        from pyspark.sql.pandas.types import to_arrow_schema

        from storage_handler.spark.reader import read_split
        from storage_handler.stats.listing import local_path

        splits: tuple[Split, ...] = partition.value or ()  # pyspark reads once with None when nothing is kept
        schema = to_arrow_schema(StructType.fromJson(json.loads(self.schema_json)), timezone="UTC")
        root = Path(local_path(self.identity.location))
        evaluator = self._evaluator()
        for split in splits:
            yield from read_split(root, split, schema, self.identity.columns, self.identity.partition_keys,
                                  evaluator=evaluator)

    def _evaluator(self) -> Any:
        """The query's predicate compiled for row-group pruning (None without a usable filter)."""
        from storage_handler.decode.serialized import decode_job_conf
        from storage_handler.input_format import is_trivial
        from storage_handler.pruning import PredicateEvaluator

        if self.configured is None:
            return None
        sarg = decode_job_conf(self.configured.job_properties, self.identity.schema).sarg
        if is_trivial(sarg):
            return None
        return PredicateEvaluator(sarg, self.identity.columns, self.identity.partition_keys)
