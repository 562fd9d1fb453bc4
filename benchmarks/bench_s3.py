"""Requests per query and per refresh against table size, and footer-reading throughput, on a real S3 endpoint.

    .venv/bin/python benchmarks/bench_s3.py [--sizes 500 2000 8000] [--files-per-partition 50] [--repeat 5]

A local S3 endpoint (moto's server, started and stopped by PID) and an embedded metastore are started; for each
size a partitioned table (``p int``, tiny files, ``v`` clustered by file) is uploaded and registered with the
handler. Requests are counted at the server (its access log), by kind: LIST (``ListObjectsV2``), GET, HEAD, PUT,
POST (multipart), DELETE.

* per query, ``list_status`` for (i) one partition kept, (ii) 10 % kept, (iii) a data-only predicate;
* per refresh, with nothing changed, and after adding 1 % new files;
* footer reading while indexing the whole table: one thread vs the default pool (``--workers``), files per second
  (medians of ``--repeat`` runs; the endpoint is on this machine, so a request costs ~1-3 ms, not the 20-50 ms of a
  real object store: the concurrency gain here is a lower bound).

Output: ``benchmarks/results/s3.md`` (table, machine, commit) and ``s3.png``; nothing is asserted.
"""

from __future__ import annotations

import argparse
import collections
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from provenance import commit_label  # noqa: E402

DB = "s3bench"
KINDS = ("LIST", "GET", "HEAD", "PUT", "POST", "DELETE")


class Endpoint:
    """moto's S3 server as a child process, with its access log for counting requests."""

    def __init__(self, folder: Path) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.log = folder / "moto.log"
        self.proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                                     stdout=open(self.log, "wb"), stderr=subprocess.STDOUT)  # noqa: SIM115
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        os.environ.update({"AWS_ENDPOINT_URL": f"http://127.0.0.1:{self.port}", "AWS_ACCESS_KEY_ID": "bench",
                           "AWS_SECRET_ACCESS_KEY": "bench", "AWS_REGION": "us-east-1",
                           "AWS_EC2_METADATA_DISABLED": "true"})

    def mark(self) -> int:
        time.sleep(0.3)  # the server logs a request after answering it
        return len(self.log.read_text(errors="replace").splitlines())

    def since(self, mark: int) -> collections.Counter[str]:
        time.sleep(0.3)
        counts: collections.Counter[str] = collections.Counter()
        for line in self.log.read_text(errors="replace").splitlines()[mark:]:
            if '"' not in line:
                continue
            method, _, rest = line.split('"')[1].partition(" ")
            method = method.strip("\x1b[0123456789;m")
            path = rest.split(" ")[0]
            counts["LIST" if method == "GET" and "list-type=2" in path else method] += 1
        return counts

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)


def upload(location: str, files: int, per_partition: int, start: int = 0) -> None:
    from storage_handler.storage import parse_location, storage_for

    def one(i: int) -> None:
        sink = pa.BufferOutputStream()
        pq.write_table(pa.table({"v": pa.array(range(i * 10, i * 10 + 10), pa.int64())}), sink)
        uri = parse_location(location).join(f"p={i // per_partition}/f{i}.parquet").uri
        storage_for(uri).put(uri, sink.getvalue().to_pybytes())

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(one, range(start, start + files)))


def new_bucket(size: int) -> str:
    import boto3

    name = f"bench-{size}-{int(time.time() * 1000)}"
    boto3.client("s3").create_bucket(Bucket=name)  # AWS_ENDPOINT_URL: the endpoint above
    return name


def timed_index(location: str, workers: int) -> float:
    from storage_handler.stats import build_index, list_data_files
    from storage_handler.types import parse_hive_type

    files = list_data_files(location, ["p"])
    t0 = time.perf_counter()
    build_index(location, [("v", parse_hive_type("bigint"))], files, max_workers=workers)
    return len(files) / (time.perf_counter() - t0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 2000, 8000])
    parser.add_argument("--files-per-partition", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--workers", type=int, default=32)
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="hsh-bench-s3-"))
    os.environ["HSH_HOME"] = str(work / "home")
    endpoint = Endpoint(work)
    from metastore.client import MetastoreClient
    from metastore.local import LocalMetastore
    from metastore.names import parse_table_name
    from storage_handler.handler import list_status_for
    from storage_handler.registration.register import apply_registration, plan_registration
    from storage_handler.stats import update_index
    from storage_handler.table_desc import TableDesc

    metastore = LocalMetastore(work / "home")
    uri = metastore.start().uri
    rows: list[dict[str, Any]] = []
    try:
        for size in args.sizes:
            per = args.files_per_partition
            partitions = size // per
            location = f"s3a://{new_bucket(size)}/t"
            print(f"{size} files: uploading ...", flush=True)
            upload(location, size, per)
            with MetastoreClient(uri) as client:
                apply_registration(client, plan_registration(client, parse_table_name(f"{DB}.t{size}"), location),
                                   )
                desc = TableDesc.from_hms(client.get_table(DB, f"t{size}"), client.uri)
            row: dict[str, Any] = {"files": size, "partitions": partitions}
            queries = {"one partition": "p = 7 and v >= 0", "10% of partitions": f"p < {max(1, partitions // 10)}",
                       "data only": "v = 12345"}
            for label, where in queries.items():
                mark = endpoint.mark()
                result, _ = list_status_for(desc, where)
                row[f"query: {label}"] = endpoint.since(mark)
                row[f"kept: {label}"] = f"{result.metrics.files_kept}/{result.metrics.files_total}"
            mark = endpoint.mark()
            update_index(location, desc.columns, partition_columns=["p"])
            row["refresh: nothing changed"] = endpoint.since(mark)
            upload(location, max(1, size // 100), per, start=size)
            mark = endpoint.mark()
            update_index(location, desc.columns, partition_columns=["p"])
            row["refresh: +1% files"] = endpoint.since(mark)
            serial = [timed_index(location, 1) for _ in range(args.repeat)]
            pooled = [timed_index(location, args.workers) for _ in range(args.repeat)]
            row["footers/s, 1 thread"] = statistics.median(serial)
            row[f"footers/s, {args.workers} threads"] = statistics.median(pooled)
            rows.append(row)
            print(row, flush=True)
    finally:
        metastore.stop()
        endpoint.stop()
    write_report(HERE / "results", rows, args)
    return 0


def _fmt(counts: Any) -> str:
    if not isinstance(counts, collections.Counter):
        return f"{counts:.0f}" if isinstance(counts, float) else str(counts)
    total = sum(counts.values())
    parts = ", ".join(f"{k} {counts[k]}" for k in KINDS if counts.get(k))
    return f"**{total}** ({parts})" if parts else "**0**"


def write_report(folder: Path, rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    commit = commit_label()
    keys = [k for k in rows[0] if k not in ("files",)]
    lines = [
        "# S3: requests per query and refresh, footer-reading throughput",
        "",
        f"Machine: {os.cpu_count()} cores, Python {platform.python_version()}, commit `{commit}`, endpoint: moto's "
        f"S3 server on 127.0.0.1; {args.files_per_partition} files per partition; throughput: median of "
        f"{args.repeat} runs. Generated by `benchmarks/bench_s3.py`.",
        "",
        "| | " + " | ".join(f"{r['files']} files" for r in rows) + " |",
        "|---|" + "---|" * len(rows),
    ]
    for key in keys:
        lines.append(f"| {key} | " + " | ".join(_fmt(r[key]) for r in rows) + " |")
    (folder / "s3.md").write_text("\n".join(lines) + "\n")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no chart (pip install matplotlib)")
        return
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    sizes = [r["files"] for r in rows]
    for key in [k for k in keys if k.startswith(("query:", "refresh:"))]:
        left.plot(sizes, [sum(r[key].values()) for r in rows], marker="o", label=key)
    left.set(xscale="log", xlabel="files in the table", ylabel="S3 requests", title="requests per operation")
    left.legend(fontsize=7)
    for key in [k for k in keys if k.startswith("footers/s")]:
        right.plot(sizes, [r[key] for r in rows], marker="o", label=key)
    right.set(xscale="log", xlabel="files in the table", ylabel="footers per second", title="indexing throughput")
    right.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(folder / "s3.png", dpi=110)
    print(f"wrote {folder / 's3.md'} and s3.png")


if __name__ == "__main__":
    raise SystemExit(main())
