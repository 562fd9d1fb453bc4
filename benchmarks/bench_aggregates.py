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
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from aggregates_model import (  # noqa: E402
    FLOOR_SQL,
    FROM_INDEX,
    IN_DRIVER,
    LABELS,
    PART,
    PATHS,
    PLAIN,
    PPLAIN,
    PTABLE,
    QUERIES,
    READ,
    RETRIES,
    SETTING,
    TABLE,
    TABLE_FLOOR_SQL,
    TAG,
    TARGET_SLOWER,
    TARGET_YEAR,
    Cell,
    Log,
    Query,
    References,
    files_in,
    normalized,
)
from aggregates_report import chart, explain_agrees, markdown, ratios, verdicts  # noqa: E402
from bench_stats import link_lineitem, stop_session  # noqa: E402
from bench_tpch import canonical, check_tools, timed  # noqa: E402
from tpch_data import ensure_lineitem  # noqa: E402
from tpch_report import cpu_snapshot, machine_info, other_cpu_share  # noqa: E402


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
