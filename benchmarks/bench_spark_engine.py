"""Register and refresh time with the local footer engine vs the Spark engine on a standalone cluster.

    .venv/bin/python benchmarks/bench_spark_engine.py [--sizes 20000 100000] [--repeat 3] [--files-per-partition 500]

An embedded metastore and a Spark standalone cluster from the wheel (a master and two one-core workers on
127.0.0.1, see ``tests/spark_cluster.py``) are started and stopped by PID. For each size, a folder of tiny
Parquet files (``p`` partitions, ``v bigint, s string``; cached under ``benchmarks/data/spark_engine/``) is:

* **registered** (``plan_registration`` + ``apply_registration``: listing, metastore partitions, every footer,
  the commit), the table dropped in between (its index goes with it);
* **refreshed after every file was touched** (``hsh index refresh``'s hook: the listing finds every mtime changed,
  so every footer is read again, and a new version is committed),

with three engines: ``local`` and ``spark`` (interleaved round robin) run the command line (``hsh register`` /
``hsh index refresh --engine ...``, each its own process, as a user runs it: for ``spark`` that includes starting
a Spark application -- driver JVM, executors -- per command), and ``spark, warm`` runs the same calls in this
process on one application kept for all runs of the size (``with SparkEngine(...)``): the job without the
start-up, and without a Python start (its runs come last: while it lives it holds every worker's core). Medians of ``--repeat`` runs; the 1-minute load average of the
machine is recorded at every run, because everything here shares the same 2 cores.

Output: ``benchmarks/results/spark_engine.{md,json,png}``; nothing is asserted. On one machine the cluster's
executors compete with the driver for the same cores: this measures the engine's overhead, not a speed-up.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from provenance import commit_label  # noqa: E402

DB = "sparkbench"
ENGINES = ("local", "spark", "spark, warm")


def load_average() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def dataset(size: int, per_partition: int) -> Path:
    """``size`` one-row files, ``per_partition`` per ``p=N`` folder (written once, reused)."""
    folder = HERE / "data" / "spark_engine" / f"f{size}-p{per_partition}"
    done = folder / "_dataset.json"
    if done.exists():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    print(f"writing {size} files under {folder} ...", flush=True)
    for i in range(size):
        part = folder / f"p={i // per_partition}"
        if i % per_partition == 0:
            part.mkdir(parents=True)
        pq.write_table(pa.table({"v": pa.array([i], pa.int64()), "s": pa.array([f"s{i % 97}"])}),
                       part / f"f{i:07d}.parquet")
    done.write_text(json.dumps({"files": size, "per_partition": per_partition}))
    return folder


def touch_all(folder: Path) -> None:
    """New mtimes for every data file: the next refresh must read every footer again."""
    now = time.time()
    for part in folder.iterdir():
        if part.is_dir():
            for f in part.iterdir():
                os.utime(f, (now, now))


def hsh(*argv: str) -> Any:
    """The command line, as a user runs it (its own process: a Spark application per command)."""
    proc = subprocess.run([sys.executable, "-m", "storage_handler.cli.main", *argv], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"hsh {' '.join(argv)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return json.loads(proc.stdout)


def timed(action: Callable[[], Any]) -> dict[str, float]:
    load = load_average()
    start = time.perf_counter()
    action()
    return {"seconds": time.perf_counter() - start, "load": load}


class Bench:
    """One size: a table name, its folder, the metastore, the cluster and the warm application."""

    def __init__(self, client: Any, uri: str, cluster_url: str, size: int, folder: Path) -> None:
        from metastore.names import parse_table_name
        from storage_handler.stats.engines.spark import SparkEngine

        self.client, self.uri, self.cluster_url = client, uri, cluster_url
        self.size, self.folder = size, folder
        self.name = parse_table_name(f"{DB}.t{size}")
        self.warm = SparkEngine(master=cluster_url)
        self.runs: dict[str, list[dict[str, float]]] = {}

    def flags(self, kind: str) -> list[str]:
        master = ["--spark-master", self.cluster_url] if kind == "spark" else []
        return ["--engine", kind, *master, "--json", "--metastore", self.uri]

    def drop(self) -> None:
        from storage_handler.handler import StorageHandler
        from storage_handler.registration import hooked

        db, table = self.name.database, self.name.table
        if self.client.database_exists(db) and self.client.table_exists(db, table):
            hooked.drop_table(self.client, db, table, StorageHandler().get_meta_hook(), delete_data=False)

    def register(self, kind: str) -> dict[str, float]:
        from storage_handler.registration.register import apply_registration, plan_registration

        self.drop()
        if kind == "spark, warm":
            return timed(lambda: apply_registration(
                self.client, plan_registration(self.client, self.name, str(self.folder)), engine=self.warm))
        return timed(lambda: hsh("register", str(self.name), str(self.folder), *self.flags(kind)))

    def refresh(self, kind: str) -> dict[str, float]:
        from storage_handler.handler import StorageHandler
        from storage_handler.registration import hooked

        touch_all(self.folder)
        out: list[Any] = []
        if kind == "spark, warm":
            hook = StorageHandler().get_meta_hook()
            hook.engine = self.warm
            result = timed(lambda: hooked.refresh_table(self.client, self.name.database, self.name.table, hook))
            changed = len(hook.last_diff.changed)
        else:
            result = timed(lambda: out.append(hsh("index", "refresh", str(self.name), *self.flags(kind))))
            changed = len(out[0]["changed"])
        assert changed == self.size, f"every footer must be read again ({changed} of {self.size} were)"
        return result

    def run(self, kind: str, r: int) -> None:
        for op in ("register", "refresh"):
            took = self.register(kind) if op == "register" else self.refresh(kind)
            self.runs.setdefault(f"{op}|{kind}", []).append(took)
            print(f"{self.size} files, run {r + 1}: {op} {kind}: {took['seconds']:.1f} s (load {took['load']:.1f})",
                  flush=True)

    def measure(self, repeat: int) -> dict[str, Any]:
        self.register("local")  # warm-up: page cache, metastore
        for r in range(repeat):
            for kind in ENGINES[:2]:
                self.run(kind, r)
        # the warm application holds every worker's core while it lives: its runs come after the others
        with self.warm:
            self.refresh("spark, warm")  # warm-up: starts the application and its executors
            for r in range(repeat):
                self.run("spark, warm", r)
        self.drop()
        row: dict[str, Any] = {"files": self.size}
        for key, values in self.runs.items():
            row[key] = statistics.median(v["seconds"] for v in values)
            row[f"{key}|load"] = statistics.median(v["load"] for v in values)
            row[f"{key}|all"] = [round(v["seconds"], 2) for v in values]
        return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[20_000, 100_000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--files-per-partition", type=int, default=500)
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="hsh-bench-spark-"))
    os.environ["HSH_HOME"] = str(work / "home")
    os.environ.pop("HSH_SPARK_MASTER", None)
    from metastore.client import MetastoreClient
    from metastore.local import LocalMetastore
    from tests.spark_cluster import StandaloneCluster

    folders = {size: dataset(size, args.files_per_partition) for size in args.sizes}
    metastore = LocalMetastore(work / "home")
    uri = metastore.start().uri
    cluster = StandaloneCluster(work / "cluster", workers=2, cores=1)
    rows: list[dict[str, Any]] = []
    try:
        cluster.start()
        with MetastoreClient(uri) as client:
            for size, folder in folders.items():
                rows.append({**Bench(client, uri, cluster.url, size, folder).measure(args.repeat),
                             "partitions": size // args.files_per_partition})
    finally:
        cluster.stop()
        metastore.stop()
        shutil.rmtree(work, ignore_errors=True)
    write_report(HERE / "results", rows, args)
    return 0


def write_report(folder: Path, rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    commit = commit_label()
    (folder / "spark_engine.json").write_text(json.dumps(rows, indent=2))
    lines = [
        "# Footer engines: local pool vs Spark standalone cluster (register and full refresh)",
        "",
        f"Machine: {os.cpu_count()} cores (shared), Python {platform.python_version()}, pyspark "
        f"{_pyspark_version()}, commit `{commit}`; cluster: a master and two 1-core workers on 127.0.0.1 (the "
        f"same 2 cores); {args.files_per_partition} one-row files per partition; medians of {args.repeat} runs, "
        "engines interleaved. Load = median 1-minute load average at the start of the runs. Generated by "
        "`benchmarks/bench_spark_engine.py`.",
        "",
        "| files | operation | local | spark (new application) | spark, warm (job only) |",
        "|---|---|---|---|---|",
    ]
    for row in rows:
        for op in ("register", "refresh"):
            cells = [f"{row[f'{op}|{k}']:.1f} s (load {row[f'{op}|{k}|load']:.1f})" for k in ENGINES]
            lines.append(f"| {row['files']:,} | {op} | " + " | ".join(cells) + " |")
    lines += ["", "Every run (seconds):", ""]
    for row in rows:
        for key in [k for k in row if k.endswith("|all")]:
            lines.append(f"* {row['files']:,} files, {key[:-4].replace('|', ', ')}: {row[key]}")
    (folder / "spark_engine.md").write_text("\n".join(lines) + "\n")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no chart (pip install matplotlib)")
        return
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    width = 0.8 / len(ENGINES)
    for ax, op in zip(axes, ("register", "refresh"), strict=True):
        for i, kind in enumerate(ENGINES):
            xs = [j + (i - 1) * width for j in range(len(rows))]
            ax.bar(xs, [r[f"{op}|{kind}"] for r in rows], width, label=kind)
        ax.set_xticks(range(len(rows)), [f"{r['files']:,} files" for r in rows])
        ax.set(ylabel="seconds (median)", title=f"{op}: every footer read")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(folder / "spark_engine.png", dpi=110)
    print(f"wrote {folder / 'spark_engine.md'} and spark_engine.png")


def _pyspark_version() -> str:
    import pyspark

    return str(pyspark.__version__)


if __name__ == "__main__":
    raise SystemExit(main())
