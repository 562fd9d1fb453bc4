"""Registration round trip against a real metastore."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from metastore.names import parse_table_name
from storage_handler.contract import PARAM_INDEX_VERSION
from storage_handler.handler import INPUT_FORMAT, SERDE
from storage_handler.hive_paths import escape_partition_value, unescape_partition_value
from storage_handler.registration.register import apply_registration, plan_registration
from tests.helpers import run_hsh


def _register(hms, name: str, path: Path, **kw):
    plan = plan_registration(hms, parse_table_name(name), str(path), **kw)
    return apply_registration(hms, plan, batch_size=2)


def test_round_trip_matches_dataset(hms, events_dataset: Path) -> None:
    result = _register(hms, "reg.events", events_dataset)
    assert result["partitions_added"] == 3
    table = hms.get_table("reg", "events")
    schema = pq.read_schema(next(events_dataset.rglob("*.parquet")))
    assert [c.name for c in table.sd.cols] == schema.names
    assert [c.type for c in table.sd.cols] == [
        "bigint", "int", "string", "decimal(10,2)", "double", "boolean", "timestamp", "date"
    ]
    assert [(k.name, k.type) for k in table.partitionKeys] == [("dt", "string")]
    assert table.tableType == "EXTERNAL_TABLE" and table.parameters["EXTERNAL"] == "TRUE"
    assert table.sd.inputFormat == INPUT_FORMAT and table.sd.serdeInfo.serializationLib == SERDE
    assert "storage_handler" not in table.parameters  # Spark cannot load a Python class
    parts = {tuple(p.values): p.sd.location for p in hms.get_partitions("reg", "events")}
    assert parts == {
        (d,): f"file:{events_dataset}/dt={d}" for d in ("2024-01-01", "2024-01-02", "2024-01-03")
    }


def test_rerun_is_idempotent_and_adds_only_new_partitions(hms, events_dataset: Path) -> None:
    _register(hms, "reg.idem", events_dataset)
    again = _register(hms, "reg.idem", events_dataset)
    assert again["create_table"] is False and again["partitions_added"] == 0
    new_day = events_dataset / "dt=2024-01-09"
    shutil.copytree(events_dataset / "dt=2024-01-01", new_day)
    third = _register(hms, "reg.idem", events_dataset)
    assert third["partitions_added"] == 1
    assert sorted(hms.get_partition_names("reg", "idem"))[-1] == "dt=2024-01-09"


def test_another_folder_under_an_existing_name_is_refused(hms, events_dataset: Path, tmp_path: Path) -> None:
    """Its statistics would be filed as the table's, and the table's own files read as unindexed (never pruned)."""
    from storage_handler.errors import DatasetError

    _register(hms, "reg.moved", events_dataset)
    version = hms.get_table("reg", "moved").parameters[PARAM_INDEX_VERSION]
    copy = tmp_path / "copy"
    shutil.copytree(events_dataset, copy, ignore=shutil.ignore_patterns("_hsh_index"))
    with pytest.raises(DatasetError, match=f"reg.moved is registered at file:{events_dataset}, not at .*copy; "
                                           "register that folder under another name, or drop the table first"):
        _register(hms, "reg.moved", copy)
    assert hms.get_table("reg", "moved").parameters[PARAM_INDEX_VERSION] == version
    assert not (copy / "_hsh_index").exists()
    # the same folder, however it is written, is the same table
    for spelling in (f"{events_dataset}/", f"file:{events_dataset}", f"{events_dataset}/dt=2024-01-01/.."):
        assert _register(hms, "reg.moved", Path(spelling))["create_table"] is False


def test_dry_run_changes_nothing(metastore_uri: str, hms, events_dataset: Path) -> None:
    proc = run_hsh("register", "dry.events", str(events_dataset), "--dry-run", "--json", "--metastore", metastore_uri)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["dry_run"] is True and out["create_database"] is True and out["partitions_to_add"] == 3
    assert "dry" not in hms.get_all_databases()


def test_drop_keeps_data_unless_purged(metastore_uri: str, hms, events_dataset: Path) -> None:
    _register(hms, "reg.dropme", events_dataset)
    proc = run_hsh("drop", "reg.dropme", "--metastore", metastore_uri)
    assert proc.returncode == 0, proc.stderr
    assert not hms.table_exists("reg", "dropme")
    assert len(list(events_dataset.rglob("*.parquet"))) == 9
    _register(hms, "reg.dropme", events_dataset)
    proc = run_hsh("drop", "reg.dropme", "--purge", "--metastore", metastore_uri)
    assert proc.returncode == 0, proc.stderr
    assert not events_dataset.exists()


def test_dropping_one_of_two_tables_on_a_folder_keeps_what_the_other_uses(metastore_uri: str, hms,
                                                                         events_dataset: Path) -> None:
    """Hive allows two external tables on one folder; registered, they share its index. Dropping one deleted the
    index the other prunes with, and ``--purge`` the other's data."""
    _register(hms, "shared.one", events_dataset)
    _register(hms, "shared.two", events_dataset)
    proc = run_hsh("drop", "shared.two", "--purge", "--metastore", metastore_uri)
    assert proc.returncode == 2 and "also the folder of registered table shared.one" in proc.stderr, proc.stderr
    assert hms.table_exists("shared", "two") and len(list(events_dataset.rglob("*.parquet"))) >= 9
    proc = run_hsh("drop", "shared.two", "--metastore", metastore_uri)
    assert proc.returncode == 0 and "stay: registered table shared.one uses them" in proc.stderr, proc.stderr
    assert (events_dataset / "_hsh_index").is_dir()
    proc = run_hsh("drop", "shared.one", "--metastore", metastore_uri)
    assert proc.returncode == 0, proc.stderr
    assert not (events_dataset / "_hsh_index").exists()


def test_partition_values_are_hive_escaped_and_typed(hms, tmp_path: Path) -> None:
    import pyarrow as pa

    values = ["a/b", "..", "x=y", "50%", "日本", None]
    for i, v in enumerate(values):
        folder = tmp_path / "t" / f"n={i * 10}" / f"s={escape_partition_value(v)}"
        folder.mkdir(parents=True)
        pq.write_table(pa.table({"x": [i]}), folder / "f.parquet")
    _register(hms, "reg.escaped", tmp_path / "t")
    table = hms.get_table("reg", "escaped")
    assert [(k.name, k.type) for k in table.partitionKeys] == [("n", "int"), ("s", "string")]
    got = {tuple(p.values) for p in hms.get_partitions("reg", "escaped")}
    assert got == {(str(i * 10), "__HIVE_DEFAULT_PARTITION__" if v is None else v) for i, v in enumerate(values)}


@pytest.mark.parametrize(("values", "expected"), [
    (["7", "-3", "+12", "007"], "int"), (["2147483648"], "bigint"), (["99999999999999999999"], "string"),
    (["\u0663"], "string"), (["1", "\uff12"], "string"), (["1.5"], "string"), ([None, "4"], "int"),
])
def test_partition_types_are_inferred_as_spark_casts(values: list[str | None], expected: str) -> None:
    """Only ASCII digits make an integer column: Spark's cast refuses Arabic-Indic or full-width digits, so such a
    folder typed int failed every plain read while Python's ``\\d`` took it for a number."""
    from storage_handler.registration.dataset import infer_partition_type

    assert infer_partition_type(values).name == expected


@pytest.mark.parametrize(("value", "hive_type", "fits"), [
    ("12", "int", True), ("-3", "tinyint", True), ("128", "tinyint", False), ("3.5", "int", False),
    ("abc", "bigint", False), ("3 ", "int", False), ("\u0663", "int", False), (None, "int", True),
    ("2024-01-05", "date", True), ("2024-1-5", "date", False), ("2024-02-30", "date", False),
    ("anything at all", "string", True), ("1.25", "decimal(5,2)", True), ("x", "double", False),
])
def test_a_new_folder_value_fits_its_registered_key_type(value: str | None, hive_type: str, fits: bool) -> None:
    """What `hsh sync` adds under a key already typed: the values registration would have kept that type for."""
    from storage_handler.registration.dataset import partition_value_fits
    from storage_handler.types import parse_hive_type

    assert partition_value_fits(value, parse_hive_type(hive_type)) is fits


@pytest.mark.parametrize("value", ["a/b", "..", "x=y", "50%", "日本", "", "sp ace", "#?*"])
def test_escape_round_trip(value: str) -> None:
    expected = None if value == "" else value
    assert unescape_partition_value(escape_partition_value(value)) == expected
    assert "/" not in escape_partition_value(value)


@pytest.mark.parametrize(("a", "b", "why"), [
    ("k=a b", "k=a%20b", "the same once Hive's %XX escapes are decoded"),
    ("k=", "k=__HIVE_DEFAULT_PARTITION__", "both NULL"),
])
def test_two_folders_for_one_partition_are_refused_saying_why(tmp_path: Path, a: str, b: str, why: str) -> None:
    import pyarrow as pa

    from storage_handler.errors import DatasetError
    from storage_handler.registration.dataset import discover

    for folder in (a, b):
        (tmp_path / folder).mkdir()
        pq.write_table(pa.table({"x": [1]}), tmp_path / folder / "f.parquet")
    with pytest.raises(DatasetError, match=f"same Hive partition \\(.*{why}"):
        discover(str(tmp_path))


def test_registered_table_is_a_plain_hive_table(hms, events_dataset: Path) -> None:
    """No Spark provider or schema: every Spark session, with this package or without, reads it as Hive Parquet."""
    name = parse_table_name("reg.plain")
    apply_registration(hms, plan_registration(hms, name, str(events_dataset)))
    table = hms.get_table(name.database, name.table)
    assert not any(k.startswith("spark.sql.sources") for k in table.parameters), table.parameters
    assert table.parameters["hsh.storage_handler"] == "storage_handler.handler.StorageHandler"
    assert table.sd.inputFormat.endswith("MapredParquetInputFormat") and table.tableType == "EXTERNAL_TABLE"


def test_registration_reads_each_footer_once(hms, events_dataset: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One pass over the footers gives the schema and the index rows; the index build reads none again."""
    from storage_handler.stats.footers.native_reader import NativeFooterReader
    from storage_handler.storage.local import LocalStorage

    opened: list[str] = []
    real = LocalStorage.open_input
    real_native = NativeFooterReader.read

    def counting(self, uri, entry=None):  # type: ignore[no-untyped-def]
        opened.append(uri)
        return real(self, uri, entry)

    def counting_natively(self, paths, error_of):  # type: ignore[no-untyped-def]
        opened.extend(paths)
        return real_native(self, paths, error_of)

    monkeypatch.setattr(LocalStorage, "open_input", counting)
    monkeypatch.setattr(NativeFooterReader, "read", counting_natively)
    result = _register(hms, "reg.once", events_dataset)
    data_files = sorted(str(p) for p in events_dataset.rglob("*.parquet") if "_hsh_index" not in str(p))
    assert sorted(u for u in opened if "_hsh_index" not in u) == data_files  # each once
    assert result["index_version"] == 1 and result["files"] == len(data_files)


def test_partitions_carry_the_statistics_the_metastore_would_compute(hms, events_dataset: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """numFiles and totalSize come from the listing, equal to what the metastore computes for a partition added
    without them (so it need not list each new partition's folder again)."""
    from hmsclient.genthrift.hive_metastore import ttypes as hms_types

    from metastore.client import MetastoreClient
    from storage_handler.registration.table_spec import build_partition

    sent: list[dict[str, str]] = []
    real = MetastoreClient.add_partitions

    def capture(self, db, table, partitions):  # type: ignore[no-untyped-def]
        sent.extend(p.parameters for p in partitions)
        return real(self, db, table, partitions)

    monkeypatch.setattr(MetastoreClient, "add_partitions", capture)
    (next(events_dataset.glob("dt=*")) / "_SUCCESS").write_text("")  # hidden: counted by neither
    result = _register(hms, "reg.fast_stats", events_dataset)
    # (with the rest of the partition's statistics: tests/registration/test_statistics.py)
    assert sent and all(set(p) == {"numFiles", "totalSize", "numRows", "COLUMN_STATS_ACCURATE", "hsh.stats"}
                        for p in sent)
    monkeypatch.setattr(MetastoreClient, "add_partitions", real)
    ours = {tuple(p.values): p.parameters for p in hms.get_partitions("reg", "fast_stats")}
    assert result["partitions_added"] == len(ours) > 0
    table = hms.get_table("reg", "fast_stats")
    hms.raw("t", lambda c: c.create_table(hms_types.Table(
        tableName="computed", dbName="reg", owner="x", createTime=0, lastAccessTime=0, retention=0,
        sd=table.sd, partitionKeys=table.partitionKeys, parameters={"EXTERNAL": "TRUE"},
        tableType="EXTERNAL_TABLE")), idempotent=False)
    computed_table = hms.get_table("reg", "computed")
    bare = [build_partition(computed_table, list(values), p.sd.location)
            for values, p in ((tuple(p.values), p) for p in hms.get_partitions("reg", "fast_stats"))]
    hms.add_partitions("reg", "computed", bare)
    computed = {tuple(p.values): p.parameters for p in hms.get_partitions("reg", "computed")}
    for values, params in ours.items():
        assert {k: params[k] for k in ("numFiles", "totalSize")} == \
            {k: computed[values][k] for k in ("numFiles", "totalSize")}, values


def test_a_partition_key_also_inside_the_files_is_refused_saying_what_to_do(hms, tmp_path: Path) -> None:
    """Files under p=1/ that hold a column p: refused before anything is created, naming the column, the folder
    and the two ways out."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from storage_handler.errors import SchemaError

    (tmp_path / "t" / "p=1").mkdir(parents=True)
    pq.write_table(pa.table({"p": [1], "x": [2]}), tmp_path / "t" / "p=1" / "f.parquet")
    tn = parse_table_name("reg.key_inside")
    with pytest.raises(SchemaError, match=r"\['p'\] appear both as partition folders and inside the files under "
                                          r".*Rewrite the files without those columns .*rename the folders' keys"):
        plan_registration(hms, tn, str(tmp_path / "t"))
    assert not hms.table_exists(tn.database, tn.table)
