"""The TPC-H benchmark's report: how busy the machine was, the markdown tables with the verdicts against the
issue's targets, and the chart. Nothing here runs Spark."""

from __future__ import annotations

import datetime as dt
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from provenance import commit_label
from spread import LEVEL, with_interval
from tpch_data import TpchDataset
from tpch_model import (
    BUSY_SHARE,
    HANDLER_PATHS,
    PATH_LABELS,
    PATH_TAGS,
    PATHS,
    PLAIN,
    RETRIES,
    TABLE,
    TARGET_MAX_SLOWDOWN,
    TARGET_Q6_SPEEDUP,
    Cell,
    Query,
)

ROOT = Path(__file__).resolve().parent.parent


def cpu_snapshot() -> tuple[float, float, float]:
    """(wall seconds, CPU seconds the whole machine spent busy, CPU seconds of this process and its descendants).

    Used to tell how much of the machine *other* work took during the run: a busy neighbour makes every timing
    slower and noisier, and the report says so. Linux only; zeros elsewhere."""
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
        user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[:8])
        machine = (user + nice + system + irq + softirq + steal) / tick
    except (OSError, ValueError):
        return time.monotonic(), 0.0, 0.0
    parents: dict[int, int] = {}
    cpu: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry.name)] = int(stat[1])
        cpu[int(entry.name)] = sum(int(x) for x in stat[11:15])  # utime stime cutime cstime (reaped children)
    own, stack = 0, [os.getpid()]
    while stack:
        pid = stack.pop()
        own += cpu.get(pid, 0)
        stack += [child for child, parent in parents.items() if parent == pid]
    return time.monotonic(), machine, own / tick


def other_cpu_share(start: tuple[float, float, float], end: tuple[float, float, float]) -> float | None:
    """The fraction of the machine's CPU that processes outside this benchmark used between two snapshots."""
    wall = end[0] - start[0]
    if wall <= 0 or end[1] == 0:
        return None
    other = (end[1] - start[1]) - (end[2] - start[2])
    return max(0.0, other / (wall * (os.cpu_count() or 1)))


def machine_info(
    ds: TpchDataset, repeat: int, warmup: int, extra_conf: dict[str, str], paths: tuple[str, ...],
    other_share: float | None, cells: dict[tuple[str, str], Cell], max_interference: float,
) -> dict[str, Any]:
    import pyarrow
    import pyspark

    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gb = None
    try:
        kb = int(Path("/proc/meminfo").read_text().split("MemTotal:")[1].split()[0])
        mem_gb = round(kb / 1024 / 1024, 1)
    except (OSError, IndexError, ValueError):
        pass
    commit = commit_label()
    return {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cores": os.cpu_count(), "cpu": cpu, "memory_gb": mem_gb,
        "python": platform.python_version(), "pyspark": pyspark.__version__, "pyarrow": pyarrow.__version__,
        "spark_master": "local[2]", "git_commit": commit,
        "scale_factor": ds.scale, "rows": ds.rows, "files": ds.files, "bytes": ds.bytes,
        "shipdate_range": f"{ds.min_shipdate} .. {ds.max_shipdate}", "repeat": repeat, "warmup_rounds": warmup,
        "paths": list(paths), "extra_spark_conf": extra_conf or "none",
        "cpu_share_used_by_other_processes": None if other_share is None else round(other_share, 3),
        "max_interference": max_interference,
        "runs_discarded_for_interference": sum(c.discarded for c in cells.values()),
        "runs_kept_despite_interference": sum(
            1 for c in cells.values() for x in c.interference if max_interference and x > max_interference),
        "median_interference_of_kept_runs": round(statistics.median(
            [x for c in cells.values() for x in c.interference] or [0.0]), 3),
    }


def speedup(cells: dict[tuple[str, str], Cell], q: Query, path: str) -> float:
    return cells[(q.key, "native")].median / cells[(q.key, path)].median


def verdict(cells: dict[tuple[str, str], Cell], q: Query, path: str) -> str:
    if (q.key, path) not in cells:
        return "not run"
    s = speedup(cells, q, path)
    if q.target == "q6":
        return f"meets ≥{TARGET_Q6_SPEEDUP:g}×" if s >= TARGET_Q6_SPEEDUP else f"misses ≥{TARGET_Q6_SPEEDUP:g}×"
    if q.target == "overhead":
        ok = 1 / s <= TARGET_MAX_SLOWDOWN
        return f"{'meets' if ok else 'misses'} ≤{TARGET_MAX_SLOWDOWN:g}× slower"
    return ""


def markdown(
    cells: dict[tuple[str, str], Cell], qs: list[Query], info: dict[str, Any], mismatches: list[str]
) -> str:
    def cell(q: Query, path: str) -> Cell | None:
        return cells.get((q.key, path))

    def secs(q: Query, path: str) -> str:
        c = cell(q, path)
        return f"{c.median:.3f}" if c else "not run"

    def ratio(q: Query, path: str) -> str:
        return f"{speedup(cells, q, path):.2f}×" if cell(q, path) else "–"

    def files(q: Query, path: str) -> str:
        c = cell(q, path)
        return f"{c.files_kept}/{c.files_total}" if c and c.files_kept is not None else "–"

    def attr(q: Query, path: str, fmt: Callable[[Cell], str]) -> str:
        c = cell(q, path)
        return fmt(c) if c else "–"

    def header(numeric: list[str], text: str | None = None) -> list[str]:
        """A table's header: the numeric columns right-aligned, an optional last text column left-aligned."""
        cols = [*numeric, *([text] if text else [])]
        align = "|---|" + "---:|" * len(numeric) + ("---|" if text else "")
        return [f"| query | {' | '.join(cols)} |", align]

    tag = PATH_TAGS
    target_text = {"q6": f"≥ {TARGET_Q6_SPEEDUP:g}× faster", "overhead": f"≤ {TARGET_MAX_SLOWDOWN:g}× slower"}
    lines = [
        "# TPC-H lineitem: file skipping vs Spark's native Hive-table read",
        "",
        f"Scale factor {info['scale_factor']:g}: {info['rows']:,} rows in {info['files']} Parquet files "
        f"({info['bytes'] / 1e6:,.0f} MB), sorted by `l_shipdate` ({info['shipdate_range']}). "
        f"Median of {info['repeat']} runs after {info['warmup_rounds']} warm-up round(s); speed-up = (a)'s "
        "median / this path's median (> 1 is faster than Spark alone). Files = files read / files in the table, "
        "from `last_scan_metrics()`.",
        "",
        "Paths: " + "; ".join(PATH_LABELS[p] for p in PATHS) + ".",
        "",
    ]
    cols = [f"{tag['native']} native s"]
    for p in HANDLER_PATHS:
        cols += [f"{tag[p]} {p} s", f"{tag[p]} speed-up", f"{tag[p]} files"]
    lines += header(cols, "target")
    for q in qs:
        target = ""
        if q.target in target_text:
            target = f"{target_text[q.target]}: " + ", ".join(
                f"{tag[p]} {verdict(cells, q, p)}" for p in HANDLER_PATHS)
        row = [secs(q, "native")]
        for p in HANDLER_PATHS:
            row += [secs(q, p), ratio(q, p), files(q, p)]
        lines.append(f"| {q.title} | {' | '.join([*row, target])} |")
    if all(cell(q, "limit") and cell(q, "spark.sql") for q in qs):
        lines += ["", "How close the handler comes to its limit (median time over (d)'s: 1.00× is the limit; in "
                  f"brackets, the range the ratio takes in {LEVEL:.0%} of resamplings of the rounds, `spread.py`):",
                  ""]
        lines += header([f"{tag['spark.sql']} spark.sql / limit", f"{tag['read_table']} read_table / limit"])
        for q in qs:
            limit = cells[(q.key, "limit")].seconds
            row = [with_interval(cells[(q.key, p)].seconds, limit) if cell(q, p) else "–"
                   for p in ("spark.sql", "read_table")]
            lines.append(f"| {q.title} | {' | '.join(row)} |")
    lines += ["", f"Fastest of the {info['repeat']} runs, seconds and speed-up over (a)'s fastest (less sensitive to "
              "other work on the machine; the targets above are judged on medians):", ""]
    cols = [f"{tag['native']} best s"]
    for p in HANDLER_PATHS:
        cols += [f"{tag[p]} best s", f"{tag[p]} speed-up"]
    lines += header(cols)
    for q in qs:
        best_a = min(cells[(q.key, "native")].seconds)
        row = [f"{best_a:.3f}"]
        for path in HANDLER_PATHS:
            c = cell(q, path)
            row += [f"{min(c.seconds):.3f}", f"{best_a / min(c.seconds):.2f}×"] if c else ["not run", "–"]
        lines.append(f"| {q.title} | {' | '.join(row)} |")
    handler_tags = ", ".join(tag[p] for p in HANDLER_PATHS[:-1]) + f" and {tag[HANDLER_PATHS[-1]]}"
    lines += ["", f"Queries (`T` is `{PLAIN}` for (a), `{TABLE}` for {handler_tags}):", ""]
    for q in qs:
        lines.append(f"* **{q.title}** — `{q.sql('T')}` ({cells[(q.key, 'native')].rows} result rows)")
    lines += ["", "Where the time goes: Spark tasks per run (all jobs of the query, the file-listing job included), "
              "the handler's planning time (listing + pruning, median, seconds) and the first warm-up run "
              "(seconds):", ""]
    lines += header([f"{tag[p]} tasks" for p in PATHS] + [f"{tag[p]} planning" for p in HANDLER_PATHS]
                    + [f"{tag[p]} first" for p in PATHS])
    for q in qs:
        tasks = [attr(q, p, lambda c: str(c.median_tasks)) for p in PATHS]
        planning = [attr(q, p, lambda c: _opt(c.planning_seconds)) for p in HANDLER_PATHS]
        first = [attr(q, p, lambda c: f"{c.warmup_seconds:.2f}") for p in PATHS]
        lines.append(f"| {q.title} | {' | '.join(tasks + planning + first)} |")
    lines += ["", "Results: " + ("**MISMATCH** — " + "; ".join(mismatches) if mismatches
                                 else "every path that ran returned exactly (a)'s rows, in every run."),
              "", "Machine and run:", ""]
    lines += [f"* {k}: {v}" for k, v in info.items()]
    share = info.get("cpu_share_used_by_other_processes")
    if info["runs_kept_despite_interference"] or info["median_interference_of_kept_runs"] > BUSY_SHARE:
        lines += ["", f"**Warning**: other processes were busy during the timed runs (median share of the CPU "
                      f"{info['median_interference_of_kept_runs']:.0%}; {info['runs_kept_despite_interference']} "
                      f"runs kept after {RETRIES} retries); these timings are slower and noisier than on a quiet "
                      "machine."]
    elif share is not None and share > BUSY_SHARE:
        lines += ["", f"Note: other processes used {share:.0%} of the CPU over the whole run; "
                      f"{info['runs_discarded_for_interference']} timed runs they disturbed were discarded and "
                      "repeated, so the timings above are from quiet moments."]
    lines += ["", "Chart: `tpch.png`; every timing: `tpch.json`. How to read this: `benchmarks/README.md`.", ""]
    return "\n".join(lines)


def _opt(value: float | None) -> str:
    return f"{value:.3f}" if value is not None else "–"


def chart(
    cells: dict[tuple[str, str], Cell], qs: list[Query], paths: tuple[str, ...], info: dict[str, Any], out: Path
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # (b2) is a lighter shade of (b): the same spark.sql, read by the Python data source instead
    colors = {"native": "#7f7f7f", "spark.sql": "#1f77b4", "python_ds": "#9ecae1", "read_table": "#2ca02c",
              "limit": "#d62728"}
    width = 0.8 / len(paths)
    fig, ax = plt.subplots(figsize=(5 + 2 * len(paths), 5.5))  # wider with more bars, so their labels fit
    for i, path in enumerate(paths):
        runs = [cells[(q.key, path)] for q in qs]
        xs = [j + (i - (len(paths) - 1) / 2) * width for j in range(len(qs))]
        meds = [c.median for c in runs]
        lo = [c.median - min(c.seconds) for c in runs]
        hi = [max(c.seconds) - c.median for c in runs]
        bars = ax.bar(xs, meds, width, label=PATH_LABELS[path], color=colors[path], yerr=[lo, hi], capsize=3)
        for bar, q, c in zip(bars, qs, runs, strict=True):
            note = f"{c.median:.2f}s"
            if path != "native":
                note += f"\n{speedup(cells, q, path):.2f}×"
                if c.files_kept is not None:
                    note += f"\n{c.files_kept}/{c.files_total}f"
            ax.annotate(note, (bar.get_x() + bar.get_width() / 2, max(c.seconds)), xytext=(0, 3),
                        textcoords="offset points", ha="center", va="bottom", fontsize=7)
    ax.set_yscale("log")
    ax.set_xticks(range(len(qs)), [q.title.replace(" (", "\n(") for q in qs], fontsize=8)
    ax.set_ylabel("median seconds (log scale; whiskers: min..max)")
    conf = "" if info["extra_spark_conf"] == "none" else f", extra conf {info['extra_spark_conf']}"
    ax.set_title(f"TPC-H lineitem SF{info['scale_factor']:g}, {info['files']} files sorted by l_shipdate — "
                 f"median of {info['repeat']} runs, {info['cores']} cores{conf}\n"
                 "label: seconds, speed-up vs (a), files read/total", fontsize=9)
    ax.legend(loc="upper left", fontsize=8)
    ymin = min(min(c.seconds) for c in cells.values())
    ymax = max(max(c.seconds) for c in cells.values())
    ax.set_ylim(ymin / 2, ymax * 4)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
