"""The three places an index commit can die, for child processes that a test SIGKILLs there.

A child calls :func:`install` before it commits: the next commit then stops at ``point``, creates ``marker``
(the test's signal that the child got there) and sleeps until it is killed. Used by the store's own crash tests
(``tests/stats/test_store.py``) and by the reliability scenario that kills ``hsh`` commands
(``tests/reliability/test_index_crash.py``).

* ``torn_snapshot``: the new snapshot file is written, then cut short (a torn write).
* ``before_pointer_switch``: the snapshot is complete; ``CURRENT`` has not been touched.
* ``before_pointer_rename``: ``CURRENT``'s temporary file is written and fsynced; ``os.replace`` has not run.
"""

from __future__ import annotations

import os
import time
from typing import Any

POINTS = ("torn_snapshot", "before_pointer_switch", "before_pointer_rename")


def install(point: str, marker: str) -> None:
    """Make the next index commit of this process stop at ``point``."""
    from storage_handler.stats import store

    def pause() -> None:
        open(marker, "w").close()
        time.sleep(600)  # SIGKILLed here by the test

    if point == "torn_snapshot":
        real_write = store.pq.write_table

        def torn(table: Any, where: Any, **kw: Any) -> None:
            real_write(table, where, **kw)
            where.flush()
            where.truncate(64)
            pause()

        store.pq.write_table = torn
    elif point == "before_pointer_switch":
        real_pointer = store._write_pointer

        def late(*args: Any) -> None:
            pause()
            real_pointer(*args)

        store._write_pointer = late
    elif point == "before_pointer_rename":
        real_replace = os.replace

        def late_replace(src: str, dst: str) -> None:
            if os.path.basename(dst) == "CURRENT":
                pause()
            real_replace(src, dst)

        store.os.replace = late_replace
    else:
        raise ValueError(f"unknown crash point {point!r}; one of {', '.join(POINTS)}")
