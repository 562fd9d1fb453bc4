"""What one metastore ``get_table`` costs a query: the call after the caller was idle, against a hot loop.

    .venv/bin/python benchmarks/bench_metastore_call.py [--repeat 41] [--warmup 3000]

Why: every query of a registered table checks the table's definition with one ``get_table`` (Spark's own read of
a plain Hive table makes the same call; the limit in ``results/overhead.md`` -- a temporary view over the kept
files -- makes none). In that report the check takes about 4 ms of a warm point lookup, while the same call in a
tight loop takes about half of that. This separates the two causes one could suspect: the connection (a Thrift
round trip) or the metastore's own work for the call.

The embedded metastore (Hive 2.3 from the pyspark wheel, Derby) is started for the run, one small table is
registered and ``--warmup`` calls compile its code. Then, on one connection, medians of ``--repeat`` calls after
the caller slept 0, 5, 20, 100 and 600 ms (as between queries) for:

  * ``get_table`` of the registered table (what the definition check asks);
  * ``getMetaConf`` (a Thrift round trip the metastore answers from memory, no database work).

Output: ``benchmarks/results/metastore_call.md`` (table, machine, commit) and ``metastore_call.png``; timings
are printed, never asserted. Nothing from the run is kept.
"""

from __future__ import annotations

import argparse
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

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from provenance import commit_label  # noqa: E402

IDLE_MS = (0, 5, 20, 100, 600)


def measure(call: Callable[[], object], idle_ms: float, repeat: int) -> float:
    """Median ms of ``call`` made ``repeat`` times, each after sleeping ``idle_ms``."""
    times = []
    for _ in range(repeat):
        time.sleep(idle_ms / 1000)
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def run(repeat: int, warmup: int) -> dict[str, list[float]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from metastore.client import MetastoreClient
    from metastore.local import LocalMetastore

    home = Path(tempfile.mkdtemp(prefix="hsh-bench-ms-"))
    os.environ["HSH_HOME"] = str(home)
    metastore = LocalMetastore(home)
    uri = metastore.start().uri
    try:
        folder = home / "data" / "t"
        folder.mkdir(parents=True)
        pq.write_table(pa.table({"id": list(range(10)), "name": ["x"] * 10}), folder / "part-0.parquet")
        subprocess.run([sys.executable, "-m", "storage_handler.cli.main", "register", "bench.t", str(folder),
                        "--metastore", uri], check=True, capture_output=True, cwd=ROOT)
        with MetastoreClient(uri) as client:
            for _ in range(warmup):
                client.get_table("bench", "t")
            calls = {"get_table": lambda: client.get_table("bench", "t"),
                     "getMetaConf": lambda: client.raw("a setting", lambda c: c.getMetaConf("hive.metastore.try.direct.sql"),
                                                           idempotent=True)}
            return {name: [measure(call, idle, repeat) for idle in IDLE_MS] for name, call in calls.items()}
    finally:
        metastore.stop()
        shutil.rmtree(home, ignore_errors=True)


def report(results: dict[str, list[float]], repeat: int, folder: Path) -> None:
    machine = f"{os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}"
    header = "| call | " + " | ".join(f"after {ms} ms idle" for ms in IDLE_MS) + " |"
    rows = [f"| `{name}` | " + " | ".join(f"{v:.2f} ms" for v in values) + " |" for name, values in results.items()]
    get_table, trip = results["get_table"], results["getMetaConf"]
    lines = [
        "# One metastore call, hot and after the caller was idle",
        "",
        f"The embedded metastore (Hive 2.3, Derby), one connection, medians of {repeat} calls per cell; {machine}; "
        f"commit {commit_label()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. "
        "Written by `benchmarks/bench_metastore_call.py`.",
        "",
        header,
        "|---|" + "---:|" * len(IDLE_MS),
        *rows,
        "",
        f"`get_table` costs {get_table[0]:.1f} ms called back to back and {get_table[3]:.1f} ms after 100 ms idle "
        f"(+{get_table[3] - get_table[0]:.1f} ms). A round trip with no database work grows by "
        f"{trip[3] - trip[0]:.2f} ms over the same pause (waking the threads at both ends), so "
        f"{(get_table[3] - get_table[0]) - (trip[3] - trip[0]):.1f} ms of the growth is the metastore's own work for "
        "the call (DataNucleus over Derby) running cold after a pause. A query's definition check meets the "
        "metastore after such a pause (the query's own planning and run came before it), which is why it costs "
        "more there than in a loop (`results/overhead.md`).",
        "",
    ]
    (folder / "metastore_call.md").write_text("\n".join(lines))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no chart (pip install matplotlib)")
        return
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for name, values in results.items():
        ax.plot([str(ms) for ms in IDLE_MS], values, marker="o", label=name)
    ax.set_xlabel("caller idle before the call (ms)")
    ax.set_ylabel("median ms per call")
    ax.set_title("One metastore call after an idle pause")
    ax.legend()
    fig.tight_layout()
    fig.savefig(folder / "metastore_call.png", dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=41)
    parser.add_argument("--warmup", type=int, default=3000)
    parser.add_argument("--results-dir", type=Path, default=HERE / "results")
    args = parser.parse_args()
    results = run(args.repeat, args.warmup)
    for name, values in results.items():
        print(name, " ".join(f"{ms}ms:{v:.2f}" for ms, v in zip(IDLE_MS, values, strict=True)))
    args.results_dir.mkdir(parents=True, exist_ok=True)
    report(results, args.repeat, args.results_dir)
    print(f"wrote {args.results_dir / 'metastore_call.md'}")


if __name__ == "__main__":
    main()
