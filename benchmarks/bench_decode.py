"""Decode time of Hive's serialized filters: the Python decoder vs Hive's own reader in a warm JVM vs a JVM per decode.

    .venv/bin/python benchmarks/bench_decode.py [--leaves 1 10 100] [--repeat 200]

Filters of 1, 10 and 100 leaves (comparisons, IN, BETWEEN and IS NULL over int, bigint, string, double, decimal,
date, timestamp and boolean columns, AND-ed, with one OR group once there are ten) are built and serialized by
Hive 2.3.10's own classes (``tests/decode/java/HiveKryoOracle.java``, compiled against the pyspark wheel's jars),
exactly what Hive puts in ``hive.io.filter.expr.serialized``. Then, medians of ``--repeat`` runs:

  (a) Python: ``decode_job_conf`` on the property -- base64 + Kryo -> expression -> SearchArgument, what the
      planning process does once per query; also split into the Kryo read and the conversion, and the same for
      the Kryo ``sarg.pushdown`` of the same filter.
  (b) Hive's reader in a warm JVM: ``deserializeExpression`` + ``ConvertAstToSearchArg.create`` (JIT warmed up by
      one untimed round of ``--repeat``): the best a long-lived JVM could do.
  (c) a JVM started for one decode (``java ... HiveKryoOracle read``, wall time, 3 runs): what "a JVM per decode"
      would cost the planner.

Output: ``benchmarks/results/decode.md`` (table + machine + commit) and ``decode.png``; timings are printed, never
asserted. Needs a JDK (javac) and, for the chart, matplotlib.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
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

from provenance import commit_label  # noqa: E402

from storage_handler.decode.kryo import decode_filter_expression, decode_search_argument  # noqa: E402
from storage_handler.decode.serialized import decode_job_conf  # noqa: E402
from storage_handler.decode.to_sarg import to_search_argument  # noqa: E402
from tests.decode.kryo_oracle import JAVA_FLAGS, Oracle, compile_oracle, jars_dir  # noqa: E402
from tests.decode.kryo_trees import col, const, fn  # noqa: E402

KEY = "hive.io.filter.expr.serialized"


def leaf(i: int) -> dict[str, Any]:
    """The i-th leaf of a benchmark filter: a different column type and operator each time."""
    kinds = [
        lambda: fn("=", col("int", "qty"), const("int", str(i))),
        lambda: fn("<", col("bigint", "id"), const("bigint", str(10**12 + i))),
        lambda: fn("in", col("string", "name"), const("string", f"a{i}"), const("string", f"b{i}")),
        lambda: fn(">=", col("double", "score"), const("double", f"{i}.5")),
        lambda: fn("between", const("boolean", "false"), col("decimal(12,2)", "price"),
                   const("decimal(12,2)", f"{i}.25"), const("decimal(12,2)", f"{i + 1}.75")),
        lambda: fn("<=", col("date", "dt"), const("date", f"2024-01-{i % 28 + 1:02d}")),
        lambda: fn(">", col("timestamp", "ts"), const("timestamp", f"2024-02-03 04:05:{i % 60:02d}.123456789")),
        lambda: fn("isnotnull", col("boolean", f"flag{i}")),
    ]
    return kinds[i % len(kinds)]()


def filter_of(leaves: int) -> dict[str, Any]:
    if leaves == 1:
        return leaf(0)
    terms = [leaf(i) for i in range(leaves)]
    if leaves >= 10:  # one OR group, as real filters have: (a OR b OR c) AND ...
        terms = [fn("or", *terms[:3]), *terms[3:]]
    return fn("and", *terms)


def median_us(func: Callable[[], object], repeat: int) -> float:
    for _ in range(max(3, repeat // 10)):
        func()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def cold_jvm_ms(classes: Path, text: str, runs: int = 3) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(["java", *JAVA_FLAGS, "-cp", f"{classes}:{jars_dir()}/*", "HiveKryoOracle", "read"],
                              input=text + "\n", capture_output=True, text=True, timeout=300, check=True)
        times.append(time.perf_counter() - start)
        assert done.stdout.startswith("leaf-0") or done.stdout.startswith("expr"), done.stdout[:200]
    return statistics.median(times) * 1e3


def measure(oracle: Oracle, classes: Path, leaves: int, repeat: int) -> dict[str, Any]:
    tree = filter_of(leaves)
    text, _, hive_old, _, fixed_old = oracle.expression(tree)
    sarg_text = oracle.sarg_pushdown(tree)[0]
    conf = {KEY: text}
    decoded = decode_job_conf(conf)
    assert decoded.sarg.to_old_string() == fixed_old, (decoded.sarg.to_old_string(), fixed_old)
    expr = decode_filter_expression(text)
    answer = oracle.ask(f"T {repeat} {text}").split("\t")
    assert answer[0] == "OK", answer
    row = {
        "leaves": leaves,
        "bytes": len(text),
        "sarg_leaves": len(decoded.sarg.leaves),
        "python_us": median_us(lambda: decode_job_conf(conf), repeat),
        "kryo_us": median_us(lambda: decode_filter_expression(text), repeat),
        "convert_us": median_us(lambda: to_search_argument(expr), repeat),
        "sarg_pushdown_us": median_us(lambda: decode_search_argument(sarg_text), repeat),
        "jvm_warm_us": int(answer[1]) / 1e3,
        "jvm_cold_ms": cold_jvm_ms(classes, text),
    }
    print(json.dumps({k: round(v, 1) if isinstance(v, float) else v for k, v in row.items()}))
    return row


def write_report(rows: list[dict[str, Any]], repeat: int) -> None:
    folder = HERE / "results"
    folder.mkdir(exist_ok=True)
    commit = commit_label()
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    lines = [
        "# Decoding Hive's serialized filters: Python vs Hive's own reader",
        "",
        f"Machine: {os.cpu_count()} cores, Python {platform.python_version()}, commit `{commit}`, {when}. "
        f"Medians of {repeat} runs (after a warm-up); cold JVM: median of 3 starts. Filters serialized by Hive "
        "2.3.10's `SerializationUtilities.serializeExpression` (`hive.io.filter.expr.serialized`, base64).",
        "",
        "| leaves | base64 chars | Python decode µs | of which Kryo read µs | to SearchArgument µs "
        "| `sarg.pushdown` µs | Hive reader, warm JVM µs | Python / warm JVM | one JVM per decode ms |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['leaves']} | {r['bytes']:,} | {r['python_us']:,.0f} | {r['kryo_us']:,.0f} | {r['convert_us']:,.0f} "
            f"| {r['sarg_pushdown_us']:,.0f} | {r['jvm_warm_us']:,.0f} | {r['python_us'] / r['jvm_warm_us']:.1f}× "
            f"| {r['jvm_cold_ms']:,.0f} |"
        )
    lines += [
        "",
        "Python decode = `decode_job_conf` on the property: base64, the Kryo graph, Hive's objects -> expression, "
        "expression -> SearchArgument (Hive's normalization: NOT push-down, CNF, leaf numbering). The warm JVM runs "
        "`deserializeExpression` + `ConvertAstToSearchArg.create`, JIT-compiled; the cold column is a fresh "
        "`java` process reading one filter, which is what decoding in a JVM per query would add to planning.",
        "",
    ]
    (folder / "decode.md").write_text("\n".join(lines))
    (folder / "decode.json").write_text(json.dumps(rows, indent=1))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no chart (pip install matplotlib)")
        return
    fig, ax = plt.subplots(figsize=(7, 4))
    labels = [str(r["leaves"]) for r in rows]
    width = 0.27
    xs = range(len(rows))
    series = (("Python decode", "python_us"), ("Hive reader, warm JVM", "jvm_warm_us"),
              ("one JVM per decode", "jvm_cold_ms"))
    for k, (name, field) in enumerate(series):
        values = [r[field] if field == "jvm_cold_ms" else r[field] / 1e3 for r in rows]
        ax.bar([x + (k - 1) * width for x in xs], values, width, label=name)
    ax.set_xticks(list(xs), labels)
    ax.set_xlabel("leaves in the filter")
    ax.set_ylabel("ms (log scale)")
    ax.set_yscale("log")
    ax.set_title("Decoding hive.io.filter.expr.serialized (median)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(folder / "decode.png", dpi=110)
    print(f"wrote {folder / 'decode.md'} and decode.png")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--leaves", type=int, nargs="+", default=[1, 10, 100])
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        classes = compile_oracle(Path(tmp))
        if classes is None:
            raise SystemExit("javac/java not on PATH: the filters are serialized by Hive's own classes")
        oracle = Oracle(classes)
        try:
            rows = [measure(oracle, classes, n, args.repeat) for n in args.leaves]
        finally:
            oracle.close()
    write_report(rows, args.repeat)


if __name__ == "__main__":
    main()
