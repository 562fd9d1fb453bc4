"""Aggregates answered from the index (issue 28): ``count`` / ``min`` / ``max`` of the files whose every row matches
taken from the statistics index, only the rest read -- against the same queries read by Spark.

    .venv/bin/pip install tpchgen-cli matplotlib        # benchmark-only tools, not project dependencies
    .venv/bin/python benchmarks/bench_aggregates.py [--scale 0.5] [--files 1000] [--repeat 9] [--warmup 2]

Data: TPC-H ``lineitem`` sorted by ``l_shipdate`` (``tpch_data.py``, by default SF 0.5 cut into 1,000 files),
hard-linked into ``benchmarks/data/aggregates/`` so its index is this benchmark's own (a benchmark running on the
shared dataset meanwhile neither disturbs nor is disturbed), and a copy of the same rows partitioned by the month of
``l_shipdate`` (``ship_month=YYYY-MM/`` folders, a string partition column not stored in the files; every source
file split at month boundaries, ~1,080 files), cached there too. One embedded metastore in a temporary
``HSH_HOME``; each folder is registered twice with ``plan_registration`` + ``apply_registration`` (what
``hsh register`` does): through the handler, and with the handler's ``hsh.*`` table parameters removed, so the
handler's session reads that copy as the plain Hive Parquet table it is. The metastore and Spark's JVM are stopped
by their PIDs at the end.

Three paths, one session (``storage_handler.spark.session()``, ``local[2]``), interleaved round robin (a, b, c,
next query, ...), ``--warmup`` untimed rounds, then ``--repeat`` timed ones; medians:

  (a) ``native``  Spark native: ``spark.sql`` over the plain copy (Spark's vectorized Parquet reader, its own
                  row-group filtering by the footers' min/max).
  (b) ``off``     the handler with ``spark.hsh.aggregates=false``: the path before issue 28, Spark's native scan
                  over the files the handler keeps (``HshFileIndex``) -- the limit of file skipping.
  (c) ``index``   the handler with the default (aggregates on): files whose every row matches the filter give
                  their numbers from the index, only the partly matched kept files are read.

Queries: ``count(*)`` over one year of ``l_shipdate``; ``min(l_orderkey), max(l_orderkey), count(*)`` over one
month; ``l_returnflag, count(*) ... GROUP BY l_returnflag`` over a year (grouped by a data column: not answerable,
must plan exactly as (b) does); and on the month-partitioned copy a count per partition, once with a date range
that cuts months in two (edge files read) and once selecting whole partitions (nothing to read). Before timing,
the plans are checked: (a) Spark's plain ``FileScan parquet``, (b) ``HshFileIndex`` without the rewrite, (c) the
rewrite (``..._files_from_index``) for every answerable query, and for the unanswerable one the same plan as (b).

Every run of (b) and (c) must return exactly (a)'s rows; (c)'s files answered from the index and read come from the
extension's ``Timings`` (``aggregate_from_index``) and must agree with its ``EXPLAIN``; the handler's scan metrics
(``last_scan_metrics``: kept, fully matched) are recorded per run. Once per round, beside the timed runs: Spark's
floor for a query that runs a job, and the table's own floor (``SELECT * FROM t LIMIT 0``: parsed, the table
resolved with its definition checked in the metastore, planned; nothing listed or read, no job), which no answer
for the table can beat. Targets (issue 28): (c) at least 10x faster than (b) for the year count, and no query
through (c) more than 5 % slower than (b).

Busy machine: as in ``bench_tpch.py``, every timed run measures the CPU share other processes took during it
(``/proc``); a run above ``--max-interference`` is repeated up to 3 times, and not at all once ``--budget-minutes``
have passed (the run then keeps what it has and the report says so).

Output: ``benchmarks/results/aggregates.md``, ``aggregates.json`` (every timing), ``aggregates.png``; exit code 1
when any run of (b) or (c) returned other rows than (a), a plan is not what the comparison needs, or (c) answered
where it must not.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from bench_stats import link_lineitem, stop_session  # noqa: E402
from bench_tpch import canonical, check_tools, timed  # noqa: E402
from tpch_data import ensure_lineitem  # noqa: E402
from tpch_report import cpu_snapshot, machine_info, other_cpu_share  # noqa: E402

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


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------------- data
def ensure_by_month(source: Path, target: Path, say: Log) -> tuple[Path, dict[str, Any]]:
    """The rows of ``source``'s files partitioned by the month of ``l_shipdate``: each file split at month
    boundaries into ``ship_month=YYYY-MM/part-NNNNN.parquet`` (its number kept). Cached while the marker says so."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    files = sorted(source.glob("*.parquet"))
    marker = target.parent / f"{target.name}.json"
    if marker.exists() and target.is_dir():
        facts = json.loads(marker.read_text())
        if facts.get("source_files") == len(files):
            return target, facts
    say(f"writing the month-partitioned copy of {len(files)} files (cached afterwards) ...")
    start = time.perf_counter()
    shutil.rmtree(target, ignore_errors=True)
    building = target.with_name(target.name + ".tmp")
    shutil.rmtree(building, ignore_errors=True)
    written = rows = size = 0
    months: set[str] = set()
    for i, f in enumerate(files):
        table = pq.read_table(f)
        ship = table.column("l_shipdate")
        key = pc.add(pc.multiply(pc.year(ship), 100), pc.month(ship))
        for k in sorted(pc.unique(key).to_pylist()):
            month = f"{k // 100:04d}-{k % 100:02d}"
            part = table.filter(pc.equal(key, k))
            folder = building / f"{PART}={month}"
            folder.mkdir(parents=True, exist_ok=True)
            out = folder / f"part-{i:05d}.parquet"
            pq.write_table(part, out, compression="snappy")
            written, rows, size = written + 1, rows + part.num_rows, size + out.stat().st_size
            months.add(month)
    building.rename(target)
    facts = {"source_files": len(files), "files": written, "rows": rows, "bytes": size, "partitions": len(months),
             "seconds_to_write": round(time.perf_counter() - start, 1)}
    marker.write_text(json.dumps(facts, indent=2) + "\n")
    say(f"month copy: {written} files in {len(months)} partitions, {rows:,} rows, {time.perf_counter() - start:.0f} s")
    return target, facts


def register(uri: str, folders: dict[str, Path], say: Log) -> dict[str, float]:
    """Register every (handler table, plain table) pair over its folder; the plain ones without ``hsh.*``."""
    from bench_tables import register as register_one

    from metastore.client import MetastoreClient

    seconds: dict[str, float] = {}
    with MetastoreClient(uri) as client:
        for name, folder in folders.items():
            seconds[name] = round(register_one(client, name, folder, plain=name in (PLAIN, PPLAIN)), 2)
            say(f"registered {name} over {folder} in {seconds[name]:.1f} s")
    return seconds


# ---------------------------------------------------------------------------------------------------- plans
def set_path(spark: Any, path: str) -> None:
    """(b) turns the rule off for the session; (a) and (c) run with the default (on: (a) has no handler table)."""
    spark.conf.set(SETTING, "false" if path == "off" else "true")


def explain(spark: Any, sql: str) -> str:
    return str(spark.sql(sql)._jdf.queryExecution().executedPlan().toString())


def normalized(plan: str) -> str:
    """A plan without expression ids and plan ids, to compare two plans of the same query."""
    return re.sub(r"#\d+L?|plan_id=\d+|\[id=#?\d+\]", "#", plan)


def check_plans(spark: Any, qs: list[Query], say: Log) -> tuple[dict[str, dict[str, str]], list[str]]:
    """Each path must be read the way its label says, or the comparison measures something else."""
    plans: dict[str, dict[str, str]] = {}
    problems: list[str] = []
    for q in qs:
        got = {}
        for path in PATHS:
            set_path(spark, path)
            got[path] = explain(spark, q.sql(q.table_for(path)))
        set_path(spark, "index")
        plans[q.key] = got
        native, off, index = got["native"], got["off"], got["index"]
        if "FileScan parquet" not in native or "HshFileIndex" in native:
            problems.append(f"{q.key}: (a) is not Spark's plain native Parquet scan:\n{native}")
        if "HshFileIndex" not in off or FROM_INDEX.search(off):
            problems.append(f"{q.key}: (b) is not the handler's scan without the rewrite:\n{off}")
        if q.answerable and not FROM_INDEX.search(index):
            problems.append(f"{q.key}: (c) did not answer from the index, though the query is answerable:\n{index}")
        if not q.answerable and normalized(index) != normalized(off):
            problems.append(f"{q.key}: not answerable, but (c) planned differently from (b):\n(b) {off}\n(c) {index}")
        found, read = files_in(FROM_INDEX, index), files_in(READ, index)
        say(f"plan {q.key}: (c) " + (f"answers {found} files from the index, reads {read}"
                                     + (" in the driver" if IN_DRIVER in index else "")
                                     if found is not None else "no rewrite"))
    return plans, problems


# ---------------------------------------------------------------------------------------------------- runs
def timings_drain(spark: Any) -> list[dict[str, Any]]:
    """The extension's recorded steps since the last call (``hsh.spark.Timings``)."""
    return json.loads(str(spark._jvm.hsh.spark.Timings.drain()))


def scan_metrics_since(table: str, start_wall: float) -> dict[str, Any] | None:
    """The handler's metrics of the scan this run planned (recorded right after the answer: wait a moment)."""
    from storage_handler.spark import last_scan_metrics

    for _ in range(20):
        m = last_scan_metrics(table)
        if m and m.get("time", 0) >= start_wall:
            return m
        time.sleep(0.05)
    return None


@dataclass(slots=True)
class References:
    """Measurements beside the timed paths: what bounds the ratios."""

    floor: list[float] = field(default_factory=list)  # FLOOR_SQL per timed round
    floor_interference: list[float] = field(default_factory=list)
    floor_tasks: int = 0
    table_floor: list[float] = field(default_factory=list)  # TABLE_FLOOR_SQL over the year count's table, per round
    table_floor_tasks: int = 0
    planning: dict[tuple[str, str], list[float]] = field(default_factory=dict)  # (query, off|index): seconds


def run_all(spark: Any, qs: list[Query], repeat: int, warmup: int, max_interference: float, deadline: float,
            refs: References, say: Log) -> tuple[dict[tuple[str, str], Cell], list[str]]:
    cells = {(q.key, p): Cell() for q in qs for p in PATHS}
    refs.planning = {(q.key, p): [] for q in qs for p in ("off", "index")}
    expected: dict[str, list[tuple[Any, ...]]] = {}
    problems: list[str] = []

    def problem(text: str) -> None:
        if text not in problems:
            problems.append(text)

    def one(q: Query, path: str, warm: bool) -> None:
        cell = cells[(q.key, path)]
        sql = q.sql(q.table_for(path))
        set_path(spark, path)
        for attempt in range(RETRIES + 1):
            timings_drain(spark)
            before = cpu_snapshot()
            seconds, rows, start_wall, tasks = timed(spark, lambda: spark.sql(sql).collect())
            share = other_cpu_share(before, cpu_snapshot())
            steps = [s for s in timings_drain(spark)
                     if s.get("step") == "aggregate_from_index" and s.get("table") == q.handler_table]
            disturbed = bool(max_interference) and share is not None and share > max_interference
            if warm or not disturbed:
                break
            if attempt == RETRIES or time.monotonic() > deadline:
                cell.kept_despite += 1
                break
            cell.discarded += 1
        got = canonical(rows)
        if path == "native":
            expected.setdefault(q.key, got)
        elif got != expected[q.key]:
            want = expected[q.key]
            problems.append(f"{q.key} via {TAG[path]}: {len(got)} rows {got[:4]!r} but (a) gave {len(want)} rows "
                            f"{want[:4]!r}")
        cell.rows = len(rows)
        answered = int(sum(s.get("answered", 0) for s in steps))
        read = int(sum(s.get("read", 0) for s in steps))
        if path != "index" and steps:
            problem(f"{q.key} via {TAG[path]}: the rule answered from the index with {SETTING} "
                    f"{'false' if path == 'off' else 'on a plain table'}")
        if path == "index" and not q.answerable and steps:
            problem(f"{q.key} via (c): answered {answered} files from the index, but the query is not answerable")
        if path != "native":
            m = scan_metrics_since(q.handler_table, start_wall)
            if m is None:
                problem(f"{q.key} via {TAG[path]}: no scan metrics were recorded (was the handler used?)")
            else:
                if m.get("path") != "spark-native":
                    problem(f"{q.key} via {TAG[path]}: scan metrics from {m.get('path')!r}, not 'spark-native'")
                cell.files_kept, cell.files_total = m.get("files_kept"), m.get("files_total")
                cell.files_matched_fully = m.get("files_matched_fully")
                cell.rows_matched_fully = m.get("rows_matched_fully")
                if path == "index" and steps and answered + read != m.get("files_kept"):
                    problem(f"{q.key} via (c): {answered} answered + {read} read != {m.get('files_kept')} kept")
        if warm:
            cell.warmup_seconds = cell.warmup_seconds or seconds
            return
        cell.seconds.append(seconds)
        cell.tasks.append(tasks)
        if share is not None:
            cell.interference.append(share)
        if path == "index":
            cell.answered.append(answered)
            cell.read.append(read if steps else (cell.files_kept or 0))

    def reference(q: Query) -> None:
        """Untimed by the rounds' clock: (b)'s and (c)'s planning alone (the optimizer, the handler's prune
        request included), and once per round Spark's floor."""
        for path in ("off", "index"):
            set_path(spark, path)
            start = time.perf_counter()
            spark.sql(q.sql(q.handler_table))._jdf.queryExecution().executedPlan()
            refs.planning[(q.key, path)].append(time.perf_counter() - start)
        timings_drain(spark)

    def floor() -> None:
        before = cpu_snapshot()
        seconds, rows, _, tasks = timed(spark, lambda: spark.sql(FLOOR_SQL).collect())
        refs.floor.append(seconds)
        refs.floor_tasks = tasks
        if rows[0][0] != 3:
            problem(f"floor query returned {rows!r}")
        share = other_cpu_share(before, cpu_snapshot())
        refs.floor_interference.append(share if share is not None else 0.0)
        table = TABLE_FLOOR_SQL.format(table=next(q.handler_table for q in qs if q.target == "year"))
        seconds, rows, _, tasks = timed(spark, lambda: spark.sql(table).collect())
        refs.table_floor.append(seconds)
        refs.table_floor_tasks = tasks
        if rows:
            problem(f"table floor query returned {rows!r}")

    for round_no in range(max(warmup, 1)):
        start = time.perf_counter()
        for q in qs:
            for path in order(round_no):
                one(q, path, warm=True)
                if round_no == 0:
                    say(f"warm-up {q.key:<13} {path:<7} {cells[(q.key, path)].warmup_seconds:7.2f} s")
        floor()
        say(f"warm-up round {round_no + 1}/{max(warmup, 1)} done in {time.perf_counter() - start:.0f} s")
    refs.floor.clear()
    refs.floor_interference.clear()
    refs.table_floor.clear()
    for i in range(repeat):
        start = time.perf_counter()
        for q in qs:
            for path in order(i):
                one(q, path, warm=False)
            reference(q)
        floor()
        say(f"repeat {i + 1}/{repeat} done in {time.perf_counter() - start:.0f} s "
            f"({sum(c.discarded for c in cells.values())} disturbed runs discarded so far)")
    set_path(spark, "index")
    return cells, problems


def order(round_no: int) -> tuple[str, ...]:
    """(a) first, then (b) and (c) in an order that alternates per round: neither always runs right after (a)."""
    return PATHS if round_no % 2 == 0 else ("native", "index", "off")


# ---------------------------------------------------------------------------------------------------- report
def explain_agrees(cells: dict[tuple[str, str], Cell], qs: list[Query], plans: dict[str, dict[str, str]]) -> list[str]:
    """(c)'s files answered / read as ``EXPLAIN`` names them must be what every timed run recorded."""
    out = []
    for q in qs:
        index = plans[q.key]["index"]
        found, read = files_in(FROM_INDEX, index), files_in(READ, index)
        c = cells[(q.key, "index")]
        if found is not None and read is not None and (set(c.answered) != {found} or set(c.read) != {read}):
            out.append(f"{q.key} via (c): EXPLAIN says {found} files from the index and {read} "
                       f"read, the runs recorded {sorted(set(c.answered))} and {sorted(set(c.read))}")
    return out


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def ratios(cells: dict[tuple[str, str], Cell], q: Query) -> dict[str, float]:
    a, b, c = (cells[(q.key, p)] for p in PATHS)
    # paired: (b) and (c) run next to each other in every round, so the ratio within a round cancels slow changes
    # in how busy the machine is; the median of those per-round ratios
    paired = [ci / bi for bi, ci in zip(b.seconds, c.seconds, strict=True)]
    return {"b_over_c": b.median / c.median, "c_over_b": c.median / b.median, "a_over_c": a.median / c.median,
            "a_over_b": a.median / b.median, "best_b_over_c": b.best / c.best, "best_c_over_b": c.best / b.best,
            "paired_c_over_b": statistics.median(paired), "paired_b_over_c": statistics.median(1 / x for x in paired)}


def verdicts(cells: dict[tuple[str, str], Cell], q: Query) -> list[str]:
    r = ratios(cells, q)
    out = []
    if q.target == "year":
        out.append(f"{'meets' if r['b_over_c'] >= TARGET_YEAR else 'misses'} (c) ≥ {TARGET_YEAR:g}× faster than (b)")
    out.append(f"{'meets' if r['c_over_b'] <= TARGET_SLOWER else 'misses'} (c) ≤ {TARGET_SLOWER:g}× (b)")
    return out


def files_text(cells: dict[tuple[str, str], Cell], q: Query, path: str) -> str:
    c = cells[(q.key, path)]
    if path == "native" or c.files_kept is None:
        return "–"
    if path == "off":
        return f"{c.files_kept}/{c.files_total} read"
    answered = int(statistics.median(c.answered)) if c.answered else 0
    read = int(statistics.median(c.read)) if c.read else c.files_kept
    return f"{answered} from index + {read} read /{c.files_total}"


def markdown(cells: dict[tuple[str, str], Cell], qs: list[Query], info: dict[str, Any], problems: list[str],
             plans: dict[str, dict[str, str]], refs: References) -> str:
    lines = [
        "# Aggregates from the index (issue 28): COUNT / MIN / MAX without reading fully matched files",
        "",
        f"TPC-H lineitem SF {info['scale_factor']:g}: {info['rows']:,} rows in {info['files']} Parquet files "
        f"({info['bytes'] / 1e6:,.0f} MB) sorted by `l_shipdate` ({info['shipdate_range']}), and the same rows "
        f"partitioned by month of `l_shipdate` (`{PART}=YYYY-MM`, {info['month_copy']['partitions']} partitions, "
        f"{info['month_copy']['files']} files). Three paths in one session, interleaved round robin; median of "
        f"{info['repeat']} timed runs after {info['warmup_rounds']} warm-up round(s).",
        "",
        "Paths: " + "; ".join(LABELS[p] for p in PATHS) + ".",
        "",
        "| query | (a) native s | (b) aggregates off s | (c) from index s | (b)/(c) | (c)/(b) | (c)/(b) paired | "
        "(a)/(c) | (b) files | (c) files | targets (medians) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for q in qs:
        r = ratios(cells, q)
        a, b, c = (cells[(q.key, p)] for p in PATHS)
        lines.append(f"| {q.title} | {a.median:.3f} | {b.median:.3f} | {c.median:.3f} | **{r['b_over_c']:.2f}×** | "
                     f"{r['c_over_b']:.2f}× | {r['paired_c_over_b']:.2f}× | {r['a_over_c']:.2f}× | "
                     f"{files_text(cells, q, 'off')} | {files_text(cells, q, 'index')} | "
                     f"{'; '.join(verdicts(cells, q))} |")
    lines += ["", "(b)/(c) > 1: answering from the index is faster than reading the kept files; (c)/(b) ≤ "
              f"{TARGET_SLOWER:g} is the no-slower target. *Paired*: the median over the timed rounds of (c)'s time "
              "over (b)'s in the same round (they run next to each other, so this cancels slow changes in how busy "
              "the machine is). Files: from the extension's record of each rewrite (`aggregate_from_index`: "
              "answered / read) and the handler's scan metrics (kept / total).", ""]
    same = [q for q in qs if not q.answerable and normalized(plans[q.key]["index"]) == normalized(plans[q.key]["off"])]
    if same:
        r = ratios(cells, same[0])
        lines += [f"Noise of this run: *{same[0].title}* runs the very same plan through (b) and (c), so its (c)/(b) "
                  f"of {r['c_over_b']:.2f}× (paired {r['paired_c_over_b']:.2f}×, fastest runs "
                  f"{r['best_c_over_b']:.2f}×) is what chance alone does to a ratio here.", ""]
    lines += verdict_lines(cells, qs, refs, problems)
    lines += bounds(cells, qs, refs)
    lines += ["",
              f"Fastest of the {info['repeat']} runs (less sensitive to other work on the machine; the targets are "
              "judged on medians):", "",
              "| query | (a) best s | (b) best s | (c) best s | (b)/(c) | (c)/(b) |", "|---|---:|---:|---:|---:|---:|"]
    for q in qs:
        r = ratios(cells, q)
        a, b, c = (cells[(q.key, p)] for p in PATHS)
        lines.append(f"| {q.title} | {a.best:.3f} | {b.best:.3f} | {c.best:.3f} | {r['best_b_over_c']:.2f}× | "
                     f"{r['best_c_over_b']:.2f}× |")
    lines += ["", "Where the time goes: Spark tasks per run (median), the handler's strict evaluation (kept files "
              "whose every row matches, from `last_scan_metrics()`), the first (coldest) warm-up run in seconds:",
              "", "| query | (a) tasks | (b) tasks | (c) tasks | (b) planning s | (c) planning s | kept / total | "
              "fully matched (rows) | (a) first | (b) first | (c) first |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for q in qs:
        a, b, c = (cells[(q.key, p)] for p in PATHS)
        fully = f"{c.files_matched_fully} ({c.rows_matched_fully:,})" if c.files_matched_fully is not None else "–"
        plan_b, plan_c = (median(refs.planning.get((q.key, p), [])) for p in ("off", "index"))
        lines.append(f"| {q.title} | {a.median_tasks} | {b.median_tasks} | {c.median_tasks} | {_opt(plan_b)} | "
                     f"{_opt(plan_c)} | {c.files_kept}/{c.files_total} | {fully} | {a.warmup_seconds:.2f} | "
                     f"{b.warmup_seconds:.2f} | {c.warmup_seconds:.2f} |")
    lines += ["", "Planning: `spark.sql(q).queryExecution().executedPlan()` alone (analysis, the optimizer with the "
              "handler's prune request, physical planning; nothing runs), once per timed round beside the timed "
              "runs."]
    lines += ["", "Queries (`T`: the plain copy for (a), the handler's table for (b) and (c)):", ""]
    for q in qs:
        table = "`lineitem`" if q.handler_table == TABLE else f"`lineitem_by_month` (partitioned by `{PART}`)"
        note = "" if q.answerable else f" — not rewritten ({q.why_not}): (c) must plan as (b)"
        lines.append(f"* **{q.title}** on {table} — `{q.sql('T')}` ({cells[(q.key, 'native')].rows} result "
                     f"rows){note}")
    lines += ["", "Plans of (c) (the rewrite as `EXPLAIN` shows it):", ""]
    for q in qs:
        index = plans.get(q.key, {}).get("index", "")
        found, read = files_in(FROM_INDEX, index), files_in(READ, index)
        if found is not None and IN_DRIVER in index:
            lines.append(f"* {q.key}: `{IN_DRIVER}`: {found} files answered from the index, "
                         f"{read if read is not None else '?'} read in the driver -- no Spark job")
        elif found is not None:
            lines.append(f"* {q.key}: a `LocalTableScan` of `…_of_{found}_files_from_index` under a union "
                         f"with the aggregation of `…_of_{read if read is not None else '?'}_files_read`")
        else:
            same = normalized(index) == normalized(plans.get(q.key, {}).get("off", ""))
            lines.append(f"* {q.key}: no rewrite; {'the same plan as (b)' if same else 'a plan that differs from (b)'}")
    lines += ["", "Results: " + ("**MISMATCH / PROBLEM** — " + "; ".join(p.replace("\n", " ") for p in problems)
                                 if problems else "(b) and (c) returned exactly (a)'s rows in every run; every plan "
                                 "was as required."), "", "Machine and run:", ""]
    lines += [f"* {k}: {v}" for k, v in info.items() if k != "month_copy"]
    lines.append(f"* month copy: {info['month_copy']}")
    kept = info["runs_kept_despite_interference"]
    timed_runs = sum(len(c.seconds) for c in cells.values())
    med = info["median_interference_of_kept_runs"]
    if kept or med > BUSY_SHARE:
        lines += ["", f"**Warning — disturbed results**: other processes were busy during the timed runs (median "
                      f"share of the CPU during the kept runs {med:.0%}; {kept} of {timed_runs} timed runs kept above "
                      f"{info['max_interference']:.0%} after {RETRIES} retries or once the time budget was spent; "
                      f"{info['runs_discarded_for_interference']} discarded and repeated). Timings are slower and "
                      "noisier than on a quiet machine; compare the ratios, and the best-of table."]
    elif (info.get("cpu_share_used_by_other_processes") or 0) > BUSY_SHARE:
        lines += ["", f"Note: other processes used {info['cpu_share_used_by_other_processes']:.0%} of the CPU over "
                      f"the whole run; {info['runs_discarded_for_interference']} timed runs they disturbed were "
                      "discarded and repeated, so the timings above are from quieter moments."]
    lines += ["", "Chart: `aggregates.png`; every timing: `aggregates.json`. Script: `benchmarks/bench_aggregates.py`.",
              ""]
    return "\n".join(lines)


def _opt(value: float | None) -> str:
    return f"{value:.3f}" if value is not None else "–"


def verdict_lines(cells: dict[tuple[str, str], Cell], qs: list[Query], refs: References,
                  problems: list[str]) -> list[str]:
    """The issue's three targets, one line each."""
    floor = median(refs.floor)
    lines = ["Against the issue's targets:", ""]
    for q in [q for q in qs if q.target == "year"]:
        r, b = ratios(cells, q), cells[(q.key, "off")]
        bound = f"; with Spark's floor at {floor:.3f} s no plan that runs a Spark job could exceed " \
            f"{b.median / floor:.1f}× here" if floor else ""
        table_floor = median(refs.table_floor)
        if table_floor:
            bound += f", and with a query that names the table and reads nothing at {table_floor:.3f} s no " \
                f"answer at all, in the driver too, could exceed {b.median / table_floor:.1f}×"
        lines.append(f"* (c) ≥ {TARGET_YEAR:g}× faster than (b) for the year count: "
                     f"**{'met' if r['b_over_c'] >= TARGET_YEAR else 'missed'}**, {r['b_over_c']:.2f}× (paired "
                     f"{r['paired_b_over_c']:.2f}×){bound}.")
    slow = [(q, ratios(cells, q)) for q in qs if ratios(cells, q)["c_over_b"] > TARGET_SLOWER]
    lines.append(f"* no query through (c) more than {100 * (TARGET_SLOWER - 1):.0f} % slower than (b): **"
                 + ("met" if not slow else "missed") + "**" + ("" if not slow else ": " + "; ".join(
                     f"{q.title} {r['c_over_b']:.2f}× (paired {r['paired_c_over_b']:.2f}×, fastest runs "
                     f"{r['best_c_over_b']:.2f}×)" for q, r in slow)) + ".")
    lines.append("* exactly (a)'s rows on every query: **" + ("met**, every run of (b) and (c)." if not problems
                                                              else "NOT met** (see Results below)."))
    return [*lines, ""]


def bounds(cells: dict[tuple[str, str], Cell], qs: list[Query], refs: References) -> list[str]:
    """What limits the ratios: Spark's floor (the fastest any query that runs a job returns here)."""
    floor = median(refs.floor)
    if floor is None:
        return []
    lines = [f"**Spark's floor** on this machine: `{FLOOR_SQL}` (an aggregate over a two-row in-memory table, "
             f"{refs.floor_tasks} tasks) takes **{floor:.3f} s** (median of {len(refs.floor)}, fastest "
             f"{min(refs.floor):.3f} s). No answer that runs a Spark job -- Spark's plan of the rewrite, the union "
             "of the index's numbers with the aggregation of the files read, is one -- comes back faster, so with "
             "it (b)/(c) cannot exceed (b)/floor. An answer in the driver (`HshAggregateFromIndex`: the index's "
             "numbers and the few files left read with Spark's reader in the driver) runs no job, so the floor does "
             "not bound it:", ""]
    for q in qs:
        b, c = cells[(q.key, "off")], cells[(q.key, "index")]
        lines.append(f"* {q.title}: (b) {b.median:.3f} s / floor = at most **{b.median / floor:.1f}×**; (c) "
                     f"{c.median:.3f} s is {c.median / floor:.1f}× the floor")
    table_floor = median(refs.table_floor)
    if table_floor is not None:
        year = next(q for q in qs if q.target == "year")
        b, c = cells[(year.key, "off")], cells[(year.key, "index")]
        lines += ["", f"**The table's floor**: `{TABLE_FLOOR_SQL.format(table=year.handler_table)}` takes "
                  f"**{table_floor:.3f} s** (median of {len(refs.table_floor)}, fastest {min(refs.table_floor):.3f} s, "
                  f"{refs.table_floor_tasks} tasks). Spark plans it as an empty local relation: it is parsed, the "
                  "table's name resolved (its definition checked in the metastore, as for every query) and planned, "
                  "and nothing is listed or read. Any answer for the table, from the index in the driver included, "
                  "does all of that and more (its prune request lists the table's files and reads the index; the "
                  f"files left are read), so for the year count (b)/(c) cannot exceed (b)/that = at most "
                  f"**{b.median / table_floor:.1f}×**; (c) {c.median:.3f} s is {c.median / table_floor:.1f}× it, "
                  f"{1000 * (c.median - table_floor):.0f} ms above it."]
    return lines


def chart(cells: dict[tuple[str, str], Cell], qs: list[Query], info: dict[str, Any], refs: References,
          out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = {"native": "#7f7f7f", "off": "#1f77b4", "index": "#2ca02c"}
    width = 0.8 / len(PATHS)
    fig, ax = plt.subplots(figsize=(12, 6))
    for i, path in enumerate(PATHS):
        runs = [cells[(q.key, path)] for q in qs]
        xs = [j + (i - (len(PATHS) - 1) / 2) * width for j in range(len(qs))]
        meds = [c.median for c in runs]
        bars = ax.bar(xs, meds, width, label=LABELS[path].replace("`", ""), color=colors[path],
                      yerr=[[c.median - c.best for c in runs], [max(c.seconds) - c.median for c in runs]], capsize=3)
        for bar, q, c in zip(bars, qs, runs, strict=True):
            note = f"{c.median:.2f}s"
            if path == "off":
                note += f"\n{c.files_kept} rd"
            if path == "index":
                answered = int(statistics.median(c.answered)) if c.answered else 0
                read = int(statistics.median(c.read)) if c.read else c.files_kept
                note += f"\n{ratios(cells, q)['b_over_c']:.2f}×\n{answered}+{read}"
            ax.annotate(note, (bar.get_x() + bar.get_width() / 2, max(c.seconds)), xytext=(0, 3),
                        textcoords="offset points", ha="center", va="bottom", fontsize=7)
    floor = median(refs.floor)
    if floor is not None:
        ax.axhline(floor, color="#d62728", linestyle="--", linewidth=1,
                   label=f"Spark's floor: an aggregate over a 2-row in-memory table ({floor:.2f} s)")
    ax.set_yscale("log")
    ax.set_xticks(range(len(qs)), [q.title.replace(", ", ",\n", 1) for q in qs], fontsize=8)
    ax.set_ylabel("median seconds (log scale; whiskers: min..max)")
    busy = " — DISTURBED (other work on the machine)" if info["runs_kept_despite_interference"] else ""
    ax.set_title(f"Aggregates from the index: TPC-H lineitem SF{info['scale_factor']:g}, {info['files']} files "
                 f"sorted by l_shipdate; median of {info['repeat']} runs, {info['cores']} cores{busy}\n"
                 "labels: median seconds; (b): files read; (c): (b)/(c), files answered from the index + files read",
                 fontsize=9)
    ax.legend(loc="upper right", fontsize=8)
    lo = min([c.best for c in cells.values()] + refs.floor)
    hi = max(max(c.seconds) for c in cells.values())
    ax.set_ylim(lo / 2, hi * 6)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


# ---------------------------------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=0.5)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=9, help="timed runs per (query, path)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed rounds over every (query, path) first")
    parser.add_argument("--queries", nargs="+", choices=[q.key for q in QUERIES], help="only these queries")
    parser.add_argument("--max-interference", type=float, default=0.15, metavar="SHARE",
                        help=f"re-run a timed run if other processes used more than this share of the CPU during it "
                             f"(up to {RETRIES} times; 0 disables)")
    parser.add_argument("--budget-minutes", type=float, default=15.0,
                        help="after this long (from the start), disturbed runs are kept instead of repeated")
    parser.add_argument("--data-dir", type=Path, default=HERE / "data")
    parser.add_argument("--results-dir", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    check_tools()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # the finally blocks stop what we started
    started = time.monotonic()
    deadline = started + 60 * args.budget_minutes
    data_dir = args.data_dir.resolve()
    ds = ensure_lineitem(data_dir, args.scale, args.files, log=log)
    own = data_dir / "aggregates" / f"sf{args.scale:g}-f{args.files}"
    own.mkdir(parents=True, exist_ok=True)
    lineitem = link_lineitem(ds, own)
    by_month, month_facts = ensure_by_month(lineitem, own / "lineitem_by_month", log)
    qs = [q for q in QUERIES if not args.queries or q.key in args.queries]

    work = Path(tempfile.mkdtemp(prefix="hsh-bench-aggregates-"))
    os.environ["HSH_HOME"] = str(work / "home")  # scan metrics and metastore state: this run's own
    os.environ.pop("HSH_METASTORE_URI", None)
    from metastore.local import LocalMetastore
    from storage_handler.spark import session

    metastore = LocalMetastore(work / "home")
    spark = None
    try:
        info0 = metastore.start(progress=log)
        log(f"metastore {info0.uri} (pid {info0.pid})")
        reg = register(info0.uri, {TABLE: lineitem, PLAIN: lineitem, PTABLE: by_month, PPLAIN: by_month}, log)
        spark = session(info0.uri, app_name="hsh-bench-aggregates")
        plans, problems = check_plans(spark, qs, log)
        if problems:
            print("error: the plans are not what the comparison needs:\n  " + "\n  ".join(problems), file=sys.stderr)
            return 1
        cpu_start = cpu_snapshot()
        refs = References()
        cells, mismatches = run_all(spark, qs, args.repeat, args.warmup, args.max_interference, deadline, refs, log)
        other_share = other_cpu_share(cpu_start, cpu_snapshot())
    finally:
        if spark is not None:
            stop_session(spark)
        metastore.stop()
        shutil.rmtree(work, ignore_errors=True)

    info = machine_info(ds, args.repeat, args.warmup, {}, PATHS, other_share, cells, args.max_interference)  # type: ignore[arg-type]
    info["runs_kept_despite_interference"] = sum(c.kept_despite for c in cells.values())
    info["budget_minutes"] = args.budget_minutes
    info["seconds_total"] = round(time.monotonic() - started, 1)
    info["registration_seconds"] = reg
    info["month_copy"] = month_facts
    mismatches += explain_agrees(cells, qs, plans)
    args.results_dir.mkdir(parents=True, exist_ok=True)
    md = markdown(cells, qs, info, mismatches, plans, refs)
    (args.results_dir / "aggregates.md").write_text(md)
    chart(cells, qs, info, refs, args.results_dir / "aggregates.png")
    raw = {"machine": info, "paths": LABELS, "targets": {"year_b_over_c_at_least": TARGET_YEAR,
                                                          "c_over_b_at_most": TARGET_SLOWER},
           "queries": {q.key: {"title": q.title, "sql": q.sql("T"), "answerable": q.answerable,
                               "ratios": ratios(cells, q), "verdicts": verdicts(cells, q),
                               "plans": plans[q.key], **{p: {
                                   "seconds": cells[(q.key, p)].seconds, "median": cells[(q.key, p)].median,
                                   "warmup": cells[(q.key, p)].warmup_seconds, "tasks": cells[(q.key, p)].tasks,
                                   "interference": cells[(q.key, p)].interference,
                                   "discarded": cells[(q.key, p)].discarded,
                                   "kept_despite_interference": cells[(q.key, p)].kept_despite,
                                   "rows": cells[(q.key, p)].rows, "files_kept": cells[(q.key, p)].files_kept,
                                   "files_total": cells[(q.key, p)].files_total,
                                   "files_matched_fully": cells[(q.key, p)].files_matched_fully,
                                   "rows_matched_fully": cells[(q.key, p)].rows_matched_fully,
                                   "answered_from_index": cells[(q.key, p)].answered,
                                   "files_read": cells[(q.key, p)].read} for p in PATHS}} for q in qs},
           "floor": {"sql": FLOOR_SQL, "seconds": refs.floor, "interference": refs.floor_interference,
                     "tasks": refs.floor_tasks},
           "table_floor": {"sql": TABLE_FLOOR_SQL, "seconds": refs.table_floor, "tasks": refs.table_floor_tasks},
           "planning_seconds": {f"{k}/{p}": v for (k, p), v in refs.planning.items()},
           "problems": mismatches}
    (args.results_dir / "aggregates.json").write_text(json.dumps(raw, indent=2) + "\n")
    print(md)
    log(f"wrote {args.results_dir / 'aggregates.md'}, aggregates.png and aggregates.json "
        f"in {info['seconds_total']:.0f} s")
    if mismatches:
        print("error:\n  " + "\n  ".join(mismatches), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
