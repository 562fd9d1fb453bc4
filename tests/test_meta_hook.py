"""The meta hook around real metastore calls: failures at each step leave no table and no orphaned index."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metastore.names import parse_table_name
from storage_handler.errors import AlreadyExistsError, StorageHandlerError
from storage_handler.meta_hook import IndexMetaHook
from storage_handler.registration import hooked
from storage_handler.registration.dataset import discover
from storage_handler.registration.register import apply_registration, plan_registration
from storage_handler.registration.table_spec import build_table
from storage_handler.stats import index_dir, load


def _dataset(tmp_path: Path) -> Path:
    root = tmp_path / "data"
    (root / "p=1").mkdir(parents=True)
    pq.write_table(pa.table({"a": [1, 2]}), root / "p=1" / "f.parquet")
    return root


def _table(name: str, root: Path):
    ds = discover(str(root))
    return build_table(parse_table_name(name), ds.location, ds.columns, ds.partition_keys, owner="t")


def test_create_builds_the_index_and_records_its_version(hms, tmp_path: Path) -> None:
    root = _dataset(tmp_path)
    hms.ensure_database("hook")
    hooked.create_table(hms, _table("hook.ok", root), IndexMetaHook())
    table = hms.get_table("hook", "ok")
    assert table.parameters["hsh.index.version"] == "1"
    assert load(str(root)).table.column("path").to_pylist() == ["p=1/f.parquet"]


def test_failed_index_write_creates_nothing(hms, tmp_path: Path) -> None:
    root = _dataset(tmp_path)
    (root / "_hsh_index").write_text("a file where the index folder must go")  # a real fault, even for root
    hms.ensure_database("hook")
    with pytest.raises((StorageHandlerError, OSError)):
        hooked.create_table(hms, _table("hook.badindex", root), IndexMetaHook())
    assert not hms.table_exists("hook", "badindex")


def test_failed_create_rolls_back_the_index(hms, tmp_path: Path) -> None:
    other = _dataset(tmp_path / "other")
    hms.ensure_database("hook")
    hooked.create_table(hms, _table("hook.taken", other), IndexMetaHook())
    root = _dataset(tmp_path)
    with pytest.raises(AlreadyExistsError):  # the metastore refuses: the name is taken
        hooked.create_table(hms, _table("hook.taken", root), IndexMetaHook())
    assert not Path(index_dir(str(root))).exists()  # the index built in pre_create_table was removed
    assert load(str(other)) is not None  # the existing table's index is untouched


@pytest.mark.jvm  # starts its own metastore
def test_failed_create_on_a_dead_metastore_rolls_back(tmp_path: Path) -> None:
    from metastore.client import MetastoreClient
    from metastore.local import LocalMetastore

    service = LocalMetastore(tmp_path / "own")
    info = service.start()
    root = _dataset(tmp_path)

    class KillingHook(IndexMetaHook):
        def pre_create_table(self, table) -> None:
            super().pre_create_table(table)
            service.stop()  # the metastore dies (by PID) between the hook and the create call

    try:
        with MetastoreClient(info.uri, retries=1, backoff=0.1) as client:
            client.ensure_database("hook")
            with pytest.raises(StorageHandlerError):
                hooked.create_table(client, _table("hook.dead", root), KillingHook())
        assert not Path(index_dir(str(root))).exists()
        info = service.start()
        with MetastoreClient(info.uri) as client:
            assert not client.table_exists("hook", "dead")
    finally:
        service.stop()


def test_drop_removes_index_but_keeps_data(hms, tmp_path: Path) -> None:
    root = _dataset(tmp_path)
    apply_registration(hms, plan_registration(hms, parse_table_name("hook.dropped"), str(root)))
    assert load(str(root)) is not None
    hooked.drop_table(hms, "hook", "dropped", IndexMetaHook(), delete_data=False)
    assert not Path(index_dir(str(root))).exists()
    assert (root / "p=1" / "f.parquet").exists()
