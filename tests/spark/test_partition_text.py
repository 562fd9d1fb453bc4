"""Partition-folder text read by the Python data source must be what Spark's cast makes of it (the native scan's
reading): checked against the real Spark, with the legacy (non-ANSI) cast the native scan uses."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from storage_handler.spark.partition_text import spark_cast

TEXTS = {
    "int": ["1", "+2", "-3", " 4 ", "007", "2.7", "-2.9", "2.", "2147483647", "2147483648", "abc", "", "1e3"],
    "bigint": ["9223372036854775807", "9223372036854775808", "+5"],
    "tinyint": ["127", "128", "-128"],
    "double": ["1.5", " 4.5", "1.5d", "2f", "inf", "-Infinity", "NaN", "1e3", ".5", "1_0", "x"],
    "decimal(5,2)": ["1.545", " 2.25", "12345.6", "999.995", "-1.005", "1e2", "NaN", "x"],
    "boolean": ["t", "true", "YES", "y", "1", "f", "FALSE", "no", "n", "0", "maybe", " true "],
    "date": ["2024-01-03", "2024-1-3", " 2024-01-06", "+2024-01-07", "2024-01-04 10:00:00", "2024-01-04T10:00",
             "2024", "2024-02", "2024-13-01", "2024-02-30", "x",
             # years a Python date cannot hold (compared as day numbers)
             "12024-01-01", "+12024-03-01", "-0001-01-01", "0000-02-29", "0000-02-30"],
    "timestamp": ["2024-01-01 00:00:00", "2024-01-01 12:00:00.5", "2024-01-01T05:00:00", "2024-01-02",
                  "2024-01-01 05:00:00+01:00", "2024-01-01 05:00:00Z", "2024-01-01 05:00", "x",
                  # zones named in the text: regions (a DST gap and an overlap too), GMT/UTC offsets, short ids
                  "2024-03-10 08:00:00 America/Los_Angeles", "2024-03-10 02:30:00 America/Los_Angeles",
                  "2024-11-03 01:30:00 America/Los_Angeles", "2024-03-10 11:00:00 GMT+01:00",
                  "2024-01-01 05:00:00 UTC+1", "2024-01-01 05:00:00+5", "2024-01-01 05:00:00PST",
                  "2024-01-01 05:00:00 EST", "2024-01-01 05:00:00 Asia/Kolkata", "2024-01-01 05:00:00 Nowhere/Zone",
                  "2024-01-01 05:00:00 GMT", "2024-01-01 05:00:00 UTC-08:00"],
}
ARROW = {"int": pa.int32(), "bigint": pa.int64(), "tinyint": pa.int8(), "double": pa.float64(),
         "decimal(5,2)": pa.decimal128(5, 2), "boolean": pa.bool_(), "date": pa.date32(),
         "timestamp": pa.timestamp("us", tz="UTC")}


@pytest.mark.parametrize("hive_type", sorted(TEXTS))
def test_matches_sparks_cast(spark, hive_type: str) -> None:
    texts = TEXTS[hive_type]
    values = ", ".join("('" + t.replace("'", "\\'") + "')" for t in texts)
    spark.conf.set("spark.sql.ansi.enabled", "false")
    try:
        cast = f"CAST(t AS {hive_type})"
        if hive_type == "date":  # as day numbers: Python's dates cannot hold some of Spark's years
            cast = f"datediff({cast}, DATE '1970-01-01')"
        rows = spark.sql(f"SELECT {cast} FROM VALUES {values} AS v(t)").collect()
    finally:
        spark.conf.unset("spark.sql.ansi.enabled")
    expected = [r[0] for r in rows]
    got = [spark_cast(t, ARROW[hive_type]) for t in texts]
    if hive_type == "timestamp":  # Spark returns zone-less local datetimes in the (UTC) session zone
        got = [None if g is None else g.replace(tzinfo=None) for g in got]
    if hive_type == "date":
        got = [(g - dt.date(1970, 1, 1)).days if isinstance(g, dt.date) else g for g in got]
    def comparable(v: object) -> object:
        return "NaN" if isinstance(v, float) and v != v else v

    assert [(t, comparable(g)) for t, g in zip(texts, got, strict=True)] == \
        [(t, comparable(e)) for t, e in zip(texts, expected, strict=True)]
