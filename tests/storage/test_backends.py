"""Every backend behind the one storage interface, against the real thing: the local disk and an S3 endpoint."""

from __future__ import annotations

import time

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from storage_handler.errors import ObjectChangedError
from storage_handler.storage import ArrowStorage, parse_location, storage_for
from tests.s3 import put_bytes, put_parquet

NAMES = ["dt=1/part 0.parquet", "dt=1/é ü/x.parquet", "dt=2/_SUCCESS", "dt=2/.crc", "_hsh_index/snapshots/v1",
         "top.parquet"]


def test_listing_walking_and_hidden_names(storage_root):
    store = storage_for(storage_root)
    for name in NAMES:
        put_bytes(storage_root, name, b"0123456789")
    root = parse_location(storage_root)
    listing = store.list_dir(root.join("dt=1").uri)
    assert [f.name for f in listing.files] == ["part 0.parquet"] and listing.folders == ("é ü",)
    assert all(f.size == 10 and f.version for f in listing.files)  # a version tag on every file
    assert store.list_dir(root.join("nope").uri) is None
    hidden = lambda name: name.startswith(("_", "."))  # noqa: E731
    assert sorted(f.name for f in store.walk(root.uri, skip=hidden)) == [
        "dt=1/part 0.parquet", "dt=1/é ü/x.parquet", "top.parquet"]
    assert sorted(store.folders_with_files(root.uri, 1, skip=hidden)) == ["dt=1"]
    assert store.is_dir(root.join("dt=2").uri) and not store.is_dir(root.join("dt=3").uri)
    entry = store.stat(root.join("top.parquet").uri)
    assert entry is not None and entry.size == 10
    assert store.stat(root.join("dt=1").uri) is None and store.stat(root.join("missing").uri) is None


def test_create_if_absent_put_and_delete(storage_root):
    store = storage_for(storage_root)
    uri = parse_location(storage_root).join("x/y.json").uri
    assert store.create(uri, b"first") is True
    assert store.create(uri, b"second") is False
    assert store.read_bytes(uri) == b"first"
    store.put(uri, b"third")
    assert store.read_bytes(uri) == b"third"
    store.delete([uri, uri + ".missing"])
    assert store.read_bytes(uri) is None
    put_bytes(storage_root, "t/a", b"1")
    put_bytes(storage_root, "t/b/c", b"2")
    store.delete_tree(parse_location(storage_root).join("t").uri)
    assert list(store.walk(parse_location(storage_root).join("t").uri)) == []


def test_footer_reads_follow_the_listed_version(storage_root):
    """A footer is read from exactly the listed version: a rewrite in between fails the read (S3: If-Match)."""
    uri = put_parquet(storage_root, "dt=1/p.parquet", pa.table({"x": [1, 2, 3]}))
    store = storage_for(storage_root)
    entry = store.stat(uri)
    with store.open_input(uri, entry) as source:
        assert pq.ParquetFile(source).metadata.num_rows == 3
    put_parquet(storage_root, "dt=1/p.parquet", pa.table({"x": [7, 8, 9]}))  # same size, same second
    again = store.stat(uri)
    assert again.size == entry.size and again.version != entry.version
    if parse_location(storage_root).kind == "s3":  # LastModified has whole seconds: the ETag is what tells
        with pytest.raises(ObjectChangedError, match="changed since it was listed"), \
                store.open_input(uri, entry) as source:
            pq.ParquetFile(source)


def test_the_pyarrow_backend_lists_and_reads_but_never_commits(tmp_path):
    """gs://, abfs://, hdfs:// go through pyarrow.fs; exercised here over pyarrow's own local file system."""
    (tmp_path / "bucket" / "t" / "dt=1").mkdir(parents=True)
    pq.write_table(pa.table({"x": [1]}), tmp_path / "bucket" / "t" / "dt=1" / "p.parquet")
    store = ArrowStorage(pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem()))
    listing = store.list_dir("gs://bucket/t/dt=1")
    assert [f.name for f in listing.files] == ["p.parquet"] and listing.files[0].version is None
    assert [f.name for f in store.walk("gs://bucket/t")] == ["dt=1/p.parquet"]
    with store.open_input("gs://bucket/t/dt=1/p.parquet") as source:
        assert pq.ParquetFile(source).metadata.num_rows == 1
    with pytest.raises(Exception, match="no atomic create-if-absent on gs://"):
        store.create("gs://bucket/t/_hsh_index/snapshots/v00000001.parquet", b"x")


def test_an_s3_listing_is_one_request_per_thousand_keys(s3_server):
    from tests.s3 import new_bucket

    root = f"s3a://{new_bucket()}/t"
    for i in range(5):
        put_bytes(root, f"dt=1/f{i}", b"x")
    before = len(s3_server.requests())
    time.sleep(0.05)
    assert len(storage_for(root).list_dir(f"{root}/dt=1").files) == 5
    time.sleep(0.2)  # the server writes its access log line after answering
    new = s3_server.requests()[before:]
    assert [m for m, _ in new] == ["GET"] and "list-type=2" in new[0][1]


def test_s3_folder_markers_are_not_files(s3_server):
    """EMRFS / s3n write ``folder_$folder$`` objects beside folders, which Hadoop's S3A listing skips. Read as files
    they made registration refuse the layout (a 'file' with no partition keys) or kept a marker as an unreadable
    data file in every scan."""
    from tests.s3 import client, new_bucket

    bucket = new_bucket()
    root = f"s3a://{bucket}/t"
    for name in ("dt=1_$folder$", "dt=1/a.parquet", "dt=1/sub_$folder$", "dt=2/", "dt=2/b.parquet"):
        client().put_object(Bucket=bucket, Key=f"t/{name}", Body=b"" if name.endswith(("$", "/")) else b"x")
    store = storage_for(root)
    listing = store.list_dir(root)
    assert listing is not None and listing.files == () and sorted(listing.folders) == ["dt=1", "dt=2"]
    assert [f.name for f in store.list_dir(f"{root}/dt=1").files] == ["a.parquet"]
    assert sorted(f.name for f in store.walk(root)) == ["dt=1/a.parquet", "dt=2/b.parquet"]
