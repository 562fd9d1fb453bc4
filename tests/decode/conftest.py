"""The Hive Kryo oracles, shared by the Kryo tests: compiled once per release, ONE JVM per release for the whole run.

``kryo_oracle`` is Hive 2.3.10's (the running pyspark's jars): the tests of behavior that does not depend on the
release use it. ``release_oracle`` is parametrized over every supported release (:mod:`tests.hive_releases`): the
tests that check a release's format use it. A release whose jars are missing fails those tests, with the fix
(``make compat``), unless ``HSH_ALLOW_MISSING_COMPAT=1``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import hive_releases
from tests.decode.kryo_oracle import NEWEST, Oracle, compile_oracle


class OraclePool:
    """Starts each release's oracle on first use and stops them all (each by its own process) at the end."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.oracles: dict[str, Oracle] = {}

    def get(self, release: str) -> Oracle:
        oracle = self.oracles.get(release)
        if oracle is None:
            hive_releases.require_jars(release)
            (self.workdir / release).mkdir(exist_ok=True)
            classes = compile_oracle(self.workdir / release, release)
            if classes is None:
                pytest.skip(f"javac/java not on PATH: cannot run Hive {release}'s own serializer and reader")
            oracle = self.oracles[release] = Oracle(classes, release)
            oracle.time_zone("UTC")
        return oracle

    def close(self) -> None:
        for oracle in self.oracles.values():
            oracle.close()


@pytest.fixture(scope="session")
def oracle_pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OraclePool]:
    pool = OraclePool(tmp_path_factory.mktemp("hive-kryo-oracles"))
    try:
        yield pool
    finally:
        pool.close()


@pytest.fixture(scope="session")
def kryo_oracle(oracle_pool: OraclePool) -> Oracle:
    return oracle_pool.get(NEWEST)


@pytest.fixture(scope="session", params=hive_releases.RELEASES, ids=lambda r: f"hive-{r}")
def release_oracle(request: pytest.FixtureRequest, oracle_pool: OraclePool) -> Oracle:
    return oracle_pool.get(request.param)
