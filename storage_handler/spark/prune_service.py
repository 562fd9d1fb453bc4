"""The handler's side of Spark's native scan: the JVM asks, one JSON line at a time, which files to read.

Started by ``java/hsh/spark/PruneProcess.java`` as ``python -m storage_handler.spark.prune_service`` (on a
Spark driver's first query, and again for each query planned while all are busy, up to a limit) and ended by
closing its stdin. One request at a time; each request line::

    {"op": "scan", "schema": "<the table's Spark schema JSON, field metadata included>",
     "filters": [<Spark filters, see storage_handler.spark.filter_json>], "record": true}

gets one answer line::

    {"ok": true, "files": [[<file URI>, <bytes>, <mtime ms>, {<partition key>: <value or null>}], ...],
     "metrics": {<ScanMetrics>}}
    {"ok": false, "error": "<what went wrong, for the query's exception>"}

The table identity comes from the schema's field metadata exactly as in the Python data source, and planning is
:mod:`storage_handler.spark.planning`'s, so both Spark paths keep the same files. With ``record`` the scan's
metrics are appended to the scan log (``last_scan_metrics()``, path ``spark-native``) right after the answer is
written: the query, which still has to run, does not wait for the log. Nothing but answers is
written to stdout: logging, stray prints and native libraries writing to fd 1 all go to stderr, which the
driver inherits.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import sys
import time
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

from storage_handler import contract
from storage_handler.errors import StorageHandlerError

if TYPE_CHECKING:
    from storage_handler.spark.planning import Configured

log = logging.getLogger(__name__)
PATH = "spark-native"


def handle(request: dict[str, Any], deferred: list[Callable[[], None]] | None = None) -> dict[str, Any]:
    """The answer to one request as a dict (what :func:`serve` writes, as :func:`answer_line`, on one line)."""
    answer: dict[str, Any] = json.loads(answer_line(request, deferred))
    return answer


def answer_line(request: dict[str, Any], deferred: list[Callable[[], None]] | None = None) -> str:
    """The answer to one request as one line of JSON (errors the user can act on raise StorageHandlerError).

    The kept files' part is written from their columns (:func:`~storage_handler.spark.planning.file_rows_json`),
    never as a Python object per file. With ``deferred``, work the answer does not need (recording the scan's
    metrics) is appended there, for the caller to run once the answer is on its way: the query waits for the
    answer, not for the scan log.
    """
    from storage_handler.spark.metrics import record_scan
    from storage_handler.spark.planning import file_rows_json, list_files

    started = time.perf_counter()
    if request.get("op") == "index":
        contract.check_version(request)
        return json.dumps({**index_written_files(request, deferred),
                           "service_ms": (time.perf_counter() - started) * 1000})
    if request.get("op") != "scan":
        raise StorageHandlerError(f"unknown request {request.get('op')!r}: this prune service answers 'scan' and "
                                  "'index'")
    contract.check_version(request)
    contract.require(request, contract.SCAN_REQUEST, "scan request")
    aggregate = request["aggregate"]
    location, configured = _configured(json.dumps([request["table"], request["filters"], request["complete"]],
                                                  sort_keys=True))
    # the strict evaluation only where the answer needs it (aggregates); else it only feeds the scan log, after
    # the answer went out: on a driver's few cores the service's CPU competes with the query it answers
    result = list_files(configured, path=PATH, record=False, with_index=aggregate is not None,
                        strict=aggregate is not None or deferred is None)
    if request["record"]:
        def record() -> None:
            record_scan({**result.matched().metrics.as_dict(), "path": PATH,
                         "pushed_filters": list(configured.pushed_filters)})

        if deferred is None:
            record()
        else:
            deferred.append(record)
    metrics = json.dumps(contract.answer_metrics(result.metrics.as_dict()), default=str)
    files = file_rows_json(location, result.kept)
    matched = "null" if aggregate is None else json.dumps(_matched(request["table"], result, aggregate))
    # the service's own time for this request: the JVM subtracts it from its round trip to see the hop's cost
    service_ms = (time.perf_counter() - started) * 1000
    return (f'{{"ok": true, "files": {files}, "metrics": {metrics}, "matched": {matched}, '
            f'"service_ms": {service_ms:.3f}}}')


def index_written_files(request: dict[str, Any],
                        deferred: list[Callable[[], None]] | None = None) -> dict[str, Any]:
    """Index the files a committed write put into a registered table (:mod:`storage_handler.freshness.written`);
    then, after the answer went out (``deferred``), publish the table's metastore statistics: the write's
    statement need not wait for them, and they follow the index within the same second."""
    from storage_handler.freshness.scoped import IndexedTable
    from storage_handler.freshness.written import index_written
    from storage_handler.spark.table_props import TableIdentity
    from storage_handler.stats.index.file_stats import StatsOptions

    contract.require(request, contract.INDEX_REQUEST, "index request")
    identity = TableIdentity.from_contract(request["table"])
    parameters = {str(k): str(v) for k, v in (request["parameters"] or {}).items()}
    table = IndexedTable(identity.table, identity.location, identity.columns,
                         tuple(k for k, _ in identity.partition_keys), StatsOptions.for_table(parameters),
                         dict(identity.storage))
    partitions = request["partitions"]
    specs = None if partitions is None else [dict(p) for p in partitions]
    done = index_written(table, identity.metastore_uri, specs, request["prefix"])
    log.info("hsh: indexed the write (%s) into %s: %s", request["command"], identity.table, done.as_dict())
    if identity.metastore_uri and done.version is not None:
        publish = functools.partial(_publish_statistics, identity.metastore_uri, identity.table)
        if deferred is None:
            publish()
        else:
            deferred.append(publish)
    return {"ok": True, "version": done.version, "files": done.files, "added": len(done.diff.added),
            "changed": len(done.diff.changed), "removed": len(done.diff.removed)}


def _publish_statistics(metastore_uri: str, table: str) -> None:
    from metastore.client import MetastoreClient
    from metastore.names import parse_table_name
    from storage_handler.registration.statistics import keep_published

    with MetastoreClient(metastore_uri) as client:
        report = keep_published(client, parse_table_name(table))
    if report.warning():
        log.warning("hsh: %s", report.warning())


def _matched(table: dict[str, Any], result: Any, aggregate: dict[str, Any]) -> dict[str, Any]:
    """The kept files the index answers the query's aggregates for (:mod:`storage_handler.spark.aggregates`)."""
    from storage_handler.spark.aggregates import matched
    from storage_handler.spark.table_props import TableIdentity

    contract.require(aggregate, contract.AGGREGATE_REQUEST, "aggregate request")
    columns = {name.lower(): hive_type for name, hive_type in TableIdentity.from_contract(table).columns}
    return matched(result.kept, result.kept_rows, result.certain, columns, aggregate["columns"],
                   aggregate["bounds"])


@functools.lru_cache(maxsize=128)
def _configured(key: str) -> tuple[str, Configured]:
    """The table's location and the scan's job properties for one (table, filters) pair of a request.

    The JVM asks about the same table with the same filters many times (every run of a query, and twice while
    planning one); building the job properties from them is a pure function worth ~1.5 ms, so it is done once.
    """
    from storage_handler.spark.filter_json import decode_filters
    from storage_handler.spark.planning import configure
    from storage_handler.spark.table_props import TableIdentity

    table, nodes, complete = json.loads(key)
    identity = TableIdentity.from_contract(table)
    # a filter value this side cannot decode (a date beyond Python's years) only prunes less
    filters = decode_filters(nodes, on_undecodable=lambda e: log.warning(
        "hsh prune service: filter left out of pruning (%s)", e))
    complete = bool(complete) and len(filters) == len(nodes)  # a filter that did not decode is not in the SARG
    return identity.location, configure(identity, filters, complete=complete)


def serve(requests: IO[str], answers: IO[str]) -> None:
    """Answer each request line on ``answers`` until ``requests`` ends."""
    for line in requests:
        if not line.strip():
            continue
        deferred: list[Callable[[], None]] = []
        try:
            answer = answer_line(json.loads(line), deferred)
        except StorageHandlerError as e:
            answer = json.dumps({"ok": False, "error": str(e)})
        except Exception as e:  # noqa: BLE001 - the query must fail with the cause, and the service live on
            log.exception("hsh prune service: request failed")
            answer = json.dumps({"ok": False, "error": f"{type(e).__name__}: {e}"})
        answers.write(answer + "\n")
        answers.flush()
        for task in deferred:
            try:
                task()
            except Exception:  # noqa: BLE001 - the answer is out; the next request must still be served
                log.exception("hsh prune service: recording a scan failed")


def main() -> None:
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="hsh prune service: %(message)s")
    # Answers get a private copy of stdout; file descriptor 1 itself becomes stderr, so nothing else -- a stray
    # print, or a native library writing to fd 1 -- can corrupt the protocol.
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    serve(sys.stdin, answers)


if __name__ == "__main__":
    main()
