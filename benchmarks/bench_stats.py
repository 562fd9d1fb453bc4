"""Metastore statistics from the index (issue 27): a plain Spark session's star join before and after they are
published, and what publishing them adds to ``hsh register``.

    .venv/bin/pip install tpchgen-cli matplotlib        # benchmark-only tools, not project dependencies
    .venv/bin/python benchmarks/bench_stats.py [--scale 0.5] [--files 1000] [--repeat 5] [--register-repeat 5]

One embedded metastore (its own ``HSH_HOME`` in a temporary folder), stopped by PID at the end. Two parts:

**1. A star join in a plain Spark session** (Hive support, ``hive.metastore.uris``, none of the handler's
settings, extension or data source -- what a colleague's session sees, as ``tests/registration/plain_stats_job.py``
builds it; ``local[2]``, Spark's defaults otherwise, adaptive execution included). TPC-H ``lineitem`` (the
``tpch_data.py`` dataset, by default SF 0.5 in 1,000 files, hard-linked into a folder of its own so its index is
this benchmark's) joined with ``supplier`` of the same scale (5,000 rows, ~0.4 MB), partitioned by ``s_nationkey``
(25 ``k=v`` folders)::

    SELECT s.s_nationkey, count(*), sum(l.l_quantity) FROM lineitem l JOIN supplier s ON l.l_suppkey = s.s_suppkey
    GROUP BY s.s_nationkey

Two sets of tables, every one registered with ``hsh register --no-stats``: the *before* set (``lineitem_nostats``,
``supplier_nostats``) stays so; the *after* set (``lineitem`` over the same files, ``supplier`` over a copy of
the dimension's files) is published by ``hsh sync`` between the phases:

* **phase 1**, nothing published: both sets' joins, interleaved (``--phase1-repeat`` timed runs after a warm-up
  round) -- the control that both sets behave alike;
* ``hsh sync`` of the after set (timed), then ``REFRESH TABLE`` of every table in the session (a plain session
  caches table metadata);
* **phase 2**: both sets interleaved again (``--repeat`` timed runs after a warm-up round): the before set still
  without statistics, the after set with them. Side by side in the same session and minute.

Per phase and set: the statistics line of ``DESCRIBE TABLE EXTENDED`` for the dimension, the join strategy
Spark *planned* (the initial physical plan, from the optimizer's size estimates) and the one that *ran* (the final
adaptive plan after execution: adaptive execution may turn a sort-merge join into a broadcast once the shuffle has
measured the small side), median / min / max seconds of ``spark.sql(...).collect()`` and the Spark tasks it
launched. Every run's rows must equal the first run's. Plan-only control: an unpartitioned copy of ``supplier``
(``supplier_flat``), before and after its statistics are published -- the metastore itself records the size of an
unpartitioned table when it is created, never a partitioned table's.

**2. What publishing adds to ``register`` at 2,000 partitions**: a synthetic table of 2,000 ``k=NNNN`` folders,
one 10-row file each (5 columns: bigint, string, decimal, date, double), cached under ``benchmarks/data/stats``.
``hsh register --json`` as a child process with ``--no-stats``, with the default (the table's statistics before it
returns, each partition's by the background ``hsh stats publish`` it starts: waited for before the next run) and
with ``--partition-stats now`` (everything before returning), each into a fresh table name with the folder's index
removed first, so every run builds the index and adds every partition; ``--register-warmup`` untimed runs of each,
then ``--register-repeat`` timed ones, the order reversed every other round. Per run: the command's wall time, when every
statistic was written, the ``hsh`` command's CPU seconds (``wait4``) and the metastore JVM's (``/proc/PID/stat``
from the start until every statistic was written). Then one in-process registration of each kind, timing the steps
of ``apply_registration`` (where the added time goes). The target (issue 27): publishing costs at most 10 % of the
registration's time.

Output: ``benchmarks/results/stats.md``, ``stats.json``, ``stats.png``; exit code 1 when a join's rows differ
between runs or sets, or a plan is not what it must be for the comparison to mean anything.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from bench_index import process_cpu  # noqa: E402
from bench_tpch import canonical, check_tools, timed  # noqa: E402
from provenance import commit_label  # noqa: E402
from stats_report import FLAT, PARTITIONS, SETS, TARGET, interpretation, write_report  # noqa: E402
from tpch_data import TpchDataset, _plain_schema, ensure_lineitem, tpchgen_executable  # noqa: E402
from tpch_report import cpu_snapshot, other_cpu_share  # noqa: E402

if TYPE_CHECKING:
    from storage_handler.registration.statistics import StatisticsChoice

DB = "stats_bench"
JOIN = ("SELECT s.s_nationkey, count(*) AS line_count, sum(l.l_quantity) AS quantity "
        "FROM {db}.{fact} l JOIN {db}.{dim} s ON l.l_suppkey = s.s_suppkey GROUP BY s.s_nationkey")
STRATEGIES = ("BroadcastHashJoin", "SortMergeJoin", "ShuffledHashJoin", "BroadcastNestedLoopJoin")

Log = Callable[[str], None]


def child_env() -> dict[str, str]:
    """``hsh`` children run this checkout's code whatever their working directory (the venv may point elsewhere)."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------------- data
def link_lineitem(ds: TpchDataset, folder: Path) -> Path:
    """The dataset's files hard-linked into ``folder``: the same bytes, but an index (``_hsh_index``) of our own,
    so a benchmark running on the shared dataset meanwhile is not disturbed and does not disturb us."""
    target = folder / "lineitem"
    files = sorted(ds.path.glob("*.parquet"))
    if target.is_dir() and len(list(target.glob("*.parquet"))) == len(files):
        return target
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    for f in files:
        try:
            os.link(f, target / f.name)
        except OSError:  # another file system
            shutil.copy2(f, target / f.name)
    return target


def ensure_supplier(folder: Path, scale: float) -> dict[str, Path]:
    """TPC-H ``supplier`` at ``scale``: two copies partitioned by ``s_nationkey`` (``s_nationkey=N/`` folders
    without the column in the files), and one unpartitioned; cached while ``supplier.json`` exists."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    paths = {"before": folder / "supplier_a", "after": folder / "supplier_b", "flat": folder / "supplier_flat"}
    marker = folder / "supplier.json"
    if marker.exists() and json.loads(marker.read_text()).get("scale") == scale:
        return paths
    exe = tpchgen_executable()
    if exe is None:
        raise SystemExit("error: tpchgen-cli not found (.venv/bin/pip install tpchgen-cli)")
    for p in paths.values():
        shutil.rmtree(p, ignore_errors=True)
    with tempfile.TemporaryDirectory(dir=folder.parent if folder.parent.exists() else None) as raw:
        subprocess.run([exe, "parquet", "-s", f"{scale:g}", "--tables=supplier", f"--output-dir={raw}",
                        "--quiet"], check=True)
        table = pq.read_table(next(Path(raw).rglob("*.parquet")))
    table = table.cast(_plain_schema(table.schema)).sort_by("s_suppkey")
    paths["flat"].mkdir(parents=True)
    pq.write_table(table, paths["flat"] / "part-00000.parquet")
    rest = table.drop_columns(["s_nationkey"])
    for key in sorted(set(table.column("s_nationkey").to_pylist())):
        part = rest.filter(pc.equal(table.column("s_nationkey"), key))
        for copy in ("before", "after"):
            (paths[copy] / f"s_nationkey={key}").mkdir(parents=True, exist_ok=True)
            pq.write_table(part, paths[copy] / f"s_nationkey={key}" / "part-00000.parquet")
    marker.write_text(json.dumps({"scale": scale, "rows": table.num_rows}))
    return paths


def ensure_partitioned(root: Path, partitions: int) -> Path:
    """``partitions`` folders ``k=NNNN``, one 10-row file each; cached while ``_generated.json`` says so."""
    import datetime as dt
    from decimal import Decimal

    import pyarrow as pa
    import pyarrow.parquet as pq

    marker = root / "_generated.json"
    if marker.exists() and json.loads(marker.read_text()).get("partitions") == partitions:
        return root
    shutil.rmtree(root, ignore_errors=True)
    for i in range(partitions):
        folder = root / f"k={i:04d}"
        folder.mkdir(parents=True)
        base = i * 10
        pq.write_table(pa.table({
            "id": pa.array(range(base, base + 10), pa.int64()),
            "name": [f"name-{base + j}" for j in range(10)],
            "amount": pa.array([Decimal(base + j) / 100 for j in range(10)], pa.decimal128(12, 2)),
            "day": pa.array([dt.date(2020, 1, 1) + dt.timedelta(days=(base + j) % 1500) for j in range(10)]),
            "x": pa.array([float(j) / 3 for j in range(10)]),
        }), folder / "part-00000.parquet")
    marker.write_text(json.dumps({"partitions": partitions}))
    return root


# ---------------------------------------------------------------------------------------------------- hsh
def hsh(uri: str, *args: str) -> tuple[float, float, dict[str, Any]]:
    """One ``hsh`` command as a child process: wall seconds, CPU seconds of its process tree, its ``--json``."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "storage_handler.cli.main", *args, "--metastore", uri,
                                 "--json"], stdout=out, stderr=err, text=True, env=child_env())
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise SystemExit(f"hsh {' '.join(args)} failed: {err.read().strip()[-2000:]}")
        return wall, usage.ru_utime + usage.ru_stime, json.loads(out.read())


# ---------------------------------------------------------------------------------------------------- part 1
def strategy(plan: str) -> str:
    return next((name for name in STRATEGIES if name in plan), "unknown")


def plain_session(uri: str, warehouse: Path) -> Any:
    """A plain Hive-enabled session: the metastore's address and nothing of the handler."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = SparkSession.builder.master("local[2]").appName("hsh-bench-stats-plain").enableHiveSupport() \
        .config("spark.hadoop.hive.metastore.uris", uri).config("spark.ui.enabled", "false") \
        .config("spark.driver.host", "127.0.0.1").config("spark.sql.warehouse.dir", str(warehouse)) \
        .config("spark.ui.showConsoleProgress", "false").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    extensions = spark.conf.get("spark.sql.extensions", None)
    if extensions:
        raise SystemExit(f"error: the plain session has spark.sql.extensions={extensions!r}")
    return spark


def stop_session(spark: Any) -> None:
    """Stop the session, then the JVM pyspark launched for it, by its PID."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    spark.stop()
    proc = getattr(gateway, "proc", None)
    if gateway is not None:
        with contextlib.suppress(Exception):  # the JVM may be gone already
            gateway.shutdown()
    if proc is not None and proc.poll() is None:
        proc.terminate()  # SIGTERM to that PID
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)
    SparkContext._gateway = None
    SparkContext._jvm = None


def statistics_line(spark: Any, table: str) -> str | None:
    rows = spark.sql(f"DESCRIBE TABLE EXTENDED {DB}.{table}").collect()
    return next((r.data_type for r in rows if r.col_name == "Statistics"), None)


def planned(spark: Any, fact: str, dim: str) -> str:
    """The join strategy of the initial physical plan (not executed): what the size estimates chose."""
    return strategy(spark.sql(JOIN.format(db=DB, fact=fact, dim=dim))._jdf.queryExecution()
                    .executedPlan().toString())


def describe_phase(spark: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"statistics": {t: statistics_line(spark, t) for s in SETS.values() for t in s}}
    out["statistics"][FLAT] = statistics_line(spark, FLAT)
    out["planned"] = {name: planned(spark, *tables) for name, tables in SETS.items()}
    out["planned"]["flat"] = planned(spark, SETS["before"][0], FLAT)
    return out


def run_phase(spark: Any, repeat: int, warmup: int, expected: list[Any], say: Log) -> dict[str, Any]:
    """``warmup`` untimed rounds, then ``repeat`` timed ones; each round runs both sets, the order alternating."""
    cells: dict[str, dict[str, Any]] = {s: {"seconds": [], "tasks": [], "ran": []} for s in SETS}
    mismatches: list[str] = []
    for round_ in range(warmup + repeat):
        order = list(SETS) if round_ % 2 == 0 else list(reversed(SETS))
        for name in order:
            fact, dim = SETS[name]
            holder: dict[str, Any] = {}

            def query(fact: str = fact, dim: str = dim, holder: dict[str, Any] = holder) -> list[Any]:
                holder["df"] = spark.sql(JOIN.format(db=DB, fact=fact, dim=dim))
                return holder["df"].collect()

            seconds, rows, _, tasks = timed(spark, query)
            ran = strategy(holder["df"]._jdf.queryExecution().executedPlan().toString())
            got = canonical(rows)
            if not expected:
                expected.append(got)
            elif got != expected[0]:
                mismatches.append(f"{name} round {round_}: {len(got)} rows differ from the first run's")
            if round_ >= warmup:
                cells[name]["seconds"].append(round(seconds, 4))
                cells[name]["tasks"].append(tasks)
                cells[name]["ran"].append(ran)
            say(f"  round {round_ + 1}/{warmup + repeat} {name}: {seconds:.2f} s, {tasks} tasks, ran {ran}"
                + ("" if round_ >= warmup else " (warm-up)"))
    for cell in cells.values():
        cell["median"] = statistics.median(cell["seconds"])
        cell["min"], cell["max"] = min(cell["seconds"]), max(cell["seconds"])
        cell["tasks_median"] = statistics.median(cell["tasks"])
    return {"cells": cells, "mismatches": mismatches}


def part_join(uri: str, work: Path, lineitem: Path, suppliers: dict[str, Path], args: argparse.Namespace,
              say: Log) -> dict[str, Any]:
    result: dict[str, Any] = {"register": {}, "publish": {}}
    locations = {"lineitem_nostats": lineitem, "lineitem": lineitem, "supplier_nostats": suppliers["before"],
                 "supplier": suppliers["after"], FLAT: suppliers["flat"]}
    for folder in {*locations.values()}:
        shutil.rmtree(folder / "_hsh_index", ignore_errors=True)  # ours alone (see link_lineitem)
    for table, folder in locations.items():
        wall, _, out = hsh(uri, "register", f"{DB}.{table}", str(folder), "--no-stats")
        result["register"][table] = {"seconds": round(wall, 2), "statistics": out["statistics"]["table_level"],
                                     "partitions": out.get("partitions_added")}
        say(f"registered {DB}.{table} --no-stats in {wall:.1f} s")
    expected: list[Any] = []
    mismatches: list[str] = []
    cwd = Path.cwd()
    os.chdir(work)  # Spark's derby.log / spark-warehouse land in the work folder
    spark = plain_session(uri, work / "warehouse")
    try:
        say("phase 1: nothing published")
        result["phase1"] = describe_phase(spark)
        say(f"  planned: {result['phase1']['planned']}")
        r = run_phase(spark, args.phase1_repeat, args.warmup, expected, say)
        result["phase1"]["cells"] = r["cells"]
        mismatches += r["mismatches"]
        for table in (*SETS["after"], FLAT):
            wall, _, out = hsh(uri, "sync", f"{DB}.{table}")
            st = out["statistics"]
            result["publish"][table] = {"seconds": round(wall, 2), "table_level": st["table_level"],
                                        "partitions_written": st["partitions_written"],
                                        "column_objects_written": st["column_objects_written"],
                                        "warning": st["warning"]}
            say(f"hsh sync {DB}.{table}: {wall:.1f} s, statistics {st['table_level']}")
        for table in (*SETS["before"], *SETS["after"], FLAT):
            spark.sql(f"REFRESH TABLE {DB}.{table}")
        say("phase 2: the after set published")
        result["phase2"] = describe_phase(spark)
        say(f"  planned: {result['phase2']['planned']}")
        r = run_phase(spark, args.repeat, args.warmup, expected, say)
        result["phase2"]["cells"] = r["cells"]
        mismatches += r["mismatches"]
    finally:
        stop_session(spark)
        os.chdir(cwd)
    p1, p2 = result["phase1"]["planned"], result["phase2"]["planned"]
    if p1["before"] != "SortMergeJoin" or p1["after"] != "SortMergeJoin" or p2["before"] != "SortMergeJoin":
        mismatches.append(f"unexpected plans without statistics: phase 1 {p1}, phase 2 {p2}")
    result["rows"] = len(expected[0]) if expected else 0
    result["mismatches"] = mismatches
    return result


# ---------------------------------------------------------------------------------------------------- part 2
def wait_for_background(table: str, timeout: float = 600.0) -> dict[str, Any]:
    """The final state of the background publish ``register`` started for ``table`` (stopped by PID, and the
    benchmark ended, if it runs longer than ``timeout``)."""
    from metastore.names import parse_table_name
    from storage_handler.registration import background

    deadline = time.monotonic() + timeout
    while True:
        state = background.status(parse_table_name(table))
        if state is None:
            raise SystemExit(f"error: no background publish was recorded for {table}")
        if not state["running"] and "finished_at" in state:
            if not state.get("ok"):
                raise SystemExit(f"error: the background publish of {table} failed: {state}")
            return state
        if time.monotonic() > deadline:
            os.kill(int(state["pid"]), signal.SIGKILL)
            raise SystemExit(f"error: the background publish of {table} ran over {timeout} s")
        time.sleep(0.05)


def part_register(uri: str, metastore_pid: int, root: Path, args: argparse.Namespace, say: Log) -> dict[str, Any]:
    """Three arms: ``--no-stats``; the default (``--partition-stats auto``: at 2,000 partitions the table's
    statistics before returning, each partition's in a background publish, waited for after the command before the
    next run, its time and the metastore's CPU for it recorded); and ``--partition-stats now`` (everything before
    returning, as before the background publish existed)."""
    from storage_handler.registration.statistics import StatisticsChoice

    arms = {"no-stats": ["--no-stats"], "stats": [], "stats-now": ["--partition-stats", "now"]}
    runs: dict[str, list[dict[str, Any]]] = {a: [] for a in arms}
    counter = Counter[str]()
    total = args.register_warmup + args.register_repeat
    for round_ in range(total):
        order = list(arms) if round_ % 2 == 0 else list(reversed(arms))
        for arm in order:
            counter[arm] += 1
            table = f"{DB}.p{PARTITIONS}_{arm.replace('-', '')}_{counter[arm]}"
            shutil.rmtree(root / "_hsh_index", ignore_errors=True)  # every run builds the index
            before = process_cpu(metastore_pid)
            start = time.time()
            wall, cpu, out = hsh(uri, "register", table, str(root), *arms[arm])
            st = out["statistics"]
            complete = wall
            if st.get("background"):  # each partition's statistics, published after the command returned
                state = wait_for_background(table)
                complete = state["finished_at"] - start
                st["partitions_written"] = state["result"]["partitions_written"]
            jvm = process_cpu(metastore_pid) - before
            run = {"table": table, "seconds": round(wall, 3), "complete_seconds": round(complete, 3),
                   "hsh_cpu": round(cpu, 2), "metastore_cpu": round(jvm, 2),
                   "partitions_added": out.get("partitions_added"), "table_level": st["table_level"],
                   "partitions_deferred": st.get("partitions_deferred", 0),
                   "partitions_written": st.get("partitions_written", 0),
                   "column_objects_written": st["column_objects_written"], "warmup": round_ < args.register_warmup}
            if arm != "no-stats" and (st["table_level"] != "written" or st["partitions_written"] != PARTITIONS):
                raise SystemExit(f"error: register did not publish every statistic: {st}")
            runs[arm].append(run)
            say(f"  register {arm} #{counter[arm]}: {wall:.2f} s (hsh CPU {cpu:.2f} s, metastore CPU {jvm:.2f} s)"
                + (f"; partitions' statistics complete after {complete:.2f} s" if complete != wall else "")
                + (" (warm-up)" if run["warmup"] else ""))
    summary: dict[str, Any] = {}
    for arm, rs in runs.items():
        timed_runs = [r for r in rs if not r["warmup"]]
        summary[arm] = {k: statistics.median(r[k] for r in timed_runs)
                        for k in ("seconds", "complete_seconds", "hsh_cpu", "metastore_cpu")}
        summary[arm]["min"] = min(r["seconds"] for r in timed_runs)
        summary[arm]["max"] = max(r["seconds"] for r in timed_runs)
    added = summary["stats"]["seconds"] - summary["no-stats"]["seconds"]
    # the same from pairs of one round (ABBA: neighbours in time), less sensitive to drift of the machine
    pairs = [s["seconds"] / n["seconds"] - 1 for s, n in zip(
        [r for r in runs["stats"] if not r["warmup"]], [r for r in runs["no-stats"] if not r["warmup"]], strict=True)]
    summary["added_seconds"] = added
    summary["added_share"] = added / summary["no-stats"]["seconds"]
    summary["added_share_paired_median"] = statistics.median(pairs)
    summary["meets_target"] = summary["added_share"] <= TARGET
    now = summary["stats-now"]["seconds"] - summary["no-stats"]["seconds"]
    summary["now_added_seconds"], summary["now_added_share"] = now, now / summary["no-stats"]["seconds"]
    say("  in-process breakdown (one registration of each kind)")
    choices = {"no-stats": StatisticsChoice(publish=False), "stats": StatisticsChoice(defer_partitions=True),
               "stats-now": StatisticsChoice()}
    summary["breakdown"] = {arm: breakdown(uri, root, f"{DB}.p{PARTITIONS}_breakdown_{arm.replace('-', '')}",
                                           choice) for arm, choice in choices.items()}
    return {"runs": runs, "summary": summary}


def breakdown(uri: str, root: Path, name: str, choice: StatisticsChoice) -> dict[str, Any]:
    """One registration in this process with the steps of ``apply_registration`` timed (seconds). With
    ``choice.defer_partitions`` the partitions' statistics are left unpublished (the command's share only)."""
    from metastore.client import MetastoreClient
    from metastore.names import parse_table_name
    from storage_handler.registration import register as reg
    from storage_handler.registration import stats_calls

    spans: Counter[str] = Counter()
    calls: Counter[str] = Counter()
    labels = {"index_statistics": "statistics planned from the index (summaries)",
              "add_partitions": "partitions added (with basic statistics when publishing)",
              "publish_planned": "column statistics + table-level statistics written"}
    originals: dict[tuple[Any, str], Any] = {}

    def wrap(owner: Any, attr: str, label: str) -> None:
        fn = getattr(owner, attr)
        originals[(owner, attr)] = fn

        def timed_call(*a: Any, **k: Any) -> Any:
            start = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                spans[label] += time.perf_counter() - start
                calls[label] += 1

        setattr(owner, attr, timed_call)

    for attr, label in labels.items():
        wrap(reg, attr, label)
    wrap(reg.hooked, "create_table", "table created + index built (footers, commit)")
    wrap(stats_calls.Calls, "_set_columns", "  of which: `set_aggr_stats_for` calls (<= 100 partitions each)")
    wrap(stats_calls.Calls, "table", "  of which: table-level statistics (read, merge, alter, set)")
    shutil.rmtree(root / "_hsh_index", ignore_errors=True)
    try:
        with MetastoreClient(uri) as client:
            start = time.perf_counter()
            plan = reg.plan_registration(client, parse_table_name(name), str(root))
            spans["plan (listing, schema)"] = time.perf_counter() - start
            reg.apply_registration(client, plan, statistics=choice)
            spans["total"] = time.perf_counter() - start
    finally:
        for (owner, attr), fn in originals.items():
            setattr(owner, attr, fn)
    out: dict[str, Any] = {k: round(v, 3) for k, v in spans.items()}
    out["calls"] = dict(calls)
    return out


# ---------------------------------------------------------------------------------------------------- report
def machine(ds: TpchDataset, args: argparse.Namespace, other: float | None, loads: list[float]) -> dict[str, Any]:
    import pyarrow
    import pyspark

    cpu = "unknown"
    with contextlib.suppress(OSError, StopIteration):
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("model name"))
    return {"commit": commit_label(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "cores": os.cpu_count(), "cpu": cpu, "python": platform.python_version(), "pyspark": pyspark.__version__,
            "pyarrow": pyarrow.__version__, "spark_master": "local[2]", "lineitem_files": ds.files,
            "scale": ds.scale, "lineitem_rows": ds.rows, "lineitem_bytes": ds.bytes, "repeat": args.repeat,
            "phase1_repeat": args.phase1_repeat, "warmup": args.warmup, "register_repeat": args.register_repeat,
            "register_warmup": args.register_warmup,
            "load_1min": [round(min(loads), 2), round(max(loads), 2)],
            "cpu_share_used_by_other_processes": None if other is None else round(other, 3)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=0.5)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5, help="timed rounds of phase 2 (both sets each round)")
    parser.add_argument("--phase1-repeat", type=int, default=3, help="timed rounds of phase 1 (the control)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed rounds before each phase's timed ones")
    parser.add_argument("--register-repeat", type=int, default=5)
    parser.add_argument("--register-warmup", type=int, default=1)
    parser.add_argument("--parts", nargs="+", choices=("join", "register"), default=["join", "register"])
    parser.add_argument("--data-dir", type=Path, default=HERE / "data")
    parser.add_argument("--results-dir", type=Path, default=HERE / "results")
    parser.add_argument("--from-json", type=Path, metavar="STATS_JSON",
                        help="measure nothing: write the report (md, png) again from an earlier run's stats.json")
    args = parser.parse_args(argv)
    if args.from_json:
        res = json.loads(args.from_json.read_text())
        res["interpretation"] = interpretation(res)
        return write_report(res, args.results_dir)
    check_tools()
    # SIGTERM runs the ``finally`` blocks too: the metastore and Spark's JVM are stopped by their PIDs
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    data_dir = args.data_dir.resolve()
    ds = ensure_lineitem(data_dir, args.scale, args.files, log=log)
    own = data_dir / "stats"
    own.mkdir(parents=True, exist_ok=True)
    lineitem = link_lineitem(ds, own / f"sf{args.scale:g}-f{args.files}")
    suppliers = ensure_supplier(own / f"sf{args.scale:g}-supplier", args.scale)
    log(f"generating {PARTITIONS:,} partitions (cached) ...")
    partitioned = ensure_partitioned(own / f"p{PARTITIONS}", PARTITIONS)

    work = Path(tempfile.mkdtemp(prefix="hsh-bench-stats-"))
    os.environ["HSH_HOME"] = str(work / "home")
    os.environ.pop("HSH_METASTORE_URI", None)
    os.environ.pop("HSH_PARTITION_STATS", None)  # the default is what is measured
    from metastore.local import LocalMetastore

    metastore = LocalMetastore(work / "home")
    res: dict[str, Any] = {}
    loads = [os.getloadavg()[0]]
    cpu_start = cpu_snapshot()
    started = time.perf_counter()
    try:
        info = metastore.start(progress=log)
        log(f"metastore {info.uri} (pid {info.pid})")
        if "register" in args.parts:
            log(f"part 2: register at {PARTITIONS:,} partitions, --no-stats vs publishing")
            res["register"] = part_register(info.uri, info.pid, partitioned, args, log)
            loads.append(os.getloadavg()[0])
        if "join" in args.parts:
            log("part 1: star join in a plain Spark session")
            res["join"] = part_join(info.uri, work, lineitem, suppliers, args, log)
            loads.append(os.getloadavg()[0])
    finally:
        metastore.stop()
        shutil.rmtree(work, ignore_errors=True)
    res["machine"] = machine(ds, args, other_cpu_share(cpu_start, cpu_snapshot()), loads)
    res["machine"]["seconds_total"] = round(time.perf_counter() - started, 1)
    if "join" not in res or "register" not in res:
        print(json.dumps(res, indent=1, default=str))
        return 0
    res["interpretation"] = interpretation(res)
    return write_report(res, args.results_dir)


if __name__ == "__main__":
    raise SystemExit(main())
