"""What ``hsh follow`` is told and tells: its options, the lines of its log, and the updates it commits
(:mod:`.follower` does the following)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from storage_handler.errors import ConfigurationError
from storage_handler.freshness.lag import Lag
from storage_handler.freshness.stamps import RACY_MS


class NotRegisteredError(ConfigurationError):
    """A table the follower was asked to follow does not carry the handler's table parameter."""


@dataclass(frozen=True, slots=True)
class FollowOptions:
    """How often to look (seconds): the metastore and local stamps every ``interval``; object-store listings every
    ``listing_seconds``; every folder every ``sweep_seconds``; the table list every ``rescan_polls`` polls."""

    interval: float = 2.0
    sweep_seconds: float = 600.0
    listing_seconds: float = 10.0
    rescan_polls: int = 15
    racy_ms: int = RACY_MS
    max_backoff: float = 300.0


@dataclass(frozen=True, slots=True)
class Event:
    """One line of the follower's log: ``kind`` is started, watch, forget, update, warning, incident, recovered
    or stopped; ``data`` holds the numbers (``--json`` prints them all)."""

    kind: str
    table: str | None
    message: str
    data: Mapping[str, Any] = field(default_factory=dict)
    at: float = field(default_factory=time.time)

    def as_dict(self) -> dict[str, Any]:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(self.at)) + f".{int(self.at * 1000) % 1000:03d}Z"
        return {"event": self.kind, "table": self.table, "at": stamp, "message": self.message, **self.data}


@dataclass(frozen=True, slots=True)
class TableUpdate:
    """One committed update: the partitions listed and dropped, the files it added, re-read and removed, the
    index version it made current, and how far behind the index was (:class:`~.lag.Lag`)."""

    table: str
    partitions: tuple[str, ...]
    dropped: tuple[str, ...]
    added: int
    changed: int
    removed: int
    version: int | None
    lag: Lag
    seconds: float
    sweep: bool
