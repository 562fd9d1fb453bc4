"""The one contract between the Spark session extension (Java) and the handler's Python side.

Both sides load ``contract.json`` beside this module (the Java side from its class path, where
:mod:`storage_handler.spark.jvm` copies it when compiling): table parameters, settings, the fields of a scan
request, of a table, of an answer, the order of a kept-file row and the metrics the JVM reads. A renamed field is
then renamed for both, and a field one side expects but the other did not send fails loudly on the reading side
(a metric that silently read as 0 once made Spark broadcast a whole table).

A scan request (one JSON line)::

    {"op": "scan", "contract": <version>, "table": TABLE, "filters": [<filter_json>], "record": true,
     "complete": <every conjunct of the query's filter is in "filters">,
     "aggregate": null | {"columns": [NAME, ...], "bounds": [NAME, ...]}}
    TABLE := {"name": "db.t", "location": "<as the metastore has it>",
              "columns": [[NAME, HIVE_TYPE], ...], "partition_keys": [[NAME, HIVE_TYPE], ...],
              "metastore": "thrift://host:port" or null}   (where a partitioned table's partitions are listed)

and its answer::

    {"ok": true, "files": [[URI, BYTES, MTIME_MS, {KEY: VALUE or null}], ...], "metrics": {METRIC: ...},
     "matched": null | {"positions": [...], "partitions": [...], "rows": [...], "columns": {...}, "exact": {...},
                        "file_rows": [ROWS or null per file]}}
    {"ok": false, "error": "<one line for the query's exception>"}

An index request, sent by the extension after a write to a registered table committed (never before: a failed
write indexes nothing)::

    {"op": "index", "contract": <version>, "table": TABLE, "parameters": {<the table's hsh.* parameters>},
     "partitions": null | [{KEY: VALUE or null, ...}, ...],   (exact written partitions; [{}] unpartitioned)
     "prefix": null | {KEY: VALUE, ...},                        (only the leading static values are known)
     "command": "<the write command, for the log>"}

and its answer ``{"ok": true, "version": V, "files": N, "added": A, "changed": C, "removed": R, "service_ms": MS}``
(``{"ok": false, "error": ...}`` is logged by the extension as a warning; the write has succeeded).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import Any

from storage_handler.errors import ConfigurationError

_DATA: dict[str, Any] = json.loads(resources.files(__package__).joinpath("contract.json").read_text("utf-8"))

VERSION: int = _DATA["version"]
PARAM_HANDLER: str = _DATA["table_parameters"]["handler"]
PARAM_INDEX_VERSION: str = _DATA["table_parameters"]["index_version"]
LEGACY_PROVIDER: str = _DATA["legacy_table_parameters"]["provider"]
LEGACY_PROVIDER_VALUE: str = _DATA["legacy_table_parameters"]["provider_value"]
LEGACY_SCHEMA_PREFIX: str = _DATA["legacy_table_parameters"]["schema_prefix"]
SETTING_NATIVE_SCAN: str = _DATA["settings"]["native_scan"]
SETTING_PYTHON: str = _DATA["settings"]["python"]
SETTING_PROCESSES: str = _DATA["settings"]["processes"]
SETTING_AGGREGATES: str = _DATA["settings"]["aggregates"]
SETTING_AGGREGATES_MIN_BYTES: str = _DATA["settings"]["aggregates_min_bytes"]
SETTING_AGGREGATES_DRIVER_BYTES: str = _DATA["settings"]["aggregates_driver_bytes"]
SETTING_AGGREGATES_DRIVER_ROWS: str = _DATA["settings"]["aggregates_driver_rows"]
SETTING_AGGREGATES_DRIVER_INTERPRETED_ROWS: str = _DATA["settings"]["aggregates_driver_interpreted_rows"]
SETTING_INDEX_ON_WRITE: str = _DATA["settings"]["index_on_write"]
SETTING_INDEX_ON_WRITE_TIMEOUT: str = _DATA["settings"]["index_on_write_timeout"]
SETTING_INDEX_ON_WRITE_ASYNC: str = _DATA["settings"]["index_on_write_async"]
SETTING_OBSERVE_PARTITIONS: str = _DATA["settings"]["observe_partitions"]
SETTING_DEFINITION_RECHECK: str = _DATA["settings"]["definition_recheck"]
SCAN_REQUEST: tuple[str, ...] = tuple(_DATA["scan_request"])
TABLE: tuple[str, ...] = tuple(_DATA["table"])
ANSWER: tuple[str, ...] = tuple(_DATA["answer"])
FILE_ROW: tuple[str, ...] = tuple(_DATA["file_row"])
METRICS: tuple[str, ...] = tuple(_DATA["metrics"])
MATCHED: tuple[str, ...] = tuple(_DATA["matched"])
AGGREGATE_REQUEST: tuple[str, ...] = tuple(_DATA["aggregate_request"])
INDEX_REQUEST: tuple[str, ...] = tuple(_DATA["index_request"])
INDEX_ANSWER: tuple[str, ...] = tuple(_DATA["index_answer"])
_FILTERS: dict[str, Any] = _DATA["filters"]
FILTER_OP: str = _FILTERS["op_field"]
VALUE_TAG: str = _FILTERS["tag_field"]
#: each filter operation's fields, in the contract's order (``EqualTo`` -> ``("attribute", "value")``)
FILTER_FIELDS: dict[str, tuple[str, ...]] = {
    op: tuple(_FILTERS["shapes"][shape]) for op, shape in _FILTERS["ops"].items()
}
#: each value tag's fields (``int`` -> ``("v",)``)
VALUE_FIELDS: dict[str, tuple[str, ...]] = {tag: tuple(fields) for tag, fields in _FILTERS["values"].items()}


def require(message: Mapping[str, Any], fields: Sequence[str], what: str) -> None:
    """Raise naming the first of ``fields`` that ``message`` lacks (the peer speaks another contract version)."""
    missing = [f for f in fields if f not in message]
    if missing:
        raise ConfigurationError(
            f"the {what} from the Spark extension lacks {missing[0]!r} (contract version {VERSION} expected): the "
            "extension's classes and this Python package come from different versions; restart the Spark driver "
            "so it compiles the extension of the package spark.hsh.python names"
        )


def check_version(request: Mapping[str, Any]) -> None:
    if request.get("contract") != VERSION:
        raise ConfigurationError(
            f"the Spark extension speaks contract version {request.get('contract')!r} but this Python package "
            f"speaks {VERSION}: restart the Spark driver so it compiles the extension of the package "
            f"{SETTING_PYTHON} names"
        )


def answer_metrics(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """``metrics`` as sent in an answer; every metric the JVM reads must be there (checked here, not read as 0)."""
    missing = [m for m in METRICS if m not in metrics]
    if missing:
        raise AssertionError(f"scan metrics lack {missing} that the Spark extension reads (contract.json)")
    return dict(metrics)
