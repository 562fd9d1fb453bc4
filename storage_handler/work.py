"""Counting the costly steps of one scan -- metastore calls, index loads, index row groups read from storage -- so
the scan metrics report them and tests can assert that each happens once per query, not once per planning step.

A scan opens a :func:`counting` scope; the code doing the work calls :func:`count`. Scopes are per thread (a
context variable), so concurrent scans in one prune service or Thrift server never mix their counts, and work done
outside any scope is not counted.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator
from contextvars import ContextVar

_SCOPE: ContextVar[Counter[str] | None] = ContextVar("hsh_work_counts", default=None)

METASTORE_CALLS = "metastore_calls"
INDEX_LOADS = "index_loads"
INDEX_GROUPS_READ = "index_row_groups_read"


def count(what: str, n: int = 1) -> None:
    """Add ``n`` to ``what`` in the current scope, if there is one."""
    counts = _SCOPE.get()
    if counts is not None:
        counts[what] += n


@contextlib.contextmanager
def counting() -> Iterator[Counter[str]]:
    """A fresh scope for the ``with`` block; the counter it yields holds what was counted inside."""
    counts: Counter[str] = Counter()
    token = _SCOPE.set(counts)
    try:
        yield counts
    finally:
        _SCOPE.reset(token)
