"""One pass over the footers (registration): schemas and index rows, equal to reading the index afterwards."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest

from storage_handler.errors import DatasetError
from storage_handler.registration.dataset import discover
from storage_handler.stats import FooterJob, LocalEngine, StatsOptions, build_index, list_data_files
from storage_handler.stats.engines.scan import scan_footers
from storage_handler.types import parse_hive_type, parse_schema_text
from tests.stats.util import write


def mixed_dataset(root: Path) -> None:
    """Three schemas: a column missing, an extra column (first seen late), another timestamp unit; one file of
    only nulls; a nested column where others have none."""
    for i in range(12):
        write(root, f"dt={i % 3}/a{i:02d}.parquet", pa.table({
            "id": pa.array([i, i + 1], pa.int64()), "name": [f"n{i}", None],
            "ts": pa.array([dt.datetime(2024, 1, 1 + i)] * 2, pa.timestamp("ms"))}))
    write(root, "dt=1/b.parquet", pa.table({"id": pa.array([100], pa.int64())}))  # no name, no ts
    write(root, "dt=2/c.parquet", pa.table({
        "id": pa.array([None], pa.int64()), "ts": pa.array([dt.datetime(2030, 5, 5)], pa.timestamp("us")),
        "extra": pa.array([1.5])}))
    write(root, "dt=0/d.parquet", pa.table({"id": pa.array([7], pa.int64()),
                                            "nested": pa.array([{"x": 1}])}))


@pytest.mark.parametrize("scan_floats", [False, True])
def test_one_pass_equals_reading_the_index_afterwards(tmp_path: Path, scan_floats: bool) -> None:
    mixed_dataset(tmp_path)
    options = StatsOptions(scan_float_columns=scan_floats)  # chunks of 2: many, finishing in any order
    dataset = discover(str(tmp_path), options=options, engine=LocalEngine(max_workers=4, chunk_files=2))
    assert [n for n, _ in dataset.columns] == ["id", "name", "ts", "nested", "extra"]  # first-seen file order
    afterwards = build_index(str(tmp_path), dataset.columns, list_data_files(str(tmp_path), ["dt"]),
                             options=options)
    assert dataset.seed is not None
    assert dataset.seed.equals(afterwards, check_metadata=True)
    rows = {r["path"]: r for r in dataset.seed.to_pylist()}
    assert rows["dt=1/b.parquet"]["null_count"]["ts"] == 1 and rows["dt=1/b.parquet"]["min_values"]["ts"] is None


def test_the_union_and_its_errors_do_not_depend_on_which_chunk_finished_first(tmp_path: Path) -> None:
    for i in range(30):
        write(tmp_path, f"f{i:02d}.parquet", pa.table({f"c{i % 3}": [i]}))
    files = list_data_files(str(tmp_path))
    for _ in range(5):
        scan = scan_footers(str(tmp_path), files, StatsOptions(), max_workers=8, chunk_files=1)
        assert [path for _, path in scan.schemas] == ["f00.parquet", "f01.parquet", "f02.parquet"]


def test_worker_processes_give_the_same_rows_as_threads(tmp_path: Path) -> None:
    """Big local tables are scanned by worker processes (the GIL would serialize threads): same schemas, same
    rows, whatever the mode."""
    mixed_dataset(tmp_path)
    files = list_data_files(str(tmp_path), ["dt"])
    threads = scan_footers(str(tmp_path), files, StatsOptions(), max_workers=3, processes=False)
    processes = scan_footers(str(tmp_path), files, StatsOptions(), max_workers=2, processes=True)
    assert [(s.names, p) for s, p in processes.schemas] == [(s.names, p) for s, p in threads.schemas]
    columns = [("id", parse_hive_type("bigint")), ("name", parse_hive_type("string")),
               ("ts", parse_hive_type("timestamp")), ("extra", parse_hive_type("double"))]
    assert processes.index_for(columns, StatsOptions()).equals(threads.index_for(columns, StatsOptions()),
                                                               check_metadata=True)


def test_an_unreadable_footer_is_recorded_and_strict_refuses_naming_the_file(tmp_path: Path) -> None:
    """One rule for unreadable files (issue 31): recorded as unreadable, the rest indexed; --strict refuses."""
    write(tmp_path, "a.parquet", pa.table({"x": [1]}))
    (tmp_path / "b.parquet").write_bytes(b"PAR1 not a footer PAR1")
    assert [p for p, _ in discover(str(tmp_path)).unreadable] == ["b.parquet"]
    with pytest.raises(DatasetError, match=r"b\.parquet"):
        discover(str(tmp_path), strict=True)


def test_refresh_reads_with_worker_processes_the_same_rows_as_threads(tmp_path: Path) -> None:
    """``LocalEngine.read`` (refresh, index build) on worker processes for big local tables: the same rows, a
    corrupt footer and a file outside the table folder included."""
    mixed_dataset(tmp_path / "t")
    (tmp_path / "t" / "dt=1" / "bad.parquet").write_bytes(b"PAR1 not a footer PAR1")
    write(tmp_path / "elsewhere", "o.parquet", pa.table({"id": pa.array([5], pa.int64())}))
    files = list_data_files(str(tmp_path / "t"), ["dt"]) + [
        f._replace(path=str(tmp_path / "elsewhere" / "o.parquet"))
        for f in list_data_files(str(tmp_path / "elsewhere"))]
    job = FooterJob(str(tmp_path / "t"), tuple(parse_schema_text("id bigint, name string")), StatsOptions())
    threads = LocalEngine(max_workers=3, chunk_files=2, processes=False).read(job, files)
    processes = LocalEngine(max_workers=2, chunk_files=2, processes=True).read(job, files)
    assert processes.equals(threads, check_metadata=True) and processes.num_rows == len(files) == 17


NO_MAIN_GUARD = """
import sys
from storage_handler.stats import FooterJob, LocalEngine, StatsOptions, list_data_files
from storage_handler.types import parse_schema_text

root = sys.argv[1]
job = FooterJob(root, tuple(parse_schema_text("id bigint")), StatsOptions())
print(LocalEngine(max_workers=2, processes=True).read(job, list_data_files(root, ["dt"])).num_rows)
"""


def test_a_script_without_a_main_guard_still_gets_its_index(tmp_path: Path) -> None:
    """``spawn`` re-imports the main script in every worker: without ``if __name__ == "__main__"`` the workers die
    at start. The engine says so and reads with threads (same rows) rather than failing."""
    import subprocess
    import sys

    mixed_dataset(tmp_path / "t")
    script = tmp_path / "script.py"
    script.write_text(NO_MAIN_GUARD)
    proc = subprocess.run([sys.executable, str(script), str(tmp_path / "t")], capture_output=True, text=True,
                          timeout=300, cwd=str(Path(__file__).resolve().parents[2]))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "15"
    assert "reading footers with threads instead" in proc.stderr


def test_nanosecond_columns_are_told_from_int96(tmp_path) -> None:  # noqa: ANN001
    """Arrow reads INT64 TIMESTAMP(NANOS) and INT96 as the same timestamp[ns]; Spark reads only INT96. The JSON
    of the logical type is spaced differently across pyarrow releases (this runs on 14 and on 26)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from storage_handler.stats.engines.scan import nanosecond_columns

    ns = pa.array([1_000], pa.timestamp("ns"))
    table = pa.table({"t": ns, "s": pa.array([{"u": 1_000}], pa.struct([("u", pa.timestamp("ns"))])), "x": [1]})
    pq.write_table(table, tmp_path / "ns.parquet")
    pq.write_table(table, tmp_path / "int96.parquet", use_deprecated_int96_timestamps=True)
    pq.write_table(table, tmp_path / "us.parquet", coerce_timestamps="us")
    assert nanosecond_columns(pq.ParquetFile(tmp_path / "ns.parquet").schema) == ("t", "s")
    assert nanosecond_columns(pq.ParquetFile(tmp_path / "int96.parquet").schema) == ()
    assert nanosecond_columns(pq.ParquetFile(tmp_path / "us.parquet").schema) == ()


_VIEWS = pytest.mark.skipif(not hasattr(pa, "binary_view"), reason="this pyarrow has no view types")


@_VIEWS
@pytest.mark.parametrize("chunk_files", [1, 2, 4])
def test_a_column_s_type_comes_from_its_parquet_schema_not_the_stored_arrow_one(tmp_path: Path,
                                                                                chunk_files: int) -> None:
    """binary_view / list_view / duration / large_string are plain BYTE_ARRAY / LIST / INT64 on disk, which Spark
    reads as binary / array / bigint. The stored ARROW:schema said otherwise, and the group's type came from
    whichever file opened its chunk: one folder registered or was refused by chunk size (engine, --workers)."""
    kinds = [(pa.binary(), pa.string(), pa.list_(pa.int32()), pa.int64()),
             (pa.binary_view(), pa.string_view(), pa.list_view(pa.int32()), pa.duration("s")),
             (pa.large_binary(), pa.large_string(), pa.large_list(pa.int32()), pa.int64()),
             (pa.binary(), pa.dictionary(pa.int32(), pa.string()), pa.list_(pa.int32()), pa.int64())]
    for i, (b, s, lst, n) in enumerate(kinds):
        write(tmp_path, f"{i}.parquet", pa.table({
            "c": pa.array([b"x"], pa.binary()).cast(b), "s": pa.array(["y"]).cast(s),
            "l": pa.array([[1, 2]], lst), "n": pa.array([5], pa.int64()).cast(n)}))
    dataset = discover(str(tmp_path), engine=LocalEngine(max_workers=4, chunk_files=chunk_files))
    assert [(name, str(t)) for name, t in dataset.columns] == [
        ("c", "binary"), ("s", "string"), ("l", "array<int>"), ("n", "bigint")]
    assert dataset.seed is not None
    assert {r["path"]: r["max_values"]["n"] for r in dataset.seed.to_pylist()} == {f"{i}.parquet": 5 for i in range(4)}


def test_a_type_hive_cannot_hold_is_refused_naming_the_first_file_that_has_it(tmp_path: Path) -> None:
    for i in range(3):
        write(tmp_path, f"dt={i}/a.parquet", pa.table({"id": pa.array([i], pa.uint64() if i else pa.int64())}))
    with pytest.raises(DatasetError) as raised:
        discover(str(tmp_path), engine=LocalEngine(max_workers=4, chunk_files=1))
    assert "uint64" in str(raised.value) and f"{tmp_path}/dt=1/a.parquet" in str(raised.value)
    assert "nothing was changed" in str(raised.value)
