"""Session fixture: one JVM running Hive's real SearchArgument builder (``java/HiveSargOracle.java``)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from .oracle import HiveOracle, wheel_jars


@pytest.fixture(scope="session")
def hive_oracle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HiveOracle]:
    """Compile the oracle against the wheel's jars into a temp dir and start it once; stop it by its Popen."""
    if shutil.which("javac") is None or shutil.which("java") is None:
        pytest.skip("javac/java not on PATH: cannot run Hive's SearchArgumentImpl as the reference")
    if wheel_jars() is None:
        pytest.fail(
            "pyspark's jars/hive-storage-api-2.8.1.jar is missing: reinstall the pinned pyspark wheel"
        )
    oracle = HiveOracle(tmp_path_factory.mktemp("hive-sarg-oracle"))
    try:
        yield oracle
    finally:
        oracle.close()
