"""How far behind an index is: counted from a listing and an index, or from an update's own diff."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from storage_handler.freshness.lag import Lag, behind, unindexed
from storage_handler.stats.files.file_list import DataFile, FileList
from storage_handler.stats.files.walk import list_data_files
from storage_handler.stats.refresh import refresh_index
from storage_handler.types import parse_hive_type

NOW = 1_800_000_000_000


def test_behind_counts_the_files_an_update_added_or_changed() -> None:
    files = FileList.of([DataFile("dt=1/a", 100, NOW - 5_000, {}), DataFile("dt=1/b", 50, NOW - 1_000, {}),
                         DataFile("dt=2/c", 7, NOW - 60_000, {})])
    lag = behind(files, {"dt=1/a", "dt=1/b"})
    assert lag == Lag(2, 150, NOW - 5_000, NOW - 1_000)
    assert lag.seconds(NOW) == 1.0 and lag.oldest_seconds(NOW) == 5.0
    assert lag.as_dict(NOW) == {"files": 2, "bytes": 150, "lag_seconds": 1.0, "oldest_seconds": 5.0}
    assert lag.describe(NOW) == "2 files (150 B), newest 1.0 s old, oldest 5.0 s old"
    assert behind(files, set()) == Lag() and Lag().describe(NOW) == "nothing" and Lag().seconds(NOW) is None
    assert behind(files, {"dt=2/c"}).describe(NOW) == "1 file (7 B), newest 60.0 s old"
    assert Lag(1, 2_500_000, 0, NOW - 600_000).describe(NOW) == "1 file (2.5 MB), newest 10.0 min old"


def test_unindexed_is_what_every_query_keeps_unpruned(tmp_path: Path) -> None:
    for rel in ("dt=1/a.parquet", "dt=2/b.parquet"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"v": [1, 2]}), tmp_path / rel)
    columns = (("v", parse_hive_type("bigint")),)
    index, _ = refresh_index(str(tmp_path), columns, list_data_files(str(tmp_path), ["dt"]), None)
    assert unindexed(list_data_files(str(tmp_path), ["dt"]), index) == Lag()
    pq.write_table(pa.table({"v": [1, 2, 3]}), tmp_path / "dt=2" / "b.parquet")  # rewritten
    pq.write_table(pa.table({"v": [4]}), tmp_path / "dt=2" / "c.parquet")  # new
    listing = list_data_files(str(tmp_path), ["dt"])
    lag = unindexed(listing, index)
    assert lag.files == 2 and lag.bytes == sum(f.size for f in listing if f.path != "dt=1/a.parquet")
    assert unindexed(listing, None).files == 3
