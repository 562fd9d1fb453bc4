"""Point lookups on an unclustered column: a bloom filter on ``l_orderkey`` against Spark's own read (issue 17).

    .venv/bin/pip install tpchgen-cli matplotlib        # benchmark-only tools, not project dependencies
    .venv/bin/python benchmarks/bench_lookup.py [--scale 1] [--files 1000] [--repeat 5]

TPC-H lineitem re-clustered by ``l_shipdate`` (``tpch_data.py``): every file spans nearly the whole
``l_orderkey`` range, so min/max keep every file for ``l_orderkey = k``. The table is registered with
``--bloom-filter-columns l_orderkey`` (fpp 0.01). Queries: one existing key, five existing keys (``IN``), and a key
that exists nowhere. Paths, interleaved round robin, medians of ``--repeat`` timed runs after ``--warmup`` rounds:

  (a) ``native``     Spark's own read of the same folder registered as a plain Hive Parquet table (baseline);
  (b) ``spark.sql``  ``spark.sql`` through the session extension (the handler prunes with the bloom filters);
  (d) ``limit``      Spark reading only the files the handler keeps (a view built before timing).

Also measured, outside Spark: the index's size on disk with and without the filters, the bytes a lookup loads of
it (only the filters of the query's column), a full index build with and without the filters, and the refresh
that adds the filter choice to an index built without it (reads ``l_orderkey`` only, reuses every footer's
statistics). Output: ``benchmarks/results/lookup.md``, ``lookup.png``, ``lookup.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bench_tpch import (  # noqa: E402
    canonical,
    check_plans,
    check_tools,
    kept_files_view,
    scan_metrics_since,
    timed,
)
from provenance import commit_label  # noqa: E402
from tpch_data import TpchDataset, ensure_lineitem  # noqa: E402
from tpch_model import PLAIN, TABLE, Cell, Query  # noqa: E402
from tpch_report import cpu_snapshot, other_cpu_share  # noqa: E402

PATHS = ("native", "spark.sql", "limit")
LABELS = {"native": "(a) Spark native Hive table", "spark.sql": "(b) spark.sql via handler + bloom filter",
          "limit": "(d) limit: Spark reading only the kept files"}
BLOOM = {"hsh.bloom.filter.columns": "l_orderkey", "hsh.bloom.filter.fpp": "0.01"}
TARGET_SPEEDUP = 4.0


def lookup_keys(ds: TpchDataset, count: int) -> list[int]:
    """``count`` existing order keys from files spread over the table."""
    import pyarrow.parquet as pq

    files = sorted(ds.path.glob("*.parquet"))
    step = max(1, len(files) // count)
    return [int(pq.read_table(files[i * step], columns=["l_orderkey"]).column(0)[7].as_py()) for i in range(count)]


def queries(ds: TpchDataset) -> list[Query]:
    five = ", ".join(str(k) for k in lookup_keys(ds, 5))
    return [
        Query("one_key", f"l_orderkey = {ds.lookup_orderkey}", ("*",), f"l_orderkey = {ds.lookup_orderkey}"),
        Query("five_keys", f"l_orderkey in ({five})", ("*",), f"l_orderkey IN ({five})"),
        Query("absent_key", "l_orderkey = 8 (exists nowhere)", ("*",), "l_orderkey = 8"),
    ]


def register(uri: str, ds: TpchDataset) -> float:
    """(Re-)register the folder as a plain Hive table, then with a bloom filter on l_orderkey (last: both tables
    share the folder's index, and the last registration's choice is what the index keeps); seconds of the latter."""
    from bench_tables import register as register_table

    from metastore.client import MetastoreClient

    with MetastoreClient(uri) as client:
        register_table(client, PLAIN, ds.path, plain=True)
        return register_table(client, TABLE, ds.path, table_properties=BLOOM)


def index_costs(ds: TpchDataset, qs: list[Query]) -> dict[str, Any]:
    """Index size and build/refresh time with and without the filter (nothing committed), and per query load."""
    import pyarrow.parquet as pq

    from storage_handler.stats import StatsOptions, build_index, list_data_files, load
    from storage_handler.stats.membership.spec import MembershipSpec
    from storage_handler.stats.refresh import refresh_index
    from storage_handler.types import arrow_to_hive

    location = f"file:{ds.path}"
    schema = pq.read_schema(next(ds.path.glob("*.parquet")))
    cols = [(f.name, arrow_to_hive(f.type, f.name)) for f in schema]
    files = list_data_files(location, [])
    spec = MembershipSpec.for_table(BLOOM)
    result: dict[str, Any] = {}
    built = {}
    for label, options in (("without", StatsOptions()), ("with", StatsOptions(membership=spec))):
        start = time.perf_counter()
        built[label] = build_index(location, cols, files, options=options)
        result[f"build_seconds_{label}"] = round(time.perf_counter() - start, 2)
        with tempfile.NamedTemporaryFile(suffix=".parquet") as tmp:
            pq.write_table(built[label], tmp.name, row_group_size=4096)
            result[f"index_bytes_{label}"] = os.path.getsize(tmp.name)
    start = time.perf_counter()
    _, diff = refresh_index(location, cols, files, built["without"], options=StatsOptions(membership=spec))
    result["refresh_adding_filter_seconds"] = round(time.perf_counter() - start, 2)
    result["refresh_adding_filter_read"] = list(diff.membership_read)
    filters = built["with"].column("bloom_filters").combine_chunks().field("l_orderkey")
    result["filter_bytes_per_file"] = round(sum(len(b) for b in filters.to_pylist()) / len(filters), 1)
    whole = load(location)
    assert whole is not None
    result["loaded_bytes_all_filters"] = whole.table.nbytes
    result["loaded_bytes_no_filters"] = load(location, membership=()).table.nbytes  # type: ignore[union-attr]
    result["loaded_bytes_per_lookup"] = load(location, membership=["l_orderkey"]).table.nbytes  # type: ignore[union-attr]
    result["queries"] = [q.key for q in qs]
    return result


def run(spark: Any, qs: list[Query], repeat: int, warmup: int, log: Any) -> tuple[dict, list[str]]:
    cells = {(q.key, p): Cell() for q in qs for p in PATHS}
    expected: dict[str, Any] = {}
    mismatches: list[str] = []
    fns = {}
    for q in qs:
        fns[(q.key, "native")] = lambda q=q: spark.sql(q.sql(PLAIN)).collect()
        fns[(q.key, "spark.sql")] = lambda q=q: spark.sql(q.sql(TABLE)).collect()
        view = kept_files_view(spark, q)
        fns[(q.key, "limit")] = lambda v=view, q=q: spark.sql(q.sql(v)).collect()
    for round_ in range(warmup + repeat):
        for q in qs:
            for p in PATHS:
                seconds, rows, start_wall, tasks = timed(spark, fns[(q.key, p)])
                got = canonical(rows)
                if q.key not in expected:
                    expected[q.key] = got
                elif got != expected[q.key]:
                    mismatches.append(f"{q.key}/{p}: {len(got)} rows, expected {len(expected[q.key])}")
                cell = cells[(q.key, p)]
                if p == "spark.sql":
                    m = scan_metrics_since(start_wall)
                    if m:
                        cell.files_kept, cell.files_total = m.get("files_kept"), m.get("files_total")
                if round_ >= warmup:
                    cell.seconds.append(seconds)
                    cell.tasks.append(tasks)
                cell.rows = len(rows)
        log(f"round {round_ + 1}/{warmup + repeat} done")
    return cells, mismatches


def markdown(cells: dict, qs: list[Query], info: dict[str, Any], costs: dict[str, Any], mismatches: list[str]) -> str:
    lines = ["# Point lookups with a bloom filter on an unclustered column (TPC-H lineitem)", "",
             f"{info['files']} files, SF {info['scale']:g} ({info['rows']:,} rows, {info['bytes'] / 1e6:,.0f} MB), "
             "clustered by `l_shipdate`, so `l_orderkey` min/max keep every file. Table parameters "
             "`hsh.bloom.filter.columns=l_orderkey`, `hsh.bloom.filter.fpp=0.01`. Medians of "
             f"{info['repeat']} timed runs after {info['warmup']} warm-up round(s), paths interleaved.", "",
             "| query | files kept (b) | (a) native s | (b) spark.sql s | (d) limit s | (a)/(b) speed-up | (b)/(d) |",
             "|---|---|---|---|---|---|---|"]
    for q in qs:
        a, b, d = (statistics.median(cells[(q.key, p)].seconds) for p in PATHS)
        c = cells[(q.key, "spark.sql")]
        lines.append(f"| `{q.title}` | {c.files_kept}/{c.files_total} | {a:.3f} | {b:.3f} | {d:.3f} | "
                     f"**{a / b:.2f}x** | {b / d:.2f}x |")
    lines += ["", f"Target (issue 17): single-key lookup >= {TARGET_SPEEDUP:g}x faster than native; files kept "
              "<= 1 % plus the false-positive rate.", "", "## Index costs", "",
              "| | without filter | with filter on l_orderkey |", "|---|---|---|",
              f"| index snapshot on disk | {costs['index_bytes_without']:,} B | {costs['index_bytes_with']:,} B |",
              f"| per file | {costs['index_bytes_without'] / info['files']:,.0f} B | "
              f"{costs['index_bytes_with'] / info['files']:,.0f} B (filter: {costs['filter_bytes_per_file']:,.0f} B) |",
              "| full build (every footer; with the filter also l_orderkey's values) | "
              f"{costs['build_seconds_without']} s | {costs['build_seconds_with']} s |",
              f"| in memory, loaded per query | {costs['loaded_bytes_no_filters']:,} B (a query on other columns) | "
              f"{costs['loaded_bytes_per_lookup']:,} B (a lookup on l_orderkey) |", "",
              f"Refresh that adds the filter choice to an index built without it: "
              f"{costs['refresh_adding_filter_seconds']} s (reads only {', '.join(costs['refresh_adding_filter_read'])};"
              " every footer's statistics reused).", "", "## Machine", ""]
    lines += [f"* {k}: {v}" for k, v in info.items()]
    if mismatches:
        lines += ["", "## RESULT MISMATCHES", "", *[f"* {m}" for m in mismatches]]
    return "\n".join(lines) + "\n"


def chart(cells: dict, qs: list[Query], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.27
    for i, p in enumerate(PATHS):
        values = [statistics.median(cells[(q.key, p)].seconds) for q in qs]
        ax.bar([x + (i - 1) * width for x in range(len(qs))], values, width, label=LABELS[p])
    ax.set_xticks(range(len(qs)))
    ax.set_xticklabels([q.key for q in qs])
    ax.set_ylabel("seconds (median)")
    ax.set_title("l_orderkey lookups, bloom filter vs Spark native")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--data-dir", type=Path, default=HERE / "data")
    parser.add_argument("--results-dir", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    check_tools()

    def log(msg: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

    data_dir = args.data_dir.resolve()
    ds = ensure_lineitem(data_dir, args.scale, args.files, log=log)
    home = data_dir / "hsh_home"
    os.environ["HSH_HOME"] = str(home)
    os.environ.pop("HSH_METASTORE_URI", None)
    from metastore.local import LocalMetastore
    from storage_handler.spark import session

    qs = queries(ds)
    metastore = LocalMetastore(home)
    spark = None
    try:
        uri = metastore.start(progress=log).uri
        log(f"registering {TABLE} (bloom filter on l_orderkey) and {PLAIN} over {ds.path}")
        register_seconds = register(uri, ds)
        log("measuring index costs")
        costs = index_costs(ds, qs)
        costs["register_seconds_with_filter"] = round(register_seconds, 1)
        spark = session(uri, app_name="hsh-bench-lookup")
        check_plans(spark, ("native", "spark.sql"))
        cpu_start = cpu_snapshot()
        cells, mismatches = run(spark, qs, args.repeat, args.warmup, log)
        other = other_cpu_share(cpu_start, cpu_snapshot())
    finally:
        if spark is not None:
            spark.stop()
        metastore.stop()
    commit = commit_label()
    info = {"files": ds.files, "scale": ds.scale, "rows": ds.rows, "bytes": ds.bytes, "repeat": args.repeat,
            "warmup": args.warmup, "git_commit": commit, "cores": os.cpu_count(), "spark_master": "local[2]",
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "cpu_share_used_by_other_processes": None if other is None else round(other, 3)}
    args.results_dir.mkdir(parents=True, exist_ok=True)
    md = markdown(cells, qs, info, costs, mismatches)
    (args.results_dir / "lookup.md").write_text(md)
    chart(cells, qs, args.results_dir / "lookup.png")
    (args.results_dir / "lookup.json").write_text(json.dumps({
        "machine": info, "index": costs, "queries": {q.key: {"title": q.title, **{
            p: {"seconds": cells[(q.key, p)].seconds, "files_kept": cells[(q.key, p)].files_kept,
                "files_total": cells[(q.key, p)].files_total, "tasks": cells[(q.key, p)].tasks} for p in PATHS}}
            for q in qs}, "mismatches": mismatches}, indent=2) + "\n")
    print(md)
    return 1 if mismatches else 0


if __name__ == "__main__":
    raise SystemExit(main())
