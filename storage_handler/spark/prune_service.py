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
metrics are appended to the scan log (``last_scan_metrics()``, path ``spark-native``). Nothing but answers is
written to stdout: logging, stray prints and native libraries writing to fd 1 all go to stderr, which the
driver inherits.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import IO, Any

from storage_handler import contract
from storage_handler.errors import StorageHandlerError

log = logging.getLogger(__name__)
PATH = "spark-native"


def handle(request: dict[str, Any]) -> dict[str, Any]:
    """The answer to one request (errors the user can act on become ``{"ok": false}``)."""
    from storage_handler.spark.filter_json import decode_filters
    from storage_handler.spark.planning import configure, file_rows, list_files
    from storage_handler.spark.table_props import TableIdentity

    if request.get("op") != "scan":
        raise StorageHandlerError(f"unknown request {request.get('op')!r}: this prune service answers 'scan' only")
    contract.check_version(request)
    contract.require(request, contract.SCAN_REQUEST, "scan request")
    identity = TableIdentity.from_contract(request["table"])
    # a filter value this side cannot decode (a date beyond Python's years) only prunes less
    filters = decode_filters(request["filters"], on_undecodable=lambda e: log.warning(
        "hsh prune service: filter left out of pruning (%s)", e))
    configured = configure(identity, filters)
    result = list_files(configured, path=PATH, record=bool(request["record"]))
    return {"ok": True, "files": file_rows(identity.location, result.files),
            "metrics": contract.answer_metrics(result.metrics.as_dict())}


def serve(requests: IO[str], answers: IO[str]) -> None:
    """Answer each request line on ``answers`` until ``requests`` ends."""
    for line in requests:
        if not line.strip():
            continue
        try:
            answer = handle(json.loads(line))
        except StorageHandlerError as e:
            answer = {"ok": False, "error": str(e)}
        except Exception as e:  # noqa: BLE001 - the query must fail with the cause, and the service live on
            log.exception("hsh prune service: request failed")
            answer = {"ok": False, "error": f"{type(e).__name__}: {e}"}
        answers.write(json.dumps(answer, default=str) + "\n")
        answers.flush()


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
