"""Job-property values written by Hive 2.3.10's own classes (the pyspark wheel's jars), for tests that need no JVM.

Each was produced by ``java/HiveKryoOracle.java`` from the tree next to it; ``test_kryo_conformance`` checks that the
oracle still writes exactly these bytes, so they cannot drift from what Hive writes.
"""

from __future__ import annotations

from tests.decode.kryo_trees import col, const, fn

#: hive.io.filter.expr.serialized for ``x = 2 AND upper(y) = 'A'`` (x int, y string), written in UTC.
EXPR_X2_UPPER_Y = (
    "AQEAamF2YS51dGlsLkFycmF5TGlz9AECAQFvcmcuYXBhY2hlLmhhZG9vcC5oaXZlLnFsLnBsYW4uRXhwck5vZGVHZW5lcmljRnVuY0Rlc+MBAQ"
    "ABAgECb3JnLmFwYWNoZS5oYWRvb3AuaGl2ZS5xbC5wbGFuLkV4cHJOb2RlQ29sdW1uRGVz4wEBgngAAAGCdAEDb3JnLmFwYWNoZS5oYWRvb3Au"
    "aGl2ZS5zZXJkZTIudHlwZWluZm8uUHJpbWl0aXZlVHlwZUluZu8BAWlu9AEEb3JnLmFwYWNoZS5oYWRvb3AuaGl2ZS5xbC5wbGFuLkV4cHJOb2"
    "RlQ29uc3RhbnREZXPjAQEDCQIEAQVvcmcuYXBhY2hlLmhhZG9vcC5oaXZlLnFsLnVkZi5nZW5lcmljLkdlbmVyaWNVREZPUEVxdWHsAQABAwGC"
    "PQFFUVVBzAEGb3JnLmFwYWNoZS5oYWRvb3AuaW8uQm9vbGVhbldyaXRhYmzlAQAAAQMBAWJvb2xlYe4BAQEBAAECAQEBAQABAQECAQGCeQAACA"
    "EDAQFzdHJpbucBB29yZy5hcGFjaGUuaGFkb29wLmhpdmUucWwudWRmLmdlbmVyaWMuR2VuZXJpY1VERlVwcGXyAQABAxkBBAEBAxkDAYJBAQUB"
    "AAECDg8BBgEAAAEDEQEIb3JnLmFwYWNoZS5oYWRvb3AuaGl2ZS5xbC51ZGYuZ2VuZXJpYy5HZW5lcmljVURGT1BBbuQBAQYBAAABAxE="
)
EXPR_X2_UPPER_Y_TREE = fn("and", fn("=", col("int", "x"), const("int", "2")),
                          fn("=", fn("upper", col("string", "y")), const("string", "A")))

#: sarg.pushdown for ``x = 3`` (x int): Spark's ``new Kryo().writeObject`` of Hive's SearchArgumentImpl.
SARG_X3 = (
    "AQEAb3JnLmFwYWNoZS5oYWRvb3AuaGl2ZS5xbC5pby5zYXJnLkV4cHJlc3Npb25UcmXlAQAAAQHHAW9yZy5hcGFjaGUuaGFkb29wLmhpdmUucW"
    "wuaW8uc2FyZy5TZWFyY2hBcmd1bWVudEltcGwkUHJlZGljYXRlTGVhZkltcGwBAYJ4AAkGAAEBAQEBBAECamF2YS51dGlsLkFycmF5TGlz9AEB"
    "AQEEAQABAAABAQQI"
)
SARG_X3_TREE = fn("=", col("int", "x"), const("int", "3"))

#: hive.io.filter.expr.serialized for ``ts < TIMESTAMP '2024-01-02 10:11:12.5'``, written by a JVM in Los Angeles.
EXPR_TS_LOS_ANGELES = (
    "AQEAamF2YS51dGlsLkFycmF5TGlz9AECAQFvcmcuYXBhY2hlLmhhZG9vcC5oaXZlLnFsLnBsYW4uRXhwck5vZGVDb2x1bW5EZXPjAQF08wAAAY"
    "J0AQJvcmcuYXBhY2hlLmhhZG9vcC5oaXZlLnNlcmRlMi50eXBlaW5mby5QcmltaXRpdmVUeXBlSW5m7wEBdGltZXN0YW3wAQNvcmcuYXBhY2hl"
    "LmhhZG9vcC5oaXZlLnFsLnBsYW4uRXhwck5vZGVDb25zdGFudERlc+MBAQIHDQEAAAGMy19X9B3NZQABBG9yZy5hcGFjaGUuaGFkb29wLmhpdm"
    "UucWwudWRmLmdlbmVyaWMuR2VuZXJpY1VERk9QTGVzc1RoYe4BAAEHAYI8AUxFU1MgVEhBzgEFb3JnLmFwYWNoZS5oYWRvb3AuaW8uQm9vbGVh"
    "bldyaXRhYmzlAQAAAQIBAWJvb2xlYe4="
)
EXPR_TS_TREE = fn("<", col("timestamp", "ts"), const("timestamp", "2024-01-02 10:11:12.5"))
