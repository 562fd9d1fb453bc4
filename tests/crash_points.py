"""The places an index commit can die, for child processes that a test SIGKILLs there.

A child calls :func:`install` before it commits: the next commit then stops at ``point``, creates ``marker``
(the test's signal that the child got there) and sleeps until it is killed. Used by the store's own crash tests
(``tests/stats/index/test_store.py``) and by the reliability scenario that kills ``hsh`` commands
(``tests/reliability/test_index_crash.py``).

* ``torn_snapshot``: the new snapshot is being written: half of it sits in a local temporary file (an S3 PUT cut
  short stores nothing, so there the process dies before the request completes).
* ``before_create``: the snapshot's bytes are ready; the create-if-absent of the new version has not run.
* ``before_collect``: the new version is created (committed); old versions are not collected yet. Unlike the
  first two, the new version is then current.
"""

from __future__ import annotations

import os
import time
from typing import Any

POINTS = ("torn_snapshot", "before_create")  # the commit did not happen: the previous version stays current
AFTER_COMMIT = "before_collect"


def install(point: str, marker: str) -> None:
    """Make the next index commit of this process stop at ``point``."""
    from storage_handler.stats.index import versions
    from storage_handler.storage import local, s3
    from storage_handler.storage.location import local_path

    def pause() -> None:
        open(marker, "w").close()
        time.sleep(600)  # SIGKILLed here by the test

    if point == "torn_snapshot":
        def torn_local(self: Any, uri: str, data: bytes) -> bool:
            path = local_path(uri)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(os.path.join(os.path.dirname(path), ".tmp-torn"), "wb") as fh:
                fh.write(data[: len(data) // 2])
            pause()
            return False

        def torn_s3(self: Any, uri: str, data: bytes) -> bool:
            pause()
            return False

        local.LocalStorage.create = torn_local  # type: ignore[method-assign]
        s3.S3Storage.create = torn_s3  # type: ignore[method-assign]
    elif point == "before_create":
        real_create = versions.create

        def late_create(*args: Any) -> bool:
            pause()
            return real_create(*args)

        versions.create = late_create
    elif point == AFTER_COMMIT:
        real_collect = versions.collect

        def late_collect(*args: Any, **kw: Any) -> list[str]:
            pause()
            return real_collect(*args, **kw)

        versions.collect = late_collect
    else:
        raise ValueError(f"unknown crash point {point!r}; one of {', '.join((*POINTS, AFTER_COMMIT))}")
