"""Building and refreshing the index of big tables: time and peak memory against the number of files.

    .venv/bin/python benchmarks/bench_index.py [--sizes 20000 100000] [--repeat 3] [--million] [--report index]

For each size a table of tiny Parquet files (50 rows, 3 columns, 50 files per ``dt=`` partition) is generated once
under ``benchmarks/data/index`` (gitignored; ``--million`` adds 1,000,000 files, about 4 GB, outside CI). In the
same run, side by side:

* **serial footers**: ``pq.read_metadata`` of every file, one after another -- the issue's baseline;
* **register** with the local engine, serial (``--workers 1``) and concurrent (the default pool): a real
  ``hsh register`` process against the embedded metastore (listing, one pass over the footers for the schema
  and the index rows, partitions added, snapshot committed), its wall time and peak memory
  (PSS summed over its process tree);
* **register, pyarrow footers**: the same with ``HSH_NATIVE_FOOTERS=0`` (what a machine without a C++ compiler
  runs: footers through pyarrow's Python objects, on worker processes);
* **register --dry-run**: listing and the footer pass only, no metastore write -- registration minus the
  metastore's work (table, partitions) and the index commit, i.e. where the rest of the time goes;
* **refresh after +1 %**: 1 % new files written, then ``hsh index refresh``: time, peak memory, footers read.

For every variant the CPU time is recorded too: the ``hsh`` process tree's (``wait4``) and the metastore JVM's
(``/proc/PID/stat`` before and after; its threads, JIT and GC included). Their sum divided by the cores is the
shortest wall time the machine allows for that work however well it overlaps (``CPU floor``): the row that says
whether a target below it is reachable here at all.

Output: ``benchmarks/results/index.md`` (table with the slope per file, machine, load, commit) and ``index.png``.
Nothing is asserted.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = HERE / "data" / "index"
sys.path.insert(0, str(ROOT))

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from provenance import commit_label  # noqa: E402

PER_PARTITION = 50


def generate(root: Path, files: int, start: int = 0) -> None:
    """``files`` tiny files (ids clustered by file), ``PER_PARTITION`` per ``dt=`` folder; cached."""
    marker = root / "_generated.json"
    if start == 0 and marker.exists() and json.loads(marker.read_text()).get("files") == files:
        return
    for i in range(start, start + files):
        folder = root / f"dt={i // PER_PARTITION:06d}"
        if i % PER_PARTITION == 0 or i == start:
            folder.mkdir(parents=True, exist_ok=True)
        base = i * 50
        pq.write_table(pa.table({"id": pa.array(range(base, base + 50), pa.int64()),
                                 "s": [f"v{base + j}" for j in range(50)],
                                 "x": pa.array([float(j) for j in range(50)])}), folder / f"part-{i:07d}.parquet")
    if start == 0:
        marker.write_text(json.dumps({"files": files}))


def serial_footers(root: Path) -> float:
    paths = sorted(glob.glob(str(root / "*" / "*.parquet")))
    t0 = time.perf_counter()
    for p in paths:
        pq.read_metadata(p)
    return time.perf_counter() - t0


def tree_pss_mb(root_pid: int) -> float:
    """Memory of ``root_pid`` and all its descendants (worker processes included): the sum of their proportional
    set sizes (``Pss`` in ``/proc/PID/smaps_rollup``), so pages the workers share with each other (pyarrow's
    libraries) count once, not once per process as a sum of RSS would."""
    children: dict[int, list[int]] = {}
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            ppid = int(Path(stat).read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(stat.split("/")[2]))
    total_kb, todo = 0, [root_pid]
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total_kb += int(line.split()[1])
                    break
        except OSError:
            continue
    return total_kb / 1024


class Measured:
    """Runs ``hsh`` children one at a time and records the peak memory of their process tree.

    ``wait4``'s ``ru_maxrss`` is the largest single process, which understates a run that spreads its work over
    worker processes; the tree's summed PSS is sampled every 100 ms as well, and the larger of the two reported."""

    @staticmethod
    def hsh(*args: str, env: dict[str, str] | None = None) -> tuple[float, int, dict[str, Any], float]:
        """Wall seconds, peak MB, the ``--json`` answer, and CPU seconds of the process tree."""
        import threading

        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "storage_handler.cli.main", *args, "--json"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env={**os.environ, **(env or {})})
        assert proc.stdout is not None and proc.stderr is not None
        peak = [0.0]
        done = threading.Event()

        def sample() -> None:
            while not done.wait(0.1):
                peak[0] = max(peak[0], tree_pss_mb(proc.pid))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        err_chunks: list[str] = []
        stderr = proc.stderr
        reader = threading.Thread(target=lambda: err_chunks.append(stderr.read()), daemon=True)
        reader.start()
        out = proc.stdout.read()
        reader.join()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        done.set()
        sampler.join()
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"hsh {' '.join(args)} failed: {''.join(err_chunks).strip()[-2000:]}")
        cpu = usage.ru_utime + usage.ru_stime  # the child's, plus the worker processes it reaped
        return wall, int(max(peak[0], usage.ru_maxrss / 1024)), json.loads(out), cpu


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system, all threads) a process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[20_000, 100_000])
    parser.add_argument("--million", action="store_true", help="also 1,000,000 files (about 4 GB of disk)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--report", default="index", help="name of the report files (default: index.md/.png)")
    parser.add_argument("--combine", nargs="+", metavar="REPORT",
                        help="measure nothing: merge earlier reports' .json (e.g. index index_1m) into --report")
    args = parser.parse_args(argv)
    if args.combine:
        return combine(args)
    sizes = [*args.sizes, *([1_000_000] if args.million else [])]

    work = Path(tempfile.mkdtemp(prefix="hsh-bench-index-"))
    os.environ["HSH_HOME"] = str(work / "home")
    from metastore.local import LocalMetastore

    metastore = LocalMetastore(work / "home")
    started = metastore.start()
    uri, metastore_pid = started.uri, started.pid
    from storage_handler.stats.footers.native_reader import native_reader
    from storage_handler.storage.native_listing import native_lister

    native_reader(), native_lister()  # compiled once here, not inside the first measured run
    rows: list[dict[str, Any]] = []
    loads: list[float] = []
    try:
        for size in sizes:
            root = DATA / f"t{size}"
            print(f"{size} files: generating (cached) ...", flush=True)
            generate(root, size)
            row: dict[str, Any] = {"files": size}
            row["serial footers s"] = statistics.median(serial_footers(root) for _ in range(args.repeat))
            variants: list[tuple[str, list[str], dict[str, str]]] = [  # the last leaves the index refreshed below
                ("register --dry-run", ["--dry-run"], {}), ("register serial", ["--workers", "1"], {}),
                ("register, pyarrow footers", [], {"HSH_NATIVE_FOOTERS": "0"}), ("register", [], {}),
            ]
            for label, extra, env in variants:
                walls, peaks, cpus, metastore_cpus = [], [], [], []
                for r in range(args.repeat):
                    table = f"bench.t{size}_{label.replace(' ', '_').replace(',', '').replace('-', '')}_{r}"
                    shutil.rmtree(root / "_hsh_index", ignore_errors=True)
                    loads.append(os.getloadavg()[0])
                    before = process_cpu(metastore_pid)
                    wall, peak, _, cpu = Measured.hsh("register", table, str(root), "--metastore", uri, *extra,
                                                      env=env)
                    metastore_cpus.append(process_cpu(metastore_pid) - before)
                    walls.append(wall)
                    peaks.append(peak)
                    cpus.append(cpu)
                row[f"{label} s"] = statistics.median(walls)
                row[f"{label} peak MB"] = max(peaks)
                if label == "register":
                    row["register CPU s (hsh)"] = statistics.median(cpus)
                    row["register CPU s (metastore JVM)"] = statistics.median(metastore_cpus)
                    cores = len(os.sched_getaffinity(0))  # the cores these processes may run on
                    row["register CPU floor s"] = statistics.median(
                        (a + b) / cores for a, b in zip(cpus, metastore_cpus, strict=True))
            # refresh after 1 % new files (then removed again, so the cached data stays as generated)
            added = max(1, size // 100)
            generate(root, added, start=size)
            try:
                wall, peak, out, _ = Measured.hsh("index", "refresh", f"bench.t{size}_register_0", "--metastore",
                                                  uri)
                row["refresh +1% s"] = wall
                row["refresh +1% peak MB"] = peak
                row["refresh +1% footers read"] = len(out["added"]) + len(out["changed"]) + len(out["retried"])
            finally:
                for i in range(size, size + added):
                    Path(root / f"dt={i // PER_PARTITION:06d}" / f"part-{i:07d}.parquet").unlink(missing_ok=True)
            row["register / serial footers"] = row["register s"] / row["serial footers s"]
            row["dry-run / serial footers"] = row["register --dry-run s"] / row["serial footers s"]
            row["CPU floor / serial footers"] = row["register CPU floor s"] / row["serial footers s"]
            rows.append(row)
            print(row, flush=True)
    finally:
        metastore.stop()
    write_report(HERE / "results", rows, loads, args)
    return 0


def write_report(folder: Path, rows: list[dict[str, Any]], loads: list[float], args: argparse.Namespace,
                 commit: str | None = None) -> None:
    """``commit``: the code measured (default: this checkout's); a combined report names its runs' commits."""
    folder.mkdir(parents=True, exist_ok=True)
    commit = commit or commit_label()
    keys = list(dict.fromkeys(k for r in rows for k in r if k != "files"))  # rows of older runs may lack some
    lines = [
        "# Index build and refresh against table size (local disk, tiny files)",
        "",
        f"Machine: {os.cpu_count()} cores, Python {platform.python_version()}, commit `{commit}`, 1-minute load "
        f"during the runs {min(loads):.1f}-{max(loads):.1f}; medians of {args.repeat} runs (peak: the highest). "
        "Generated by `benchmarks/bench_index.py`.",
        "",
        "| | " + " | ".join(f"{r['files']:,} files" for r in rows) + " |",
        "|---|" + "---|" * len(rows),
    ]
    for key in keys:
        lines.append(f"| {key} | " + " | ".join(
            "-" if key not in r else f"{r[key]:.2f}" if isinstance(r[key], float) else str(r[key]) for r in rows)
            + " |")
    if len(rows) >= 2:
        a, b = rows[0], rows[-1]
        df = b["files"] - a["files"]
        lines += ["", "Slope between the smallest and the largest size: "
                  f"register {1e6 * (b['register s'] - a['register s']) / df:.0f} µs and "
                  f"{1024 * (b['register peak MB'] - a['register peak MB']) / df:.2f} KB of peak memory per file; "
                  f"serial footers {1e6 * (b['serial footers s'] - a['serial footers s']) / df:.0f} µs per file."]
    (folder / f"{args.report}.md").write_text("\n".join(lines) + "\n")
    (folder / f"{args.report}.json").write_text(json.dumps(
        {"commit": commit, "loads": [min(loads), max(loads)], "repeat": args.repeat, "rows": rows}, indent=1))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no chart")
        return
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for key in ("serial footers s", "register serial s", "register s", "register, pyarrow footers s",
                "register --dry-run s", "refresh +1% s", "register CPU floor s"):
        have = [r for r in rows if key in r]
        left.plot([r["files"] for r in have], [r[key] for r in have], marker="o", label=key,
                  linestyle=":" if "floor" in key else "-")
    left.set(xscale="log", yscale="log", xlabel="files", ylabel="seconds", title="time")
    left.legend(fontsize=7)
    for key in ("register serial peak MB", "register peak MB", "register, pyarrow footers peak MB",
                "refresh +1% peak MB"):
        have = [r for r in rows if key in r]
        right.plot([r["files"] for r in have], [r[key] for r in have], marker="o", label=key)
    right.set(xscale="log", xlabel="files", ylabel="peak memory (MB)", title="memory")
    right.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(folder / f"{args.report}.png", dpi=110)
    print(f"wrote {folder / args.report}.md and .png")


def combine(args: argparse.Namespace) -> int:
    """One table and chart over sizes measured in separate runs (the million files take one run of their own)."""
    folder = HERE / "results"
    runs = [json.loads((folder / f"{name}.json").read_text()) for name in args.combine]
    rows = sorted((row for run in runs for row in run["rows"]), key=lambda r: r["files"])
    loads = [x for run in runs for x in run["loads"]]
    args.repeat = "/".join(str(run["repeat"]) for run in runs)
    write_report(folder, rows, loads, args, commit=" and ".join(dict.fromkeys(run["commit"] for run in runs)))
    text = (folder / f"{args.report}.md").read_text().replace(
        "Generated by", "Runs: " + ", ".join(f"`{n}` (commit `{r['commit']}`)" for n, r in
                                               zip(args.combine, runs, strict=True)) + ". Generated by")
    (folder / f"{args.report}.md").write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
