"""A column whose type changed after indexing (an ``ALTER TABLE`` the handler's hook did not see) prunes nothing
by its statistics until a refresh indexes it under the new type.

Bloom filters are hashed in the indexed type's encoding (``int`` 6 and ``bigint`` 6 are different keys), and
bounds describe the stored values, not what the new type reads (``string`` -> ``varchar(3)`` cuts them).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from storage_handler.handler import list_status_for
from storage_handler.stats import update_index
from storage_handler.stats.index.file_stats import StatsOptions
from storage_handler.stats.membership.spec import MembershipSpec
from storage_handler.table_desc import TableDesc
from storage_handler.types import parse_hive_type


def _kept(root: Path, column_type: str, where: str) -> list[str]:
    desc = TableDesc("db.t", str(root), (("c", parse_hive_type(column_type)),))
    result, _ = list_status_for(desc, where)
    return sorted(f.path for f in result.files)


def test_bloom_filters_of_a_widened_integer_are_not_probed_in_the_new_encoding(tmp_path: Path) -> None:
    root = tmp_path / "t"
    root.mkdir()
    pq.write_table(pa.table({"c": pa.array([5, 6, 100], pa.int32())}), root / "f0.parquet")
    pq.write_table(pa.table({"c": pa.array([50, 60, 1000], pa.int32())}), root / "f1.parquet")
    options = StatsOptions(membership=MembershipSpec(bloom_columns=("c",)))
    update_index(str(root), [("c", parse_hive_type("int"))], options=options)
    assert _kept(root, "int", "c = 60") == ["f1.parquet"]  # the filter rules f0 out: its bounds do not
    assert _kept(root, "bigint", "c = 6") == ["f0.parquet", "f1.parquet"]  # unknown since the ALTER: kept
    update_index(str(root), [("c", parse_hive_type("bigint"))], options=options)
    assert _kept(root, "bigint", "c = 60") == ["f1.parquet"]


def test_bounds_of_a_string_now_cut_to_varchar_are_not_used(tmp_path: Path) -> None:
    root = tmp_path / "t"
    root.mkdir()
    pq.write_table(pa.table({"c": ["abcdef"]}), root / "f0.parquet")
    update_index(str(root), [("c", parse_hive_type("string"))])
    assert _kept(root, "string", "c = 'abc'") == []
    assert _kept(root, "varchar(3)", "c = 'abc'") == ["f0.parquet"]  # Spark reads 'abc': a match


def test_a_collated_string_column_prunes_nothing_by_its_statistics(tmp_path: Path) -> None:
    """Spark 4's ``ALTER COLUMN s TYPE STRING COLLATE UTF8_LCASE``: ``s = 'a'`` matches 'A', which byte-ordered
    bounds rule out. The type did not parse (every query of the table failed); dropping the collation would have
    pruned the file holding 'A'."""
    root = tmp_path / "t"
    root.mkdir()
    pq.write_table(pa.table({"c": ["a", "b"]}), root / "lower.parquet")
    pq.write_table(pa.table({"c": ["A", "B"]}), root / "upper.parquet")
    update_index(str(root), [("c", parse_hive_type("string"))])
    assert _kept(root, "string", "c = 'a'") == ["lower.parquet"]
    assert _kept(root, "string collate UTF8_LCASE", "c = 'a'") == ["lower.parquet", "upper.parquet"]
    assert _kept(root, "string COLLATE UTF8_BINARY", "c = 'a'") == ["lower.parquet"]  # byte order: as plain
