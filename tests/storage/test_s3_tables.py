"""Tables on S3 end to end, against a real S3 endpoint (moto's server), a real metastore and a real Spark.

Registration, scan, sync, refresh, freshness by ETag, request counts, the Python data source reading S3 through
pyarrow, the native scan's one-line refusal where this Spark has no S3A, and bad input.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from storage_handler.demo.data import generate_events
from storage_handler.storage import storage_for
from tests.helpers import run_hsh
from tests.pyarrow_compat import needs_bloom_writer
from tests.s3 import ENV, new_bucket, put_parquet, upload_tree

pytestmark = pytest.mark.usefixtures("s3_server")


@pytest.fixture(scope="module")
def local_events(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generate_events(tmp_path_factory.mktemp("events") / "events", days=4, files_per_day=3, rows_per_file=50)


@pytest.fixture()
def s3_events(local_events: Path) -> str:
    return upload_tree(local_events, f"s3a://{new_bucket()}/lake/events")


def hsh(metastore_uri: str, *args: str, env: dict[str, str] | None = None) -> dict:
    proc = run_hsh(*args, "--json", "--metastore", metastore_uri, env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def full_count(local_events: Path, predicate) -> int:  # type: ignore[no-untyped-def]
    table = pq.read_table(local_events)
    return sum(1 for row in table.to_pylist() if predicate(row))


def test_register_scan_and_describe_an_s3_table(metastore_uri, hms, s3_events, local_events):
    out = hsh(metastore_uri, "register", "s3db.events", s3_events)
    assert out["files"] == 12 and out["partitions_added"] == 4 and out["location"] == s3_events
    table = hms.get_table("s3db", "events")
    assert table.sd.location == s3_events
    assert {p.sd.location for p in hms.get_partitions("s3db", "events")} == {
        f"{s3_events}/dt=2024-01-0{d}" for d in range(1, 5)}
    snapshots = storage_for(s3_events).list_dir(f"{s3_events}/_hsh_index/snapshots")
    assert [f.name for f in snapshots.files] == ["v00000001.parquet"]

    scan = hsh(metastore_uri, "scan", "s3db.events", "--where", "event_id = 160 and dt >= '2024-01-02'")
    assert scan["partitions_kept"] == 3 and scan["files_kept"] == 1 and scan["files_without_stats"] == 0
    assert scan["kept_paths"] == ["dt=2024-01-02/part-00000.parquet"]
    described = hsh(metastore_uri, "describe", "s3db.events")
    assert described["storage"]["storage"] == "s3" and described["storage"]["addressing"] == "path"
    assert described["index_version"] == 1 and described["index_files"] == 12
    assert ENV["AWS_SECRET_ACCESS_KEY"] not in json.dumps(described)


def test_sync_refresh_and_freshness_by_etag(metastore_uri, hms, s3_events):
    hsh(metastore_uri, "register", "s3db.fresh", s3_events)
    # a new partition folder written by another job, registered by sync
    put_parquet(s3_events, "dt=2024-02-01/part-0.parquet", pa.table({"event_id": pa.array([7001], pa.int64())}))
    out = hsh(metastore_uri, "sync", "s3db.fresh")
    assert out["partitions_added"] == 1 and out["index_added"] == 1
    # the same object rewritten with other values, same size, within the same second: only the ETag changed
    target = "dt=2024-02-01/part-0.parquet"
    before = storage_for(s3_events).stat(f"{s3_events}/{target}")
    put_parquet(s3_events, target, pa.table({"event_id": pa.array([7002], pa.int64())}))
    after = storage_for(s3_events).stat(f"{s3_events}/{target}")
    assert after.size == before.size and after.version != before.version
    scan = hsh(metastore_uri, "scan", "s3db.fresh", "--where", "event_id = 7002")
    assert target in scan["kept_paths"] and scan["files_without_stats"] == 1  # not trusted: kept
    refreshed = hsh(metastore_uri, "index", "refresh", "s3db.fresh")
    assert refreshed["changed"] == [target], refreshed
    scan = hsh(metastore_uri, "scan", "s3db.fresh", "--where", "event_id = 7002")
    assert scan["kept_paths"] == [target] and scan["files_without_stats"] == 0


def test_a_one_partition_query_makes_a_constant_number_of_requests(metastore_uri, s3_server, tmp_path):
    """Requests per query do not grow with the table: the kept partition's LIST, the index's LIST and reads."""
    from metastore.client import MetastoreClient
    from storage_handler.handler import list_status_for
    from storage_handler.table_desc import TableDesc

    counts = {}
    for days in (3, 12):
        local = generate_events(tmp_path / f"e{days}", days=days, files_per_day=2, rows_per_file=20)
        location = upload_tree(local, f"s3a://{new_bucket()}/events")
        hsh(metastore_uri, "register", f"s3db.req{days}", location)
        with MetastoreClient(metastore_uri) as client:
            desc = TableDesc.from_hms(client.get_table("s3db", f"req{days}"), client.uri)
        time.sleep(0.3)
        before = len(s3_server.requests())
        result, _ = list_status_for(desc, "dt = '2024-01-02' and event_id = 45")
        time.sleep(0.5)
        counts[days] = s3_server.requests()[before:]
        assert [f.path for f in result.files] == ["dt=2024-01-02/part-00000.parquet"]
    assert len(counts[3]) == len(counts[12]) <= 5, counts  # LIST partition, LIST snapshots, GET footer + groups


def test_the_python_data_source_reads_an_s3_table_end_to_end(metastore_uri, spark, s3_events, local_events):
    from storage_handler.spark import last_scan_metrics
    from storage_handler.spark.compat import pyspark_version

    if pyspark_version() < (4, 0):  # its one-line refusal there is tests/compat's
        pytest.skip(f"Spark {pyspark_version()} has no Python data sources")

    hsh(metastore_uri, "register", "s3db.spark_events", s3_events)
    where = "event_id between 40 and 60 and kind is not null"
    expected = full_count(local_events, lambda r: 40 <= r["event_id"] <= 60 and r["kind"] is not None)
    pruning = spark.read.format("hsh").option("metastore", metastore_uri).option("pruneByQueryFilters", "true")
    rows = pruning.load("s3db.spark_events").where(where).select("event_id", "dt").collect()
    assert len(rows) == expected and expected > 0
    metrics = last_scan_metrics("s3db.spark_events")
    assert metrics["path"] == "spark-datasource" and (metrics["files_kept"], metrics["files_total"]) == (2, 12)
    # the default (no pruning by the query's filters): the same DataFrame answers every later query right, even
    # the unfiltered one that Spark 4.3 would otherwise plan with the first query's file list
    df = spark.read.format("hsh").option("metastore", metastore_uri).load("s3db.spark_events")
    assert len(df.where(where).collect()) == expected
    assert df.count() == 600


def test_the_native_scan_refuses_s3a_in_one_line_without_a_connector(metastore_uri, spark, s3_events):
    hsh(metastore_uri, "register", "s3db.native", s3_events)
    with pytest.raises(Exception) as err:
        spark.sql("select count(*) from s3db.native where event_id = 3").collect()
    text = str(err.value)
    assert "table s3db.native is on s3a://" in text and "org.apache.hadoop:hadoop-aws:3." in text, text


# ---------------------------------------------------------------- bad input: one line each, nothing changed
def refused(metastore_uri: str, hms, *args: str, env: dict[str, str] | None = None) -> str:
    proc = run_hsh(*args, "--metastore", metastore_uri, env=env)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), proc.stderr
    return lines[0]


def test_a_missing_bucket(metastore_uri, hms):
    line = refused(metastore_uri, hms, "register", "bad1.t", "s3a://no-such-bucket-hsh/t")
    assert "bucket 'no-such-bucket-hsh' does not exist" in line
    assert "bad1" not in hms.get_all_databases()


def test_an_endpoint_that_is_down(metastore_uri, hms, s3_events):
    line = refused(metastore_uri, hms, "register", "bad2.t", s3_events, env={"AWS_ENDPOINT_URL": "http://127.0.0.1:1"})
    assert "does not answer" in line and "127.0.0.1:1" in line
    assert "bad2" not in hms.get_all_databases()


def test_wrong_credentials(metastore_uri, hms, s3_events, tmp_path):
    """A second real S3 endpoint that checks credentials (moto with authentication on): access denied."""
    import socket
    import subprocess
    import sys

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            env={**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": "0"},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.05)
        line = refused(metastore_uri, hms, "register", "bad3.t", s3_events,
                       env={"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}"})
    finally:
        proc.terminate()  # by its PID
        proc.wait(timeout=30)
    assert "access denied (InvalidAccessKeyId" in line and ENV["AWS_SECRET_ACCESS_KEY"] not in line
    assert "bad3" not in hms.get_all_databases()


def test_credentials_in_table_properties_are_refused(metastore_uri, hms, s3_events):
    line = refused(metastore_uri, hms, "register", "bad4.t", s3_events,
                   "--table-property", "fs.s3a.secret.key=TOPSECRET")
    assert "AWS chain" in line and "TOPSECRET" not in line
    assert "bad4" not in hms.get_all_databases()


def test_a_key_with_spaces_and_unicode(metastore_uri, hms):
    location = f"s3a://{new_bucket()}/my lake/événements"
    put_parquet(location, "dt=a b/part 0 é.parquet", pa.table({"x": pa.array([1, 2], pa.int64())}))
    hsh(metastore_uri, "register", "odd.t", location)
    scan = hsh(metastore_uri, "scan", "odd.t", "--where", "x = 2")
    assert scan["kept_paths"] == ["dt=a b/part 0 é.parquet"]
    assert hsh(metastore_uri, "scan", "odd.t", "--where", "x = 7")["kept_paths"] == []


def test_a_partition_in_another_bucket_is_listed_with_that_buckets_settings(metastore_uri, hms):
    """The table's ``fs.s3a.bucket.<name>.endpoint`` settings name the store of each bucket; the environment's
    endpoint is down. A partition in the second bucket was listed with the environment's settings (the table's
    were not passed on), so the scan failed -- or, with another store answering there, listed the wrong one."""
    from storage_handler.registration.table_spec import build_partition

    table_bucket, other_bucket = new_bucket(), new_bucket()
    location = f"s3a://{table_bucket}/t"
    put_parquet(location, "dt=a/part-0.parquet", pa.table({"x": pa.array([1, 2], pa.int64())}))
    put_parquet(f"s3a://{other_bucket}/elsewhere", "part-0.parquet", pa.table({"x": pa.array([3, 4], pa.int64())}))
    endpoints = [f"fs.s3a.bucket.{b}.endpoint={ENV['AWS_ENDPOINT_URL']}" for b in (table_bucket, other_bucket)]
    hsh(metastore_uri, "register", "twob.t", location, *(a for e in endpoints for a in ("--table-property", e)))
    table = hms.get_table("twob", "t")
    hms.add_partitions("twob", "t", [build_partition(table, ["b"], f"s3a://{other_bucket}/elsewhere")])
    down = {"AWS_ENDPOINT_URL": "http://127.0.0.1:1"}
    scan = hsh(metastore_uri, "scan", "twob.t", "--where", "x >= 1", env=down)
    other = f"s3a://{other_bucket}/elsewhere/part-0.parquet"
    assert sorted(scan["kept_paths"]) == sorted(["dt=a/part-0.parquet", other])


@needs_bloom_writer
def test_a_writer_s_bloom_filters_are_read_from_the_table_s_store(metastore_uri, hms):
    """The table names its endpoint; the environment's is down (or another store holding older copies). Footers
    came from the table's store but the writer's bloom filters from the environment's: a copy's bytes ruled out
    the file holding the value, or (as here) no filter was read and point lookups stopped pruning."""
    location = f"s3a://{new_bucket()}/t"
    for i in range(4):  # ids interleaved: every file's min/max overlap, only bloom filters tell them apart
        put_parquet(location, f"f{i}.parquet", pa.table({"id": pa.array(range(i, 4000, 4), pa.int64())}),
                    bloom_filter_options={"id": {"ndv": 1000, "fpp": 0.01}})
    down = {"AWS_ENDPOINT_URL": "http://127.0.0.1:1"}
    hsh(metastore_uri, "register", "bloomep.t", location, "--bloom-filter-columns", "id",
        "--table-property", f"fs.s3a.endpoint={ENV['AWS_ENDPOINT_URL']}", env=down)
    assert hsh(metastore_uri, "scan", "bloomep.t", "--where", "id = 1001", env=down)["kept_paths"] == ["f1.parquet"]


def test_sync_does_not_add_a_folder_another_partition_holds_under_another_spelling(metastore_uri, hms):
    from storage_handler.registration.table_spec import build_partition

    bucket = new_bucket()
    location = f"s3a://{bucket}/t"
    put_parquet(location, "p=1/a.parquet", pa.table({"x": pa.array([1], pa.int64())}))
    hsh(metastore_uri, "register", "spell.t", location)
    put_parquet(location, "p=8/b.parquet", pa.table({"x": pa.array([8], pa.int64())}))
    hms.add_partitions("spell", "t", [build_partition(hms.get_table("spell", "t"), ["9"], f"s3://{bucket}/t/p=8")])
    assert hsh(metastore_uri, "sync", "spell.t", "--dry-run")["partitions_to_add"] == []


def test_sync_names_a_type_conflict_when_the_endpoint_is_a_table_property(metastore_uri, hms):
    location = f"s3a://{new_bucket()}/t"
    put_parquet(location, "p=1/a.parquet", pa.table({"x": pa.array([1], pa.int64())}))
    down = {"AWS_ENDPOINT_URL": "http://127.0.0.1:1"}
    hsh(metastore_uri, "register", "conflict.t", location, "--table-property",
        f"fs.s3a.endpoint={ENV['AWS_ENDPOINT_URL']}", env=down)
    put_parquet(location, "p=1/a.parquet", pa.table({"x": ["now a string"]}))  # rewritten with another type
    proc = run_hsh("sync", "conflict.t", "--metastore", metastore_uri, env=down)
    assert proc.returncode == 2 and "column 'x' is bigint in the metastore but string" in proc.stderr, proc.stderr


@pytest.mark.parametrize("slash", ["/", ""])
def test_a_table_at_a_bucket_s_root(metastore_uri, hms, slash):
    """Hive accepts LOCATION 's3a://bucket/'; the metastore refused the path-less 's3a://bucket' the handler sent
    ("Can not create a Path from an empty string")."""
    bucket = new_bucket()
    put_parquet(f"s3a://{bucket}", "p=1/a.parquet", pa.table({"x": pa.array([1, 2], pa.int64())}))
    name = f"root{len(slash)}.t"
    hsh(metastore_uri, "register", name, f"s3a://{bucket}{slash}")
    assert hms.get_table(*name.split(".")).sd.location == f"s3a://{bucket}/"
    assert hsh(metastore_uri, "scan", name, "--where", "x = 2")["kept_paths"] == ["p=1/a.parquet"]
    assert hsh(metastore_uri, "scan", name, "--where", "x = 7")["kept_paths"] == []  # its index prunes
