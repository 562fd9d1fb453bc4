"""``IndexMetaHook``: Hive's ``HiveMetaHook`` for this handler, run client-side around the metastore calls.

Hive's client calls ``pre_*`` before the metastore call, ``commit_*`` after it succeeded and ``rollback_*`` if it
failed (see :mod:`storage_handler.registration.hooked`, which does exactly that). Here that means:

* create: ``pre_create_table`` builds and commits the statistics index next to the data and records its version
  in the table's ``hsh.index.*`` parameters (so the table is created already pointing at it);
  ``rollback_create_table`` deletes an index this hook created, so a failed create leaves no orphaned index.
* drop: ``commit_drop_table`` deletes the index (and the data when ``delete_data``) only after the metastore
  dropped the table; a failed drop leaves both untouched.
* alter: ``pre_alter_table`` refreshes the index and updates the version parameter; nothing to roll back, since
  an index version is immutable and a newer one only adds knowledge.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from storage_handler.catalog import PartitionSource, is_under, list_partition_files
from storage_handler.catalog.listing import require_table_folder
from storage_handler.contract import PARAM_INDEX_VERSION
from storage_handler.stats import FooterEngine, StatsOptions, index_dir, update_index
from storage_handler.stats import load as load_index
from storage_handler.stats.engines.local import ProgressCallback
from storage_handler.stats.files.file_list import FileList
from storage_handler.stats.files.walk import DataFile, list_data_files
from storage_handler.storage import s3a_settings, storage_for
from storage_handler.table_desc import TableDesc

log = logging.getLogger(__name__)
PARAM_INDEX_LOCATION = "hsh.index.location"


class IndexMetaHook:
    """Keeps the statistics index in step with the table's life in the metastore."""

    def __init__(self, *, progress: ProgressCallback | None = None, engine: FooterEngine | None = None,
                 storage_root: str | None = None) -> None:
        # how footers are read (a local pool by default, or a Spark job) and who is told how far it got
        self.progress = progress
        self.engine = engine
        # index rows the caller already read (registration's one pass over the footers): not read again; and
        # the table folder's files the caller just listed (not listed again)
        self.seed: pa.Table | None = None
        self.known_files: Sequence[DataFile] | None = None
        # Where the files are readable from here when the table's location is not (``register --location``
        # s3a://... for files scanned from a local mirror): the index is built and kept there.
        self.storage_root = storage_root
        self._created_index: set[str] = set()
        self.last_diff: Any = None
        # The table's registered partitions, when the caller has a metastore at hand: files of partitions
        # registered outside the table folder are then indexed too (by absolute path). Without it, only the
        # table folder is walked (at create time no partition is registered yet).
        self.partitions: PartitionSource | None = None
        # Another registered table has the same folder (Hive allows two external tables on one): dropping this
        # one keeps the index they share (the caller checks the metastore; see ``hsh drop``).
        self.shared_location = False

    # -- create
    def pre_create_table(self, table: Any) -> None:
        desc = TableDesc.from_hms(table)
        root = self._root(desc)
        existed = load_index(root, conf=s3a_settings(desc.parameters)) is not None
        version = self._refresh(desc)
        if not existed:
            self._created_index.add(root)
        table.parameters[PARAM_INDEX_LOCATION] = root.rstrip("/") + "/_hsh_index"
        table.parameters[PARAM_INDEX_VERSION] = str(version)

    def commit_create_table(self, table: Any) -> None:
        self._created_index.discard(self._root(TableDesc.from_hms(table)))

    def rollback_create_table(self, table: Any) -> None:
        location = self._root(TableDesc.from_hms(table))
        if location in self._created_index:
            log.info("create of %s.%s failed: removing the index this hook built", table.dbName, table.tableName)
            storage_for(location, s3a_settings(table.parameters)).delete_tree(index_dir(location))
            self._created_index.discard(location)

    # -- drop
    def pre_drop_table(self, table: Any) -> None:
        """Nothing to check: dropping metadata is always allowed."""

    def rollback_drop_table(self, table: Any) -> None:
        """The metastore kept the table, so the index stays too."""

    def commit_drop_table(self, table: Any, delete_data: bool) -> None:
        location = self._root(TableDesc.from_hms(table))
        if self.shared_location and not delete_data:
            return  # another registered table reads the same folder: the index is its too
        storage = storage_for(location, s3a_settings(table.parameters))
        storage.delete_tree(location if delete_data else index_dir(location))

    # -- alter
    def pre_alter_table(self, table: Any) -> None:
        table.parameters[PARAM_INDEX_VERSION] = str(self._refresh(TableDesc.from_hms(table)))

    def commit_alter_table(self, table: Any) -> None:
        """Nothing to do: the index was committed before the metastore call."""

    def rollback_alter_table(self, table: Any) -> None:
        """Nothing to undo: a newer index version describes the same files, only better."""

    def _files(self, desc: TableDesc, keys: list[str]) -> FileList | None:
        """The table folder's files plus those of partitions registered outside it (None: walk the folder)."""
        known = FileList.of(self.known_files) if self.known_files is not None else None
        if self.partitions is None or not keys:
            return known
        root = self._root(desc)
        settings = s3a_settings(desc.parameters)
        storage = storage_for(root, settings)
        outside = [p for p in self.partitions.by_names(self.partitions.names()) if not is_under(root, p.location)]
        inside = known if known is not None else list_data_files(root, keys, storage)
        return inside + list_partition_files(root, keys, outside, table=desc.name, storage=storage, conf=settings)

    def _root(self, desc: TableDesc) -> str:
        return self.storage_root or desc.location

    def _refresh(self, desc: TableDesc) -> int:
        keys = [k for k, _ in desc.partition_keys]
        options = StatsOptions.for_table(desc.parameters)
        options.membership.check(desc.name, desc.columns)  # bloom / value-list columns must exist and fit
        conf = s3a_settings(desc.parameters)
        recorded = str(desc.parameters.get(PARAM_INDEX_VERSION) or "0")
        require_table_folder(desc.name, self._root(desc), indexed=recorded != "0",
                             storage=storage_for(self._root(desc), conf))
        before = load_index(self._root(desc), conf=conf)  # before listing: rows others commit meanwhile are kept
        version, diff = update_index(
            self._root(desc), desc.columns, self._files(desc, keys), partition_columns=keys,
            options=options, progress=self.progress, conf=conf, engine=self.engine, seed=self.seed, before=before,
        )
        self.last_diff = diff
        return int(version or 0)
