"""Bad input gives one clear line on stderr, exit code 2, no traceback, and changes nothing."""

from __future__ import annotations

import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.helpers import run_hsh


def _fails(proc, *needles: str) -> str:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == 1 and lines[-1] == errors[0], proc.stderr  # progress lines may precede it
    msg = errors[0]
    for needle in needles:
        assert needle in msg, msg
    return msg


def test_nonexistent_path(metastore_uri: str, tmp_path: Path) -> None:
    _fails(run_hsh("register", "bad.t1", str(tmp_path / "nope"), "--metastore", metastore_uri), "does not exist")


def test_empty_folder(metastore_uri: str, tmp_path: Path, hms) -> None:
    (tmp_path / "_ignored").mkdir()
    _fails(run_hsh("register", "bad.t2", str(tmp_path), "--metastore", metastore_uri), "no data files")
    assert "bad" not in hms.get_all_databases()


def test_non_parquet_file(metastore_uri: str, tmp_path: Path, hms) -> None:
    """A file that is not Parquet: ``--strict`` refuses it naming it and creates nothing; without it the table is
    registered, the file recorded as unreadable (kept in every scan, as Spark would read it) and named in one
    warning line. (Its own database: the tests around it check that "bad" is never created.)"""
    pq.write_table(pa.table({"a": [1]}), tmp_path / "ok.parquet")
    (tmp_path / "notes.txt").write_text("hello")
    _fails(run_hsh("register", "notparquet.t3", str(tmp_path), "--strict", "--metastore", metastore_uri),
           "notes.txt", "not readable Parquet", "nothing was changed")
    assert not hms.table_exists("notparquet", "t3")
    proc = run_hsh("register", "notparquet.t3", str(tmp_path), "--metastore", metastore_uri)
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "notes.txt" in warnings[0] and "recorded as unreadable" in warnings[0]
    assert [c.name for c in hms.get_table("notparquet", "t3").sd.cols] == ["a"]


def test_conflicting_schemas_name_both_files(metastore_uri: str, tmp_path: Path, hms) -> None:
    pq.write_table(pa.table({"a": [1]}), tmp_path / "one.parquet")
    pq.write_table(pa.table({"a": ["x"]}), tmp_path / "two.parquet")
    _fails(run_hsh("register", "bad.t4", str(tmp_path), "--metastore", metastore_uri),
           "one.parquet", "two.parquet", "'a'")
    assert "bad" not in hms.get_all_databases()


@pytest.mark.parametrize("name", ["bad-db.t", "db.t;drop", "a.b.c", "db.", "x y"])
def test_bad_table_name(metastore_uri: str, tmp_path: Path, name: str) -> None:
    pq.write_table(pa.table({"a": [1]}), tmp_path / "one.parquet")
    _fails(run_hsh("register", name, str(tmp_path), "--metastore", metastore_uri), "invalid table name")


def test_unreachable_metastore_fails_fast_and_clearly(tmp_path: Path) -> None:
    pq.write_table(pa.table({"a": [1]}), tmp_path / "one.parquet")
    t0 = time.monotonic()
    proc = run_hsh("register", "x.t", str(tmp_path), "--metastore", "thrift://127.0.0.1:1")
    _fails(proc, "thrift://127.0.0.1:1", "cannot reach")
    assert time.monotonic() - t0 < 60


def test_an_unreachable_metastore_from_the_environment_says_so(tmp_path: Path) -> None:
    """Starting the embedded metastore would not help while $HSH_METASTORE_URI names another: the hint says so."""
    proc = run_hsh("describe", "x.t", "-v", env={"HSH_METASTORE_URI": "thrift://127.0.0.1:1"})
    msg = _fails(proc, "thrift://127.0.0.1:1", "it comes from $HSH_METASTORE_URI", "unset it")
    assert "--metastore / set HSH_METASTORE_URI" not in msg
    assert run_hsh("describe", "x.t", "--metastore", "thrift://127.0.0.1:1").stderr.count("set HSH_METASTORE_URI") == 1


def test_version_and_verbose_anywhere() -> None:
    from importlib.metadata import version

    proc = run_hsh("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"hsh {version('hive-storage-handler')}"
    for args in (("-v", "sarg", "--schema", "x int", "--where", "x = 1"),
                 ("sarg", "-v", "--schema", "x int", "--where", "x = 1")):
        proc = run_hsh(*args)
        assert proc.returncode == 0 and "leaf-0 = (EQUALS x 1)" in proc.stdout, (args, proc.stderr)


def test_malformed_metastore_uri(tmp_path: Path) -> None:
    _fails(run_hsh("describe", "x.t", "--metastore", "http://nowhere"), "thrift://host:port")


def test_unsupported_type_is_refused(metastore_uri: str, tmp_path: Path) -> None:
    pq.write_table(pa.table({"a": pa.array([1], pa.uint64())}), tmp_path / "one.parquet")
    _fails(run_hsh("register", "bad.t5", str(tmp_path), "--metastore", metastore_uri), "'a'", "uint64")


def test_index_refresh_of_a_table_whose_folder_is_gone(metastore_uri: str, tmp_path: Path, hms) -> None:
    """An unmounted volume looks like this: the refresh committed an empty index (creating the folder on the
    mount point) and published zero rows and bytes, which other engines' optimizers then believe."""
    import shutil

    root = tmp_path / "t"
    (root / "p=1").mkdir(parents=True)
    pq.write_table(pa.table({"x": [1, 2, 3]}), root / "p=1" / "f.parquet")
    assert run_hsh("register", "gone.t", str(root), "--metastore", metastore_uri).returncode == 0
    before = hms.get_partitions("gone", "t")[0].parameters.get("numRows")
    assert before == "3"
    shutil.move(root, tmp_path / "elsewhere")
    _fails(run_hsh("index", "refresh", "gone.t", "--metastore", metastore_uri),
           "table gone.t: its location", "does not exist any more",
           "nothing was indexed or published")
    assert not root.exists()
    assert hms.get_partitions("gone", "t")[0].parameters.get("numRows") == "3"


def test_nanosecond_timestamps_are_refused_naming_the_fix(metastore_uri: str, tmp_path: Path, hms) -> None:
    """pandas' and pyarrow's default INT64 TIMESTAMP(NANOS): registered as ``timestamp``, every plain Spark query
    of the table failed (PARQUET_COLUMN_DATA_TYPE_MISMATCH). INT96 (Arrow reads it as the same ns type) is fine."""
    ts = pa.array([1_700_000_000_000_000_000], pa.timestamp("ns"))
    pq.write_table(pa.table({"x": [1], "ts": ts}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"x": [2], "ts": ts}), tmp_path / "b.parquet", coerce_timestamps="us")
    _fails(run_hsh("register", "bad.nanos", str(tmp_path), "--metastore", metastore_uri),
           "column(s) 'ts' in", "a.parquet", "nanosecond timestamps", "coerce_timestamps='us'")
    assert not hms.table_exists("bad", "nanos")
    (tmp_path / "a.parquet").unlink()
    pq.write_table(pa.table({"x": [1], "ts": ts}), tmp_path / "a.parquet", use_deprecated_int96_timestamps=True)
    assert run_hsh("register", "bad.nanos", str(tmp_path), "--metastore", metastore_uri).returncode == 0


def test_an_hsh_home_that_cannot_be_created_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    env = {"HSH_HOME": str(tmp_path / "a-file" / "home"), "HSH_METASTORE_URI": ""}
    _fails(run_hsh("metastore", "start", env=env), "a-file", "HSH_HOME")


def test_a_value_list_cap_in_other_digits_is_refused_in_one_line() -> None:
    from storage_handler.errors import ConfigurationError
    from storage_handler.stats.membership.spec import TABLE_PARAM_VALUE_LIST_MAX, MembershipSpec

    for text in ("\u00b2", "\u0663"):  # '²' crashed int(); '٣' was taken as 3
        with pytest.raises(ConfigurationError, match="is not a count"):
            MembershipSpec.for_table({TABLE_PARAM_VALUE_LIST_MAX: text})
