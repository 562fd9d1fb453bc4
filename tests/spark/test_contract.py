"""The one contract between the session extension (Java) and the Python side (``storage_handler/contract.json``).

The Java side's own request goes through the Python prune service, and the Python answer back through the Java
reader of answers, on a registered table; a field one side leaves out fails loudly on the other, naming it.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from py4j.protocol import Py4JJavaError

from storage_handler import contract
from storage_handler.input_format import ScanMetrics
from storage_handler.spark.prune_service import handle
from storage_handler.spark.table_props import TableIdentity
from storage_handler.table_desc import TableDesc
from tests.spark.typed_data import register_typed

TABLE = "contract.typed"


@pytest.fixture(scope="module")
def table_json(tmp_path_factory, metastore_uri: str, spark) -> str:
    from metastore.client import MetastoreClient

    register_typed(tmp_path_factory.mktemp("contract") / "typed", metastore_uri, TABLE)
    with MetastoreClient(metastore_uri) as client:
        desc = TableDesc.from_hms(client.get_table("contract", "typed"), client.uri)
    return json.dumps(TableIdentity(desc.name, desc.location, desc.columns, desc.partition_keys,
                                    desc.metastore_uri).to_contract())


def _relations(spark):
    return spark._jvm.hsh.spark.HshRelations


def test_java_request_python_answer_java_reading(spark, table_json: str) -> None:
    request = json.loads(_relations(spark).scanRequest(spark._jsparkSession, table_json, TABLE,
                                                       "c_bigint < 30 AND region = 'eu'"))
    assert set(request) == set(contract.SCAN_REQUEST) and request["contract"] == contract.VERSION
    assert request["table"] == json.loads(table_json)  # the table round-trips through Java unchanged
    answer = handle(request)
    assert answer["ok"] and set(contract.METRICS) <= set(answer["metrics"])
    assert 0 < answer["metrics"]["files_kept"] < answer["metrics"]["files_total"]
    read = json.loads(_relations(spark).readAnswer(table_json, json.dumps(answer)))
    assert read == [[row[0], row[1], row[2]] for row in answer["files"]]
    assert all(Path(uri.removeprefix("file://")).is_file() for uri, _, _ in read)


def test_the_scan_log_gets_the_fully_matched_files_after_the_answer(spark, table_json: str) -> None:
    """The service answers a scan without aggregates before its strict evaluation (off the query's path), and
    records the fully-matched files and rows in the scan log afterwards, as a scan evaluated at once does."""
    from storage_handler.spark import last_scan_metrics
    from storage_handler.spark.prune_service import answer_line

    request = {**json.loads(_relations(spark).scanRequest(spark._jsparkSession, table_json, TABLE,
                                                          "region = 'eu'")), "record": True}
    at_once = handle(request)["metrics"]  # no deferred work: recorded before answering, strictly evaluated
    recorded = last_scan_metrics(TABLE)
    assert at_once["files_matched_fully"] > 0 and recorded["files_matched_fully"] == at_once["files_matched_fully"]
    deferred: list = []
    answer = json.loads(answer_line(request, deferred))
    assert answer["files"] == handle({**request, "record": False})["files"]
    assert last_scan_metrics(TABLE)["time"] == recorded["time"]  # nothing recorded before the answer is out
    for task in deferred:
        task()
    later = last_scan_metrics(TABLE)
    assert (later["files_matched_fully"], later["rows_matched_fully"]) == (
        at_once["files_matched_fully"], at_once["rows_matched_fully"])


@pytest.mark.parametrize("uri", [
    "file:///work/t/d=1/part-0.parquet", "file:///a b/c%41/é.parquet", "file:///x/a:b?c#d.parquet",
    "s3a://bucket/k/d=__HIVE_DEFAULT_PARTITION__/f", "s3a://bucket/f", "file:///x//y", "file:///x/y/", "rel/x",
    "file:/x/y", "gs://b/" + "😀/[1]{2}^",
])
def test_the_file_index_makes_the_path_hadoop_makes(spark, uri: str) -> None:
    """Kept files' Paths are built without Path's string normalization, and must still equal Hadoop's."""
    hadoop = spark._jvm.org.apache.hadoop.fs.Path(uri)
    assert _relations(spark).pathOf(uri) == f"{hadoop.toString()} {hadoop.toUri().toString()}"


@pytest.mark.parametrize("broken", ["metric", "files", "row"])
def test_a_field_missing_from_the_answer_fails_naming_it(spark, table_json: str, broken: str) -> None:
    request = json.loads(_relations(spark).scanRequest(spark._jsparkSession, table_json, TABLE, "c_bigint < 30"))
    answer = handle(request)
    if broken == "metric":
        del answer["metrics"]["bytes_kept"]
        name = "bytes_kept"
    elif broken == "files":
        del answer["files"]
        name = "files"
    else:
        answer["files"][0] = answer["files"][0][:2]
        name = "mtime_ms"
    with pytest.raises(Py4JJavaError, match=rf"has no '{name}' \(contract version {contract.VERSION}\)"):
        _relations(spark).readAnswer(table_json, json.dumps(answer))


def test_python_sends_every_metric_the_jvm_reads() -> None:
    assert set(contract.METRICS) <= {f.name for f in dataclasses.fields(ScanMetrics)}
    with pytest.raises(AssertionError, match="bytes_kept"):
        contract.answer_metrics({m: 0 for m in contract.METRICS if m != "bytes_kept"})


def test_table_parameters_come_from_the_contract() -> None:
    from metastore.names import parse_table_name
    from storage_handler.job_conf import INDEX_VERSION
    from storage_handler.registration.table_spec import build_table
    from storage_handler.types import parse_hive_type

    table = build_table(parse_table_name("a.b"), "/x", [("c", parse_hive_type("int"))], [], owner="me")
    assert contract.PARAM_HANDLER in table.parameters
    assert INDEX_VERSION == contract.PARAM_INDEX_VERSION
