"""Make the pruning decision visible: every scan's metrics are logged and kept where the user can read them.

Spark plans a Python data-source read in a separate Python worker process, so the metrics cannot simply live in
a variable of the user's process. Each scan appends one JSON line to ``$HSH_HOME/scans/scans.jsonl`` (the Thrift
server's scans included, since it shares the state folder) and :func:`last_scan_metrics` reads them back.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Any

from storage_handler.home import state_home

log = logging.getLogger("storage_handler.scan")


def _scans_file() -> Path:
    return state_home() / "scans" / "scans.jsonl"


def record_scan(metrics: dict[str, Any]) -> None:
    """Log the scan at INFO and append it to the scans file (one ``write`` of one line: atomic for appends)."""
    entry = {"time": time.time(), "pid": os.getpid(), **metrics}
    log.info(
        "hsh scan %s: kept %s/%s files, %s/%s bytes", entry.get("table"), entry.get("files_kept"),
        entry.get("files_total"), entry.get("bytes_kept"), entry.get("bytes_total"),
    )
    path = _scans_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry, default=str) + "\n")
    except OSError as e:  # metrics must never fail a query
        log.warning("could not record scan metrics in %s: %s", path, e)


def scan_history(table: str | None = None) -> list[dict[str, Any]]:
    """All recorded scans, oldest first (optionally only those of ``db.table``)."""
    try:
        lines = _scans_file().read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    entries = []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # a torn last line from a killed process
        if table is None or entry.get("table") == table:
            entries.append(entry)
    return entries


def last_scan_metrics(table: str | None = None) -> dict[str, Any] | None:
    """The most recent scan's metrics (kept/total files and bytes, per-phase times, the SearchArgument)."""
    history = scan_history(table)
    return history[-1] if history else None
