"""Locations: which storage a location is on, and how it joins (the one place that tells them apart)."""

from __future__ import annotations

import pytest

from storage_handler.errors import ConfigurationError
from storage_handler.storage import LOCAL, S3, file_uri, local_path, parse_location
from storage_handler.storage.location import ARROW


def test_local_forms(tmp_path):
    root = str(tmp_path / "a b")
    for text in (root, f"file:{root}", f"file://{root}", f"file://localhost{root}", f"{root}/"):
        loc = parse_location(text)
        assert (loc.kind, loc.key, loc.uri) == (LOCAL, root, root)
    assert local_path(f"file:{root}%20") == root + "%20"  # Hive locations are not URI-encoded
    assert file_uri(root) == f"file://{root}"


@pytest.mark.parametrize("name", ["bf#2", "q?x=1", "both?a#b", "#"])
def test_hash_and_question_mark_are_part_of_a_local_path(tmp_path, name):
    """As in Hadoop's ``Path``: ``file:/data/bf#2`` is the folder ``bf#2``, not ``bf`` with a fragment (reading it
    as a URL put another folder's files under this partition's values)."""
    folder = str(tmp_path / name)
    for text in (f"file:{folder}", f"file://{folder}", f"file://localhost{folder}", folder):
        assert parse_location(text).key == folder, text
    assert parse_location(f"s3a://lake/t/{name}").key == f"t/{name}"


@pytest.mark.parametrize("scheme", ["s3", "s3a", "s3n"])
def test_s3_schemes_are_one_store_and_keep_their_spelling(scheme):
    loc = parse_location(f"{scheme}://lake/warehouse/t/")
    assert (loc.kind, loc.scheme, loc.bucket, loc.key) == (S3, scheme, "lake", "warehouse/t")
    assert loc.join("dt=1/part 0 é.parquet").uri == f"{scheme}://lake/warehouse/t/dt=1/part 0 é.parquet"
    assert file_uri(loc.uri) == f"{scheme}://lake/warehouse/t"


def test_relative_to():
    root = parse_location("s3a://lake/t")
    assert parse_location("s3a://lake/t/dt=1").relative_to(root) == "dt=1"
    assert parse_location("s3a://lake/t").relative_to(root) == ""
    assert parse_location("s3a://lake/t2/dt=1").relative_to(root) is None  # a sibling with a common prefix
    assert parse_location("s3a://other/t/dt=1").relative_to(root) is None
    assert parse_location("/data/t/dt=1").relative_to(parse_location("/data/t")) == "dt=1"
    assert parse_location("/data/t").relative_to(root) is None


@pytest.mark.parametrize("text", ["gs://b/x", "abfss://c@acct.dfs.core.windows.net/x", "hdfs://nn:8020/x"])
def test_other_stores_go_through_pyarrow(text):
    assert parse_location(text).kind == ARROW


@pytest.mark.parametrize("text, message", [
    ("", "empty location"), ("ftp://host/x", "ftp:// scheme is not supported"),
    ("s3a:lake/x", "s3a://bucket/folder"), ("s3a:///x", "names no bucket"),
    ("s3a://lake/a/../b", "'..' path segment"), ("file://otherhost/x", "names host"),
])
def test_bad_locations_are_one_clear_error(text, message):
    with pytest.raises(ConfigurationError, match=message):
        parse_location(text)


def test_local_path_refuses_remote_locations():
    with pytest.raises(ConfigurationError, match="not on this machine's disk"):
        local_path("s3a://lake/x")


def test_the_s3_spellings_of_one_folder_are_one_place():
    """The metastore may hold one folder as s3://, s3a:// or s3n:// (other tools write other spellings): sync and
    drop compare places, so a partition moved to ``s3://b/t/p=8`` is not added again as ``s3a://b/t/p=8``."""
    places = {parse_location(t).place for t in ("s3://b/t/p=8", "s3a://b/t/p=8/", "s3n://b/t/p=8")}
    assert places == {("s3", "b", "t/p=8")}
    assert parse_location("s3a://b/t/p=8").place != parse_location("s3a://c/t/p=8").place
    assert parse_location("file:/data/t/").place == parse_location("/data/t").place
    assert parse_location("gs://b/t").place == parse_location("gcs://b/t").place != parse_location("hdfs://b/t").place
