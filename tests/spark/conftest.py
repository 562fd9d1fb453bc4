"""Fixtures of the aggregate tests (``test_aggregates*.py``): a metastore client, a small dated table, and the
threshold setting that lets tiny tables be answered."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.spark.aggregate_tables import DRIVER_BYTES, register_pair


@pytest.fixture
def answer_whatever_it_saves(spark):  # noqa: ANN001, ANN201
    """These tables are tiny: without this the rewrite would apply only where nothing is left to read (its
    threshold: ``test_small_savings_are_read_and_nothing_left_to_read_is_answered``)."""
    spark.conf.set("spark.hsh.aggregates.minAnsweredBytes", "0")
    yield
    spark.conf.unset("spark.hsh.aggregates.minAnsweredBytes")
    spark.conf.unset(DRIVER_BYTES)


@pytest.fixture(scope="module")
def catalog(metastore_uri: str):  # noqa: ANN201
    from metastore.client import MetastoreClient

    with MetastoreClient(metastore_uri) as client:
        yield client


@pytest.fixture(scope="module")
def dated(tmp_path_factory: pytest.TempPathFactory, catalog: Any) -> tuple[str, str, Path]:
    """Ten files, one day of ``d`` each, with exact integer and date statistics: a range of days is answerable."""
    root = tmp_path_factory.mktemp("dated") / "table"
    root.mkdir(parents=True)
    for k in range(10):
        day = dt.date(2024, 1, 1) + dt.timedelta(days=k)
        pq.write_table(pa.table({"i": pa.array(range(k * 10, k * 10 + 10), pa.int64()),
                                 "d": pa.array([day] * 10, pa.date32()), "s": pa.array(["v"] * 10)}),
                       root / f"part-{k}.parquet")
    handled, plain = register_pair(catalog, root)
    return handled, plain, root
