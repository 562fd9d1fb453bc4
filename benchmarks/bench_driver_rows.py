"""How many rows the driver should read itself (issue 28): the defaults of ``spark.hsh.aggregates.driverReadRows``
and ``spark.hsh.aggregates.driverInterpretedRows``.

    .venv/bin/pip install matplotlib        # benchmark-only, not a project dependency
    .venv/bin/python benchmarks/bench_driver_rows.py [--rows 3000 10000 30000 250000 1000000 4000000] [--repeat 9]

When an aggregation is answered from the index except for a few files cut by the filter, the extension reads
those files in the driver (no Spark job) while they hold at most ``driverReadBytes`` bytes and ``driverReadRows``
rows; past either, a Spark job reads them. Bytes alone do not bound the driver's work: repetitive values compress
to almost nothing. This benchmark times both choices on the same query, side by side in one session, for a file
left to read of N rows in two shapes:

  ``random``      two columns, one of random 64-bit integers (~8 bytes a row: the bytes limit binds first)
  ``repetitive``  the same two columns holding a short cycle of values (a few bytes per thousand rows)

Each table is one fully matched file of 1,000 rows (answered from the index) and the file of N rows the filter
cuts (read). Paths, interleaved round robin after ``--warmup`` untimed rounds, medians of ``--repeat``:

  ``driver``     ``driverReadRows`` and ``driverReadBytes`` set past N: read in the driver, no job, with the
                 default ``driverInterpretedRows`` (interpreted expressions up to it, generated code above)
  ``generated``  the same with ``driverInterpretedRows=0``: generated code whatever N
  ``job``        ``driverReadRows=0``: the same rewrite, its rest read by Spark's scan in a job

Every run must return plain Spark's rows (the folder registered a second time without the handler's parameters).
Output: ``benchmarks/results/driver_rows.md``, ``driver_rows.json``, ``driver_rows.png``. The metastore and Spark's
JVM are stopped by their PIDs at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from bench_stats import stop_session  # noqa: E402
from bench_tpch import timed  # noqa: E402
from provenance import commit_label  # noqa: E402

SHAPES = ("random", "repetitive")
PATHS = ("driver", "generated", "job")
ROWS_SETTING = "spark.hsh.aggregates.driverReadRows"
INTERPRETED_SETTING = "spark.hsh.aggregates.driverInterpretedRows"
INTERPRETED = 10_000  # its default (DriverProjections.INTERPRETED_ROWS)
BYTES_SETTING = "spark.hsh.aggregates.driverReadBytes"
QUERIES = {"count": "SELECT count(*) AS n FROM {t} WHERE x < 5",
           "count, max, min": "SELECT count(*) AS n, max(k) AS hi, min(x) AS lo FROM {t} WHERE x < 5"}


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def write_table(root: Path, shape: str, rows: int) -> int:
    """One fully matched file (x < 5 everywhere) and the file of ``rows`` rows the filter cuts; its size."""
    root.mkdir(parents=True)
    pq.write_table(pa.table({"k": pa.array(np.arange(1000, dtype=np.int64)),
                             "x": pa.array(np.arange(1000, dtype=np.int64) % 5)}), root / "whole.parquet")
    rng = np.random.default_rng(rows)
    k = rng.integers(0, 1 << 40, rows) if shape == "random" else np.arange(rows, dtype=np.int64) % 11
    pq.write_table(pa.table({"k": pa.array(k), "x": pa.array(np.arange(rows, dtype=np.int64) % 7)}),
                   root / "cut.parquet")
    return (root / "cut.parquet").stat().st_size


def register(uri: str, root: Path, name: str) -> tuple[str, str]:
    """``root`` registered through the handler and as a plain Hive table: their names."""
    from bench_tables import register_pair

    handled, plain = f"bench_rows.{name}", f"bench_rows.{name}_plain"
    register_pair(uri, handled, plain, root)
    return handled, plain


def run(spark: Any, handled: str, plain: str, rows: int, repeat: int, warmup: int) -> dict[str, Any]:
    """Per query: each path's timed seconds and tasks; raises when a run's rows differ from plain Spark's."""
    out: dict[str, Any] = {}
    for label, sql in QUERIES.items():
        expected = spark.sql(sql.format(t=plain)).collect()
        query = sql.format(t=handled)
        seconds: dict[str, list[float]] = {p: [] for p in PATHS}
        tasks: dict[str, list[int]] = {p: [] for p in PATHS}
        for round_no in range(warmup + repeat):
            for path in PATHS if round_no % 2 == 0 else tuple(reversed(PATHS)):
                spark.conf.set(ROWS_SETTING, "0" if path == "job" else str(rows))
                if path == "generated":
                    spark.conf.set(INTERPRETED_SETTING, "0")
                else:
                    spark.conf.unset(INTERPRETED_SETTING)
                took, got, _, launched = timed(spark, lambda q=query: spark.sql(q).collect())
                if got != expected:
                    raise SystemExit(f"error: {path} returned {got} for {sql} on {handled}; plain Spark {expected}")
                if round_no >= warmup:
                    seconds[path].append(took)
                    tasks[path].append(launched)
        if max(tasks["driver"] + tasks["generated"]) != 0 or min(tasks["job"]) == 0:
            raise SystemExit(f"error: the paths did not plan as intended for {sql} on {handled}: tasks {tasks}")
        out[label] = {"seconds": seconds, "tasks": tasks,
                      "median_ms": {p: round(statistics.median(seconds[p]) * 1000, 1) for p in PATHS}}
    return out


def markdown(results: list[dict[str, Any]], info: dict[str, Any]) -> str:
    lines = ["# Rows read in the driver, or by a job (`spark.hsh.aggregates.driverReadRows`)", "",
             f"One fully matched file answered from the index and one file of N rows cut by the filter, read either in "
             f"the driver (no job) or by a Spark job; medians of {info['repeat']} interleaved runs after "
             f"{info['warmup']} warm-up rounds, one session. {info['cores']} cores, pyspark {info['pyspark']}, "
             f"commit {info['commit']}, {info['date']}. Every run returned plain Spark's rows.", "",
             "| shape | rows | file bytes | query | driver ms | generated ms | job ms | driver / generated | "
             "driver / job |",
             "|---|---:|---:|---|---:|---:|---:|---:|---:|"]
    for r in results:
        for label, q in r["queries"].items():
            d, g, j = (q["median_ms"][p] for p in PATHS)
            lines.append(f"| {r['shape']} | {r['rows']:,} | {r['bytes']:,} | {label} | {d:.1f} | {g:.1f} | {j:.1f} | "
                         f"{d / g:.2f}× | **{d / j:.2f}×** |")
    lines += ["", "driver / job < 1: reading in the driver is faster. The driver reads and aggregates on one thread, "
              "so its cost grows with the rows; a job pays a fixed ~60-100 ms (two stages, a shuffle) and reads in "
              "parallel. The default `driverReadRows` (250,000) sits below where the two meet on this machine, so "
              "the driver is chosen only where it wins; the bytes limit (4 MiB) binds first for data that does not "
              "compress to almost nothing. driver / generated: up to `driverInterpretedRows` (default 10,000) the "
              "driver evaluates Spark's expressions interpreted, which saves making six to eight generated "
              "projections per answer; above it both columns run the same generated code, so their ratios there "
              "show this run's noise."]
    same = [q["median_ms"]["driver"] / q["median_ms"]["generated"] for r in results if r["rows"] > INTERPRETED
            for q in r["queries"].values()]
    below = [q["median_ms"]["driver"] / q["median_ms"]["generated"] for r in results if r["rows"] <= INTERPRETED
             for q in r["queries"].values()]
    if same and below:
        lines += ["", f"Interpreted against generated, at most {INTERPRETED:,} rows: median ratio "
                  f"{statistics.median(below):.2f}× over {len(below)} cells; the same code above it: "
                  f"{min(same):.2f}×-{max(same):.2f}× (median {statistics.median(same):.2f}×).", ""]
    return "\n".join(lines)


def chart(results: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for shape in SHAPES:
        for label in QUERIES:
            xs = [r["rows"] for r in results if r["shape"] == shape]
            ys = [r["queries"][label]["median_ms"]["driver"] / r["queries"][label]["median_ms"]["job"]
                  for r in results if r["shape"] == shape]
            ax.plot(xs, ys, marker="o", label=f"{shape}: {label}")
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.axvline(250_000, color="grey", linestyle="--", linewidth=0.8, label="default limit")
    ax.set_xscale("log")
    ax.set_xlabel("rows left to read")
    ax.set_ylabel("driver / job (median time)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[3_000, 10_000, 30_000, 250_000, 1_000_000, 4_000_000])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--results-dir", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="hsh-bench-driver-rows-"))
    os.environ["HSH_HOME"] = str(work / "home")
    os.environ.pop("HSH_METASTORE_URI", None)
    from metastore.local import LocalMetastore
    from storage_handler.spark import session

    metastore = LocalMetastore(work / "home")
    spark = None
    results = []
    try:
        uri = metastore.start(progress=log).uri
        spark = session(uri, app_name="hsh-bench-driver-rows")
        spark.conf.set("spark.hsh.aggregates.minAnsweredBytes", "0")
        spark.conf.set(BYTES_SETTING, str(1 << 40))  # only the rows decide here
        for shape in SHAPES:
            for rows in args.rows:
                name = f"{shape}_{rows}"
                size = write_table(work / "data" / name, shape, rows)
                handled, plain = register(uri, work / "data" / name, name)
                log(f"{name}: {size:,} bytes left to read")
                results.append({"shape": shape, "rows": rows, "bytes": size,
                                "queries": run(spark, handled, plain, rows, args.repeat, args.warmup)})
                log(f"{name}: " + "; ".join(f"{k} {v['median_ms']}" for k, v in results[-1]["queries"].items()))
        import pyspark

        info = {"repeat": args.repeat, "warmup": args.warmup, "cores": os.cpu_count(), "pyspark": pyspark.__version__,
                "commit": commit_label(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    finally:
        if spark is not None:
            stop_session(spark)
        metastore.stop()
        shutil.rmtree(work, ignore_errors=True)
    args.results_dir.mkdir(parents=True, exist_ok=True)
    md = markdown(results, info)
    (args.results_dir / "driver_rows.md").write_text(md)
    (args.results_dir / "driver_rows.json").write_text(json.dumps({"machine": info, "results": results}, indent=1))
    chart(results, args.results_dir / "driver_rows.png")
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
