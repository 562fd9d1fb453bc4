"""How soon new data prunes: writes from a handler session, from elsewhere (with and without ``hsh follow``), and
what keeping the index current costs (issue 26).

One embedded metastore and one handler session (``storage_handler.spark.session()``), stopped by PID at the end.
The table: 2,000 partitions ``k=NNNN`` of one small file each (registered with ``--no-stats``: publishing is issue
27's benchmark). Each write adds 20 files with disjoint ``id`` ranges, so a point lookup on one ``id`` of the new
data can keep exactly one of them once the index knows them. The writes:

* **handler**: ``INSERT INTO t PARTITION (k=...) SELECT /*+ REPARTITIONBYRANGE(20, id) */ ...`` in the handler
  session (indexed at commit by the extension);
* **other engine**: the same statement with ``spark.hsh.indexOnWrite=false`` -- a Spark write the handler does not
  see, which is what a plain session, Hive or Trino is to the index -- into a new partition;
* **file copy**: 20 Parquet files copied into an existing partition's folder (hidden name, then a rename, as
  loaders do).

For each write, the lookup runs at 0, 1, 2, 3, 5 and 15 s after the write returned; the report gives the files it
kept at each offset and the first offset at which it kept one. First without a follower (what a user had before:
nothing until a manual refresh), then with ``hsh follow`` running on its defaults (``--interval 2``).

Costs: the insert's wall time with and without the commit hook (interleaved, medians), and the follower's CPU
(and the metastore JVM's) over a minute with no writes.
"""

from __future__ import annotations

import argparse
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
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_index import process_cpu  # noqa: E402
from bench_stats import ensure_partitioned  # noqa: E402
from provenance import commit_label  # noqa: E402
from tpch_report import cpu_snapshot, other_cpu_share  # noqa: E402

PARTITIONS = 2000
FILES = 20
ROWS = 4000  # rows per write: 200 per file
OFFSETS = (0, 1, 2, 3, 5, 15)
TABLE = "fresh.t"


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def lookup(spark: Any, partition: str, key: int) -> tuple[int, int]:
    """Rows found and files kept by a point lookup on the new data."""
    from storage_handler.spark import last_scan_metrics

    found = spark.sql(f"SELECT count(*) FROM {TABLE} WHERE k = {int(partition)} AND id = {key}").collect()[0][0]
    return int(found), int(last_scan_metrics(TABLE)["files_kept"])


def timeline(spark: Any, partition: str, key: int, written_at: float) -> dict[str, Any]:
    kept: dict[str, int] = {}
    for offset in OFFSETS:
        time.sleep(max(0.0, written_at + offset - time.monotonic()))
        found, files = lookup(spark, partition, key)
        assert found == 1, (partition, key, found)  # never a lost row, whatever the index knows
        kept[str(offset)] = files
    first = next((int(o) for o, n in kept.items() if n == 1), None)
    return {"kept": kept, "pruned_at": first}


def insert(spark: Any, partition: str, base: int, *, hook: bool) -> float:
    spark.conf.set("spark.hsh.indexOnWrite", "true" if hook else "false")
    started = time.monotonic()
    spark.sql(f"INSERT INTO {TABLE} PARTITION (k={int(partition)}) SELECT /*+ REPARTITIONBYRANGE({FILES}, id) */ "
              f"id, concat('n', id), CAST(id AS DECIMAL(12,2)) / 100, date_add(DATE '2020-01-01', CAST(id % 900 AS "
              f"INT)), CAST(id AS DOUBLE) / 3 FROM range({base}, {base + ROWS})")
    spark.conf.unset("spark.hsh.indexOnWrite")
    return time.monotonic() - started


def copy_files(root: Path, partition: str, base: int) -> float:
    import datetime as dt
    from decimal import Decimal

    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = root / f"k={partition}"
    per = ROWS // FILES
    staged = []
    for f in range(FILES):
        ids = range(base + f * per, base + (f + 1) * per)
        temporary = folder / f".copy-{base}-{f}.parquet"
        pq.write_table(pa.table({
            "id": pa.array(ids, pa.int64()), "name": [f"n{i}" for i in ids],
            "amount": pa.array([Decimal(i) / 100 for i in ids], pa.decimal128(12, 2)),
            "day": pa.array([dt.date(2020, 1, 1) + dt.timedelta(days=i % 900) for i in ids]),
            "x": pa.array([i / 3 for i in ids]),
        }), temporary)
        staged.append(temporary)
    for temporary in staged:  # the copy "lands" now, as a loader's renames do
        temporary.rename(temporary.with_name(temporary.name.lstrip(".")))
    return time.monotonic()


def writes(spark: Any, root: Path, label: str, rounds: int, next_partition: list[int]) -> list[dict[str, Any]]:
    out = []
    for r in range(rounds):
        for kind in ("handler", "other engine", "file copy"):
            base = 10_000_000 + next_partition[0] * ROWS
            if kind == "file copy":
                partition = f"{r * 7 % PARTITIONS:04d}"  # an existing partition
                written_at = copy_files(root, partition, base)
            else:
                partition = str(5000 + next_partition[0])  # a new partition (the key is an int)
                insert(spark, partition, base, hook=kind == "handler")
                written_at = time.monotonic()
            next_partition[0] += 1
            line = timeline(spark, partition, base + ROWS // FILES // 2, written_at)
            files = len(list((root / f"k={partition}").glob("[!._]*")))
            log(f"  {label} {kind} into k={partition} ({files} files): kept {line['kept']} "
                f"(pruned at {line['pruned_at']} s)")
            out.append({"setting": label, "kind": kind, "partition": partition, "files": files, **line})
    return out


def start_follower(uri: str, home: Path) -> subprocess.Popen:
    log_file = (home / "follow.log").open("w")
    return subprocess.Popen([sys.executable, "-m", "storage_handler.cli.main", "follow", TABLE, "--metastore", uri],
                            stdout=log_file, stderr=subprocess.STDOUT, env=os.environ.copy())


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2, help="writes of each kind with the follower running")
    parser.add_argument("--hook-repeat", type=int, default=5, help="inserts with and without the commit hook")
    parser.add_argument("--idle-seconds", type=int, default=60, help="follower cost measured over this long")
    parser.add_argument("--data-dir", type=Path, default=HERE / "data")
    parser.add_argument("--results-dir", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    cached = ensure_partitioned(args.data_dir.resolve() / "stats" / f"p{PARTITIONS}", PARTITIONS)
    work = Path(tempfile.mkdtemp(prefix="hsh-bench-fresh-"))
    os.environ["HSH_HOME"] = str(work / "home")
    os.environ.pop("HSH_METASTORE_URI", None)
    root = work / "t"
    shutil.copytree(cached, root, ignore=shutil.ignore_patterns("_generated.json"))
    from metastore.local import LocalMetastore

    metastore = LocalMetastore(work / "home")
    res: dict[str, Any] = {"partitions": PARTITIONS, "files_per_write": FILES, "offsets": list(OFFSETS)}
    cpu_start = cpu_snapshot()
    started = time.perf_counter()
    follower = None
    spark = None
    try:
        info = metastore.start(progress=log)
        uri = info.uri
        log(f"metastore {uri} (pid {info.pid}); registering {PARTITIONS:,} partitions")
        proc = subprocess.run([sys.executable, "-m", "storage_handler.cli.main", "register", TABLE, str(root),
                               "--no-stats", "--json", "--metastore", uri], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        from storage_handler.spark import session

        # 20 files per write: without this adaptive execution coalesces the 20 range partitions into 1-2 files
        spark = session(uri, extra_conf={"spark.ui.enabled": "false",
                                         "spark.sql.adaptive.coalescePartitions.enabled": "false"})
        next_partition = [0]

        log(f"commit hook cost: {args.hook_repeat} inserts of {FILES} files each way, interleaved")
        insert(spark, "9000", 0, hook=True)  # warm-up (the prune service's first start)
        insert(spark, "9001", 0, hook=False)
        # the statement alone, and the statement plus the lookup right after it: with the (asynchronous) hook
        # that lookup waits for the hand-off still under way and prunes; without it, it reads every new file
        timings: dict[str, list[float]] = {"with hook": [], "without hook": [], "with hook, then lookup": [],
                                           "without hook, then lookup": []}
        kept: dict[str, list[int]] = {"with hook": [], "without hook": []}
        for i in range(args.hook_repeat):
            for hook in ((True, False) if i % 2 == 0 else (False, True)):
                label = "with hook" if hook else "without hook"
                partition = str(9100 + 2 * i + int(hook))
                seconds = insert(spark, partition, 0, hook=hook)
                started = time.monotonic()
                found, files = lookup(spark, partition, ROWS // 2)
                assert found == 1, (partition, found)
                timings[label].append(seconds)
                timings[f"{label}, then lookup"].append(seconds + time.monotonic() - started)
                kept[label].append(files)
        res["hook"] = {k: {"median": statistics.median(v), "runs": v} for k, v in timings.items()}
        res["hook"]["ratio"] = res["hook"]["with hook"]["median"] / res["hook"]["without hook"]["median"]
        res["hook"]["ratio_with_lookup"] = (res["hook"]["with hook, then lookup"]["median"]
                                            / res["hook"]["without hook, then lookup"]["median"])
        res["hook"]["kept"] = kept
        log(f"  {res['hook']['ratio']:.2f}x: {res['hook']['with hook']['median']:.2f} s vs "
            f"{res['hook']['without hook']['median']:.2f} s; with the next lookup "
            f"{res['hook']['ratio_with_lookup']:.2f}x")

        log("writes without a follower (before: nothing until a manual refresh)")
        res["writes"] = writes(spark, root, "no follower", 1, next_partition)

        follower = start_follower(uri, work / "home")
        time.sleep(8)  # its first poll sweeps the table (every folder listed once)
        log("follower idle cost")
        cpu0, jvm0, t0 = process_cpu(follower.pid), process_cpu(info.pid), time.monotonic()
        time.sleep(args.idle_seconds)
        elapsed = time.monotonic() - t0
        res["idle"] = {"seconds": elapsed, "follower_cpu_share": (process_cpu(follower.pid) - cpu0) / elapsed,
                       "metastore_cpu_share": (process_cpu(info.pid) - jvm0) / elapsed}
        log(f"  follower {100 * res['idle']['follower_cpu_share']:.2f} % of a core, metastore "
            f"{100 * res['idle']['metastore_cpu_share']:.2f} %")
        log("writes with hsh follow running (defaults)")
        res["writes"] += writes(spark, root, "hsh follow", args.rounds, next_partition)
    finally:
        if follower is not None:
            stop(follower)
        if spark is not None:
            spark.stop()
        metastore.stop()
        follow_log = (work / "home" / "follow.log")
        res["follower_log_tail"] = follow_log.read_text().splitlines()[-5:] if follow_log.exists() else []
        shutil.rmtree(work, ignore_errors=True)
    res["machine"] = {"platform": platform.platform(), "cpus": os.cpu_count(), "python": platform.python_version(),
                      "commit": commit_label(), "other_cpu_share": other_cpu_share(cpu_start, cpu_snapshot()),
                      "load": os.getloadavg()[0], "seconds_total": round(time.perf_counter() - started, 1)}
    return report(res, args.results_dir)


def report(res: dict[str, Any], folder: Path) -> int:
    folder.mkdir(parents=True, exist_ok=True)
    m, hook, idle = res["machine"], res["hook"], res["idle"]
    lines = [
        "# Freshness: how soon new data prunes (issue 26)", "",
        f"Commit {m['commit']}, {m['platform']}, {m['cpus']} CPUs, Python {m['python']}; other processes used "
        f"{100 * m['other_cpu_share']:.0f} % of the machine during the run (load {m['load']:.1f}), so seconds are "
        f"inflated; file counts are not. Table: {res['partitions']:,} partitions; each write asks for {res['files_per_write']} "
        "files with disjoint `id` ranges (Spark may write fewer: the count in the folder is shown); the lookup is `k = <written partition> AND id = <one new id>`, which keeps "
        "1 file once the index knows the new files. `other engine` is a Spark write with "
        "`spark.hsh.indexOnWrite=false` (what a plain session, Hive or Trino is to the index).", "",
        "| setting | write | files kept by the lookup at " + " / ".join(f"{o} s" for o in res["offsets"])
        + " after the write | pruned (1 file) from |",
        "|---|---|---|---|",
    ]
    for w in res["writes"]:
        kept = " / ".join(str(w["kept"][str(o)]) for o in res["offsets"])
        first = "never (until a refresh)" if w["pruned_at"] is None else f"{w['pruned_at']} s"
        lines.append(f"| {w['setting']} | {w['kind']} into `k={w['partition']}` ({w.get('files')} files there) "
                     f"| {kept} | {first} |")
    lines += [
        "", "| cost | value |", "|---|---|",
        "| an insert into a new partition (the writes' statement), median with / without the commit hook | "
        f"{hook['with hook']['median']:.2f} s / {hook['without hook']['median']:.2f} s = "
        f"**{hook['ratio']:.2f}x** (target <= 1.10x) |",
        "| the same insert and the lookup right after it (`k = <new partition> AND id = <one new id>`), median "
        "with / without the commit hook | "
        f"{hook['with hook, then lookup']['median']:.2f} s / {hook['without hook, then lookup']['median']:.2f} s = "
        f"{hook['ratio_with_lookup']:.2f}x; the lookup kept {statistics.median(hook['kept']['with hook']):g} / "
        f"{statistics.median(hook['kept']['without hook']):g} files (median) |",
        f"| `hsh follow` idle, {res['partitions']:,} partitions, `--interval 2` | "
        f"**{100 * idle['follower_cpu_share']:.2f} % of one core** (target < 2 %); the metastore "
        f"{100 * idle['metastore_cpu_share']:.2f} % |",
    ]
    md = "\n".join(lines) + "\n"
    (folder / "freshness.md").write_text(md)
    (folder / "freshness.json").write_text(json.dumps(res, indent=1, default=str) + "\n")
    chart(res, folder / "freshness.png")
    print(md)
    return 0


def chart(res: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    groups: dict[str, list[list[int]]] = {}
    for w in res["writes"]:
        groups.setdefault(f"{w['setting']}: {w['kind']}", []).append([w["kept"][str(o)] for o in res["offsets"]])
    for label, runs in groups.items():
        ax.plot(res["offsets"], [statistics.median(col) for col in zip(*runs, strict=True)], marker="o", label=label)
    ax.set_xlabel("seconds after the write returned")
    ax.set_ylabel("files kept by a point lookup on the new data")
    ax.set_title(f"Freshness at {res['partitions']:,} partitions ({res['files_per_write']} files per write)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main())
