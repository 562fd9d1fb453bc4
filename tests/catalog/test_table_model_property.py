"""Property: whatever happens to a table's partitions and files, the handler reads what plain Spark reads.

Random sequences of: add a partition (inside the table folder, or at its own location elsewhere), drop one (its
folder stays), relocate one (``SET LOCATION`` to a copy elsewhere), add or delete a file, write a folder nobody
registers, refresh the index. Then random predicates over the partition key and a data column: ``spark.sql``
through the handler must return exactly the rows of Spark's own Hive read of the same table.
"""

from __future__ import annotations

import itertools
import os
import shutil
from pathlib import Path

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storage_handler.registration.table_spec import build_partition
from tests.reliability.util import write_parquet

OPS = st.lists(st.one_of(
    st.tuples(st.just("add"), st.integers(0, 9), st.booleans()),
    st.tuples(st.just("drop"), st.integers(0, 20)),
    st.tuples(st.just("relocate"), st.integers(0, 20)),
    st.tuples(st.just("add_file"), st.integers(0, 20), st.integers(0, 500)),
    st.tuples(st.just("delete_file"), st.integers(0, 20)),
    st.tuples(st.just("stray"), st.integers(10, 12)),
    st.just(("refresh",)),
), min_size=1, max_size=10)
WHERES = st.lists(st.one_of(
    st.builds("p = {}".format, st.integers(0, 12)),
    st.builds("v < {}".format, st.integers(0, 600)),
    st.builds("p >= {} OR v = {}".format, st.integers(0, 12), st.integers(0, 600)),
    st.builds("p IN ({}, {}) AND v > {}".format, st.integers(0, 12), st.integers(0, 12), st.integers(0, 600)),
    st.just("true"),
), min_size=1, max_size=3)
COUNTER = itertools.count()


def _file(start: int) -> pa.Table:
    return pa.table({"v": pa.array(range(start, start + 5), pa.int64())})


def _rows(spark, sql: str, native: bool) -> list[tuple]:
    if not native:
        spark.conf.set("spark.hsh.nativeScan", "false")
    try:
        return sorted(tuple(r) for r in spark.sql(sql).collect())
    finally:
        spark.conf.unset("spark.hsh.nativeScan")


@settings(max_examples=int(os.environ.get("HSH_TABLE_MODEL_EXAMPLES", "8")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(ops=OPS, wheres=WHERES)
def test_handler_reads_what_plain_spark_reads(spark, hms, metastore_uri: str, tmp_path_factory, ops, wheres) -> None:
    from metastore.names import parse_table_name
    from storage_handler.meta_hook import IndexMetaHook
    from storage_handler.registration import hooked
    from storage_handler.registration.register import apply_registration, plan_registration

    base = tmp_path_factory.mktemp("prop")
    root = base / "t"
    n = next(COUNTER)
    table_name = f"modelprop.t{n}"
    write_parquet(root / "p=0" / "a.parquet", _file(0))
    write_parquet(root / "p=1" / "a.parquet", _file(100))
    name = parse_table_name(table_name)
    apply_registration(hms, plan_registration(hms, name, str(root)))
    files = iter(range(10**6))

    def registered() -> list:
        return sorted(hms.get_partitions(name.database, name.table), key=lambda p: p.values)

    for op in ops:
        parts = registered()
        if op[0] == "add":
            value, outside = op[1], op[2]
            if any(p.values == [str(value)] for p in parts):
                continue
            folder = base / f"elsewhere{value}" if outside else root / f"p={value}"
            write_parquet(folder / f"f{next(files)}.parquet", _file(value * 50))
            hms.add_partitions(name.database, name.table,
                               [build_partition(hms.get_table(name.database, name.table), [str(value)], str(folder))])
        elif op[0] in ("drop", "relocate", "add_file", "delete_file") and parts:
            part = parts[op[1] % len(parts)]
            folder = Path(part.sd.location.removeprefix("file:"))
            if op[0] == "drop":
                hms.drop_partitions(name.database, name.table, [f"p={part.values[0]}"])
            elif op[0] == "relocate":
                target = base / f"moved{next(files)}"
                shutil.copytree(folder, target) if folder.is_dir() else target.mkdir()
                part.sd.location = str(target)
                hms.raw("alter partition", lambda c, part=part: c.alter_partition(name.database, name.table, part),
                        idempotent=True)
            elif op[0] == "add_file":
                write_parquet(folder / f"f{next(files)}.parquet", _file(op[2]))
            else:
                victims = sorted(folder.glob("*.parquet")) if folder.is_dir() else []
                if victims:
                    victims[0].unlink()
        elif op[0] == "stray":
            write_parquet(root / f"p={op[1]}" / "stray.parquet", _file(700))
        elif op[0] == "refresh":
            hooked.refresh_table(hms, name.database, name.table, IndexMetaHook())

    for where in wheres:
        sql = f"SELECT p, v FROM {table_name} WHERE {where}"
        assert _rows(spark, sql, native=True) == _rows(spark, sql, native=False), (ops, where)
