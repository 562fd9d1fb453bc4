"""What ``bench_aggregates.py`` measures (issue 28): its tables, paths, queries and targets, and the records of a
run (a (query, path) cell's runs, the floors beside them), shared by the run and its report."""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field

DB = "agg_bench"
TABLE = f"{DB}.lineitem"  # through the handler
PLAIN = f"{DB}.lineitem_plain"  # the same folder, a plain Hive Parquet table
PTABLE = f"{DB}.lineitem_by_month"  # the month-partitioned copy, through the handler
PPLAIN = f"{DB}.lineitem_by_month_plain"
PART = "ship_month"
SETTING = "spark.hsh.aggregates"
PATHS = ("native", "off", "index")
LABELS = {
    "native": "(a) Spark native: the plain Hive table",
    "off": f"(b) handler, `{SETTING}=false`: Spark reads the kept files",
    "index": "(c) handler, aggregates from the index (default)",
}
TAG = {p: LABELS[p].split()[0] for p in PATHS}
TARGET_YEAR = 10.0  # (b)/(c) for the year count
TARGET_SLOWER = 1.05  # (c)/(b) at most, every query
BUSY_SHARE = 0.10
RETRIES = 3
# Spark's floor on this machine: an aggregate over a two-row in-memory table (a LocalTableScan, one shuffle): no
# answer computed by a Spark job comes back faster, whatever it reads
FLOOR_SQL = "SELECT sum(n) AS n FROM VALUES (1L), (2L) AS t(n)"
# ... and the floor of any answer at all, in the driver too, over the registered table: a query that names it and
# reads nothing (Spark plans LIMIT 0 as an empty local relation: parsing, the table's resolution with its definition
# checked in the metastore, planning; no prune request, no job)
TABLE_FLOOR_SQL = "SELECT * FROM {table} LIMIT 0"
# EXPLAIN of (c): Spark's plan of the rewrite names the index's columns ("count_all_of_150_files_from_index") and
# the rows read ("count_all_of_2_files_read"); the answer in the driver says "150 files answered from the index,
# 2 files (... bytes) read in the driver"
FROM_INDEX = re.compile(r"_of_(\d+)_files_from_index|(\d+) files? answered from the index")
READ = re.compile(r"_of_(\d+)_files_read|, (\d+) files? \(\d+ bytes[^)]*\) read in the driver")
IN_DRIVER = "HshAggregateFromIndex"


def files_in(pattern: re.Pattern[str], plan: str) -> int | None:
    """The number of files ``pattern`` finds in ``plan`` (either form), or None."""
    found = pattern.search(plan)
    return None if found is None else int(found.group(1) or found.group(2))

Log = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class Query:
    key: str
    title: str
    handler_table: str
    plain_table: str
    sql_template: str  # ``{t}`` is the table
    answerable: bool  # (c) must answer from the index; else (c) must plan exactly as (b)
    target: str = ""  # "year": (b)/(c) >= 10x
    why_not: str = "grouped by a data column"  # why (c) plans as (b) when not answerable

    def sql(self, table: str) -> str:
        return self.sql_template.format(t=table)

    def table_for(self, path: str) -> str:
        return self.plain_table if path == "native" else self.handler_table


YEAR = "l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1995-01-01'"
QUERIES = (
    Query("year_count", "count(*), one year", TABLE, PLAIN, "SELECT count(*) AS n FROM {t} WHERE " + YEAR,
          True, target="year"),
    Query("month_minmax", "min/max(l_orderkey), count(*), one month", TABLE, PLAIN,
          "SELECT min(l_orderkey) AS lo, max(l_orderkey) AS hi, count(*) AS n FROM {t} "
          "WHERE l_shipdate >= DATE '1995-03-01' AND l_shipdate < DATE '1995-04-01'", True),
    Query("returnflag", "GROUP BY l_returnflag, one year (not answerable)", TABLE, PLAIN,
          "SELECT l_returnflag, count(*) AS n FROM {t} WHERE " + YEAR + " GROUP BY l_returnflag", False),
    Query("part_dates", f"count per {PART}, dates cutting months", PTABLE, PPLAIN,
          f"SELECT {PART}, count(*) AS n FROM {{t}} WHERE l_shipdate >= DATE '1994-01-15' "
          f"AND l_shipdate < DATE '1995-01-15' GROUP BY {PART}", True),
    Query("part_whole", f"count, max(l_orderkey) per {PART}, whole partitions", PTABLE, PPLAIN,
          f"SELECT {PART}, count(*) AS n, max(l_orderkey) AS hi FROM {{t}} "
          f"WHERE {PART} >= '1994-01' AND {PART} <= '1994-12' GROUP BY {PART}", True),
)


@dataclass(slots=True)
class Cell:
    """All runs of one (query, path)."""

    seconds: list[float] = field(default_factory=list)
    warmup_seconds: float = 0.0
    tasks: list[int] = field(default_factory=list)
    interference: list[float] = field(default_factory=list)
    discarded: int = 0
    kept_despite: int = 0  # timed runs kept although disturbed (retries exhausted or the time budget spent)
    rows: int = 0
    files_kept: int | None = None  # the handler's scan metrics (last run)
    files_total: int | None = None
    files_matched_fully: int | None = None
    rows_matched_fully: int | None = None
    answered: list[int] = field(default_factory=list)  # (c): files answered from the index, per timed run
    read: list[int] = field(default_factory=list)  # (c): kept files read, per timed run

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def best(self) -> float:
        return min(self.seconds)

    @property
    def median_tasks(self) -> int | None:
        return int(statistics.median(self.tasks)) if self.tasks else None


@dataclass(slots=True)
class References:
    """Measurements beside the timed paths: what bounds the ratios."""

    floor: list[float] = field(default_factory=list)  # FLOOR_SQL per timed round
    floor_interference: list[float] = field(default_factory=list)
    floor_tasks: int = 0
    table_floor: list[float] = field(default_factory=list)  # TABLE_FLOOR_SQL over the year count's table, per round
    table_floor_tasks: int = 0
    planning: dict[tuple[str, str], list[float]] = field(default_factory=dict)  # (query, off|index): seconds


def normalized(plan: str) -> str:
    """A plan without expression ids and plan ids, to compare two plans of the same query."""
    return re.sub(r"#\d+L?|plan_id=\d+|\[id=#?\d+\]", "#", plan)
