"""TPC-H lineitem, re-clustered by l_shipdate: the handler's file skipping against Spark's own Hive-table read.

    .venv/bin/pip install tpchgen-cli matplotlib        # benchmark-only tools, not project dependencies
    .venv/bin/python benchmarks/bench_tpch.py [--scale 1] [--files 240] [--repeat 5]

Every query runs through four paths over the *same* Parquet files:

  (a)  ``native``     Spark's own read of a plain Hive Parquet table (the folder registered a second time,
                      without the handler's ``hsh.*`` parameters): Spark converts it to its vectorized Parquet
                      reader, which still reads every file's footer and filters row groups itself. The baseline.
  (b)  ``spark.sql``  ``spark.sql`` over the registered table in a ``session()``, whose session extension
                      (``spark.sql.extensions=hsh.spark.HshExtensions``) has Spark's native Parquet scan read
                      the files the handler keeps (``HshFileIndex``).
  (b2) ``python_ds``  the same SQL over a view of ``spark.read.format("hsh").load(table)``: the explicit ``hsh``
                      Python data source, the pruning path of sessions without a JDK.
  (c)  ``read_table`` ``storage_handler.spark.read_table``: the handler picks the files, Spark's native reader
                      reads them.
  (d)  ``limit``      the limit the handler can approach: a view over ``spark.read.parquet(<the files the handler
                      keeps for the query>)``, built once per query before timing, so Spark neither plans a
                      pruning nor lists anything while timed.

Every (query, path) runs ``--warmup`` untimed rounds, then ``--repeat`` timed ones, the paths interleaved round
robin; medians are reported. A timed run during which other processes used more than ``--max-interference`` of
the CPU is repeated (up to 3 times). Results of (b), (b2) and (c) must equal (a)'s exactly, and each must have
recorded scan metrics from the expected reader, or the script exits with code 1 (after writing the report).
Output: ``benchmarks/results/tpch.md`` (tables + machine), ``tpch.png`` (chart), ``tpch.json`` (every timing),
and the tables on stdout. ``benchmarks/README.md`` says how to read them.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from tpch_data import INSTALL_HINT, TpchDataset, ensure_lineitem, tpchgen_executable  # noqa: E402

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


# --------------------------------------------------------------------------------------------------- set-up


def check_tools() -> None:
    missing = []
    if tpchgen_executable() is None:
        missing.append("tpchgen-cli")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        missing.append("matplotlib")
    if missing:
        print(f"error: missing {', '.join(missing)}: {INSTALL_HINT}", file=sys.stderr)
        raise SystemExit(2)


def register_tables(uri: str, ds: TpchDataset) -> None:
    """(Re-)register the dataset twice: through the handler, and as a plain Hive table Spark reads natively."""
    from metastore.client import MetastoreClient
    from metastore.register import apply_registration, plan_registration
    from metastore.table_spec import parse_table_name

    with MetastoreClient(uri) as client:
        for name in (TABLE, PLAIN):
            db, table = name.split(".")
            if client.database_exists(db) and client.table_exists(db, table):
                client.drop_table(db, table)  # metadata only: a previous run, perhaps of another scale
            apply_registration(client, plan_registration(client, parse_table_name(name), str(ds.path)))
        plain = client.get_table(DB, PLAIN.split(".")[1])
        for key in [k for k in plain.parameters if k.startswith("hsh.")]:
            del plain.parameters[key]  # not the handler's: the extension leaves it to Spark's own Hive read
        client.alter_table(plain)


def check_plans(spark: Any, paths: tuple[str, ...]) -> None:
    """Each ``spark.sql`` path must be read the way its label says, or the comparison measures something else.

    The baseline must be Spark's plain native Parquet scan (the handler not involved), (b) the native scan
    over the handler's ``HshFileIndex`` (which needs the session extension, left out without a JDK's
    ``javac``), and (b2) the ``hsh`` Python data source. Only the paths that will run are checked, so
    ``--paths read_table`` works in a session without the extension."""
    sql = "SELECT count(*) FROM {} WHERE l_quantity > 0"
    native = _plan(spark, sql.format(PLAIN))
    if "FileScan parquet" not in native or "HshFileIndex" in native or "BatchScan hsh" in native:
        raise SystemExit(f"error: {PLAIN} is not read by Spark's plain native Parquet scan; plan:\n{native}")
    if "spark.sql" in paths:
        handler = _plan(spark, sql.format(TABLE))
        if "FileScan parquet" not in handler or "HshFileIndex" not in handler:
            raise SystemExit(f"error: {TABLE} is not read by Spark's native scan over HshFileIndex (is the "
                             f"session extension loaded and on? spark.sql.extensions="
                             f"{spark.conf.get('spark.sql.extensions', None)!r}, {NATIVE_SCAN_CONF}="
                             f"{spark.conf.get(NATIVE_SCAN_CONF, None)!r}); plan:\n{handler}")
    if "python_ds" in paths:
        handler = _plan(spark, sql.format(python_data_source(spark)))
        if "BatchScan" not in handler or "HshFileIndex" in handler:
            raise SystemExit(f"error: {PYTHON_DS_VIEW} is not read through the hsh data source; plan:\n{handler}")


def python_data_source(spark: Any) -> str:
    """A temporary view over ``spark.read.format("hsh").load(TABLE)`` (the explicit Python data source)."""
    spark.read.format("hsh").option("pruneByQueryFilters", "true").load(TABLE).createOrReplaceTempView(PYTHON_DS_VIEW)
    return PYTHON_DS_VIEW


_LIMIT_VIEWS: dict[str, str] = {}


def kept_files_view(spark: Any, query: Query) -> str:
    """A view over exactly the files the handler keeps for ``query`` (built once, outside the timed runs)."""
    if query.key in _LIMIT_VIEWS:
        return _LIMIT_VIEWS[query.key]
    from storage_handler.catalog import absolute_path
    from storage_handler.handler import list_status_for
    from storage_handler.spark.native import load_table_desc

    desc = load_table_desc(spark, TABLE)
    result, _ = list_status_for(desc, query.where)
    paths = ["file://" + absolute_path(desc.location, f.path) for f in result.files]
    schema = spark.table(PLAIN).schema
    df = spark.read.schema(schema).parquet(*paths) if paths else spark.createDataFrame([], schema)
    view = f"limit_{query.key}"
    df.createOrReplaceTempView(view)
    _LIMIT_VIEWS[query.key] = view
    return view


def _plan(spark: Any, sql: str) -> str:
    return str(spark.sql(sql)._jdf.queryExecution().executedPlan().toString())


# --------------------------------------------------------------------------------------------------- running


def runner(spark: Any, path: str, query: Query) -> Callable[[], list[Any]]:
    from storage_handler.spark import read_table

    if path == "native":
        return lambda: spark.sql(query.sql(PLAIN)).collect()
    if path == "spark.sql":
        return lambda: spark.sql(query.sql(TABLE)).collect()
    if path == "python_ds":
        view = python_data_source(spark)
        return lambda: spark.sql(query.sql(view)).collect()
    if path == "limit":
        view = kept_files_view(spark, query)
        return lambda: spark.sql(query.sql(view)).collect()
    return lambda: read_table(spark, TABLE, where=query.where).selectExpr(*query.select).collect()


def canonical(rows: list[Any]) -> list[tuple[Any, ...]]:
    """Rows as sorted plain tuples: SELECT * returns rows in no defined order."""
    return sorted((tuple(r) for r in rows), key=repr)


_group_counter = iter(range(1 << 62))


def timed(spark: Any, fn: Callable[[], list[Any]]) -> tuple[float, list[Any], float, int]:
    """Run one query: seconds, rows, wall-clock start, and the number of Spark tasks it launched."""
    sc = spark.sparkContext
    group = f"bench-{next(_group_counter)}"
    sc.setJobGroup(group, group)
    start_wall = time.time()
    start = time.perf_counter()
    rows = fn()
    seconds = time.perf_counter() - start
    tracker = sc.statusTracker()
    tasks = 0
    for job in tracker.getJobIdsForGroup(group):
        info = tracker.getJobInfo(job)
        for stage in info.stageIds if info else ():
            stage_info = tracker.getStageInfo(stage)
            tasks += stage_info.numTasks if stage_info else 0
    return seconds, rows, start_wall, tasks


def scan_metrics_since(start_wall: float) -> dict[str, Any] | None:
    from storage_handler.spark import last_scan_metrics

    m = last_scan_metrics(TABLE)
    return m if m and m.get("time", 0) >= start_wall else None


def run_all(
    spark: Any, qs: list[Query], paths: tuple[str, ...], repeat: int, warmup: int, log: Callable[[str], None],
    max_interference: float = 0.0,
) -> tuple[dict[tuple[str, str], Cell], list[str]]:
    """Warm-up rounds, then ``repeat`` timed rounds; within a round every query runs through every path in turn.

    With ``max_interference`` > 0, a timed run during which other processes used more than that share of the
    machine's CPU is discarded and run again (at most ``RETRIES`` times; the last attempt is kept regardless)."""
    cells: dict[tuple[str, str], Cell] = {(q.key, p): Cell() for q in qs for p in paths}
    expected: dict[str, list[tuple[Any, ...]]] = {}
    mismatches: list[str] = []

    def one(q: Query, path: str, warmup: bool) -> None:
        cell = cells[(q.key, path)]
        for attempt in range(RETRIES + 1):
            before = cpu_snapshot()
            seconds, rows, start_wall, tasks = timed(spark, runner(spark, path, q))
            share = other_cpu_share(before, cpu_snapshot())
            if warmup or not max_interference or share is None or share <= max_interference or attempt == RETRIES:
                break
            cell.discarded += 1
        got = canonical(rows)
        if path == "native":
            expected.setdefault(q.key, got)
        if got != expected.get(q.key):
            want = expected[q.key]
            mismatches.append(f"{q.key} via {path}: {len(got)} rows {got[:3]!r}... but native gave "
                              f"{len(want)} rows {want[:3]!r}...")
        if path not in UNMETERED:
            m = scan_metrics_since(start_wall)
            if m is None:
                mismatches.append(f"{q.key} via {path}: no scan metrics were recorded (was the handler used?)")
            else:
                cell.files_kept, cell.files_total = m["files_kept"], m["files_total"]
                cell.scan_path = m.get("path")
                wrong = (f"{q.key} via {path}: scan metrics came from {cell.scan_path!r}, expected "
                         f"{SCAN_METRICS_PATH[path]!r} (the query went through another reader)")
                if cell.scan_path != SCAN_METRICS_PATH[path] and wrong not in mismatches:
                    mismatches.append(wrong)  # once, not once per run
                if not warmup:
                    cell.planning.append(m["seconds_listing"] + m["seconds_partitions"] + m["seconds_stats"])
        cell.rows = len(rows)
        if warmup:
            cell.warmup_seconds = cell.warmup_seconds or seconds  # the first (coldest) run
        else:
            cell.seconds.append(seconds)
            cell.tasks.append(tasks)
            if share is not None:
                cell.interference.append(share)

    rounds = max(warmup, 1)  # the JVM keeps getting faster for a while: one warm-up run is not enough
    for round_no in range(rounds):
        start = time.perf_counter()
        for q in qs:
            for path in paths:
                one(q, path, warmup=True)
                if round_no == 0:
                    log(f"warm-up {q.key:<15} {path:<11} {cells[(q.key, path)].warmup_seconds:7.2f} s")
        log(f"warm-up round {round_no + 1}/{rounds} done in {time.perf_counter() - start:.0f} s")
    for i in range(repeat):
        start = time.perf_counter()
        for q in qs:
            for path in paths:
                one(q, path, warmup=False)
        discarded = sum(c.discarded for c in cells.values())
        log(f"repeat {i + 1}/{repeat} done in {time.perf_counter() - start:.0f} s "
            f"({discarded} disturbed runs discarded so far)")
    return cells, mismatches


# --------------------------------------------------------------------------------------------------- report


def cpu_snapshot() -> tuple[float, float, float]:
    """(wall seconds, CPU seconds the whole machine spent busy, CPU seconds of this process and its descendants).

    Used to tell how much of the machine *other* work took during the run: a busy neighbour makes every timing
    slower and noisier, and the report says so. Linux only; zeros elsewhere."""
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
        user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[:8])
        machine = (user + nice + system + irq + softirq + steal) / tick
    except (OSError, ValueError):
        return time.monotonic(), 0.0, 0.0
    parents: dict[int, int] = {}
    cpu: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry.name)] = int(stat[1])
        cpu[int(entry.name)] = sum(int(x) for x in stat[11:15])  # utime stime cutime cstime (reaped children)
    own, stack = 0, [os.getpid()]
    while stack:
        pid = stack.pop()
        own += cpu.get(pid, 0)
        stack += [child for child, parent in parents.items() if parent == pid]
    return time.monotonic(), machine, own / tick


def other_cpu_share(start: tuple[float, float, float], end: tuple[float, float, float]) -> float | None:
    """The fraction of the machine's CPU that processes outside this benchmark used between two snapshots."""
    wall = end[0] - start[0]
    if wall <= 0 or end[1] == 0:
        return None
    other = (end[1] - start[1]) - (end[2] - start[2])
    return max(0.0, other / (wall * (os.cpu_count() or 1)))


def machine_info(
    ds: TpchDataset, repeat: int, warmup: int, extra_conf: dict[str, str], paths: tuple[str, ...],
    other_share: float | None, cells: dict[tuple[str, str], Cell], max_interference: float,
) -> dict[str, Any]:
    import pyarrow
    import pyspark

    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gb = None
    try:
        kb = int(Path("/proc/meminfo").read_text().split("MemTotal:")[1].split()[0])
        mem_gb = round(kb / 1024 / 1024, 1)
    except (OSError, IndexError, ValueError):
        pass
    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"], capture_output=True,
                                text=True, check=False).stdout.strip() or None
    except OSError:
        commit = None
    return {
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cores": os.cpu_count(), "cpu": cpu, "memory_gb": mem_gb,
        "python": platform.python_version(), "pyspark": pyspark.__version__, "pyarrow": pyarrow.__version__,
        "spark_master": "local[2]", "git_commit": commit,
        "scale_factor": ds.scale, "rows": ds.rows, "files": ds.files, "bytes": ds.bytes,
        "shipdate_range": f"{ds.min_shipdate} .. {ds.max_shipdate}", "repeat": repeat, "warmup_rounds": warmup,
        "paths": list(paths), "extra_spark_conf": extra_conf or "none",
        "cpu_share_used_by_other_processes": None if other_share is None else round(other_share, 3),
        "max_interference": max_interference,
        "runs_discarded_for_interference": sum(c.discarded for c in cells.values()),
        "runs_kept_despite_interference": sum(
            1 for c in cells.values() for x in c.interference if max_interference and x > max_interference),
        "median_interference_of_kept_runs": round(statistics.median(
            [x for c in cells.values() for x in c.interference] or [0.0]), 3),
    }


def speedup(cells: dict[tuple[str, str], Cell], q: Query, path: str) -> float:
    return cells[(q.key, "native")].median / cells[(q.key, path)].median


def verdict(cells: dict[tuple[str, str], Cell], q: Query, path: str) -> str:
    if (q.key, path) not in cells:
        return "not run"
    s = speedup(cells, q, path)
    if q.target == "q6":
        return f"meets ≥{TARGET_Q6_SPEEDUP:g}×" if s >= TARGET_Q6_SPEEDUP else f"misses ≥{TARGET_Q6_SPEEDUP:g}×"
    if q.target == "overhead":
        ok = 1 / s <= TARGET_MAX_SLOWDOWN
        return f"{'meets' if ok else 'misses'} ≤{TARGET_MAX_SLOWDOWN:g}× slower"
    return ""


def markdown(
    cells: dict[tuple[str, str], Cell], qs: list[Query], info: dict[str, Any], mismatches: list[str]
) -> str:
    def cell(q: Query, path: str) -> Cell | None:
        return cells.get((q.key, path))

    def secs(q: Query, path: str) -> str:
        c = cell(q, path)
        return f"{c.median:.3f}" if c else "not run"

    def ratio(q: Query, path: str) -> str:
        return f"{speedup(cells, q, path):.2f}×" if cell(q, path) else "–"

    def files(q: Query, path: str) -> str:
        c = cell(q, path)
        return f"{c.files_kept}/{c.files_total}" if c and c.files_kept is not None else "–"

    def attr(q: Query, path: str, fmt: Callable[[Cell], str]) -> str:
        c = cell(q, path)
        return fmt(c) if c else "–"

    def header(numeric: list[str], text: str | None = None) -> list[str]:
        """A table's header: the numeric columns right-aligned, an optional last text column left-aligned."""
        cols = [*numeric, *([text] if text else [])]
        align = "|---|" + "---:|" * len(numeric) + ("---|" if text else "")
        return [f"| query | {' | '.join(cols)} |", align]

    tag = PATH_TAGS
    target_text = {"q6": f"≥ {TARGET_Q6_SPEEDUP:g}× faster", "overhead": f"≤ {TARGET_MAX_SLOWDOWN:g}× slower"}
    lines = [
        "# TPC-H lineitem: file skipping vs Spark's native Hive-table read",
        "",
        f"Scale factor {info['scale_factor']:g}: {info['rows']:,} rows in {info['files']} Parquet files "
        f"({info['bytes'] / 1e6:,.0f} MB), sorted by `l_shipdate` ({info['shipdate_range']}). "
        f"Median of {info['repeat']} runs after {info['warmup_rounds']} warm-up round(s); speed-up = (a)'s "
        "median / this path's median (> 1 is faster than Spark alone). Files = files read / files in the table, "
        "from `last_scan_metrics()`.",
        "",
        "Paths: " + "; ".join(PATH_LABELS[p] for p in PATHS) + ".",
        "",
    ]
    cols = [f"{tag['native']} native s"]
    for p in HANDLER_PATHS:
        cols += [f"{tag[p]} {p} s", f"{tag[p]} speed-up", f"{tag[p]} files"]
    lines += header(cols, "target")
    for q in qs:
        target = ""
        if q.target in target_text:
            target = f"{target_text[q.target]}: " + ", ".join(
                f"{tag[p]} {verdict(cells, q, p)}" for p in HANDLER_PATHS)
        row = [secs(q, "native")]
        for p in HANDLER_PATHS:
            row += [secs(q, p), ratio(q, p), files(q, p)]
        lines.append(f"| {q.title} | {' | '.join([*row, target])} |")
    if all(cell(q, "limit") and cell(q, "spark.sql") for q in qs):
        lines += ["", "How close the handler comes to its limit (median time over (d)'s: 1.00× is the limit):", ""]
        lines += header([f"{tag['spark.sql']} spark.sql / limit", f"{tag['read_table']} read_table / limit"])
        for q in qs:
            limit = cells[(q.key, "limit")].median
            row = [f"{cells[(q.key, p)].median / limit:.2f}×" if cell(q, p) else "–" for p in ("spark.sql", "read_table")]
            lines.append(f"| {q.title} | {' | '.join(row)} |")
    lines += ["", f"Fastest of the {info['repeat']} runs, seconds and speed-up over (a)'s fastest (less sensitive to "
              "other work on the machine; the targets above are judged on medians):", ""]
    cols = [f"{tag['native']} best s"]
    for p in HANDLER_PATHS:
        cols += [f"{tag[p]} best s", f"{tag[p]} speed-up"]
    lines += header(cols)
    for q in qs:
        best_a = min(cells[(q.key, "native")].seconds)
        row = [f"{best_a:.3f}"]
        for path in HANDLER_PATHS:
            c = cell(q, path)
            row += [f"{min(c.seconds):.3f}", f"{best_a / min(c.seconds):.2f}×"] if c else ["not run", "–"]
        lines.append(f"| {q.title} | {' | '.join(row)} |")
    handler_tags = ", ".join(tag[p] for p in HANDLER_PATHS[:-1]) + f" and {tag[HANDLER_PATHS[-1]]}"
    lines += ["", f"Queries (`T` is `{PLAIN}` for (a), `{TABLE}` for {handler_tags}):", ""]
    for q in qs:
        lines.append(f"* **{q.title}** — `{q.sql('T')}` ({cells[(q.key, 'native')].rows} result rows)")
    lines += ["", "Where the time goes: Spark tasks per run (all jobs of the query, the file-listing job included), "
              "the handler's planning time (listing + pruning, median, seconds) and the first warm-up run "
              "(seconds):", ""]
    lines += header([f"{tag[p]} tasks" for p in PATHS] + [f"{tag[p]} planning" for p in HANDLER_PATHS]
                    + [f"{tag[p]} first" for p in PATHS])
    for q in qs:
        tasks = [attr(q, p, lambda c: str(c.median_tasks)) for p in PATHS]
        planning = [attr(q, p, lambda c: _opt(c.planning_seconds)) for p in HANDLER_PATHS]
        first = [attr(q, p, lambda c: f"{c.warmup_seconds:.2f}") for p in PATHS]
        lines.append(f"| {q.title} | {' | '.join(tasks + planning + first)} |")
    lines += ["", "Results: " + ("**MISMATCH** — " + "; ".join(mismatches) if mismatches
                                 else "every path that ran returned exactly (a)'s rows, in every run."),
              "", "Machine and run:", ""]
    lines += [f"* {k}: {v}" for k, v in info.items()]
    share = info.get("cpu_share_used_by_other_processes")
    if info["runs_kept_despite_interference"] or info["median_interference_of_kept_runs"] > BUSY_SHARE:
        lines += ["", f"**Warning**: other processes were busy during the timed runs (median share of the CPU "
                      f"{info['median_interference_of_kept_runs']:.0%}; {info['runs_kept_despite_interference']} "
                      f"runs kept after {RETRIES} retries); these timings are slower and noisier than on a quiet "
                      "machine."]
    elif share is not None and share > BUSY_SHARE:
        lines += ["", f"Note: other processes used {share:.0%} of the CPU over the whole run; "
                      f"{info['runs_discarded_for_interference']} timed runs they disturbed were discarded and "
                      "repeated, so the timings above are from quiet moments."]
    lines += ["", "Chart: `tpch.png`; every timing: `tpch.json`. How to read this: `benchmarks/README.md`.", ""]
    return "\n".join(lines)


def _opt(value: float | None) -> str:
    return f"{value:.3f}" if value is not None else "–"


def chart(
    cells: dict[tuple[str, str], Cell], qs: list[Query], paths: tuple[str, ...], info: dict[str, Any], out: Path
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # (b2) is a lighter shade of (b): the same spark.sql, read by the Python data source instead
    colors = {"native": "#7f7f7f", "spark.sql": "#1f77b4", "python_ds": "#9ecae1", "read_table": "#2ca02c",
              "limit": "#d62728"}
    width = 0.8 / len(paths)
    fig, ax = plt.subplots(figsize=(5 + 2 * len(paths), 5.5))  # wider with more bars, so their labels fit
    for i, path in enumerate(paths):
        runs = [cells[(q.key, path)] for q in qs]
        xs = [j + (i - (len(paths) - 1) / 2) * width for j in range(len(qs))]
        meds = [c.median for c in runs]
        lo = [c.median - min(c.seconds) for c in runs]
        hi = [max(c.seconds) - c.median for c in runs]
        bars = ax.bar(xs, meds, width, label=PATH_LABELS[path], color=colors[path], yerr=[lo, hi], capsize=3)
        for bar, q, c in zip(bars, qs, runs, strict=True):
            note = f"{c.median:.2f}s"
            if path != "native":
                note += f"\n{speedup(cells, q, path):.2f}×"
                if c.files_kept is not None:
                    note += f"\n{c.files_kept}/{c.files_total}f"
            ax.annotate(note, (bar.get_x() + bar.get_width() / 2, max(c.seconds)), xytext=(0, 3),
                        textcoords="offset points", ha="center", va="bottom", fontsize=7)
    ax.set_yscale("log")
    ax.set_xticks(range(len(qs)), [q.title.replace(" (", "\n(") for q in qs], fontsize=8)
    ax.set_ylabel("median seconds (log scale; whiskers: min..max)")
    conf = "" if info["extra_spark_conf"] == "none" else f", extra conf {info['extra_spark_conf']}"
    ax.set_title(f"TPC-H lineitem SF{info['scale_factor']:g}, {info['files']} files sorted by l_shipdate — "
                 f"median of {info['repeat']} runs, {info['cores']} cores{conf}\n"
                 "label: seconds, speed-up vs (a), files read/total", fontsize=9)
    ax.legend(loc="upper left", fontsize=8)
    ymin = min(min(c.seconds) for c in cells.values())
    ymax = max(max(c.seconds) for c in cells.values())
    ax.set_ylim(ymin / 2, ymax * 4)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


# --------------------------------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="TPC-H scale factor (default 1: 6M rows)")
    parser.add_argument("--files", type=int, default=240, help="files to cut the sorted lineitem into")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per (query, path)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed rounds over every (query, path) first")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="extra Spark setting for the session (every path), e.g. to try a fix; "
                             "repeatable")
    parser.add_argument("--max-interference", type=float, default=0.15, metavar="SHARE",
                        help="re-run a timed run if other processes used more than this share of the CPU during "
                             f"it (up to {RETRIES} times; 0 disables; default 0.15)")
    parser.add_argument("--data-dir", type=Path, default=HERE / "data", help="cache for data and metastore state")
    parser.add_argument("--results-dir", type=Path, default=HERE / "results")
    parser.add_argument("--queries", nargs="+", choices=QUERY_KEYS, help="only these queries")
    parser.add_argument("--paths", nargs="+", choices=HANDLER_PATHS, default=list(HANDLER_PATHS),
                        help="handler paths to run ((a) native always runs: it is the baseline)")
    args = parser.parse_args(argv)
    bad = [c for c in args.conf if "=" not in c]
    if bad:
        parser.error(f"--conf takes KEY=VALUE, got {bad[0]!r}")
    extra_conf = dict(c.split("=", 1) for c in args.conf)
    paths = tuple(p for p in PATHS if p == "native" or p in args.paths)
    check_tools()

    def log(msg: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

    data_dir = args.data_dir.resolve()
    ds = ensure_lineitem(data_dir, args.scale, args.files, log=log)
    home = data_dir / "hsh_home"
    os.environ["HSH_HOME"] = str(home)  # before any Spark or metastore call: scan metrics and state live here
    os.environ.pop("HSH_METASTORE_URI", None)

    from metastore.local import LocalMetastore
    from storage_handler.spark import session

    metastore = LocalMetastore(home)
    spark = None
    try:
        uri = metastore.start(progress=log).uri
        log(f"registering {TABLE} and {PLAIN} over {ds.path}")
        register_tables(uri, ds)
        spark = session(uri, app_name="hsh-bench-tpch", extra_conf=extra_conf)
        check_plans(spark, paths)
        qs = [q for q in queries(ds) if not args.queries or q.key in args.queries]
        cpu_start = cpu_snapshot()
        cells, mismatches = run_all(spark, qs, paths, args.repeat, args.warmup, log, args.max_interference)
        other_share = other_cpu_share(cpu_start, cpu_snapshot())
    finally:
        if spark is not None:
            spark.stop()
        metastore.stop()

    info = machine_info(ds, args.repeat, args.warmup, extra_conf, paths, other_share, cells, args.max_interference)
    args.results_dir.mkdir(parents=True, exist_ok=True)
    md = markdown(cells, qs, info, mismatches)
    (args.results_dir / "tpch.md").write_text(md)
    chart(cells, qs, paths, info, args.results_dir / "tpch.png")
    raw = {"machine": info, "paths": {p: PATH_LABELS[p] for p in paths}, "queries": {q.key: {
        "title": q.title, "sql": q.sql("T"), **{
            p: {"seconds": cells[(q.key, p)].seconds, "warmup": cells[(q.key, p)].warmup_seconds,
                "median": cells[(q.key, p)].median, "files_kept": cells[(q.key, p)].files_kept,
                "files_total": cells[(q.key, p)].files_total, "scan_path": cells[(q.key, p)].scan_path,
                "planning_seconds": cells[(q.key, p)].planning_seconds, "tasks": cells[(q.key, p)].tasks,
                "interference": cells[(q.key, p)].interference, "discarded": cells[(q.key, p)].discarded}
            for p in paths}} for q in qs}, "mismatches": mismatches}
    (args.results_dir / "tpch.json").write_text(json.dumps(raw, indent=2) + "\n")
    print(md)
    log(f"wrote {args.results_dir / 'tpch.md'}, tpch.png and tpch.json")
    if mismatches:
        print("error: results differ between paths:\n  " + "\n  ".join(mismatches), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
