"""One rule for files that are not readable Parquet (``storage_handler.registration.dataset``): ``register``,
``index refresh`` and ``sync`` index the rest, record them with their ``stats_error``, keep them in every scan and
say so in one line; ``--strict`` refuses and changes nothing; Spark then reads the table as plain Spark does."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metastore.names import parse_table_name
from storage_handler.errors import DatasetError
from storage_handler.registration.dataset import discover
from storage_handler.registration.describe import unreadable_files
from storage_handler.registration.register import apply_registration, plan_registration
from storage_handler.stats import index_dir, load
from storage_handler.stats.columns import MODIFICATION_TIME, VERSION_TAG
from tests.helpers import run_hsh

BAD = {"dt=1/truncated.parquet", "dt=2/garbage.parquet", "dt=2/empty.parquet"}


def good_files(root: Path) -> None:
    """dt=1 and dt=2, one file each: i in [0, 10) and [10, 20)."""
    for d in (1, 2):
        (root / f"dt={d}").mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"i": pa.array(range(10 * (d - 1), 10 * d), pa.int32()), "s": [f"s{d}"] * 10}),
                       root / f"dt={d}" / "part-0.parquet")


def bad_files(root: Path, which: set[str] = BAD) -> None:
    """A file cut short by a crashed writer, bytes that are not Parquet, and an empty (0-byte) file."""
    whole = (root / "dt=1" / "part-0.parquet").read_bytes()
    contents = {"dt=1/truncated.parquet": whole[:-20], "dt=2/garbage.parquet": b"this is not parquet",
                "dt=2/empty.parquet": b""}
    for path in which:
        (root / path).write_bytes(contents[path])


def hsh_json(*args: str) -> tuple[dict[str, Any], list[str]]:
    """Run a command that must succeed with ``--json``: its output, and its stderr lines."""
    proc = run_hsh(*args, "--json")
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return json.loads(proc.stdout), proc.stderr.strip().splitlines()


def comparable(root: Path) -> list[dict[str, Any]]:
    """The index rows without the columns that identify a file's write (mtime, ctime): equal for equal bytes."""
    snapshot = load(str(root))
    assert snapshot is not None
    return snapshot.table.drop_columns([MODIFICATION_TIME, VERSION_TAG]).to_pylist()


def the_warning(lines: list[str], count: int) -> str:
    assert len(lines) == 1, lines  # --json: the warning is all there is on stderr
    line = lines[0]
    assert line.startswith(f"warning: {count} files are not readable Parquet and were recorded as unreadable"), line
    assert "kept in every scan" in line and "hsh index refresh" in line
    return line


def test_register_refresh_and_sync_record_the_same_rows(hms, metastore_uri: str, tmp_path: Path) -> None:
    """The same truncated, garbage and empty files give the same index rows and the same kept files whether they
    were there at registration, or arrived later and were indexed by ``index refresh`` or by ``sync``."""
    from storage_handler.handler import list_status_for
    from storage_handler.registration.describe import describe_table
    from storage_handler.table_desc import TableDesc

    roots = {how: tmp_path / how for how in ("register", "refresh", "sync")}
    for how, root in roots.items():
        good_files(root)
        if how == "register":
            bad_files(root)
        else:
            apply_registration(hms, plan_registration(hms, parse_table_name(f"unr.at_{how}"), str(root)))
            bad_files(root)
    out, lines = hsh_json("register", "unr.at_register", str(roots["register"]), "--metastore", metastore_uri)
    assert out["files"] == 5 and out["unreadable_files"]["count"] == 3
    the_warning(lines, 3)
    out, lines = hsh_json("index", "refresh", "unr.at_refresh", "--metastore", metastore_uri)
    assert sorted(out["added"]) == sorted(BAD)
    the_warning(lines, 3)
    out, lines = hsh_json("sync", "unr.at_sync", "--metastore", metastore_uri)
    assert out["index_added"] == 3 and out["unreadable_files"]["count"] == 3
    the_warning(lines, 3)

    rows = {how: comparable(root) for how, root in roots.items()}
    assert rows["register"] == rows["refresh"] == rows["sync"]
    errors = {r["path"]: r["stats_error"] for r in rows["register"]}
    assert {p for p, e in errors.items() if e} == BAD
    assert all(r["num_records"] is None for r in rows["register"] if r["path"] in BAD)

    kept = {}
    for how in roots:
        desc = TableDesc.from_hms(hms.get_table("unr", f"at_{how}"), metastore_uri)
        kept[how] = sorted(f.path for f in list_status_for(desc, "i = 3")[0].files)
        listed = describe_table(hms, parse_table_name(f"unr.at_{how}"))["unreadable_files"]
        assert listed["count"] == 3 and [f["path"] for f in listed["files"]] == sorted(BAD)
        assert listed["oldest"] in BAD and listed["oldest_age_seconds"] >= 0
        assert "0 bytes" in next(f["error"] for f in listed["files"] if f["path"] == "dt=2/empty.parquet")
    assert kept["register"] == kept["refresh"] == kept["sync"] == sorted({"dt=1/part-0.parquet", *BAD})


def state(hms: Any, name: str, root: Path) -> tuple[Any, ...]:
    db, table = name.split(".")
    t = hms.get_table(db, table)
    snapshots = Path(index_dir(str(root))) / "snapshots"
    return (t.parameters, [(c.name, c.type) for c in t.sd.cols], hms.get_partition_names(db, table),
            sorted((p.name, p.stat().st_mtime_ns) for p in snapshots.iterdir()))


@pytest.mark.parametrize("command", [("index", "refresh"), ("sync",)], ids=" ".join)
def test_strict_refuses_and_changes_nothing(hms, metastore_uri: str, tmp_path: Path,
                                            command: tuple[str, ...]) -> None:
    """``--strict``: one ``error:`` line naming the file; the metastore and the index are as they were (the new
    partition and the new good file that came with the bad one included); without it the same command records it."""
    root = tmp_path / "t"
    good_files(root)
    name = f"unr.strict_{command[0]}"
    apply_registration(hms, plan_registration(hms, parse_table_name(name), str(root)))
    (root / "dt=3").mkdir()
    pq.write_table(pa.table({"i": pa.array([30], pa.int32()), "s": ["s3"]}), root / "dt=3" / "part-0.parquet")
    bad_files(root, {"dt=2/garbage.parquet"})
    before = state(hms, name, root)
    proc = run_hsh(*command, name, "--strict", "--metastore", metastore_uri)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: 1 file is not readable Parquet"), lines
    assert str(root / "dt=2" / "garbage.parquet") in lines[0] and "nothing was changed" in lines[0]
    assert state(hms, name, root) == before

    _out, lines = hsh_json(*command, name, "--metastore", metastore_uri)
    assert lines[0].startswith("warning: 1 file is not readable Parquet and was recorded as unreadable: "
                               "dt=2/garbage.parquet"), lines
    assert state(hms, name, root) != before
    paths = load(str(root)).table.column("path").to_pylist()
    assert "dt=3/part-0.parquet" in paths and "dt=2/garbage.parquet" in paths


def test_register_strict_refuses_before_anything_exists(hms, metastore_uri: str, tmp_path: Path) -> None:
    root = tmp_path / "t"
    good_files(root)
    bad_files(root)
    proc = run_hsh("register", "unrstrict.t", str(root), "--strict", "--metastore", metastore_uri)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: 3 files are not readable Parquet"), lines
    assert "unrstrict" not in hms.get_all_databases()
    assert not Path(index_dir(str(root))).exists()


def test_schema_comes_from_the_readable_files_and_none_readable_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "t"
    good_files(root)
    bad_files(root)
    dataset = discover(str(root))
    assert [n for n, _ in dataset.columns] == ["i", "s"]
    assert [p for p, _ in dataset.unreadable] == sorted(BAD)
    assert unreadable_files(dataset.seed)["count"] == 3
    with pytest.raises(DatasetError, match="3 files are not readable Parquet"):
        discover(str(root), strict=True)

    only_bad = tmp_path / "bad"
    (only_bad / "dt=1").mkdir(parents=True)
    (only_bad / "dt=1" / "a.parquet").write_bytes(b"")
    (only_bad / "dt=1" / "b.parquet").write_bytes(b"PAR1 not a footer PAR1")
    with pytest.raises(DatasetError, match=r"none of the 2 files under .* is a readable Parquet file"):
        discover(str(only_bad))


def test_sync_keeps_the_schema_when_no_file_is_readable(hms, metastore_uri: str, tmp_path: Path) -> None:
    """Every file of a registered table broken at once: ``sync`` has nothing to compare the schema with, keeps the
    metastore's and records every file."""
    root = tmp_path / "t"
    good_files(root)
    apply_registration(hms, plan_registration(hms, parse_table_name("unr.all_bad"), str(root)))
    for f in root.glob("dt=*/*.parquet"):
        f.write_bytes(b"not parquet any more")
    out, lines = hsh_json("sync", "unr.all_bad", "--metastore", metastore_uri)
    assert out["new_columns"] == [] and out["unreadable_files"]["count"] == 2
    assert [c.name for c in hms.get_table("unr", "all_bad").sd.cols] == ["i", "s"]


# ---------------------------------------------------------------- Spark reads them as plain Spark does
def _spark_error(run: Any) -> str:
    """The error class (``[FAILED_READ_FILE.NO_HINT]`` ...) of the Spark error ``run()`` raises: pyspark's, or a
    Java one it did not convert, whose text holds it."""
    with pytest.raises(Exception) as caught:  # noqa: PT011 - which class depends on the pyspark line
        run()
    found = re.search(r"\[([A-Z_]+(?:\.[A-Z_]+)*)\]", str(caught.value))
    assert found, str(caught.value)[:2000]
    return found.group(1)


def _plain_table_read(spark: Any, query: str) -> Any:
    """The same query with the handler's native scan off: Spark's own Hive relation and file index."""
    spark.conf.set("spark.hsh.nativeScan", "false")
    try:
        return spark.sql(query).collect()
    finally:
        spark.conf.unset("spark.hsh.nativeScan")


def test_spark_fails_on_unreadable_files_as_plain_spark_does(hms, spark, tmp_path: Path) -> None:
    """A truncated and a garbage file: the handler keeps them (even where the filter would prune them if they had
    statistics), so the query fails as a plain read of the table and of the folder do: Spark's FAILED_READ_FILE."""
    root = tmp_path / "t"
    good_files(root)
    bad_files(root)
    apply_registration(hms, plan_registration(hms, parse_table_name("unr.spark_bad"), str(root)))
    query = "select count(*) from unr.spark_bad where i = 3"
    plan = "\n".join(r[0] for r in spark.sql(f"explain {query}").collect())
    assert "HshFileIndex" in plan, plan
    handler = _spark_error(lambda: spark.sql(query).collect())
    plain_table = _spark_error(lambda: _plain_table_read(spark, query))
    plain_folder = _spark_error(lambda: spark.read.parquet(str(root)).where("i = 3").count())
    assert handler == plain_table == plain_folder, (handler, plain_table, plain_folder)
    assert handler.startswith("FAILED_READ_FILE")


def test_spark_skips_an_empty_file_as_plain_spark_does(hms, spark, tmp_path: Path) -> None:
    """A 0-byte file: recorded as unreadable and kept, and Spark skips it (it has no rows), exactly as plain Spark
    skips it: the same rows with and without the handler."""
    root = tmp_path / "t"
    good_files(root)
    bad_files(root, {"dt=2/empty.parquet"})
    apply_registration(hms, plan_registration(hms, parse_table_name("unr.spark_empty"), str(root)))
    assert unreadable_files(load(str(root)).table)["count"] == 1
    for where in ("", " where i = 13"):
        query = f"select dt, i from unr.spark_empty{where} order by i"
        handler = [tuple(r) for r in spark.sql(query).collect()]
        plain_table = [tuple(r) for r in _plain_table_read(spark, query)]
        folder = spark.read.parquet(str(root))
        plain_folder = [tuple(r) for r in (folder.where(where.replace(" where ", "")) if where else folder)
                        .select("dt", "i").orderBy("i").collect()]
        assert handler == plain_table == plain_folder, where
    assert handler == [(2, 13)]  # the empty file added no row
