"""``hsh register --bloom-filter-columns / --value-list-columns``: point lookups on unclustered columns prune;
``describe`` shows the choice and the sizes; ``explain`` names the filter; a changed choice applies at refresh."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from tests.helpers import run_hsh

FILES = 12


def _dataset(root: Path) -> list[list[int]]:
    """Random 64-bit ids (no file's range excludes any other's) and three codes per file."""
    root.mkdir()
    rng = random.Random(17)
    ids = []
    for i in range(FILES):
        uids = [rng.getrandbits(63) - 2**62 for _ in range(200)]
        ids.append(uids)
        codes = [f"C{3 * i + k:03d}" for k in range(3)] * 67
        pq.write_table(pa.table({"uid": pa.array(uids + [None], pa.int64()), "code": pa.array(codes[:201])}),
                       root / f"part-{i:02d}.parquet")
    return ids


def _hsh(*args: str) -> Any:
    proc = run_hsh(*args, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _kept(uri: str, table: str, where: str) -> list[str]:
    """The files ``hsh scan`` keeps, computed in this process (the same code path, without a Python start-up)."""
    from metastore.client import MetastoreClient
    from storage_handler.handler import list_status_for
    from storage_handler.table_desc import TableDesc

    database, name = table.split(".")
    with MetastoreClient(uri) as client:
        desc = TableDesc.from_hms(client.get_table(database, name), client.uri)
    result, _ = list_status_for(desc, where)
    return sorted(f.path for f in result.files)


def test_bloom_filters_and_value_lists_prune_point_lookups(metastore_uri: str, tmp_path: Path) -> None:
    root = tmp_path / "ids"
    ids = _dataset(root)
    _hsh("register", "bloomcli.ids", str(root), "--location", f"file:{root}", "--bloom-filter-columns", "uid",
         "--bloom-filter-fpp", "0.001", "--value-list-columns", "code", "--value-list-max", "8",
         "--metastore", metastore_uri)
    scan = _hsh("scan", "bloomcli.ids", "--where", f"uid = {ids[5][7]}", "--metastore", metastore_uri)
    assert scan["kept_paths"] == ["part-05.parquet"] and scan["files_total"] == FILES
    assert _kept(metastore_uri, "bloomcli.ids", "uid = 12345") == []
    assert _kept(metastore_uri, "bloomcli.ids", f"uid in ({ids[1][0]}, {ids[9][199]}, 7)") == \
        ["part-01.parquet", "part-09.parquet"]
    assert _kept(metastore_uri, "bloomcli.ids", "code = 'C004'") == ["part-01.parquet"]
    assert len(_kept(metastore_uri, "bloomcli.ids", "code <> 'C004'")) == FILES  # every file has other codes
    assert _kept(metastore_uri, "bloomcli.ids", "code not in ('C000', 'C001', 'C002', 'C003')") == \
        [f"part-{i:02d}.parquet" for i in range(1, FILES)]  # file 0 holds only those

    info = _hsh("describe", "bloomcli.ids", "--metastore", metastore_uri)
    assert info["handler_parameters"]["hsh.bloom.filter.columns"] == "uid"
    assert info["handler_parameters"]["hsh.value.list.columns"] == "code"
    sizes = {(m["column"], m["kind"]): m for m in info["membership"]}
    assert sizes[("uid", "bloom filter")]["files"] == FILES and sizes[("code", "value list")]["files"] == FILES
    assert info["index_bytes_per_file"] > 0

    explained = _hsh("explain", "bloomcli.ids", "--where", "uid = 12345", "--metastore", metastore_uri)
    assert len(explained["pruned_sample"]) == 5 and all(  # 12345 lies inside every file's random [min, max]
        s["because"] == ["leaf-0 (EQUALS uid 12345) = NO_NULL (ruled out by the bloom filter of uid)"]
        for s in explained["pruned_sample"])


def test_a_changed_choice_applies_at_the_next_refresh(metastore_uri: str, tmp_path: Path) -> None:
    from metastore.client import MetastoreClient

    root = tmp_path / "later"
    ids = _dataset(root)
    _hsh("register", "bloomcli.later", str(root), "--metastore", metastore_uri)
    assert len(_kept(metastore_uri, "bloomcli.later", f"uid = {ids[3][3]}")) == FILES  # min/max alone: nothing
    with MetastoreClient(metastore_uri) as client:  # ALTER TABLE ... SET TBLPROPERTIES, as from Hive or Spark
        table = client.get_table("bloomcli", "later")
        table.parameters["hsh.bloom.filter.columns"] = "uid"
        client.alter_table(table)
    refresh = _hsh("index", "refresh", "bloomcli.later", "--metastore", metastore_uri)
    assert refresh["full_rebuild"] is False and refresh["membership_read"] == ["uid"] and refresh["added"] == []
    assert _kept(metastore_uri, "bloomcli.later", f"uid = {ids[3][3]}") == ["part-03.parquet"]

    again = _hsh("register", "bloomcli.later", str(root), "--bloom-filter-columns", "", "--metastore", metastore_uri)
    assert again["create_table"] is False
    assert len(_kept(metastore_uri, "bloomcli.later", f"uid = {ids[3][3]}")) == FILES  # dropped again
    assert all(m["column"] != "uid" for m in _hsh("describe", "bloomcli.later", "--metastore", metastore_uri)
               .get("membership", []))


def test_a_bad_choice_is_one_clear_error_and_creates_nothing(metastore_uri: str, tmp_path: Path) -> None:
    root = tmp_path / "bad"
    _dataset(root)
    proc = run_hsh("register", "bloomcli.bad", str(root), "--bloom-filter-columns", "uid,nope",
                   "--metastore", metastore_uri)
    assert proc.returncode == 2
    assert "table bloomcli.bad: hsh.bloom.filter.columns names column 'nope'" in proc.stderr
    assert run_hsh("describe", "bloomcli.bad", "--metastore", metastore_uri).returncode == 2
