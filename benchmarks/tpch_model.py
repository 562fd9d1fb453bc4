"""The TPC-H benchmark's workload and its measurements: the tables, the read paths compared, the queries, the
targets, and one :class:`Cell` of timings per (query, path). Shared by ``bench_tpch.py`` (runs) and
``tpch_report.py`` (tables and chart)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from tpch_data import TpchDataset

DB = "tpch"
TABLE = f"{DB}.lineitem"  # through the handler
PLAIN = f"{DB}.lineitem_plain"  # the same folder as a plain Hive Parquet table
PYTHON_DS_VIEW = "lineitem_hsh_ds"  # spark.read.format("hsh").load(TABLE)
PATHS = ("native", "spark.sql", "python_ds", "read_table", "limit")
HANDLER_PATHS = PATHS[1:]  # the paths compared against (a)
UNMETERED = ("native", "limit")  # paths that do not go through the handler (no scan metrics)
PATH_LABELS = {
    "native": "(a) Spark native Hive table",
    "spark.sql": "(b) spark.sql via handler (native scan)",
    "python_ds": "(b2) spark.sql via hsh Python data source",
    "read_table": "(c) read_table",
    "limit": "(d) limit: Spark reading only the files the handler keeps, no planning of its own",
}
PATH_TAGS = {path: label.split()[0] for path, label in PATH_LABELS.items()}  # "(a)", "(b)", "(b2)", "(c)"
# the ``path`` field each handler path's scan metrics must carry: proof the query used the intended reader
SCAN_METRICS_PATH = {"spark.sql": "spark-native", "python_ds": "spark-datasource", "read_table": "read_table"}
NATIVE_SCAN_CONF = "spark.hsh.nativeScan"  # the extension reads it when planning; "false" turns it off
Q6_WHERE = ("l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1995-01-01' "
            "AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24")
TARGET_Q6_SPEEDUP = 5.0
TARGET_MAX_SLOWDOWN = 1.2
QUERY_KEYS = ("q6", "point_shipdate", "point_orderkey", "all_kept")
BUSY_SHARE = 0.10  # other processes' CPU share above which the report warns
RETRIES = 3  # times a timed run disturbed by other processes is repeated


@dataclass(frozen=True, slots=True)
class Query:
    key: str
    title: str
    select: tuple[str, ...]
    where: str
    target: str = ""  # "q6" or "overhead": which of the targets applies

    def sql(self, table: str) -> str:
        return f"SELECT {', '.join(self.select)} FROM {table} WHERE {self.where}"


def queries(ds: TpchDataset) -> list[Query]:
    """The workload. ``l_quantity``/``l_discount`` are decimal(15,2) and ``l_shipdate`` a date in tpchgen's
    files, so these literals are pushed to the data source as typed filters (check ``pushed_filters`` in
    ``last_scan_metrics()``)."""
    return [
        Query("q6", "TPC-H Q6", ("sum(l_extendedprice * l_discount) AS revenue",), Q6_WHERE, target="q6"),
        Query("point_shipdate", f"point: l_shipdate = {ds.lookup_shipdate} (clustered)", ("*",),
              f"l_shipdate = DATE '{ds.lookup_shipdate}'"),
        Query("point_orderkey", f"point: l_orderkey = {ds.lookup_orderkey} (not clustered)", ("*",),
              f"l_orderkey = {ds.lookup_orderkey}"),
        Query("all_kept", "non-selective: l_quantity > 0 (keeps all)",
              ("count(*) AS n", "sum(l_quantity) AS qty", "sum(l_extendedprice) AS price"), "l_quantity > 0",
              target="overhead"),
    ]


@dataclass(slots=True)
class Cell:
    """All runs of one (query, path)."""

    seconds: list[float] = field(default_factory=list)
    warmup_seconds: float = 0.0
    files_kept: int | None = None
    files_total: int | None = None
    planning: list[float] = field(default_factory=list)  # the handler's listing + pruning, from its scan metrics
    scan_path: str | None = None  # the ``path`` field of the last run's scan metrics
    tasks: list[int] = field(default_factory=list)  # Spark tasks the run launched (all its jobs' stages)
    interference: list[float] = field(default_factory=list)  # other processes' CPU share during each kept run
    discarded: int = 0  # timed runs thrown away because other processes were busy during them
    rows: int = 0

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def planning_seconds(self) -> float | None:
        return statistics.median(self.planning) if self.planning else None

    @property
    def median_tasks(self) -> int | None:
        return int(statistics.median(self.tasks)) if self.tasks else None
