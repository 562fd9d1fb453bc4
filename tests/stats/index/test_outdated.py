"""An index made under older footer rules prunes nothing until its files are read again under today's.

Each rules version stopped trusting bounds the one before trusted (``StatsOptions.rules``: decimals stored as
bytes by old writers, integers out of the column's range, ...). Such an index, left behind by an upgrade, must not
prune on those bounds between the upgrade and its next refresh; and updates after a write or a follower's poll
must move it to today's rules, not keep stamping the old version on new rows.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from storage_handler.catalog.partitions import Partition, StaticPartitions
from storage_handler.freshness.scoped import IndexedTable, update_partitions
from storage_handler.handler import list_status_for
from storage_handler.registration.statistics import plan_statistics
from storage_handler.stats import load, update_index
from storage_handler.stats.columns import PATH, VERSION_TAG
from storage_handler.stats.index.file_stats import BOUND_RULES
from storage_handler.stats.index.layout import OPTIONS_KEY, options_of, outdated
from storage_handler.table_desc import TableDesc
from storage_handler.types import parse_hive_type

COLUMNS = (("x", parse_hive_type("bigint")),)
KEYS = ("p",)


def _table(root: Path) -> TableDesc:
    for p in (1, 2):
        for f, values in enumerate(([1, 2], [7, 8])):
            folder = root / f"p={p}"
            folder.mkdir(parents=True, exist_ok=True)
            pq.write_table(pa.table({"x": pa.array(values, pa.int64())}), folder / f"f{f}.parquet")
    update_index(str(root), COLUMNS, partition_columns=list(KEYS))
    return TableDesc("db.t", str(root), COLUMNS, (("p", parse_hive_type("int")),))


def _age(root: Path, rules: int) -> None:
    """Rewrite the current snapshot as a build of ``rules`` wrote it: same rows, older rules in its metadata."""
    snapshot = load(str(root))
    assert snapshot is not None
    meta = dict(snapshot.table.schema.metadata)
    meta[OPTIONS_KEY] = json.dumps({**json.loads(meta[OPTIONS_KEY]), "rules": rules}).encode()
    pq.write_table(snapshot.table.replace_schema_metadata(meta), snapshot.path)


def _partitions(desc: TableDesc) -> StaticPartitions:
    return StaticPartitions(tuple(Partition(f"p={p}", (str(p),), f"{desc.location}/p={p}") for p in (1, 2)))


def _kept(desc: TableDesc, where: str) -> list[str]:
    result, _ = list_status_for(desc, where, _partitions(desc))
    return sorted(f.path for f in result.files)


def test_an_outdated_index_prunes_nothing_until_refreshed(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    desc = _table(tmp_path / "t")
    assert _kept(desc, "x = 8") == ["p=1/f1.parquet", "p=2/f1.parquet"]
    _age(tmp_path / "t", BOUND_RULES - 1)
    with caplog.at_level(logging.WARNING):
        result, _ = list_status_for(desc, "x = 8", _partitions(desc))
    assert len(result.files) == 4 and result.metrics.files_without_stats == 4, result.metrics
    assert "older statistics rules" in caplog.text and "hsh index refresh" in caplog.text
    _version, diff = update_index(str(tmp_path / "t"), COLUMNS, partition_columns=list(KEYS))
    assert diff.full_rebuild
    assert _kept(desc, "x = 8") == ["p=1/f1.parquet", "p=2/f1.parquet"]
    snapshot = load(str(tmp_path / "t"))
    assert snapshot is not None and not outdated(snapshot.table.schema)


def test_an_index_of_a_newer_build_is_trusted(tmp_path: Path) -> None:
    desc = _table(tmp_path / "t")
    _age(tmp_path / "t", BOUND_RULES + 1)
    assert _kept(desc, "x = 8") == ["p=1/f1.parquet", "p=2/f1.parquet"]


def test_a_scoped_update_moves_an_outdated_index_to_todays_rules(tmp_path: Path) -> None:
    """A write into p=1 (or a follower's poll of it): its files are read again under today's rules and prune;
    p=2's rows stay untrusted (kept by every query) until their own update or a refresh."""
    root = tmp_path / "t"
    desc = _table(root)
    _age(root, BOUND_RULES - 1)
    indexed = IndexedTable("db.t", str(root), COLUMNS, KEYS)
    update = update_partitions(indexed, [Partition("p=1", ("1",), str(root / "p=1"))])
    assert sorted(update.diff.changed) == ["p=1/f0.parquet", "p=1/f1.parquet"] or update.diff.full_rebuild
    snapshot = load(str(root))
    assert snapshot is not None and options_of(snapshot.table.schema).rules == BOUND_RULES
    tags = dict(zip(snapshot.table[PATH].to_pylist(), snapshot.table[VERSION_TAG].to_pylist(), strict=True))
    assert tags["p=1/f0.parquet"] is not None and tags["p=2/f0.parquet"] is None
    assert _kept(desc, "x = 8") == ["p=1/f1.parquet", "p=2/f0.parquet", "p=2/f1.parquet"]
    update_partitions(indexed, [Partition("p=2", ("2",), str(root / "p=2"))])
    assert _kept(desc, "x = 8") == ["p=1/f1.parquet", "p=2/f1.parquet"]


def test_published_statistics_leave_out_bounds_of_an_outdated_index(tmp_path: Path) -> None:
    from metastore.names import TableName

    root = tmp_path / "t"
    _table(root)
    snapshot = load(str(root))
    assert snapshot is not None
    name = TableName("db", "t")

    def columns(index: pa.Table) -> dict[str, object]:
        plan = plan_statistics(name, str(root), [("x", "bigint")], ["p"], index, 1)
        assert plan.name == name
        return dict(plan.summary("p=1").columns)

    assert columns(snapshot.table)["x"].min == 1
    _age(root, BOUND_RULES - 1)
    aged = load(str(root))
    assert aged is not None
    summary = columns(aged.table)
    assert "x" not in summary or summary["x"].min is None, summary
