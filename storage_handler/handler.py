"""``StorageHandler``: Hive's ``HiveStorageHandler`` + ``HiveStoragePredicateHandler`` for Parquet, in Python.

Hive 2.3's nine methods, with Pythonic names:

==================================  ====================================================================
``get_input_format_class``          :class:`~storage_handler.input_format.ParquetInputFormat` (prunes files);
                                    ``INPUT_FORMAT`` is the Java class name stored in the metastore
``get_output_format_class``         Hive's ``MapredParquetOutputFormat`` (writes are plain Parquet)
``get_serde_class``                 Hive's ``ParquetHiveSerDe``
``get_meta_hook``                   :class:`~storage_handler.meta_hook.IndexMetaHook` (builds/drops the index)
``configure_input_job_properties``  what ``list_status`` needs (see ``job_conf``); the filter as our JSON
                                    under ``hsh.sarg`` / ``hsh.filter.expr`` and HiveQL ``hive.io.filter.text``
``configure_output_job_properties`` location and schema for writers
``configure_table_job_properties``  both of the above (Hive's deprecated catch-all)
``configure_job_conf``              nothing to add for Parquet; kept for the contract
``get_authorization_provider``      None: authorization is the metastore's (and Spark's), not the handler's
``decompose_predicate``             pushed predicate / SearchArgument / residual (residual = everything)
==================================  ====================================================================

Because Java engines cannot load a Python class, the metastore stores Hive's plain Parquet classes in the storage
descriptor and this handler's identity under the ``hsh.storage_handler`` table parameter.

The handler never writes a foreign format under Hive's key names: ``hive.io.filter.expr.serialized`` and
``sarg.pushdown`` hold Kryo bytes in Hive, which we read (:mod:`storage_handler.decode.kryo`) but do not write. Our
own JSON goes under our own ``hsh.*`` keys; ``hive.io.filter.text`` is HiveQL, Hive's own format for that key.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from storage_handler import job_conf as keys
from storage_handler.catalog import PartitionSource
from storage_handler.catalog.metastore_source import METASTORE_URIS
from storage_handler.decode.hiveql import parse_filter
from storage_handler.decode.to_sarg import DecomposedPredicate, decompose, is_whole
from storage_handler.expr import serde as expr_serde
from storage_handler.expr.nodes import Expr
from storage_handler.expr.render import to_hiveql
from storage_handler.input_format import ParquetInputFormat, is_trivial
from storage_handler.meta_hook import IndexMetaHook
from storage_handler.sarg import serde as sarg_serde
from storage_handler.storage import s3a_settings
from storage_handler.table_desc import TableDesc

# Hive's own Parquet classes: what the metastore records, so Hive, Trino and plain Spark read the table natively
INPUT_FORMAT = "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat"
OUTPUT_FORMAT = "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat"
SERDE = "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe"


class StorageHandler:
    """One object for both Hive interfaces; stateless, so one instance can serve every table."""

    INPUT_FORMAT = INPUT_FORMAT
    OUTPUT_FORMAT = OUTPUT_FORMAT
    SERDE = SERDE

    # -- HiveStorageHandler
    def get_input_format_class(self) -> type[ParquetInputFormat]:
        return ParquetInputFormat

    def get_output_format_class(self) -> str:
        return OUTPUT_FORMAT

    def get_serde_class(self) -> str:
        return SERDE

    def get_meta_hook(self) -> IndexMetaHook:
        return IndexMetaHook()

    def get_authorization_provider(self) -> None:
        """None: access control stays with the metastore and the engine, as for any Hive Parquet table."""
        return None

    def configure_input_job_properties(
        self, table_desc: TableDesc, job_properties: MutableMapping[str, str],
        pushed: DecomposedPredicate | None = None, *, complete: bool = False,
    ) -> None:
        """Write the table description and the pushed filter; stale filter keys are removed (idempotent).

        ``complete``: the caller knows ``pushed`` stands for the read's whole filter (nothing was left out before
        it reached the handler; ``pushed`` None: the read has no filter). ``list_status`` then calls files fully
        matched -- if the SearchArgument also holds all of ``pushed`` (:func:`~storage_handler.decode.to_sarg.
        is_whole`), checked here, the one place the flag is written.
        """
        job_properties.update(keys.table_properties(
            table_desc.name, table_desc.location, table_desc.columns, table_desc.partition_keys
        ))
        if table_desc.metastore_uri:  # Hive's job configurations carry it too: partitions are listed there
            job_properties[METASTORE_URIS] = table_desc.metastore_uri
        job_properties.update(s3a_settings(table_desc.parameters))  # the table's S3 endpoint settings, no secrets
        version = table_desc.parameters.get(keys.INDEX_VERSION)
        if version is not None:
            job_properties[keys.INDEX_VERSION] = version
        for key in keys.FILTER_KEYS:
            job_properties.pop(key, None)
        if complete and (pushed is None or is_whole(pushed)):
            job_properties[keys.FILTER_COMPLETE] = "true"
        if pushed is None:
            return
        job_properties[keys.HSH_SARG] = sarg_serde.dumps(pushed.pushed_object)
        predicate = pushed.residual_predicate or pushed.pushed_predicate
        if predicate is not None:
            job_properties[keys.HSH_FILTER_EXPR] = expr_serde.dumps(predicate)
            job_properties[keys.FILTER_TEXT] = to_hiveql(predicate)

    def configure_output_job_properties(self, table_desc: TableDesc, job_properties: MutableMapping[str, str]) -> None:
        """Writers need the location and the schema; they write plain Parquet (refresh the index afterwards)."""
        job_properties.update(keys.table_properties(
            table_desc.name, table_desc.location, table_desc.columns, table_desc.partition_keys
        ))

    def configure_table_job_properties(self, table_desc: TableDesc, job_properties: MutableMapping[str, str]) -> None:
        self.configure_input_job_properties(table_desc, job_properties)
        self.configure_output_job_properties(table_desc, job_properties)

    def configure_job_conf(self, table_desc: TableDesc, job_conf: MutableMapping[str, str]) -> None:
        """Nothing job-wide is needed for Parquet reads (kept because Hive's interface has it)."""

    # -- HiveStoragePredicateHandler
    def decompose_predicate(self, job_conf: Any, deserializer: Any, predicate: Expr | None) -> DecomposedPredicate | None:
        """Hive's contract: None when nothing can be pushed; otherwise (pushed, SearchArgument, residual).

        The residual is always the whole predicate: statistics pruning is inexact (a kept file still holds
        non-matching rows), so the engine must evaluate every conjunct again, as Iceberg's Hive handler does.
        ``job_conf`` and ``deserializer`` are accepted for the contract and unused.
        """
        if predicate is None:
            return None
        result = decompose(predicate)
        return None if is_trivial(result.pushed_object) else result

    def decompose_where(self, table_desc: TableDesc, where: str) -> DecomposedPredicate | None:
        """Parse HiveQL filter text against the table and decompose it (what ``--where`` does)."""
        return self.decompose_predicate(None, None, parse_filter(where, table_desc.schema))


def list_status_for(table_desc: TableDesc, where: str | None = None, partitions: PartitionSource | None = None) -> Any:
    """Configure a read of ``table_desc`` with an optional HiveQL filter and run ``list_status`` (CLI helper).

    A partitioned table's partitions come from ``partitions`` if given, else from ``table_desc.metastore_uri``.
    """
    handler = StorageHandler()
    pushed = handler.decompose_where(table_desc, where) if where else None
    props: dict[str, str] = {}
    # HiveQL text becomes one SearchArgument of the whole condition (unconvertible parts as YES_NO_NULL): it is
    # all of the filter, unless nothing of it could be pushed (then no file is known fully matched)
    handler.configure_input_job_properties(table_desc, props, pushed, complete=not where or pushed is not None)
    return handler.get_input_format_class()().list_status(props, partitions), props
