"""The query path's columnar listing (``list_partition_batch``), partition names split by Arrow, and the fewer
metastore calls of queries that cannot prune by partition -- on the local disk and on an S3 endpoint."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storage_handler.catalog import (
    Partition,
    StaticPartitions,
    all_partitions,
    list_partition_batch,
    list_table_batch,
    parse_partition_name,
)
from storage_handler.catalog.prune import _split_names, partition_batch
from storage_handler.errors import StorageError
from storage_handler.hive_paths import escape_partition_value, partition_path
from storage_handler.input_format import ParquetInputFormat, scan_batch
from storage_handler.stats import update_index
from storage_handler.storage import local, parse_location, storage_for
from storage_handler.table_desc import TableDesc
from storage_handler.types import parse_schema_text
from tests.helpers import examples
from tests.reliability.util import ints
from tests.s3 import put_bytes, put_parquet


def sibling(root: str, name: str) -> str:
    """A folder next to the table folder (outside it), on the same store."""
    folder = parse_location(root)
    parent = folder.key.rsplit("/", 1)[0]
    return f"{parent}/{name}" if folder.kind == "local" else f"{folder.scheme}://{folder.bucket}/{parent}/{name}"


def layout(root: str) -> list[Partition]:
    """Partitions whose folders sort apart from their values (1 < 10 < 2), hidden files, a subfolder (not read),
    a missing folder, a partition registered outside the table folder, and one folder registered twice."""
    outside = sibling(root, "elsewhere/x")
    for d in (1, 2, 10):
        for name in ("b.parquet", "a.parquet", "_SUCCESS", ".a.crc", "sub/deep.parquet"):
            put_bytes(root, f"d={d}/{name}", b"x" * d)
    put_bytes(outside, "o.parquet", b"12345")
    folder = parse_location(root)
    return [
        Partition("d=10", ("10",), folder.join("d=10").uri),
        Partition("d=2", ("2",), folder.join("d=2").uri),
        Partition("d=1", ("1",), folder.join("d=1").uri),
        Partition("d=7", ("7",), folder.join("d=7").uri),  # registered, folder missing: empty
        Partition("d=99", ("99",), outside),
        Partition("d=3", (None,), folder.join("d=2").uri),  # the folder of d=2 again (ALTER ... LOCATION)
    ]


def test_the_batch_is_the_listing_sorted_with_the_metastores_values(storage_root) -> None:
    partitions = layout(storage_root)
    listed = list_partition_batch(storage_root, ["D"], partitions, table="db.t")
    outside = sibling(storage_root, "elsewhere/x")
    rows = [(f.path, f.size, dict(f.partition_values)) for f in listed.data_files()]
    assert rows == sorted([
        *((f"d={d}/{n}", d, {"d": str(d)}) for d in (1, 2, 10) for n in ("a.parquet", "b.parquet")),
        ("d=2/a.parquet", 2, {"d": None}), ("d=2/b.parquet", 2, {"d": None}),
        (f"{outside}/o.parquet", 5, {"d": "99"}),
    ], key=lambda r: (r[0], r[2]["d"] is None))
    assert listed.batch.schema == scan_batch([]).schema
    assert all(v for v in listed.batch.column("version_tag").to_pylist())  # a tag on every file, both stores
    assert listed.batch.column("path").to_pylist() == sorted(listed.batch.column("path").to_pylist())
    same = scan_batch(listed.data_files())  # the row form, converted the old way, is the same batch
    assert same.equals(listed.batch)


def test_the_batch_of_an_unpartitioned_table_and_of_nothing(storage_root) -> None:
    for name in ("b", "a", "_x"):
        put_bytes(storage_root, name, b"abc")
    table = list_table_batch(storage_root)
    assert [(f.path, f.partition_values) for f in table.data_files()] == [("a", {}), ("b", {})]
    empty = list_partition_batch(storage_root, ["d"], [])
    assert empty.num_rows == 0 and empty.batch.schema == scan_batch([]).schema
    gone = parse_location(storage_root).join("gone").uri
    assert list_table_batch(gone).num_rows == 0


def test_the_fd_listing_answers_like_scandir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Symlinked files are files, a symlinked folder is neither a file nor a folder, a dangling link is nothing."""
    folder = tmp_path / "p"
    (folder / "sub").mkdir(parents=True)
    (folder / "f.parquet").write_bytes(b"123")
    (tmp_path / "target.parquet").write_bytes(b"4567")
    os.symlink(tmp_path / "target.parquet", folder / "link.parquet")
    os.symlink(folder / "sub", folder / "dirlink")
    os.symlink(tmp_path / "nowhere", folder / "dangling")
    store = local.LocalStorage()
    by_fd = store.list_dir(str(folder))
    monkeypatch.setattr(local, "_LIST_BY_FD", False)
    by_scandir = store.list_dir(str(folder))
    assert by_fd is not None and by_scandir is not None
    assert sorted(by_fd.files) == sorted(by_scandir.files)
    assert sorted(f.name for f in by_fd.files) == ["f.parquet", "link.parquet"] and by_fd.folders == ("sub",)
    assert store.list_dir(str(folder / "f.parquet")) is None and store.list_dir(str(tmp_path / "no")) is None


NAMES = st.lists(st.tuples(st.sampled_from(["1", "10", "a b", "%", "=", "/", "", None, "é", "__HIVE_DEFAULT_PARTITION__"]),
                           st.sampled_from(["x", "", None, "k=v", "2024-01-01"])), max_size=20)


@settings(max_examples=examples(200), deadline=None)
@given(NAMES, st.booleans())
def test_partition_names_split_by_arrow_read_as_hive_reads_them(values, upper: bool) -> None:
    keys = ["Dt", "k"] if upper else ["dt", "k"]
    names = [partition_path([("dt", a), ("k", b)]) for a, b in values]
    expected = [list(zip(["dt", "k"], parse_partition_name(n, keys), strict=True)) for n in names]
    assert partition_batch(names, keys).column(0).to_pylist() == expected


def test_names_arrow_cannot_split_take_hives_decoder() -> None:
    assert _split_names(["dt=a%2Fb"], ["dt"]) is None  # escaped: Hive's unescaping
    assert _split_names(["DT=1"], ["dt"]) is None  # another spelling of the key
    assert _split_names(["dt=1/k=2"], ["dt"]) is None
    assert partition_batch(["dt=a%2Fb", "dt=%"], ["dt"]).column(0).to_pylist() == [[("dt", "a/b")], [("dt", "%")]]
    with pytest.raises(Exception, match="db.t"):
        partition_batch(["x=1"], ["dt"], "db.t")


class Counting(StaticPartitions):
    """A partition source that records its calls (the metastore's are round trips)."""

    def __init__(self, partitions: Sequence[Partition]) -> None:
        object.__setattr__(self, "partitions", tuple(partitions))
        object.__setattr__(self, "calls", [])

    def names(self) -> list[str]:
        self.calls.append("names")  # type: ignore[attr-defined]
        return super().names()

    def by_names(self, names: Sequence[str]) -> list[Partition]:
        self.calls.append("by_names")  # type: ignore[attr-defined]
        return super().by_names(names)

    def all(self) -> list[Partition]:
        self.calls.append("all")  # type: ignore[attr-defined]
        return super().all()


@pytest.fixture()
def indexed(storage_root) -> tuple[str, list[Partition]]:
    root = parse_location(storage_root)
    parts = []
    for d in range(6):
        put_parquet(storage_root, f"d={d}/f.parquet", ints(range(10 * d, 10 * d + 10)))
        parts.append(Partition(f"d={d}", (str(d),), root.join(f"d={d}").uri))
    update_index(storage_root, tuple(parse_schema_text("v bigint")), partition_columns=["d"])
    return storage_root, parts


def _list_status(location: str, source: Counting, where: str | None):  # noqa: ANN202
    from storage_handler.handler import StorageHandler

    desc = TableDesc("db.t", location, tuple(parse_schema_text("v bigint")), tuple(parse_schema_text("d int")))
    handler = StorageHandler()
    props: dict[str, str] = {}
    handler.configure_input_job_properties(desc, props, handler.decompose_where(desc, where) if where else None)
    return ParquetInputFormat().list_status(props, source)


def test_partition_calls_and_index_reads_follow_the_predicate(indexed) -> None:
    location, parts = indexed
    cases = {
        "v = 31": (["all"], {"d=3/f.parquet"}, True),  # no partition leaf: every partition, one call
        None: (["all"], {f"d={d}/f.parquet" for d in range(6)}, False),
        "d >= 0 and v = 31": (["names", "all"], {"d=3/f.parquet"}, True),  # pruning kept every name
        "d = 2 and v >= 0": (["names", "by_names"], {"d=2/f.parquet"}, True),
        "d < 2": (["names", "by_names"], {"d=0/f.parquet", "d=1/f.parquet"}, False),  # no data leaf: no index
    }
    for where, (calls, kept, reads_index) in cases.items():
        source = Counting(parts)
        result = _list_status(location, source, where)
        assert source.calls == calls, where  # type: ignore[attr-defined]
        assert {f.path for f in result.files} == kept, where
        assert (result.metrics.index_version is not None) == reads_index, where
        assert result.metrics.files_without_stats == (0 if where else 6), where  # no filter: nothing evaluated
        assert all(dict(f.partition_values)["d"] == f.path[2] for f in result.files)


def test_all_partitions_without_an_all_call() -> None:
    class NamesOnly:
        def names(self) -> list[str]:
            return ["d=1"]

        def by_names(self, names: Sequence[str]) -> list[Partition]:
            return [Partition(n, (n[2:],), f"/t/{n}") for n in names]

    assert all_partitions(NamesOnly()) == [Partition("d=1", ("1",), "/t/d=1")]


def test_metastore_all_matches_names_then_by_names(hms, metastore_uri: str, tmp_path: Path) -> None:
    from metastore.names import parse_table_name
    from storage_handler.catalog.metastore_source import MetastorePartitions
    from storage_handler.registration.register import apply_registration, plan_registration

    root = tmp_path / "t"
    for value in ["1", "a/b", "x y", None]:
        put_parquet(str(root), f"k={escape_partition_value(value)}/f.parquet", pa.table({"v": [1]}))
    name = parse_table_name("listing.t")
    apply_registration(hms, plan_registration(hms, name, str(root)))
    with MetastorePartitions(metastore_uri, "listing", "t", ("k",)) as source:
        one_call = sorted(source.all(), key=lambda p: p.name)
        two_calls = sorted(source.by_names(source.names()), key=lambda p: p.name)
    assert one_call == two_calls and len(one_call) == 4
    assert storage_for(str(root)).list_dir(parse_location(one_call[0].location).uri) is not None


# ---------------------------------------------------------------- the C lister against the Python one
ENTRY = st.sampled_from(["a.parquet", "b", "é.parquet", "_SUCCESS", ".x.crc", "000000_0", "Z", "a b", "sub/",
                         "link->f", "link->dir", "dangling", "ü€", "a.parquet2", "c.parquet._COPYING_", "_COPYING_"])


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.lists(ENTRY, max_size=8, unique=True), min_size=1, max_size=6), st.sets(st.integers(0, 5)),
       st.integers(1, 4))
def test_the_c_listing_answers_like_python(folders: list[list[str]], missing: set[int], threads: int) -> None:
    """Same scan batch, same partition numbers, whichever lister ran: hidden names, symlinks to files and folders,
    dangling links, subfolders, unicode names, missing folders, any number of threads."""
    import tempfile

    from storage_handler.catalog import listing as catalog_listing
    from storage_handler.storage.native_listing import native_lister

    assert native_lister() is not None  # a C compiler is part of this machine: the native path is what ran
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "t"
        (root / "elsewhere").mkdir(parents=True)
        (root / "elsewhere" / "target.parquet").write_bytes(b"xyz")
        parts = []
        for i, names in enumerate(folders):
            folder = root / f"p={i}"
            parts.append(Partition(f"p={i}", (str(i),), str(folder)))
            if i in missing:
                continue
            folder.mkdir()
            for name in names:
                if name.endswith("/"):
                    (folder / name).mkdir()
                elif name == "link->f":
                    os.symlink(root / "elsewhere" / "target.parquet", folder / name)
                elif name == "link->dir":
                    os.symlink(root / "elsewhere", folder / name)
                elif name == "dangling":
                    os.symlink(root / "nowhere", folder / name)
                else:
                    (folder / name).write_bytes(b"x" * (len(name) + i))
        native = list_partition_batch(str(root), ["p"], parts, threads=threads)
        native_table = list_table_batch(str(root / "p=0"))
        saved = catalog_listing.native_lister
        catalog_listing.native_lister = lambda: None  # type: ignore[assignment]
        try:
            python = list_partition_batch(str(root), ["p"], parts, threads=threads)
            python_table = list_table_batch(str(root / "p=0"))
        finally:
            catalog_listing.native_lister = saved
        assert native.batch.equals(python.batch)
        assert native.partition_of.equals(python.partition_of) and native.partitions == python.partitions
        assert native_table.batch.equals(python_table.batch)
        assert not any(p.endswith("._COPYING_") for p in native.batch.column("path").to_pylist())


def test_names_that_are_not_utf8_are_left_to_python(tmp_path: Path) -> None:
    from storage_handler.storage.native_listing import native_lister

    lister = native_lister()
    assert lister is not None
    (tmp_path / "ok.parquet").write_bytes(b"1")
    assert lister.list_folders([str(tmp_path)]) is not None
    with open(os.fsencode(tmp_path) + b"/\xff.parquet", "wb") as fh:
        fh.write(b"2")
    assert lister.list_folders([str(tmp_path)]) is None
    # the Python listing then refuses the table in one line naming the file, rather than a codec trace
    with pytest.raises(StorageError, match=r"table db.t: a data file is named b'\\xff.parquet', which is not UTF-8"):
        list_table_batch(str(tmp_path), table="db.t")


def test_without_a_compiler_the_python_listing_is_used(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from storage_handler.storage import native_listing

    put_bytes(str(tmp_path / "t"), "d=1/a.parquet", b"x")
    partitions = [Partition("d=1", ("1",), str(tmp_path / "t/d=1"))]
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("HSH_HOME", str(tmp_path / "home"))
            patch.setenv("CC", "/bin/false")
            native_listing.native_lister.cache_clear()
            assert native_listing.native_lister() is None
            assert "could not be built" in caplog.text
            listed = list_partition_batch(str(tmp_path / "t"), ["d"], partitions)
            assert listed.batch.column("path").to_pylist() == ["d=1/a.parquet"]
            patch.setenv("HSH_NATIVE_LISTING", "0")
            native_listing.native_lister.cache_clear()
            assert native_listing.native_lister() is None
    finally:
        native_listing.native_lister.cache_clear()  # the next caller builds (or finds) the real one again
    assert native_listing.native_lister() is not None


BOTH = "a=__HIVE_DEFAULT_PARTITION__/b=__HIVE_DEFAULT_PARTITION__"  # two such values: always kept


@pytest.mark.parametrize(("where", "kept"), [
    ("a = ''", {"a=__HIVE_DEFAULT_PARTITION__/b=x", BOTH}), ("a IS NULL", {"a=__HIVE_DEFAULT_PARTITION__/b=x", BOTH}),
    ("a = 'v'", {"a=v/b=x", BOTH}), ("a IS NULL AND b = ''", {BOTH}),  # NULL for one, '' for the other
    ("b = 'y'", {BOTH}), ("a <> 'v'", {"a=__HIVE_DEFAULT_PARTITION__/b=x", BOTH}),
])
def test_a_default_name_is_read_as_null_or_empty(where: str, kept: set[str]) -> None:
    """The metastore names a partition valued '' like the default partition: pruning by name keeps it for any
    reading that may match (the fetched values decide per file)."""
    from storage_handler.catalog import prune_partition_names
    from storage_handler.decode.hiveql import parse_filter
    from storage_handler.decode.to_sarg import to_search_argument
    from storage_handler.pruning import PredicateEvaluator
    from storage_handler.types import parse_schema_text

    keys = parse_schema_text("a string, b string")
    names = ["a=v/b=x", "a=__HIVE_DEFAULT_PARTITION__/b=x", BOTH]
    evaluator = PredicateEvaluator(to_search_argument(parse_filter(where, keys)).sarg, [], keys)
    assert set(prune_partition_names(evaluator, names, ["a", "b"])) == kept
