"""A table as the metastore says it is (Hive's model): its registered partitions, each at its own location.

* :mod:`.partitions` -- :class:`Partition`, the :class:`PartitionSource` protocol (names first, then the
  survivors' locations), and reading Hive partition names.
* :mod:`.prune` -- the partition list pruned by the query's evaluator before storage is touched.
* :mod:`.listing` -- the surviving partitions' files, as columns (serially on a local disk, by a bounded pool
  elsewhere).
* :mod:`.metastore_source` -- the metastore as the source, through :class:`metastore.client.MetastoreClient`.
"""

from __future__ import annotations

from storage_handler.catalog.listing import (
    ScanFiles,
    index_prefixes,
    is_under,
    list_partition_batch,
    list_partition_files,
    list_table_batch,
    list_table_files,
    unregistered_folders,
)
from storage_handler.catalog.partitions import (
    Partition,
    PartitionSource,
    StaticPartitions,
    all_partitions,
    parse_partition_name,
)
from storage_handler.catalog.prune import prune_partition_names
from storage_handler.stats.files.walk import absolute_path

__all__ = [
    "Partition", "PartitionSource", "ScanFiles", "StaticPartitions", "absolute_path", "all_partitions",
    "index_prefixes", "is_under", "list_partition_batch", "list_partition_files", "list_table_batch",
    "list_table_files", "parse_partition_name", "prune_partition_names", "unregistered_folders",
]
