"""``hsh sync``: new partitions and columns, refused schema changes, dry run, and two syncs at once."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metastore.names import parse_table_name
from storage_handler.errors import SchemaError
from storage_handler.registration.register import apply_registration, plan_registration
from storage_handler.registration.sync import apply_sync, plan_sync
from storage_handler.stats import load
from tests.helpers import run_hsh


def _write(root: Path, part: str, name: str, table: pa.Table) -> None:
    (root / part).mkdir(parents=True, exist_ok=True)
    pq.write_table(table, root / part / name)


def _data_files(root: Path) -> list[Path]:
    return [f for f in root.rglob("*.parquet") if "_hsh_index" not in f.parts]


@pytest.fixture()
def small_table(hms, tmp_path: Path, request) -> tuple[str, Path]:
    root = tmp_path / "t"
    for day in ("1", "2"):
        _write(root, f"d={day}", "a.parquet", pa.table({"x": pa.array([int(day)], pa.int64()), "s": ["v"]}))
    name = "sync.t_" + re.sub(r"[^a-z0-9_]", "_", request.node.name.lower())[-40:]
    apply_registration(hms, plan_registration(hms, parse_table_name(name), str(root)))
    return name, root


def test_new_partitions_and_columns_are_added(hms, small_table) -> None:
    name, root = small_table
    _write(root, "d=3", "a.parquet", pa.table({"x": pa.array([3], pa.int64()), "s": ["w"], "extra": [1.5]}))
    tn = parse_table_name(name)
    plan = plan_sync(hms, tn)
    assert [n for n, _ in plan.new_columns] == ["extra"] and len(plan.partitions_to_add) == 1
    result = apply_sync(hms, plan)
    assert result["partitions_added"] == 1 and result["index_added"] >= 1
    table = hms.get_table(tn.database, tn.table)
    assert [(c.name, c.type) for c in table.sd.cols] == [("x", "bigint"), ("s", "string"), ("extra", "double")]
    assert "d=3" in hms.get_partition_names(tn.database, tn.table)
    assert not any(k.startswith("spark.sql.sources") for k in table.parameters)  # still a plain Hive table
    snapshot = load(table.sd.location)
    assert sorted(snapshot.table.column("path").to_pylist()) == ["d=1/a.parquet", "d=2/a.parquet", "d=3/a.parquet"]
    assert apply_sync(hms, plan_sync(hms, tn))["partitions_added"] == 0  # converged


def test_vanished_partitions_are_dropped_only_when_asked(hms, small_table) -> None:
    name, root = small_table
    tn = parse_table_name(name)
    shutil.rmtree(root / "d=2")
    plan = plan_sync(hms, tn)
    assert plan.partitions_to_drop == () and plan.missing_partitions == ("d=2",)
    apply_sync(hms, plan)
    assert "d=2" in hms.get_partition_names(tn.database, tn.table)
    apply_sync(hms, plan_sync(hms, tn, drop_missing=True))
    assert hms.get_partition_names(tn.database, tn.table) == ["d=1"]
    assert load(hms.get_table(tn.database, tn.table).sd.location).table.column("path").to_pylist() == ["d=1/a.parquet"]


def test_drop_missing_drops_the_last_partition_holding_a_column_and_keeps_the_column(hms, small_table) -> None:
    """A column added by one partition's files, then that partition deleted: plain sync refuses (it looks like a
    rename) and says how to go on; with --drop-missing the partition goes and the column stays, reading NULL."""
    name, root = small_table
    tn = parse_table_name(name)
    _write(root, "d=3", "a.parquet", pa.table({"x": pa.array([3], pa.int64()), "s": ["w"], "region": ["eu"]}))
    apply_sync(hms, plan_sync(hms, tn))
    shutil.rmtree(root / "d=3")
    with pytest.raises(SchemaError, match=f"'region'.*`hsh sync {name} --drop-missing` keeps the column"):
        plan_sync(hms, tn)
    plan = plan_sync(hms, tn, drop_missing=True)
    assert plan.columns_in_no_file == ("region",) and plan.partitions_to_drop == ("d=3",)
    result = apply_sync(hms, plan)
    assert result["columns_in_no_file"] == ["region"] and result["partitions_dropped"] == 1
    table = hms.get_table(tn.database, tn.table)
    assert [c.name for c in table.sd.cols] == ["x", "s", "region"]
    assert sorted(hms.get_partition_names(tn.database, tn.table)) == ["d=1", "d=2"]


@pytest.mark.parametrize(
    ("change", "needles"),
    [
        ("type", ["'x'", "bigint", "string", "d=1/a.parquet"]),
        ("mixed_types", ["'x'", "int64", "string", "d=1/a.parquet", "d=2/b.parquet"]),
        ("dropped", ["'s'", "dropped or renamed"]),
        ("partition_key", ["partition keys"]),
    ],
)
def test_incompatible_changes_are_refused(hms, small_table, change: str, needles: list[str]) -> None:
    name, root = small_table
    tn = parse_table_name(name)
    if change == "type":
        for f in _data_files(root):
            pq.write_table(pa.table({"x": ["not a number"], "s": ["v"]}), f)
    elif change == "mixed_types":
        _write(root, "d=2", "b.parquet", pa.table({"x": ["not a number"], "s": ["v"]}))
    elif change == "dropped":
        for f in _data_files(root):
            pq.write_table(pa.table({"x": pa.array([1], pa.int64())}), f)
    else:
        shutil.rmtree(root / "d=1")
        _write(root, "e=1", "a.parquet", pa.table({"x": pa.array([1], pa.int64()), "s": ["v"]}))
        shutil.rmtree(root / "d=2")
    before = hms.get_table(tn.database, tn.table)
    with pytest.raises(SchemaError) as info:
        plan_sync(hms, tn)
    for needle in needles:
        assert needle in str(info.value)
    after = hms.get_table(tn.database, tn.table)
    assert [(c.name, c.type) for c in after.sd.cols] == [(c.name, c.type) for c in before.sd.cols]


@pytest.mark.parametrize("folder", ["d=abc", "d=3.5", "d=99999999999", "d=3 "])
def test_folders_whose_values_the_key_cannot_hold_are_refused(hms, small_table, folder: str) -> None:
    """``d`` is ``int``: a plain Spark session would fail every query of the table on such a partition (``3 ``
    also made the metastore refuse the add halfway, after the index had moved)."""
    name, root = small_table
    tn = parse_table_name(name)
    _write(root, folder, "a.parquet", pa.table({"x": pa.array([3], pa.int64()), "s": ["w"]}))
    _write(root, "d=4", "a.parquet", pa.table({"x": pa.array([4], pa.int64()), "s": ["w"]}))
    with pytest.raises(SchemaError, match=r"partition key 'd' is int but 1 new folder\(s\) .* hold values it cannot"):
        plan_sync(hms, tn)
    assert sorted(hms.get_partition_names(tn.database, tn.table)) == ["d=1", "d=2"]
    shutil.rmtree(root / folder)
    apply_sync(hms, plan_sync(hms, tn))
    assert sorted(hms.get_partition_names(tn.database, tn.table)) == ["d=1", "d=2", "d=4"]


def test_a_folder_that_is_another_partitions_location_is_not_added(hms, small_table) -> None:
    """``ALTER TABLE ... PARTITION (d=5) SET LOCATION '.../d=4'``: the folder ``d=4`` is d=5's, and adding it as
    d=4 too would read its rows twice (Hive's MSCK skips such folders)."""
    name, root = small_table
    tn = parse_table_name(name)
    _write(root, "d=4", "a.parquet", pa.table({"x": pa.array([44], pa.int64()), "s": ["w"]}))
    table = hms.get_table(tn.database, tn.table)
    from storage_handler.registration.table_spec import build_partition

    hms.add_partitions(tn.database, tn.table, [build_partition(table, ["5"], f"file:{root / 'd=4'}")])
    plan = plan_sync(hms, tn)
    assert plan.partitions_to_add == ()
    assert plan_registration(hms, tn, str(root)).missing_partitions == ()  # registering again: the same rule
    apply_sync(hms, plan)
    assert sorted(hms.get_partition_names(tn.database, tn.table)) == ["d=1", "d=2", "d=5"]


def test_dry_run_prints_the_diff_and_changes_nothing(metastore_uri: str, hms, small_table) -> None:
    name, root = small_table
    tn = parse_table_name(name)
    _write(root, "d=9", "a.parquet", pa.table({"x": pa.array([9], pa.int64()), "s": ["z"], "more": [True]}))
    version = load(hms.get_table(tn.database, tn.table).sd.location).version
    proc = run_hsh("sync", name, "--dry-run", "--json", "--metastore", metastore_uri)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["partitions_to_add"] == ["d=9"] and out["new_columns"] == [{"name": "more", "type": "boolean"}]
    assert "d=9" not in hms.get_partition_names(tn.database, tn.table)
    assert load(hms.get_table(tn.database, tn.table).sd.location).version == version


def test_two_concurrent_syncs_lose_nothing(metastore_uri: str, hms, tmp_path: Path) -> None:
    import subprocess
    import sys

    root = tmp_path / "conc"
    _write(root, "k=0", "f.parquet", pa.table({"v": [0]}))
    apply_registration(hms, plan_registration(hms, parse_table_name("sync.conc"), str(root)))
    for k in range(1, 121):
        _write(root, f"k={k}", "f.parquet", pa.table({"v": [k]}))
    cmd = [sys.executable, "-m", "storage_handler.cli.main", "sync", "sync.conc", "--json", "--batch-size", "7",
           "--metastore", metastore_uri]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    names = hms.get_partition_names("sync", "conc")
    assert len(names) == 121 and len(set(names)) == 121
    paths = load(hms.get_table("sync", "conc").sd.location).table.column("path").to_pylist()
    assert sorted(paths) == sorted(f"k={k}/f.parquet" for k in range(121))
    assert any(json.loads(o)["locked"] for o, _ in outs)


LEGACY = {"spark.sql.sources.provider": "hsh", "spark.sql.sources.schema.numParts": "1",
          "spark.sql.sources.schema.part.0": '{"type":"struct","fields":[]}'}


def _make_legacy(hms, tn) -> None:
    """Put back what versions before 0.2 wrote on every registered table (a Spark provider and schema)."""
    table = hms.get_table(tn.database, tn.table)
    table.parameters.update(LEGACY)
    hms.alter_table(table)


def test_tables_registered_the_old_way_are_upgraded(metastore_uri: str, hms, small_table) -> None:
    name, _root = small_table
    tn = parse_table_name(name)
    _make_legacy(hms, tn)
    described = json.loads(run_hsh("describe", name, "--json", "--metastore", metastore_uri).stdout)
    assert described["legacy_parameters_to_remove"] == sorted(LEGACY)
    dry = json.loads(run_hsh("sync", name, "--dry-run", "--json", "--metastore", metastore_uri).stdout)
    assert dry["parameters_to_remove"] == sorted(LEGACY)
    assert LEGACY.items() <= hms.get_table(tn.database, tn.table).parameters.items()  # the dry run changed nothing
    done = json.loads(run_hsh("sync", name, "--json", "--metastore", metastore_uri).stdout)
    assert done["parameters_to_remove"] == sorted(LEGACY)
    params = hms.get_table(tn.database, tn.table).parameters
    assert not any(k.startswith("spark.sql.sources") for k in params) and "hsh.storage_handler" in params
    again = json.loads(run_hsh("sync", name, "--json", "--metastore", metastore_uri).stdout)
    assert again["parameters_to_remove"] == []  # idempotent
    described = json.loads(run_hsh("describe", name, "--json", "--metastore", metastore_uri).stdout)
    assert described["legacy_parameters_to_remove"] == []


def test_schema_spark_saved_itself_is_left_alone(hms, small_table) -> None:
    """Plain Spark saves a Hive table's case-sensitive schema on its first read (no provider): that is Spark's."""
    name, _root = small_table
    tn = parse_table_name(name)
    table = hms.get_table(tn.database, tn.table)
    spark_own = {k: v for k, v in LEGACY.items() if k != "spark.sql.sources.provider"}
    table.parameters.update(spark_own)
    hms.alter_table(table)
    plan = plan_sync(hms, tn)
    assert plan.parameters_to_remove == ()
    apply_sync(hms, plan)
    assert spark_own.items() <= hms.get_table(tn.database, tn.table).parameters.items()


def test_a_column_widened_by_alter_table_syncs_new_files_of_the_wider_type(hms, tmp_path: Path) -> None:
    """`x int` registered from INT32 files, widened to bigint (`ALTER TABLE ... CHANGE x x bigint`), a new folder
    written with INT64 values beyond int: sync adds it (Spark reads both files as bigint) and the index bounds it
    as the table reads it; a file of a type bigint cannot read (text) is still refused, naming it."""
    root = tmp_path / "w"
    _write(root, "d=1", "a.parquet", pa.table({"x": pa.array([1, 2], pa.int32())}))
    tn = parse_table_name("sync.widened")
    apply_registration(hms, plan_registration(hms, tn, str(root)))
    table = hms.get_table(tn.database, tn.table)
    table.sd.cols[0].type = "bigint"
    hms.alter_table(table)
    _write(root, "d=2", "b.parquet", pa.table({"x": pa.array([3_000_000_000, 4], pa.int64())}))
    plan = plan_sync(hms, tn)
    assert len(plan.partitions_to_add) == 1 and plan.new_columns == ()
    apply_sync(hms, plan)
    assert sorted(hms.get_partition_names(tn.database, tn.table)) == ["d=1", "d=2"]
    assert [(c.name, c.type) for c in hms.get_table(tn.database, tn.table).sd.cols] == [("x", "bigint")]
    rows = load(table.sd.location).table
    bounds = dict(zip(rows.column("path").to_pylist(), rows.column("max_values").to_pylist(), strict=True))
    assert bounds["d=2/b.parquet"] == {"x": 3_000_000_000} and bounds["d=1/a.parquet"] == {"x": 2}
    _write(root, "d=3", "c.parquet", pa.table({"x": ["not a number"]}))
    with pytest.raises(SchemaError, match=r"'x'.*d=3/c.parquet"):
        plan_sync(hms, tn)
