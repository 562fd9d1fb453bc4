"""The ``hsh`` Python data source: ``spark.read.format("hsh").load("db.table")`` reads a registered table with pruning.

Sessions with the session extension read registered tables through Spark's native Parquet scan
(:mod:`storage_handler.spark.prune_service`), and ``read_table`` works in any session; this source is the
explicit way for a session without a JDK or without the extension's settings. Registered tables are plain Hive
tables, so ``spark.sql`` never routes them here.

Flow of one read (all on the driver side except ``read``):

1. ``schema()`` reads the table from the metastore: ``.option("metastore", "thrift://...")``, else
   ``$HSH_METASTORE_URI``, else the embedded one. The schema it returns carries the table identity as field
   metadata (:mod:`.table_props`), which is all ``reader(schema)`` receives.
2. ``pushFilters`` decodes Spark's AND-ed filters and calls the handler's ``decompose_predicate``. Every filter is
   handed back to Spark: pruning is inexact and Spark does not re-check a filter a source accepts. A filter whose
   value Spark may have changed on the way to Python is left out of pruning (:mod:`.lossy_values`).
3. ``partitions`` configures the job properties with the handler, runs ``list_status`` once, records the scan's
   metrics and turns each kept file into an ``InputPartition``.
4. ``read`` (on executors) reads one file with pyarrow as batches of exactly the declared schema.

``spark.sql.python.filterPushdown.enabled`` off (Spark's default): Spark would refuse a reader that implements
``pushFilters`` with a Python traceback. The reader then reads every file (a warning names the setting), since
it never learns the query's filters; see :func:`_pushdown_disabled`.

Limits of Spark's Python data-source API (4.3), stated so nobody is surprised: it has no column pruning, so
every column is read; and it only receives AND-ed simple filters, so an ``OR`` in a query does not prune on this
path. The native scan and :func:`storage_handler.spark.read_table` have neither limit.

**Pruning by the query's filters is opt-in** (``.option("pruneByQueryFilters", "true")``), because of a Spark 4.3
defect that can drop matching rows: the file list a scan planned with pushed filters is kept on the DataFrame's
relation and reused by every later scan of it that pushes no filter (``df.where(...).count()`` then
``df.count()`` counts only the first query's files; fixed upstream by keeping it per scan). Without the option
this source reads every file of the table, always right; with it, use each loaded DataFrame (or view) for queries
that all filter, or load it again.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from pyspark.sql.types import StructType

from storage_handler.spark import compat
from storage_handler.spark.planning import Configured
from storage_handler.spark.table_props import PROVIDER, TableIdentity, identity_from_metadata
from storage_handler.split import Split

if TYPE_CHECKING or compat.has(compat.PYTHON_DATA_SOURCE):
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
else:  # pyspark 3.5 has no Python data sources: the module imports, the source refuses in one line when used
    class DataSource:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            compat.require(compat.PYTHON_DATA_SOURCE, "the hsh Python data source (spark.read.format('hsh'))")

    DataSourceReader = InputPartition = DataSource

log = logging.getLogger(__name__)
PUSHDOWN_SETTING = "spark.sql.python.filterPushdown.enabled"
PRUNE_OPTION = "pruneByQueryFilters"


class HshDataSource(DataSource):
    """Registered automatically in every session through the top-level ``pyspark_hsh`` module."""

    @classmethod
    def name(cls) -> str:
        return PROVIDER

    def schema(self) -> StructType:
        """The registered table's schema with its identity as field metadata (see :mod:`.table_props`)."""
        from metastore.client import MetastoreClient
        from metastore.local import resolve_metastore_uri
        from metastore.names import parse_table_name
        from storage_handler.errors import ConfigurationError
        from storage_handler.spark.table_props import spark_schema_json
        from storage_handler.table_desc import TableDesc

        table = self.options.get("path") or self.options.get("table")
        if not table:
            raise ConfigurationError(
                "the hsh data source reads a table registered with `hsh register`: "
                "spark.read.format('hsh').load('db.table')"
            )
        name = parse_table_name(table)
        with MetastoreClient(resolve_metastore_uri(self.options.get("metastore"))) as client:
            desc = TableDesc.from_hms(client.get_table(name.database, name.table), client.uris)
        return StructType.fromJson(json.loads(
            spark_schema_json(desc.name, desc.location, desc.columns, desc.partition_keys, desc.metastore_uri,
                              desc.parameters)))

    def reader(self, schema: StructType) -> DataSourceReader:
        if str(self.options.get(PRUNE_OPTION, "false")).strip().lower() != "true":
            return HshReader(schema)  # see the module docstring: Spark 4.3 reuses a filtered scan's file list
        compat.require(compat.FILTER_PUSHDOWN, f"pruning the hsh data source by the query's filters ({PRUNE_OPTION})")
        if _pushdown_disabled():
            log.warning("hsh: %s is off, so this read cannot see the query's filters and reads every file of the "
                        "table; set it to true to prune", PUSHDOWN_SETTING)
            return HshReader(schema)
        return HshPruningReader(schema)

    def writer(self, schema: StructType, overwrite: bool) -> Any:
        from storage_handler.errors import ConfigurationError

        raise ConfigurationError(
            "tables registered with hsh are read-only through Spark: write Parquet files into the table's folder "
            "(k=v/ partition folders) and run `hsh sync DB.TABLE` to add them and refresh the index"
        )


def _pushdown_disabled() -> bool:
    """Whether the pyspark planning worker calling ``reader()`` runs with Python filter pushdown off.

    pyspark (4.3) rejects a reader that implements ``pushFilters`` when the setting is off, and a data source has
    no other way to learn the setting: the worker holds it in its local ``enable_pushdown`` while it calls
    ``reader()``. Reading that local is the one way to fall back to an unpruned reader instead of failing with a
    traceback. If a later pyspark renames it, this answers False: Spark's own error, naming the setting, is shown.
    """
    frame = sys._getframe(1)
    for _ in range(8):
        frame = frame.f_back  # type: ignore[assignment]
        if frame is None:
            return False
        if frame.f_globals.get("__name__", "").startswith("pyspark.sql.worker") and \
                "enable_pushdown" in frame.f_locals:
            return frame.f_locals["enable_pushdown"] is False
    return False


class HshReader(DataSourceReader):
    """Plans and reads one scan without filters (every file is kept); picklable (only strings, tuples and frozen
    dataclasses are kept on ``self``)."""

    def __init__(self, schema: StructType) -> None:
        self.schema_json = schema.json()
        self.identity: TableIdentity = identity_from_metadata([(f.name, f.metadata) for f in schema.fields])
        self.configured: Configured | None = None  # set by pushFilters; None when Spark pushed nothing

    def partitions(self) -> Sequence[InputPartition]:
        from storage_handler.input_format import ParquetInputFormat, pack_splits
        from storage_handler.spark.planning import configure, list_files

        configured = self.configured or configure(self.identity, [])
        result = list_files(configured, path="spark-datasource")
        splits = ParquetInputFormat().get_splits(configured.job_properties, result)
        return [InputPartition(group) for group in pack_splits(splits, parallelism=2 * (os.cpu_count() or 1))]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        from storage_handler.spark.reader import read_split

        splits: tuple[Split, ...] = partition.value or ()  # pyspark reads once with None when nothing is kept
        schema = compat.arrow_schema(StructType.fromJson(json.loads(self.schema_json)))
        evaluator = self._evaluator()
        for split in splits:
            yield from read_split(self.identity.location, split, schema, self.identity.columns,
                                  self.identity.partition_keys, evaluator=evaluator, conf=dict(self.identity.storage))

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


class HshPruningReader(HshReader):
    """:class:`HshReader` that also receives the query's AND-ed filters, so it prunes by them."""

    def pushFilters(self, filters: list[Any]) -> Iterator[Any]:  # noqa: N802 - Spark's name
        from storage_handler.spark.lossy_values import carries_exact_values
        from storage_handler.spark.planning import configure

        ours = []
        for f in filters:
            try:
                converted = compat.from_pyspark(f)
            except KeyError:  # a filter class of a newer pyspark: prune less, never wrongly
                continue
            if carries_exact_values(converted):
                ours.append(converted)
        self.configured = configure(self.identity, ours)
        yield from filters  # every filter goes back to Spark: pruning never filters rows exactly
