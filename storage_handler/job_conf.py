"""Hive's job-configuration keys, and the typed view of them the input format works from.

The handler writes these (``configure_input_job_properties``) and the input format reads them back, exactly as a
Hive ``TableDesc``'s properties travel to ``MapredParquetInputFormat`` in a Hive job:

* ``mapreduce.input.fileinputformat.inputdir`` and ``location``: the table location;
* ``name``: ``db.table``;
* ``columns`` (comma-separated) and ``columns.types`` (colon-separated, Hive type strings);
* ``partition_columns`` (slash-separated, as Hive writes it) and ``partition_columns.types`` (colon-separated);
* the filter, as the handler writes it: ``hsh.sarg`` (the SearchArgument) and ``hsh.filter.expr`` (the
  expression), both our versioned JSON under our own keys, and ``hive.io.filter.text`` (HiveQL, Hive's own format);
* the filter, as Hive and Spark write it (read, never written by the handler): ``hive.io.filter.expr.serialized``
  (Kryo of an ``ExprNodeGenericFuncDesc``) and ``sarg.pushdown`` (Kryo of a ``SearchArgumentImpl``);
  ``hsh.filter.time.zone`` names the zone of the JVM that wrote them (default UTC);
* ours, namespaced: ``hsh.index.version`` (informational: readers always load the current index from storage).

Which key wins when several are present is :mod:`storage_handler.decode.serialized`'s precedence.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from storage_handler.errors import ConfigurationError
from storage_handler.types import HiveType, parse_hive_type, split_top_level

INPUT_DIR = "mapreduce.input.fileinputformat.inputdir"
LOCATION = "location"
TABLE_NAME = "name"
COLUMNS = "columns"
COLUMN_TYPES = "columns.types"
PARTITION_COLUMNS = "partition_columns"
PARTITION_COLUMN_TYPES = "partition_columns.types"
FILTER_EXPR = "hive.io.filter.expr.serialized"
FILTER_TEXT = "hive.io.filter.text"
SARG_PUSHDOWN = "sarg.pushdown"
HSH_SARG = "hsh.sarg"
HSH_FILTER_EXPR = "hsh.filter.expr"
FILTER_TIME_ZONE = "hsh.filter.time.zone"
INDEX_VERSION = "hsh.index.version"
FILTER_KEYS = (HSH_SARG, HSH_FILTER_EXPR, FILTER_EXPR, FILTER_TEXT, SARG_PUSHDOWN)


def _pairs(names_text: str, types_text: str, sep: str, what: str) -> tuple[tuple[str, HiveType], ...]:
    names = [n for n in names_text.split(sep) if n] if names_text else []
    types = [t for t in split_top_level(types_text, ":") if t] if types_text else []
    if len(names) != len(types):
        raise ConfigurationError(
            f"job configuration lists {len(names)} {what} names but {len(types)} types; "
            "configure it with StorageHandler.configure_input_job_properties"
        )
    return tuple((n.lower(), parse_hive_type(t)) for n, t in zip(names, types, strict=True))


@dataclass(frozen=True, slots=True)
class JobConf:
    """The typed table description a read is configured with."""

    table: str
    location: str
    columns: tuple[tuple[str, HiveType], ...]
    partition_keys: tuple[tuple[str, HiveType], ...]

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> JobConf:
        location = props.get(INPUT_DIR) or props.get(LOCATION)
        if not location:
            raise ConfigurationError(
                f"job configuration has no {INPUT_DIR!r}; configure it with "
                "StorageHandler.configure_input_job_properties"
            )
        return cls(
            table=props.get(TABLE_NAME, "?"),
            location=location.split(",")[0],
            columns=_pairs(props.get(COLUMNS, ""), props.get(COLUMN_TYPES, ""), ",", "column"),
            partition_keys=_pairs(
                props.get(PARTITION_COLUMNS, ""), props.get(PARTITION_COLUMN_TYPES, ""), "/", "partition column"
            ),
        )

    def to_properties(self) -> dict[str, str]:
        return table_properties(self.table, self.location, self.columns, self.partition_keys)


def table_properties(
    table: str,
    location: str,
    columns: Sequence[tuple[str, HiveType]],
    partition_keys: Sequence[tuple[str, HiveType]],
) -> dict[str, str]:
    return {
        TABLE_NAME: table,
        LOCATION: location,
        INPUT_DIR: location,
        COLUMNS: ",".join(n for n, _ in columns),
        COLUMN_TYPES: ":".join(str(t) for _, t in columns),
        PARTITION_COLUMNS: "/".join(n for n, _ in partition_keys),
        PARTITION_COLUMN_TYPES: ":".join(str(t) for _, t in partition_keys),
    }
