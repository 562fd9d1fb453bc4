"""The Hive Kryo oracle, shared by the Kryo tests: compiled once per session, ONE JVM for the whole run."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.decode.kryo_oracle import Oracle, compile_oracle


@pytest.fixture(scope="session")
def kryo_oracle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Oracle]:
    classes = compile_oracle(tmp_path_factory.mktemp("hive-kryo-oracle"))
    if classes is None:
        pytest.skip("javac/java not on PATH: cannot run Hive 2.3.10's own serializer and reader as the reference")
    oracle = Oracle(classes)
    try:
        oracle.time_zone("UTC")
        yield oracle
    finally:
        oracle.close()
