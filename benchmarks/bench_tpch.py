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
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from tpch_data import INSTALL_HINT, TpchDataset, ensure_lineitem, tpchgen_executable  # noqa: E402
from tpch_model import (  # noqa: E402
    HANDLER_PATHS,
    NATIVE_SCAN_CONF,
    PATH_LABELS,
    PATHS,
    PLAIN,
    PYTHON_DS_VIEW,
    QUERY_KEYS,
    RETRIES,
    SCAN_METRICS_PATH,
    TABLE,
    UNMETERED,
    Cell,
    Query,
    queries,
)
from tpch_report import chart, cpu_snapshot, machine_info, markdown, other_cpu_share  # noqa: E402

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
    from bench_tables import register_pair

    register_pair(uri, TABLE, PLAIN, ds.path)


def warm_metastore(uri: str, calls: int) -> None:
    """``calls`` lookups of the registered table, as a metastore serving a cluster has long made: a metastore
    started for the run has not compiled ``get_table``'s code yet, and then Spark's resolution of the table takes
    25-45 ms of each query instead of 5-10 (``results/overhead.md`` measures both states)."""
    from metastore.client import MetastoreClient

    db, table = TABLE.split(".")
    with MetastoreClient(uri) as client:
        for _ in range(calls):
            client.get_table(db, table)


def check_plans(spark: Any, paths: tuple[str, ...]) -> None:
    """Each ``spark.sql`` path must be read the way its label says, or the comparison measures something else.

    The baseline must be Spark's plain native Parquet scan (the handler not involved), (b) the native scan
    over the handler's ``HshFileIndex`` (which needs the session extension, left out without a JDK's
    ``javac``), and (b2) the ``hsh`` Python data source. Only the paths that will run are checked, so
    ``--paths read_table`` works in a session without the extension."""
    sql = "SELECT sum(l_quantity) FROM {} WHERE l_quantity > 0"  # a sum: never answered from the index
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
    """Warm-up rounds, then ``repeat`` timed rounds; within a round every query runs through every path in turn,
    in an order that turns by one path each round.

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
        # the order of the paths turns by one each round, so that every path follows every other one equally
        # often: a fixed order put the handler right after native's read of all the files, into its garbage
        # collection, in every round (bench_overhead.py found and fixed the same bias)
        turned = paths[i % len(paths):] + paths[:i % len(paths)]
        for q in qs:
            for path in turned:
                one(q, path, warmup=False)
        discarded = sum(c.discarded for c in cells.values())
        log(f"repeat {i + 1}/{repeat} done in {time.perf_counter() - start:.0f} s "
            f"({discarded} disturbed runs discarded so far)")
    return cells, mismatches


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
    parser.add_argument("--metastore-warmup", type=int, default=3000, metavar="CALLS",
                        help="get_table calls before timing, as a long-running metastore has served (0: a cold "
                             "metastore; default 3000)")
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
        warm_metastore(uri, args.metastore_warmup)
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
    info["metastore_warmup_calls"] = args.metastore_warmup
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
