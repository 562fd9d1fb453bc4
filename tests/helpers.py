"""Helpers shared by tests (importable as ``tests.helpers``)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from storage_handler.catalog import StaticPartitions


def run_hsh(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run the real ``hsh`` command line in a subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "storage_handler.cli.main", *args],
        capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})},
    )


def folder_partitions(location: str | Path, keys: Sequence[str]) -> StaticPartitions:
    """The ``k=v`` folders under ``location`` as a partition source: for tests whose datasets are in no metastore
    (a real read lists the metastore's partitions instead; a folder nobody registered is not part of a table)."""
    from storage_handler.catalog import Partition, StaticPartitions
    from storage_handler.hive_paths import partition_path
    from storage_handler.stats.files.walk import list_data_files
    from storage_handler.storage import local_path

    root = local_path(str(location)).rstrip("/")
    seen: dict[str, Partition] = {}
    for f in list_data_files(str(location), list(keys)):
        values = tuple(f.partition_values.get(k.lower()) for k in keys)
        folder = f.path.rsplit("/", 1)[0]
        name = partition_path(list(zip(keys, values, strict=True)))
        seen.setdefault(name, Partition(name, values, f"{root}/{folder}"))
    return StaticPartitions(tuple(seen.values()))


def examples(n: int) -> int:
    """Hypothesis examples for a property test: ``n``, or a tenth of it (at least 5) under ``make test-fast`` and in
    the per-line compatibility runs (``HYPOTHESIS_PROFILE=fast``), or ten times it under ``make test-deep``
    (``HYPOTHESIS_PROFILE=deep``: a hunt for the rare input, run by hand, not in CI). ``make test`` runs the full
    counts."""
    profile = os.environ.get("HYPOTHESIS_PROFILE")
    if profile == "fast":
        return max(5, n // 10)
    return n * 10 if profile == "deep" else n


@contextmanager
def session_settings(spark: Any, settings: dict[str, str]) -> Iterator[None]:
    """``settings`` set on the shared Spark session for the block, and unset after it whatever happens."""
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key in settings:
            spark.conf.unset(key)
