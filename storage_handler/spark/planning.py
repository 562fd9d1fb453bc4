"""Planning one Spark scan of a registered table: Spark's filters -> handler -> ``list_status``.

Shared by both Spark read paths so they prune alike: the ``hsh`` Python data source
(:mod:`storage_handler.spark.datasource`) and the JVM-side native scan (:mod:`storage_handler.spark.prune_service`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from storage_handler.catalog import ScanFiles
from storage_handler.decode.filters import Filter
from storage_handler.input_format import FileStatus, ListStatusResult, file_statuses
from storage_handler.spark.table_props import TableIdentity
from storage_handler.stats.columns import MODIFICATION_TIME, PATH, SIZE


@dataclass(frozen=True, slots=True)
class Configured:
    """The job properties a scan is configured with, and which of Spark's filters reached the SearchArgument."""

    job_properties: dict[str, str]
    pushed_filters: tuple[str, ...]


def configure(identity: TableIdentity, filters: Sequence[Filter], *, complete: bool = False) -> Configured:
    """Decode AND-ed Spark ``filters``, let the handler decompose them, and configure the job properties.

    ``complete``: the caller sent every conjunct of the query's filter; if each of them also decodes here, the
    SearchArgument stands for the whole filter and files may be found fully matched.
    """
    from storage_handler.decode.spark_filters import decode_spark_filters
    from storage_handler.handler import StorageHandler
    from storage_handler.table_desc import TableDesc

    handler = StorageHandler()
    pushed = None
    converted: tuple[Filter, ...] = ()
    if filters:
        decoded = decode_spark_filters(filters, identity.schema)
        pushed = handler.decompose_predicate(None, None, decoded.decoded.residual)
        converted = decoded.converted
        # a filter with no expression here is not in the predicate the handler sees; nothing pushed at all is not
        # the whole filter either (a conjunct converted only in part is the handler's check: to_sarg.is_whole)
        complete = complete and not decoded.unexpressed and pushed is not None
    desc = TableDesc(identity.table, identity.location, identity.columns, identity.partition_keys,
                     parameters=dict(identity.storage), metastore_uri=identity.metastore_uri)
    props: dict[str, str] = {}
    handler.configure_input_job_properties(desc, props, pushed, complete=complete)
    return Configured(props, tuple(repr(f) for f in converted))



def list_files(configured: Configured, *, path: str, record: bool = True, with_index: bool = False,
               strict: bool = True) -> ListStatusResult:
    """``list_status`` for a configured scan; with ``record`` its metrics go to the scan log as coming from ``path``.
    ``strict=False`` (only without ``record``): see :meth:`~storage_handler.input_format.ListStatusResult.matched`."""
    from storage_handler.input_format import ParquetInputFormat
    from storage_handler.spark.metrics import record_scan

    result = ParquetInputFormat().list_status(configured.job_properties, with_index=with_index,
                                              strict=strict or record)
    if record:
        record_scan({**result.metrics.as_dict(), "path": path, "pushed_filters": list(configured.pushed_filters)})
    return result


def file_rows(location: str, files: Sequence[FileStatus]) -> list[list[Any]]:
    """Kept files as the contract's positional ``file_row`` (the JVM side reads them by these positions).

    A file under the table folder is the table's URI plus its relative path (no location parsed per file: at a
    thousand kept files that was most of the answer's cost); a file of a partition registered elsewhere already
    has its own absolute location.
    """
    from storage_handler.contract import FILE_ROW
    from storage_handler.storage import file_uri, is_absolute, parse_location

    root = file_uri(parse_location(location).uri)
    base = root if root.endswith("/") else root + "/"
    rows = ({"uri": file_uri(f.path) if is_absolute(f.path) else base + f.path,
             "bytes": f.length, "mtime_ms": f.modification_time, "partition_values": dict(f.partition_values)}
            for f in files)
    return [[row[name] for name in FILE_ROW] for row in rows]


_NEEDS_ESCAPE = r'[\x00-\x1f"\\]'  # what a JSON string literal may not hold as is
# Up to this many kept files, a loop over them beats the dozen Arrow calls of the columnar path, whose fixed cost
# (~0.3 ms) was most of a point lookup's answer
FEW_FILES = 32


def file_rows_json(location: str, kept: ScanFiles) -> str:
    """``json.dumps(file_rows(...))`` of the kept files: for a few files that very call, else
    :func:`columnar_rows_json`."""
    if kept.num_rows > FEW_FILES:
        return columnar_rows_json(location, kept)
    return json.dumps(file_rows(location, file_statuses(kept)), ensure_ascii=False)


def columnar_rows_json(location: str, kept: ScanFiles) -> str:
    """``json.dumps(file_rows(...))`` of the kept files, built by Arrow from their columns.

    A query keeping 20,000 files answers ~2 MB; building a list and a dict per file and then serializing them
    took ~250 ms, now ~10 ms: each row's text is one vectorized concatenation of its URI literal, sizes and its
    partition's values (serialized once per partition). URIs with a character JSON must escape (a quote, a
    backslash, a control character) take ``json.dumps``; text is UTF-8, not ``\\u`` escapes.
    """
    from storage_handler.contract import FILE_ROW
    from storage_handler.storage import file_uri, parse_location

    batch = kept.batch
    if batch.num_rows == 0:
        return "[]"
    root = file_uri(parse_location(location).uri)
    base = root if root.endswith("/") else root + "/"
    paths = batch.column(PATH)
    absolute = pc.or_(pc.starts_with(paths, "/"), pc.match_substring(paths, "://"))
    if pc.any(absolute).as_py():
        uris = pa.array([file_uri(p) if a else base + p for p, a in zip(
            paths.to_pylist(), absolute.to_pylist(), strict=True)], pa.string())
    else:
        uris = pc.binary_join_element_wise(base, paths, "")
    if pc.any(pc.match_substring_regex(uris, _NEEDS_ESCAPE)).as_py():
        literals = pa.array([json.dumps(u, ensure_ascii=False) for u in uris.to_pylist()], pa.string())
    else:
        literals = pc.binary_join_element_wise('"', uris, '"', "")
    values = pa.array([json.dumps(dict(p), ensure_ascii=False) for p in kept.partitions], pa.string())
    fields = {"uri": literals, "bytes": pc.cast(batch.column(SIZE), pa.string()),
              "mtime_ms": pc.cast(batch.column(MODIFICATION_TIME), pa.string()),
              "partition_values": pc.take(values, kept.partition_of)}
    parts: list[Any] = ["["]
    for i, name in enumerate(FILE_ROW):
        parts += ([","] if i else []) + [fields[name]]
    rows = pc.binary_join_element_wise(*parts, "]", "")
    return "[" + ",".join(rows.to_pylist()) + "]"
