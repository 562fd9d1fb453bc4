"""Planning time of one query against table size: the handler vs Spark's own planning of the plain Hive table.

    .venv/bin/python benchmarks/bench_planning.py [--sizes 2000 20000 200000] [--files-per-partition 50] [--repeat 7]

For each size a partitioned table (``p int``, 50 tiny files per partition) is generated once (cached under
``benchmarks/data/planning``), registered with the handler (index built), and registered a second time as a plain
Hive table (the same partitions, no ``hsh.*`` parameters). Three queries:

  (i)   one partition kept                      ``p = 7 AND v >= 0``
  (ii)  10 % of the partitions kept             ``p < N/10 AND v >= 0``
  (iii) a data-only predicate, every partition  ``v = 12345``

Paths, each timed ``--repeat`` times after one warm-up, medians reported:

  (a) Spark plain:  ``spark.sql`` over the plain table; the time to plan and select its files (metastore partition
      pruning, listing, Spark's file-status cache as users get it) -- the scan node's ``selectedPartitions``.
  (b) Spark + handler: the same over the registered table in a handler session: the native scan asks the prune
      service (metastore, listing, index, pruning) -- the same measurement.
  (c) handler in process: ``list_status`` alone, split into the metastore calls and the rest (listing, index load,
      pruning), i.e. the handler time beyond the metastore call.

Output: ``benchmarks/results/planning.md`` (table + machine + commit) and ``planning.png``; timings are printed,
never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from provenance import commit_label  # noqa: E402

DB = "planning"


def generate(root: Path, files: int, per_partition: int) -> None:
    """``files`` tiny Parquet files, ``per_partition`` per ``p=k`` folder; ``v`` is clustered by file."""
    marker = root / "_generated.json"
    if marker.exists() and json.loads(marker.read_text()) == {"files": files, "per_partition": per_partition}:
        return
    for i in range(files):
        folder = root / f"p={i // per_partition}"
        if i % per_partition == 0:
            folder.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"v": pa.array(range(i * 10, i * 10 + 10), pa.int64())}), folder / f"f{i}.parquet")
    marker.write_text(json.dumps({"files": files, "per_partition": per_partition}))


def register(uri: str, name: str, root: Path) -> None:
    """Register ``root`` as ``planning.<name>`` (handler, index built) and ``planning.<name>_plain`` (plain Hive),
    unless an earlier run with the same metastore state did (same partitions)."""
    from metastore.client import MetastoreClient
    from metastore.names import parse_table_name
    from storage_handler.registration.register import apply_registration, plan_registration

    with MetastoreClient(uri) as client:
        partitions = sum(1 for p in root.iterdir() if p.name.startswith("p="))
        if all(client.database_exists(DB) and client.table_exists(DB, t) for t in (name, f"{name}_plain")) and \
                all(len(client.get_partition_names(DB, t)) == partitions for t in (name, f"{name}_plain")):
            return  # registered by an earlier run (its index is under the table folder): 200k files take minutes
        for table in (name, f"{name}_plain"):
            if client.database_exists(DB) and client.table_exists(DB, table):
                client.drop_table(DB, table)
        apply_registration(client, plan_registration(client, parse_table_name(f"{DB}.{name}"), str(root)))
        handler = client.get_table(DB, name)
        plain = handler.__class__(**{k: getattr(handler, k) for k in handler.thrift_spec_names()}) \
            if hasattr(handler, "thrift_spec_names") else _copy(handler)
        plain.tableName = f"{name}_plain"
        plain.parameters = {k: v for k, v in handler.parameters.items() if not k.startswith("hsh.")}
        client.create_table(plain)
        parts = client.get_partitions(DB, name)
        for p in parts:
            p.tableName = plain.tableName
            p.parameters = {}
        for start in range(0, len(parts), 1000):
            client.add_partitions(DB, plain.tableName, parts[start:start + 1000])


def _copy(obj: Any) -> Any:
    import copy

    return copy.deepcopy(obj)


def spark_planning(spark: Any, sql: str) -> float:
    """Seconds to plan ``sql`` and select its files (the scan node's ``selectedPartitions``)."""
    t0 = time.perf_counter()
    plan = spark.sql(sql)._jdf.queryExecution().executedPlan()
    leaves = plan.collectLeaves()
    scan = leaves.apply(0)
    scan.selectedPartitions()
    return time.perf_counter() - t0


def handler_planning(uri: str, name: str, where: str) -> tuple[float, float]:
    """(total seconds, metastore seconds) of ``list_status`` in this process."""
    from metastore.client import MetastoreClient
    from storage_handler.handler import list_status_for
    from storage_handler.table_desc import TableDesc

    with MetastoreClient(uri) as client:
        desc = TableDesc.from_hms(client.get_table(DB, name), client.uri)
    t0 = time.perf_counter()
    result, _ = list_status_for(desc, where)
    return time.perf_counter() - t0, result.metrics.seconds_metastore


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 20000, 200000])
    parser.add_argument("--files-per-partition", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--data-dir", type=Path, default=HERE / "data" / "planning")
    parser.add_argument("--results-dir", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    os.environ["HSH_HOME"] = str(args.data_dir / "hsh_home")
    from metastore.local import LocalMetastore
    from storage_handler.spark import session

    service = LocalMetastore(Path(os.environ["HSH_HOME"]))
    info = service.start()
    rows: list[dict[str, Any]] = []
    try:
        spark = session(info.uri, app_name="bench-planning")
        for size in args.sizes:
            name = f"t{size}"
            root = args.data_dir / name
            t0 = time.perf_counter()
            generate(root, size, args.files_per_partition)
            register(info.uri, name, root)
            print(f"[{size} files] generated and registered in {time.perf_counter() - t0:.0f} s", flush=True)
            partitions = -(-size // args.files_per_partition)
            queries = {
                "(i) one partition": "p = 7 AND v >= 0",
                "(ii) 10% of partitions": f"p < {max(1, partitions // 10)} AND v >= 0",
                "(iii) data only, every partition": "v = 12345",
            }
            for label, where in queries.items():
                sql = "SELECT v FROM {} WHERE " + where
                timings: dict[str, list[float]] = {"plain": [], "handler": [], "inproc": [], "metastore": []}
                for i in range(args.repeat + 1):
                    plain = spark_planning(spark, sql.format(f"{DB}.{name}_plain"))
                    handled = spark_planning(spark, sql.format(f"{DB}.{name}"))
                    total, metastore = handler_planning(info.uri, name, where)
                    if i:  # the first round warms caches and JIT up
                        for key, value in zip(timings, (plain, handled, total, metastore), strict=True):
                            timings[key].append(value)
                med = {k: statistics.median(v) for k, v in timings.items()}
                rows.append({"files": size, "partitions": partitions, "query": label, **med})
                print(f"  {label:34} plain {med['plain']*1e3:8.1f} ms | handler in Spark {med['handler']*1e3:8.1f} "
                      f"ms | list_status {med['inproc']*1e3:8.1f} ms (metastore {med['metastore']*1e3:6.1f} ms)",
                      flush=True)
        spark.stop()
    finally:
        service.stop()
    write_report(args.results_dir, rows, args)
    return 0


def write_report(folder: Path, rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    commit = commit_label()
    lines = [
        "# Planning time against table size: the handler vs Spark's own planning",
        "",
        f"Machine: {os.cpu_count()} cores, Python {platform.python_version()}, commit `{commit}`, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. {args.files_per_partition} files per partition, "
        f"median of {args.repeat} runs after one warm-up. Spark plain = Spark's planning and file selection of the "
        "plain Hive table (its metastore partition pruning and file-status cache); handler in Spark = the same for "
        "the registered table through the native scan; list_status = the handler alone, in process; beyond "
        "metastore = list_status minus its metastore calls.",
        "",
        "| files | partitions | query | Spark plain ms | handler in Spark ms | ratio | list_status ms | metastore ms "
        "| beyond metastore ms |",
        "|---:|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['files']:,} | {r['partitions']:,} | {r['query']} | {r['plain']*1e3:.1f} | {r['handler']*1e3:.1f} "
            f"| {r['handler']/r['plain']:.2f}× | {r['inproc']*1e3:.1f} | {r['metastore']*1e3:.1f} "
            f"| {(r['inproc']-r['metastore'])*1e3:.1f} |")
    (folder / "planning.md").write_text("\n".join(lines) + "\n")
    (folder / "planning.json").write_text(json.dumps(rows, indent=1))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no chart (pip install matplotlib)")
        return
    fig, axes = plt.subplots(1, 3, figsize=(13, 4), sharey=True)
    for ax, query in zip(axes, dict.fromkeys(r["query"] for r in rows), strict=False):
        sub = [r for r in rows if r["query"] == query]
        xs = [r["files"] for r in sub]
        for key, label in (("plain", "Spark plain"), ("handler", "handler in Spark"), ("inproc", "list_status")):
            ax.plot(xs, [r[key] * 1e3 for r in sub], marker="o", label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(query)
        ax.set_xlabel("files in the table")
    axes[0].set_ylabel("planning time, ms (median)")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(folder / "planning.png", dpi=110)
    print(f"wrote {folder / 'planning.md'} and planning.png")


if __name__ == "__main__":
    sys.exit(main())
