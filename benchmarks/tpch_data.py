"""TPC-H ``lineitem`` for the benchmarks: generated with ``tpchgen-cli``, re-clustered by ``l_shipdate`` into many files.

Layout (under the data folder, ``benchmarks/data`` by default, which git ignores)::

    tpch/sf<scale>-f<files>/lineitem/part-00000.parquet ...   the table folder (registered in the metastore)
    tpch/sf<scale>-f<files>/dataset.json                     written last: the dataset is complete

A dataset whose ``dataset.json`` exists is reused as is; delete its folder to generate it again.

Why re-cluster: ``tpchgen-cli`` writes rows in ``l_orderkey`` order, so every file spans the whole 1992-1998 date
range and no file can be skipped on a date predicate. Sorting by ``l_shipdate`` and cutting the sorted rows into
equal slices gives each file a narrow date range (about 2,526 days / files), the layout data skipping is for.
``l_orderkey`` stays spread over every file, which makes an ``l_orderkey`` lookup the honest "cannot prune" case.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

INSTALL_HINT = (
    "the TPC-H benchmark needs two packages that are not project dependencies; install them into the project "
    "venv with:\n    .venv/bin/pip install tpchgen-cli matplotlib"
)


@dataclass(frozen=True, slots=True)
class TpchDataset:
    """A generated, re-clustered lineitem table and a few facts the queries need."""

    scale: float
    files: int
    rows: int
    bytes: int
    table_dir: str
    lookup_orderkey: int  # an l_orderkey that exists (from the middle of the data)
    lookup_shipdate: str  # a day that exists, ISO format
    min_shipdate: str
    max_shipdate: str
    seconds_to_generate: float

    @property
    def path(self) -> Path:
        return Path(self.table_dir)


def tpchgen_executable() -> str | None:
    """``tpchgen-cli`` next to this interpreter (the venv's bin), else on PATH."""
    beside = Path(sys.executable).parent / "tpchgen-cli"
    if beside.exists():
        return str(beside)
    return shutil.which("tpchgen-cli")


def dataset_folder(data_dir: Path, scale: float, files: int) -> Path:
    return data_dir / "tpch" / f"sf{scale:g}-f{files}"


def ensure_lineitem(
    data_dir: Path, scale: float, files: int, *, log: Callable[[str], None] = print
) -> TpchDataset:
    """The re-clustered lineitem dataset, generated on first use and cached."""
    folder = dataset_folder(data_dir, scale, files)
    marker = folder / "dataset.json"
    if marker.exists():
        ds = TpchDataset(**json.loads(marker.read_text()))
        if ds.path.is_dir():
            return ds
    exe = tpchgen_executable()
    if exe is None:
        raise SystemExit(f"error: tpchgen-cli not found; {INSTALL_HINT}")
    if folder.exists():
        shutil.rmtree(folder)  # an incomplete earlier attempt
    folder.mkdir(parents=True)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=folder, prefix="_raw") as raw:
        parts = max(2, int(scale * 4))
        log(f"generating TPC-H lineitem SF{scale:g} with tpchgen-cli ({parts} parts) ...")
        subprocess.run(
            [exe, "parquet", "-s", f"{scale:g}", "--tables=lineitem", f"--parts={parts}", f"--output-dir={raw}",
             "--quiet"],
            check=True,
        )
        log(f"re-clustering by l_shipdate into {files} files ...")
        facts = recluster(Path(raw) / "lineitem", folder / "lineitem", files)
    ds = TpchDataset(scale=scale, files=files, table_dir=str((folder / "lineitem").resolve()),
                     seconds_to_generate=round(time.perf_counter() - start, 1), **facts)
    marker.write_text(json.dumps(asdict(ds), indent=2) + "\n")
    log(f"dataset ready: {ds.rows:,} rows, {ds.files} files, {ds.bytes / 1e6:,.0f} MB "
        f"in {ds.seconds_to_generate:.0f} s")
    return ds


def _plain_schema(schema: pa.Schema) -> pa.Schema:
    """tpchgen's schema without field-id metadata, and with ``string`` for ``string_view`` (what Hive calls string)."""
    import pyarrow as pa

    fields = []
    for f in schema:
        t = pa.string() if pa.types.is_string_view(f.type) else f.type
        fields.append(pa.field(f.name, t, nullable=f.nullable))
    return pa.schema(fields)


def recluster(raw_dir: Path, out_dir: Path, files: int) -> dict[str, Any]:
    """Sort every row by (l_shipdate, l_orderkey, l_linenumber) and write ``files`` equal slices."""
    import pyarrow.parquet as pq

    table = pq.read_table(raw_dir)
    table = table.cast(_plain_schema(table.schema))
    table = table.sort_by([("l_shipdate", "ascending"), ("l_orderkey", "ascending"),
                           ("l_linenumber", "ascending")])
    n = table.num_rows
    out_dir.mkdir(parents=True)
    total = 0
    for i in range(files):
        lo, hi = n * i // files, n * (i + 1) // files
        path = out_dir / f"part-{i:05d}.parquet"
        pq.write_table(table.slice(lo, hi - lo), path, compression="snappy")
        total += path.stat().st_size
    mid = table.slice(n // 2, 1).to_pylist()[0]
    ship = table.column("l_shipdate")
    return {
        "rows": n,
        "bytes": total,
        "lookup_orderkey": int(mid["l_orderkey"]),
        "lookup_shipdate": mid["l_shipdate"].isoformat(),
        "min_shipdate": ship[0].as_py().isoformat(),
        "max_shipdate": ship[n - 1].as_py().isoformat(),
    }
