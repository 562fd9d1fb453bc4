"""The index published as the metastore's statistics, against the real embedded metastore: the values equal what
pyarrow computes from the data, they follow the files, they never overwrite what others wrote unless asked, and a
metastore that refuses them fails nothing else."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hmsclient.genthrift.hive_metastore import ttypes as hms_types
from thrift.Thrift import TApplicationException

from metastore.names import parse_table_name
from storage_handler.registration import stats_ownership as O
from storage_handler.registration.register import apply_registration, plan_registration
from tests.helpers import run_hsh
from tests.registration import stats_data as D

SCAN_FLOATS = {"hsh.stats.scan_float_columns": "true"}  # float bounds from the data: published too


def _register(hms: Any, name: str, root: Path, **properties: str) -> dict[str, Any]:
    plan = plan_registration(hms, parse_table_name(name), str(root), table_properties=dict(properties))
    return apply_registration(hms, plan, batch_size=2)


def _partition_stats(hms: Any, db: str, table: str, parts: list[str]) -> dict[str, dict[str, Any]]:
    req = hms_types.PartitionsStatsRequest(dbName=db, tblName=table, colNames=D.SCHEMA.names, partNames=parts)
    got = hms.raw("read", lambda c: c.get_partitions_statistics_req(req), idempotent=True).partStats
    return {p: {o.colName: o for o in objs} for p, objs in got.items()}


def _table_stats(hms: Any, db: str, table: str) -> dict[str, Any]:
    req = hms_types.TableStatsRequest(dbName=db, tblName=table, colNames=D.SCHEMA.names)
    return {o.colName: o for o in hms.raw("read", lambda c: c.get_table_statistics_req(req), idempotent=True).tableStats}


def _params(hms: Any, db: str, table: str, partition: str | None = None) -> dict[str, str]:
    if partition is None:
        return dict(hms.get_table(db, table).parameters)
    return dict(hms.get_partitions_by_names(db, table, [partition])[0].parameters)


def _assert_equal_to_pyarrow(objs: dict[str, Any], truth: dict[str, Any], params: dict[str, str], *,
                             accurate: bool = True, floats: bool = True) -> None:
    assert (params["numFiles"], params["numRows"], params["totalSize"]) == \
        (str(truth["files"]), str(truth["rows"]), str(truth["size"]))
    assert "rawDataSize" not in params
    for name in D.SCHEMA.names:
        want = D.expected(name, truth, truth["rows"], floats=floats)
        got = objs.get(name)
        assert (None if got is None else {k: v for k, v in D.decoded(got).items() if k in (want or {})}) == want, name
    if accurate:
        basic, columns = O.parse_accurate(params["COLUMN_STATS_ACCURATE"])
        assert basic and columns == set(objs) == {n for n in D.SCHEMA.names
                                                   if D.expected(n, truth, truth["rows"], floats=floats) is not None}


def test_partition_statistics_equal_pyarrow_for_every_type(hms: Any, tmp_path: Path) -> None:
    root = D.generate(tmp_path / "t")
    result = _register(hms, "st.typed", root, **SCAN_FLOATS)
    stats = result["statistics"]
    assert stats["warning"] is None and stats["partitions_written"] == 3 and stats["table_level"] == "written"
    assert set(stats["columns_not_published"]) == D.SKIPPED
    names = [f"dt={p}" for p in D.PARTITIONS]
    got = _partition_stats(hms, "st", "typed", names)
    truths = {n: D.oracle(root / n) for n in names}
    for name in names:
        _assert_equal_to_pyarrow(got[name], truths[name], _params(hms, "st", "typed", name))
    # the NaN partition's double column: no bounds, so nothing (Hive 2 would answer max() as if it held no values)
    assert "c_double" not in got["dt=2024-01-02"] and "c_double" in got["dt=2024-01-01"]
    # table level: the sums a plain Spark session reads, and the merged column statistics
    params = _params(hms, "st", "typed")
    assert params["numRows"] == str(sum(t["rows"] for t in truths.values()))
    assert params["totalSize"] == str(sum(t["size"] for t in truths.values()))
    assert params["numFiles"] == "6"
    whole = {k: D.decoded(v) for k, v in _table_stats(hms, "st", "typed").items()}
    assert whole["c_big"]["low"] == min(t["columns"]["c_big"]["low"] for t in truths.values())
    assert whole["c_date"]["high"] == max(t["columns"]["c_date"]["high"] for t in truths.values())
    assert set(whole) == D.PUBLISHED - {"c_double"}  # one partition cannot bound it


def test_table_statistics_of_an_unpartitioned_table_equal_pyarrow(hms: Any, tmp_path: Path) -> None:
    root = D.generate(tmp_path / "t", partitioned=False)
    assert _register(hms, "st.flat", root, **SCAN_FLOATS)["statistics"]["table_level"] == "written"
    _assert_equal_to_pyarrow(_table_stats(hms, "st", "flat"), D.oracle(root), _params(hms, "st", "flat"))


def test_partitions_published_in_lanes_equal_those_published_one_batch_at_a_time(
        hms: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from storage_handler.registration import statistics

    root = D.generate(tmp_path / "serial")
    shutil.copytree(root, tmp_path / "lanes")
    serial = _register(hms, "st.serial", root)["statistics"]
    monkeypatch.setattr(statistics, "BATCH", 1)  # three batches, in three lanes
    lanes = _register(hms, "st.lanes", tmp_path / "lanes")["statistics"]
    assert lanes["warning"] is None and lanes["partitions_written"] == serial["partitions_written"] == 3
    assert lanes["column_objects_written"] == serial["column_objects_written"] and lanes["columns"] == serial["columns"]
    names = [f"dt={p}" for p in D.PARTITIONS]
    decoded = [{p: {c: D.decoded(o) for c, o in objs.items()} for p, objs in _partition_stats(hms, "st", t, names).items()}
               for t in ("serial", "lanes")]
    assert decoded[0] == decoded[1] and len(decoded[0]) == 3
    assert _params(hms, "st", "lanes")["numRows"] == _params(hms, "st", "serial")["numRows"]


@pytest.mark.jvm
def test_a_refresh_follows_the_files_and_keeps_what_others_wrote(hms: Any, metastore_uri: str,
                                                                 tmp_path: Path) -> None:
    root = D.generate(tmp_path / "t")
    _register(hms, "st.follow", root)
    theirs = hms_types.ColumnStatisticsObj("c_int", "int", hms_types.ColumnStatisticsData(
        longStats=hms_types.LongColumnStatsData(lowValue=-5, highValue=5, numNulls=0, numDVs=11)))
    _as_if_analyzed(hms, "st", "follow", "dt=2024-01-01", 12345, theirs)
    D.write(root / "dt=2024-01-02" / "part-9.parquet", 99, rows=10)  # a new file in another partition

    proc = run_hsh("index", "refresh", "st.follow", "--metastore", metastore_uri)
    assert proc.returncode == 0 and "warning" not in proc.stderr.lower(), proc.stderr
    grown = _params(hms, "st", "follow", "dt=2024-01-02")
    truth = D.oracle(root / "dt=2024-01-02")
    assert (grown["numFiles"], grown["numRows"], grown["totalSize"]) == \
        (str(truth["files"]), str(truth["rows"]), str(truth["size"]))
    assert O.parse_accurate(grown["COLUMN_STATS_ACCURATE"])[0]
    table = _params(hms, "st", "follow")
    assert table["numRows"] == str(sum(D.oracle(root / f"dt={p}")["rows"] for p in D.PARTITIONS))  # the index's
    kept = _params(hms, "st", "follow", "dt=2024-01-01")  # the user's: files unchanged, so kept
    assert kept["numRows"] == "12345" and O.parse_accurate(kept["COLUMN_STATS_ACCURATE"])[0]
    assert _partition_stats(hms, "st", "follow", ["dt=2024-01-01"])["dt=2024-01-01"]["c_int"] == theirs

    proc = run_hsh("sync", "st.follow", "--overwrite-stats", "--json", "--metastore", metastore_uri)
    assert proc.returncode == 0, proc.stderr
    replaced = _params(hms, "st", "follow", "dt=2024-01-01")
    assert replaced["numRows"] == str(D.oracle(root / "dt=2024-01-01")["rows"])
    assert _partition_stats(hms, "st", "follow", ["dt=2024-01-01"])["dt=2024-01-01"]["c_int"] != theirs


def _as_if_analyzed(hms: Any, db: str, table: str, partition: str, rows: int, column: Any) -> None:
    """What a user's (or Hive's ANALYZE's) statistics look like: their column statistics, their numRows, vouched for."""
    stats = hms_types.ColumnStatistics(hms_types.ColumnStatisticsDesc(False, db, table, partition), [column])
    hms.raw("analyze", lambda c: c.update_partition_column_statistics(stats), idempotent=True)
    part = hms.get_partitions_by_names(db, table, [partition])[0]
    columns = O.parse_accurate(part.parameters.get("COLUMN_STATS_ACCURATE"))[1]
    part.parameters.update({"numRows": str(rows), "COLUMN_STATS_ACCURATE": O.render_accurate(True, columns) or ""})
    hms.raw("analyze", lambda c: c.alter_partitions_with_environment_context(db, table, [part], O.KEEP_OUR_NUMBERS),
            idempotent=True)


@pytest.mark.jvm
def test_an_unpartitioned_refresh_keeps_the_numbers_true_and_vouched_for(hms: Any, metastore_uri: str,
                                                                         tmp_path: Path) -> None:
    """``index refresh`` alters the table: a plain alter made the metastore list the folder and drop
    ``COLUMN_STATS_ACCURATE``; with ours the claim stays and the numbers follow the new file."""
    root = D.generate(tmp_path / "t", partitioned=False)
    _register(hms, "st.flatref", root)
    assert run_hsh("index", "refresh", "st.flatref", "--metastore", metastore_uri).returncode == 0
    assert O.parse_accurate(_params(hms, "st", "flatref")["COLUMN_STATS_ACCURATE"])[0]
    D.write(root / "part-9.parquet", 99, rows=10)
    assert run_hsh("index", "refresh", "st.flatref", "--metastore", metastore_uri).returncode == 0
    params, truth = _params(hms, "st", "flatref"), D.oracle(root)
    assert (params["numFiles"], params["numRows"]) == (str(truth["files"]), str(truth["rows"]))
    assert O.parse_accurate(params["COLUMN_STATS_ACCURATE"]) == (True, D.PUBLISHED_UNSCANNED)


@pytest.mark.jvm
def test_without_publishing_changed_files_mark_statistics_stale_as_hive_does(hms: Any, metastore_uri: str,
                                                                             tmp_path: Path) -> None:
    root = D.generate(tmp_path / "t")
    _register(hms, "st.stale", root)
    before = _params(hms, "st", "stale", "dt=2024-01-01")
    D.write(root / "dt=2024-01-01" / "part-9.parquet", 99, rows=10)
    proc = run_hsh("sync", "st.stale", "--no-stats", "--json", "--metastore", metastore_uri)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["statistics"]["partitions_marked_stale"] == 1
    stale, truth = _params(hms, "st", "stale", "dt=2024-01-01"), D.oracle(root / "dt=2024-01-01")
    assert (stale["numFiles"], stale["totalSize"]) == (str(truth["files"]), str(truth["size"]))
    assert stale["numRows"] == before["numRows"] and "COLUMN_STATS_ACCURATE" not in stale  # no longer vouched for
    assert "COLUMN_STATS_ACCURATE" in _params(hms, "st", "stale", "dt=2024-01-02")  # untouched files: still true
    assert run_hsh("sync", "st.stale", "--metastore", metastore_uri).returncode == 0  # the index caught up
    fresh = _params(hms, "st", "stale", "dt=2024-01-01")
    assert fresh["numRows"] == str(truth["rows"]) and O.parse_accurate(fresh["COLUMN_STATS_ACCURATE"])[0]


@pytest.mark.jvm
def test_dry_run_lists_the_statistics_and_describe_shows_what_was_published(hms: Any, metastore_uri: str,
                                                                            tmp_path: Path) -> None:
    root = D.generate(tmp_path / "t")
    proc = run_hsh("register", "stdry.t", str(root), "--dry-run", "--json", "--metastore", metastore_uri)
    assert proc.returncode == 0, proc.stderr
    planned = json.loads(proc.stdout)["statistics"]
    truths = [D.oracle(root / f"dt={p}") for p in D.PARTITIONS]
    assert planned["table"]["numRows"] == str(sum(t["rows"] for t in truths)) and planned["partitions"] == 3
    first = planned["partitions_listed"][0]
    assert first["partition"] == "dt=2024-01-01" and first["numRows"] == str(truths[0]["rows"])
    assert first["columns"]["c_big"]["lowValue"] == truths[0]["columns"]["c_big"]["low"]
    assert first["columns"]["c_date"]["lowValue"] == str(truths[0]["columns"]["c_date"]["low"])
    assert "c_str" in planned["columns_not_published"]
    assert "stdry" not in hms.get_all_databases()  # nothing written

    assert run_hsh("register", "stdry.t", str(root), "--metastore", metastore_uri).returncode == 0
    proc = run_hsh("describe", "stdry.t", "--json", "--metastore", metastore_uri)
    shown = json.loads(proc.stdout)["statistics"]
    assert shown["current"] is True and shown["index_version"] == json.loads(proc.stdout)["index_version"]
    assert shown["numRows"] == planned["table"]["numRows"] and shown["partitions"] == 3
    assert shown["published_at"].endswith("Z") and "c_big" in shown["columns"]
    people = run_hsh("describe", "stdry.t", "--metastore", metastore_uri).stdout
    assert "published" in people and "current" in people

    assert run_hsh("register", "stdry.off", str(root), "--no-stats", "--metastore", metastore_uri).returncode == 0
    off = json.loads(run_hsh("describe", "stdry.off", "--json", "--metastore", metastore_uri).stdout)["statistics"]
    assert "published_at" not in off and "numRows" not in off


class _Refusing:
    """The real Thrift client, except that the statistics calls are refused the way an old or locked-down
    metastore refuses them. This fault cannot be caused for real on the embedded metastore (it has every call and
    no authorization), so it is injected by wrapping the client call."""

    REFUSED = {"set_aggr_stats_for": TApplicationException(TApplicationException.UNKNOWN_METHOD,
                                                           "Invalid method name: 'set_aggr_stats_for'"),
               "update_table_column_statistics": hms_types.MetaException("Permission denied: user hsh"),
               "alter_table_with_environment_context": hms_types.MetaException("Permission denied: user hsh")}

    def __init__(self, real: Any) -> None:
        self.real = real

    def __getattr__(self, name: str) -> Any:
        if name in self.REFUSED:
            def refuse(*_args: Any) -> Any:
                raise self.REFUSED[name]
            return refuse
        return getattr(self.real, name)


@pytest.mark.jvm
@pytest.mark.parametrize("batch", [100, 1], ids=["one batch", "a batch per partition, in lanes"])
def test_a_metastore_that_refuses_statistics_leaves_a_registered_table_and_one_warning(
        hms: Any, metastore_uri: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], batch: int) -> None:
    from metastore.client import MetastoreClient
    from storage_handler.cli.main import main
    from storage_handler.registration import statistics

    monkeypatch.setattr(statistics, "BATCH", batch)
    real_raw = MetastoreClient.raw
    monkeypatch.setattr(MetastoreClient, "raw",
                        lambda self, subject, fn, *, idempotent: real_raw(self, subject, lambda c: fn(_Refusing(c)),
                                                                          idempotent=idempotent))
    root = D.generate(tmp_path / "t")
    if hms.table_exists("stref", "t"):  # the other parametrization's
        hms.drop_table("stref", "t")
    assert main(["register", "stref.t", str(root), "--json", "--metastore", metastore_uri]) == 0
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("warning: statistics of stref.t not published for"), captured.err
    assert "3 of 3 partitions" in lines[0] and "table stref.t" in lines[0] and "Invalid method name" in lines[0]
    report = json.loads(captured.out)["statistics"]
    assert report["warning"] == " ".join(lines[0].removeprefix("warning: ").split())
    monkeypatch.undo()
    assert sorted(hms.get_partition_names("stref", "t")) == [f"dt={p}" for p in sorted(D.PARTITIONS)]
    part = _params(hms, "stref", "t", "dt=2024-01-01")  # basic statistics came with the partition
    assert part["numRows"] == str(D.oracle(root / "dt=2024-01-01")["rows"])
    assert _partition_stats(hms, "stref", "t", ["dt=2024-01-01"]) == {}  # no column statistics
    assert run_hsh("index", "refresh", "stref.t", "--metastore", metastore_uri).returncode == 0  # heals
    assert set(_partition_stats(hms, "stref", "t", ["dt=2024-01-01"])["dt=2024-01-01"]) == D.PUBLISHED_UNSCANNED
