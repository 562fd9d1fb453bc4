"""The report of ``bench_overhead.py`` (issue 30): the markdown tables, their reading, and the chart, from a run's
results (a fresh run's, or an earlier run's JSON with ``--from-json``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from spread import LEVEL

from storage_handler.contract import SETTING_DEFINITION_RECHECK

PATHS = ("native", "handler", "limit", "resolved", "rechecked")
RECHECK_SECONDS = 2  # the rechecked path's spark.hsh.tableDefinition.recheckSeconds
PHASES = ("analysis", "optimization", "planning")
TARGET = 1.15


def _ratio(s: dict[str, Any], suffix: str = "") -> str:
    """A ratio cell: the median ratio, and its interval (``spread.py``) when the run recorded one."""
    interval = s.get(f"interval{suffix}")
    return f"**{s[f'ratio{suffix}']:.2f}×**" + (f" ({interval[0]:.2f}-{interval[1]:.2f})" if interval else "")


def _naming(path: dict[str, Any], limit: dict[str, Any]) -> float:
    """Milliseconds ``path`` spent resolving the table's name beyond what the limit's view spent."""
    return float(path["rules"]["resolve_relations"] - limit["rules"]["resolve_relations"])


def _outside_rules(path: dict[str, Any]) -> float:
    return float(sum(path["phases"].values()) - sum(path["rules"].values()))


def _running(path: dict[str, Any]) -> float:
    """Milliseconds after planning: running the plan and returning its rows."""
    return float(path["ms"] - sum(path["phases"].values()))


def markdown(result: dict[str, Any]) -> str:
    m = result["machine"]
    lines = [
        "# The fixed cost of a query through the handler",
        "",
        f"TPC-H lineitem SF {m['scale']}: {m['files']} files sorted by `l_shipdate`, one folder. Medians of "
        f"{m['repeat']} interleaved runs (native, handler, limit, ...; the order turned by one path each round) "
        f"after {m['warmup']} warm-up rounds, one "
        f"Spark session; a run is `spark.sql(text).collect()` (analysis included). {m['cores']} cores, "
        f"pyspark {m['pyspark']}, commit {m['commit']}, {m['date']}; other processes used "
        f"{m['other_cpu_share']:.0%} of the CPU during the run. Target: handler ≤ {TARGET}× limit. In brackets after a "
        f"ratio: the range it takes in {LEVEL:.0%} of resamplings of the rounds (`spread.py`): runs of the same code "
        "spread about that much.",
        "",
        "| metastore | query | native ms | handler ms | limit ms | handler / limit | resolved ms | resolved / limit | "
        f"rechecked ({RECHECK_SECONDS} s) ms | rechecked / limit |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for state, queries in result["spark"].items():
        for key, s in queries.items():
            beside = " | ".join(f"{s[p]['ms']:.0f} | {_ratio(s, f'_{p}')}" if p in s else "– | –"
                                for p in ("resolved", "rechecked"))
            lines.append(f"| {state} | {key} | {s['native']['ms']:.0f} | {s['handler']['ms']:.0f} | "
                         f"{s['limit']['ms']:.0f} | {_ratio(s)} | {beside} |")
    lines += ["", "Where the handler's extra milliseconds go (medians, ms; Spark's phases against the limit's, the "
              "extension's JVM steps, the prune service's own phases):", "",
              "| metastore | query | analysis | optimization | planning | JVM: table definition check | JVM: resolve "
              "relation | JVM: prune round trip (service inside it) | JVM: waiting for the prefetched answer | JVM: "
              "answer → partitions | service: listing / stats / metastore | Hive client calls | scans, metastore "
              "calls, index loads, index row groups read per query |",
              "|---|---|---|---|---|---:|---:|---|---:|---:|---|---:|---|"]
    for state, queries in result["spark"].items():
        for key, s in queries.items():
            h, lim = s["handler"], s["limit"]
            ph = " | ".join(f"{h['phases'][p]:.0f} vs {lim['phases'][p]:.0f}" for p in PHASES)
            st = h["steps"]
            sv, c = h["service"], h["counts"]
            lines.append(
                f"| {state} | {key} | {ph} | {st.get('table_definition', 0):.1f} | {st.get('resolve_relation', 0):.1f} | "
                f"{st.get('prune_round_trip', 0):.1f} ({st.get('service_ms', 0):.1f}) | "
                f"{st.get('answer_reused', 0):.1f} | {st.get('answer_to_partitions', 0):.1f} | "
                f"{sv.get('seconds_listing', 0):.1f} / {sv.get('seconds_stats', 0):.1f} / "
                f"{sv.get('seconds_metastore', 0):.1f} | {h['hive_calls']:.0f} | {h['scans_per_query']:.0f}, "
                f"{c.get('metastore_calls', 0):.0f}, {c.get('index_loads', 0):.0f}, "
                f"{c.get('index_row_groups_read', 0):.0f} |")
    lines += ["", "The gap, handler minus limit, in Spark's terms (medians, ms; the rule times come from Spark's "
              "`RuleExecutor` metrics, so the parts need not sum exactly): resolving the table's name "
              "(`ResolveRelations`: a temporary view against the metastore's `getTable` -- for the native path also "
              "its conversion into Spark's definition, for the handler's session catalog only the check that the "
              "definition it holds was made from the same metastore table), the handler's own rules, Spark's other "
              "rules, the phases' time outside any rule, and running the plan after planning:", "",
              "| metastore | query | gap | resolving the name (native's) | handler's rules | other rules | "
              "phases outside rules | running the plan | the query thread's CPU, handler vs limit |",
              "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for state, queries in result["spark"].items():
        for key, s in queries.items():
            h, lim, nat = s["handler"], s["limit"], s["native"]
            if "rules" not in h:
                continue
            lines.append(
                f"| {state} | {key} | {h['ms'] - lim['ms']:.1f} | {_naming(h, lim):.1f} ({_naming(nat, lim):.1f}) | "
                f"{h['rules']['hsh_rules']:.1f} | {h['rules']['other_rules'] - lim['rules']['other_rules']:.1f} | "
                f"{_outside_rules(h) - _outside_rules(lim):.1f} | {_running(h) - _running(lim):.1f} | "
                f"{h.get('cpu_ms', 0):.1f} vs {lim.get('cpu_ms', 0):.1f} |")
    warm = result["spark"].get("warm", {}).get("point lookup")
    if warm and "rules" in warm["handler"]:
        h, lim, nat = warm["handler"], warm["limit"], warm["native"]
        gap = h["ms"] - lim["ms"]
        name = _naming(h, lim)
        allowed = (TARGET - 1) * lim["ms"]
        share = (f"of its {gap:.0f} ms gap, {name:.0f} ms is" if name <= gap else
                 f"its gap is {gap:.0f} ms (medians of different runs: the parts need not add up), less than the "
                 f"{name:.0f} ms of")
        lines += ["", f"Reading the warm point lookup: {share} Spark resolving the "
                  f"table's name against the metastore (one `get_table`, whose answer the handler's session catalog "
                  f"compares with the one its definition was made from), which Spark's own read of the plain table "
                  f"pays as well with the conversion added ({nat['rules']['resolve_relations']:.0f} ms) and the "
                  f"limit's temporary view does not; the "
                  f"handler's own rules take {h['rules']['hsh_rules']:.1f} ms. The target allows {allowed:.0f} ms "
                  f"over this limit; the name's resolution alone uses {name / allowed:.0%} of that" + (
                      ", so while Spark looks a metastore table up for every query (and the limit looks up "
                      "nothing) the target cannot be met here." if name >= allowed else ".")]
        if "resolved" in warm:
            lines[-1] += (f" Over a DataFrame of the table resolved once (every run still prunes afresh) the lookup "
                          f"takes {warm['resolved']['ms']:.0f} ms, {warm['ratio_resolved']:.2f}× the limit.")
        if "cpu_ms" in h:
            cpu = h["cpu_ms"] - lim["cpu_ms"]
            lines[-1] += (f" The JVM thread that runs the query (py4j's, for `spark.sql` and `collect`) used "
                          f"{h['cpu_ms']:.0f} ms of CPU against the limit's {lim['cpu_ms']:.0f} ms" + (
                              f": {cpu:.0f} of the {gap:.0f} ms are work on that thread. The rest is that thread "
                              "waiting: for the metastore's `get_table`, and for a core, which it "
                              f"shares ({m['cores']} here) with the prune service listing and evaluating while "
                              "Spark plans and runs the query (a prune request sent while the driver plans took "
                              "17-20 ms instead of 11 in a side-by-side trial)." if cpu < gap else
                              ": the whole gap is work on that thread."))
        if "rechecked" in warm:
            lines[-1] += (f" With `{SETTING_DEFINITION_RECHECK}={RECHECK_SECONDS}` (the definition checked in the "
                          f"metastore at most every {RECHECK_SECONDS} s; this driver's own changes seen at once) "
                          f"`spark.sql` takes {warm['rechecked']['ms']:.0f} ms, {warm['ratio_rechecked']:.2f}× the "
                          "limit.")
    if result.get("hiveserver2"):
        lines += ["", "Through HiveServer2 (`pyhive` against the embedded Thrift server; warm metastore):", "",
                  "| query | handler ms | limit ms | handler / limit | JVM: prune round trip (service) |",
                  "|---|---:|---:|---:|---|"]
        for key, s in result["hiveserver2"].items():
            st = s["steps"]
            lines.append(f"| {key} | {s['handler_ms']:.0f} | {s['limit_ms']:.0f} | {_ratio(s)} | "
                         f"{st.get('prune_round_trip', 0):.1f} ({st.get('service_ms', 0):.1f}) |")
    lines += ["", *result.get("notes", [])]
    return "\n".join(lines) + "\n"


def chart(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels, values = [], []
    for state, queries in result["spark"].items():
        for key, s in queries.items():
            labels.append(f"{key}\n{state}")
            values.append([s[p]["ms"] if p in s else 0.0 for p in PATHS])
    fig, ax = plt.subplots(figsize=(9, 4))
    width = 0.8 / len(PATHS)
    for i, name in enumerate(PATHS):
        ax.bar([x + (i - (len(PATHS) - 1) / 2) * width for x in range(len(labels))], [v[i] for v in values], width,
               label=name)
    ax.set_xticks(range(len(labels)), labels)
    ax.set_ylabel("median ms")
    ax.set_yscale("log")
    ax.set_title("Fixed cost: handler against its limit (lower is better)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
