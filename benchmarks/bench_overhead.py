"""The fixed cost of a query through the handler, accounted for millisecond by millisecond (issue 30).

    .venv/bin/pip install tpchgen-cli matplotlib        # benchmark-only tools
    .venv/bin/python benchmarks/bench_overhead.py [--scale 0.5] [--files 1000] [--repeat 7]

One Spark session with the handler's extension; per query, the paths interleaved round robin (native, handler,
limit, ..., the order turned by one path each round so that none always follows native's full read),
``--warmup`` untimed rounds then ``--repeat`` timed ones, medians reported:

  native   Spark's own read of the same files as a plain Hive Parquet table (the folder registered a second time
           without the handler's parameters);
  handler  ``spark.sql`` over the registered table: the session extension's native scan over ``HshFileIndex``;
  limit    a temporary view over ``spark.read.parquet(<the files the handler keeps>)``, built once before timing,
           so it neither resolves a table, lists, nor plans a pruning while timed;
  resolved the handler over a DataFrame of the table resolved once before timing (``spark.table(t)``, then
           ``.where(...).selectExpr(...)`` per run): every run still prunes afresh (lists storage, reads the index),
           but Spark does not look the table's name up in the metastore again -- the handler's cost apart from
           the one step the limit's view skips;
  rechecked ``spark.sql`` as for handler, in a second session of the same driver with
           ``spark.hsh.tableDefinition.recheckSeconds=2``: a table definition checked in the metastore less than
           2 s ago is used without asking again (another process's change is seen within 2 s; this driver's own
           at once) -- the handler with the one round trip the limit's view skips left out, as a user can choose.

A timed run is ``spark.sql(text)`` plus ``collect()``: analysis included, as a user's query pays it. For each run
the breakdown records Spark's own phases (``QueryExecution.tracker``: analysis, optimization, planning), the steps
the extension took on the JVM (``hsh.spark.Timings``: resolving the relation, the prune round trip with the
service's own time inside it, waiting for a prefetched answer, turning the answer into partitions), Spark's Hive
client calls (``HiveCatalogMetrics``), and the prune service's own phases and counts from the scan log.

Two metastore states are measured, because they are the gap between two earlier measurements of this cost: a
**cold** metastore (started for the run: its JVM has not compiled ``get_table``'s code, which then costs 25-45 ms)
and a **warm** one (after ``--metastore-warmup`` calls, as a metastore that has been serving a cluster for a
while: 5-10 ms). ``--hiveserver2`` adds the same point lookup through ``pyhive`` against the Thrift server, whose
JVM writes its steps to a file (``HSH_TIMINGS_LOG``).

Output: ``benchmarks/results/overhead.md``, ``overhead.json``, ``overhead.png``; exit code 1 when a path's rows
differ from native's.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from bench_tpch import canonical, register_tables, warm_metastore  # noqa: E402
from overhead_report import PATHS, PHASES, RECHECK_SECONDS, chart, markdown  # noqa: E402
from provenance import commit_label  # noqa: E402
from spread import ratio_interval  # noqa: E402
from tpch_data import ensure_lineitem  # noqa: E402
from tpch_model import PLAIN, Q6_WHERE, TABLE  # noqa: E402
from tpch_report import cpu_snapshot, other_cpu_share  # noqa: E402

from storage_handler.contract import SETTING_DEFINITION_RECHECK  # noqa: E402


def _phases(df: Any) -> dict[str, float]:
    out: dict[str, float] = {}
    it = df._jdf.queryExecution().tracker().phases().iterator()
    while it.hasNext():
        kv = it.next()
        out[str(kv._1())] = float(kv._2().durationMs())
    return out


def _steps(events: list[dict[str, Any]]) -> tuple[Counter[str], Counter[str]]:
    ms: Counter[str] = Counter()
    n: Counter[str] = Counter()
    for ev in events:
        ms[ev["step"]] += ev["ms"]
        n[ev["step"]] += 1
        if "service_ms" in ev and ev["service_ms"] >= 0:
            ms["service_ms"] += ev["service_ms"]
    return ms, n


RULE_LINE = re.compile(r"^(\S+)\s+(\d+) / (\d+)\s+(\d+) / (\d+)\s*$")
RULE_GROUPS = ("resolve_relations", "hsh_rules", "other_rules")


def rule_groups(dump: str) -> dict[str, float]:
    """Milliseconds Spark's analyzer and optimizer rules took, from ``RuleExecutor.dumpTimeSpent()``, in three
    groups: Spark resolving the table's name (``ResolveRelations``: the catalog lookup, for a metastore table the
    Hive client's ``getTable``), the handler's own rules (``hsh.spark.*``), and every other rule."""
    out = dict.fromkeys(RULE_GROUPS, 0.0)
    for line in dump.splitlines():
        m = RULE_LINE.match(line.strip())
        if not m:
            continue
        name, total_ns = m.group(1), int(m.group(3))
        group = ("resolve_relations" if name.endswith("$ResolveRelations") else
                 "hsh_rules" if name.startswith("hsh.") else "other_rules")
        out[group] += total_ns / 1e6
    return out


class Harness:
    def __init__(self, spark: Any) -> None:
        self.spark = spark
        jvm = spark._jvm
        self.timings = jvm.hsh.spark.Timings
        self.rules = jvm.org.apache.spark.sql.catalyst.rules.RuleExecutor
        self.hive_calls = jvm.org.apache.spark.metrics.source.HiveCatalogMetrics.METRIC_HIVE_CLIENT_CALLS()
        # the JVM thread that runs this Python thread's calls (py4j pins one to each): the query's own thread
        self.threads = jvm.java.lang.management.ManagementFactory.getThreadMXBean()
        self.query_thread = jvm.java.lang.Thread.currentThread().getId()

    def run(self, query: str | Callable[[], Any]) -> dict[str, Any]:
        from storage_handler.spark import scan_history

        self.timings.drain()
        self.rules.resetMetrics()
        calls, scans = self.hive_calls.getCount(), len(scan_history(TABLE))
        cpu = self.threads.getThreadCpuTime(self.query_thread)
        start = time.perf_counter()
        df = self.spark.sql(query) if isinstance(query, str) else query()
        rows = df.collect()
        seconds = time.perf_counter() - start
        cpu_ms = (self.threads.getThreadCpuTime(self.query_thread) - cpu) / 1e6
        ms, n = _steps(json.loads(self.timings.drain()))
        rules = rule_groups(self.rules.dumpTimeSpent())
        time.sleep(0.05)  # the prune service records its scan right after answering
        new = scan_history(TABLE)[scans:]
        return {"seconds": seconds, "cpu_ms": cpu_ms, "phases": _phases(df), "rules": rules, "steps": dict(ms), "step_counts": dict(n),
                "hive_calls": self.hive_calls.getCount() - calls, "scans": new, "rows": canonical(rows)}


def limit_view(spark: Any, name: str, where: str) -> tuple[str, list[str]]:
    from storage_handler.catalog import absolute_path
    from storage_handler.handler import list_status_for
    from storage_handler.spark.native import load_table_desc

    desc = load_table_desc(spark, TABLE)
    result, _ = list_status_for(desc, where)
    paths = ["file://" + absolute_path(desc.location, f.path) for f in result.files]
    spark.read.schema(spark.table(PLAIN).schema).parquet(*paths).createOrReplaceTempView(name)
    return name, paths


def measure(harness: Harness, query: dict[str, str], repeat: int, warmup: int) -> dict[str, Any]:
    tables = {"native": PLAIN, "handler": TABLE, "limit": query["limit_view"]}
    resolved = harness.spark.table(TABLE)  # analyzed once: the runs below do not look the table up again
    rechecked = harness.spark.newSession()
    rechecked.conf.set(SETTING_DEFINITION_RECHECK, str(RECHECK_SECONDS))
    runs: dict[str, list[dict[str, Any]]] = {p: [] for p in PATHS}
    for i in range(warmup + repeat):
        # the order turns by one path each round: every path follows every other one equally often (a fixed order
        # put the handler right after native's read of all 1,000 files, and so into its garbage collection)
        for path in PATHS[i % len(PATHS):] + PATHS[:i % len(PATHS)]:
            if path == "resolved":
                run = harness.run(lambda: resolved.where(query["where"]).selectExpr(query["select"]))
            elif path == "rechecked":
                run = harness.run(lambda: rechecked.sql(f"SELECT {query['select']} FROM {TABLE} WHERE {query['where']}"))
            else:
                run = harness.run(f"SELECT {query['select']} FROM {tables[path]} WHERE {query['where']}")
            if i >= warmup:
                runs[path].append(run)
    return runs


def summarize(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    def med(values: list[float]) -> float:
        return statistics.median(values) if values else 0.0

    out: dict[str, Any] = {}
    for path, rs in runs.items():
        steps = sorted({s for r in rs for s in r["steps"]})
        service = [s for r in rs for s in r["scans"]]
        out[path] = {
            "ms": med([r["seconds"] * 1000 for r in rs]),
            "runs_ms": [round(r["seconds"] * 1000, 2) for r in rs],  # in round order: the interval pairs by round
            "cpu_ms": med([r.get("cpu_ms", 0.0) for r in rs]),
            "phases": {p: med([r["phases"].get(p, 0.0) for r in rs]) for p in PHASES},
            "rules": {g: round(med([r["rules"][g] for r in rs]), 2) for g in RULE_GROUPS},
            "steps": {s: round(med([r["steps"].get(s, 0.0) for r in rs]), 2) for s in steps},
            "step_counts": {s: med([r["step_counts"].get(s, 0) for r in rs]) for s in steps},
            "hive_calls": med([r["hive_calls"] for r in rs]),
            "scans_per_query": med([len(r["scans"]) for r in rs]),
            "service": {k: round(med([s[k] * 1000 for s in service]), 2) for k in
                        ("seconds_metastore", "seconds_listing", "seconds_partitions", "seconds_stats")
                        } if service else {},
            "counts": {k: med([s.get(k, 0) for s in service]) for k in
                       ("metastore_calls", "index_loads", "index_row_groups_read", "files_kept", "files_total")
                       } if service else {},
        }
    out["ratio"] = out["handler"]["ms"] / out["limit"]["ms"]
    limit = [r["seconds"] for r in runs["limit"]]
    out["interval"] = ratio_interval([r["seconds"] for r in runs["handler"]], limit)
    for path in ("resolved", "rechecked"):
        if path in out:
            out[f"ratio_{path}"] = out[path]["ms"] / out["limit"]["ms"]
            out[f"interval_{path}"] = ratio_interval([r["seconds"] for r in runs[path]], limit)
    return out


def hiveserver2(uri: str, home: Path, queries: dict[str, dict[str, str]], repeat: int, warmup: int,
                ) -> dict[str, Any]:
    """The point lookup through pyhive: the registered table against a view over the kept files' folder."""
    from pyhive import hive

    from storage_handler.spark.config import thrift_server

    log = home / "hs2-timings.jsonl"
    os.environ["HSH_TIMINGS_LOG"] = str(log)
    server = thrift_server(uri, home)
    info = server.start()
    out: dict[str, Any] = {}
    try:
        with hive.connect(host="127.0.0.1", port=info.port) as conn:
            cursor = conn.cursor()
            for key, query in queries.items():
                kept = Path(tempfile.mkdtemp(prefix=f"kept-{key}-", dir=home))
                for i, path in enumerate(query["paths"]):
                    (kept / f"part-{i:05d}.parquet").symlink_to(path.removeprefix("file://"))
                view = "hs2_limit_" + key.replace(" ", "_")
                cursor.execute(f"CREATE OR REPLACE TEMPORARY VIEW {view} USING parquet OPTIONS (path 'file://{kept}')")
                timings: dict[str, list[float]] = {"handler": [], "limit": []}
                steps: list[Counter[str]] = []
                for i in range(warmup + repeat):
                    for path, table in (("handler", TABLE), ("limit", view)):
                        log.write_text("")
                        start = time.perf_counter()
                        cursor.execute(f"SELECT {query['select']} FROM {table} WHERE {query['where']}")
                        cursor.fetchall()
                        seconds = time.perf_counter() - start
                        if i >= warmup:
                            timings[path].append(seconds * 1000)
                            if path == "handler":
                                events = [json.loads(line) for line in log.read_text().splitlines() if line]
                                steps.append(_steps(events)[0])
                names = sorted({s for c in steps for s in c})
                out[key] = {
                    "handler_ms": statistics.median(timings["handler"]),
                    "limit_ms": statistics.median(timings["limit"]),
                    "steps": {s: round(statistics.median([c.get(s, 0.0) for c in steps]), 2) for s in names},
                }
                out[key]["ratio"] = out[key]["handler_ms"] / out[key]["limit_ms"]
                out[key]["interval"] = ratio_interval(timings["handler"], timings["limit"])
    finally:
        server.stop()
        os.environ.pop("HSH_TIMINGS_LOG", None)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=0.5)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--metastore-warmup", type=int, default=3000, metavar="CALLS")
    parser.add_argument("--hiveserver2", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--out", default=str(HERE / "results" / "overhead"))
    parser.add_argument("--from-json", type=Path, metavar="FILE",
                        help="rewrite the report and chart from an earlier run's JSON instead of measuring")
    args = parser.parse_args()
    if args.from_json:
        result = json.loads(args.from_json.read_text())
        out = Path(args.out)
        out.with_suffix(".md").write_text(markdown(result))
        chart(result, out.with_suffix(".png"))
        return 0

    from metastore.local import LocalMetastore

    ds = ensure_lineitem(HERE / "data", args.scale, args.files)
    home = Path(tempfile.mkdtemp(prefix="hsh-overhead-", dir=HERE / "data"))
    os.environ["HSH_HOME"] = str(home)
    metastore = LocalMetastore(home)
    uri = metastore.start().uri
    cpu_start = cpu_snapshot()
    try:
        register_tables(uri, ds)
        from storage_handler.spark import session

        spark = session(uri)
        harness = Harness(spark)
        queries = {"point lookup": {"select": "*", "where": f"l_shipdate = DATE '{ds.lookup_shipdate}'"},
                   "Q6": {"select": "sum(l_extendedprice * l_discount) AS revenue", "where": Q6_WHERE}}
        for key, q in queries.items():
            q["limit_view"], paths = limit_view(spark, "limit_" + key.replace(" ", "_"), q["where"])
            q["paths"] = paths  # type: ignore[assignment]
        results: dict[str, Any] = {"spark": {}}
        mismatches = []
        for state in ("cold", "warm"):
            if state == "warm":
                warm_metastore(uri, args.metastore_warmup)
            results["spark"][state] = {}
            for key, q in queries.items():
                runs = measure(harness, q, args.repeat, args.warmup)
                for path in ("handler", "limit", "resolved", "rechecked"):
                    if any(r["rows"] != runs["native"][0]["rows"] for r in runs[path]):
                        mismatches.append(f"{state} {key} {path}")
                results["spark"][state][key] = summarize(runs)
                print(state, key, {p: round(results["spark"][state][key][p]["ms"]) for p in PATHS},
                      f"ratio {results['spark'][state][key]['ratio']:.2f}", flush=True)
        spark.stop()
        if args.hiveserver2:
            point = {"point lookup": queries["point lookup"]}
            results["hiveserver2"] = hiveserver2(uri, home, point, args.repeat, args.warmup)
        import pyspark

        results["machine"] = {
            "scale": args.scale, "files": args.files, "repeat": args.repeat, "warmup": args.warmup,
            "cores": os.cpu_count(), "pyspark": pyspark.__version__, "commit": commit_label(),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "other_cpu_share": other_cpu_share(cpu_start, cpu_snapshot()) or 0.0,
        }
        results["mismatches"] = mismatches
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.with_suffix(".json").write_text(json.dumps(results, indent=1, default=str) + "\n")
        out.with_suffix(".md").write_text(markdown(results))
        chart(results, out.with_suffix(".png"))
        print(markdown(results))
    finally:
        metastore.stop()
        shutil.rmtree(home, ignore_errors=True)  # the run's metastore, warehouse and scan log: nothing reused
    if mismatches:
        print(f"error: rows differ from native's: {mismatches}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
