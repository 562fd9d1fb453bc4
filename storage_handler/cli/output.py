"""Console output for the CLI: rich tables for people, JSON for scripts, one-line errors, progress on stderr."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)


def say(message: str) -> None:
    """Progress narration: stderr, so stdout stays clean for --json."""
    err.print(f"[dim]•[/dim] {escape(message)}", highlight=False)


def narrate(message: str) -> None:
    """A command's progress narration: on a terminal, or with ``-v``; never in a script's captured stderr, where a
    failed command's ``error:`` line is the only line and a successful one's warnings are all there is."""
    if err.is_terminal or logging.getLogger().isEnabledFor(logging.INFO):
        say(message)


def warn(message: str) -> None:
    """One ``warning:`` line on stderr (whatever the output mode): something the user must act on."""
    err.print(f"[bold yellow]warning:[/bold yellow] {escape(' '.join(message.split()))}", highlight=False)


def warn_unreadable(summary: dict[str, Any], *, planned: bool = False) -> None:
    """The one line every command that indexes prints when the table has unreadable files (``summary`` is
    :func:`storage_handler.registration.describe.unreadable_files`)."""
    count = summary.get("count", 0)
    if not count:
        return
    paths = [f["path"] for f in summary.get("files", [])[:3]]
    more = f", … ({count - len(paths)} more)" if count > len(paths) else ""
    one = count == 1
    verb = "would be" if planned else ("was" if one else "were")
    warn(f"{count} file{' is' if one else 's are'} not readable Parquet and {verb} recorded as unreadable: "
         f"{', '.join(paths)}{more} (kept in every scan; fix or remove {'it' if one else 'them'}, then "
         "`hsh index refresh`)")


def warn_statistics(report: dict[str, Any] | None) -> None:
    """The one line a command prints when some statistics were not published (``report`` is
    :meth:`storage_handler.registration.statistics.StatisticsReport.as_dict`); the command itself succeeded."""
    line = (report or {}).get("warning")
    if line:
        warn(line)


def statistics_line(report: dict[str, Any]) -> str:
    """A publish (or a ``--dry-run``'s plan) in one line for people; ``--json`` has every number."""
    if not report.get("publish", True):
        return f"not published (--no-stats); table: {report.get('table_level', 'off')}"
    if "partitions_listed" in report or "note" in report:  # a dry run's plan
        table = report.get("table", {})
        return (f"would publish numFiles={table.get('numFiles')} numRows={table.get('numRows', 'unknown')} "
                f"totalSize={table.get('totalSize')}, column statistics for "
                f"{', '.join(sorted(table.get('columns', {}))) or 'no column'}"
                + (f", on {report['partitions']} partitions" if report.get("partitions") else ""))
    parts = ""
    if report.get("partitions"):
        counts = [(report.get(k, 0), label) for k, label in (
            ("partitions_written", "written"), ("partitions_unchanged", "unchanged"),
            ("partitions_kept", "kept (others')"), ("partitions_marked_stale", "marked stale"))]
        parts = f"{report['partitions']} partitions: " + ", ".join(f"{n} {label}" for n, label in counts if n) + "; "
    columns = ", ".join(report.get("columns", [])) or "none"
    later = report.get("background")
    if later:
        parts = (f"{report['partitions_deferred']} partitions: being published in the background (pid {later['pid']}, "
                 f"log {later['log']}; `hsh describe` follows it); ")
    return f"{parts}table: {report.get('table_level')}; column statistics: {columns}"


def published_line(info: dict[str, Any]) -> str:
    """``hsh describe``'s statistics in one line (see :func:`storage_handler.registration.describe`)."""
    if not info.get("published_at"):
        numbers = " ".join(f"{k}={info[k]}" for k in ("numFiles", "numRows", "totalSize") if info.get(k) is not None)
        return f"not published by hsh{'; the metastore has ' + numbers if numbers else ''}"
    state = "current" if info.get("current") else f"stale ({info.get('why_stale')})"
    parts = f", {info['partitions']} partitions" if info.get("partitions") is not None else ""
    return (f"published {info['published_at']} from index version {info['index_version']} ({state}): "
            f"numFiles={info.get('numFiles')} numRows={info.get('numRows', 'unknown')} "
            f"totalSize={info.get('totalSize')}{parts}; columns: {', '.join(info.get('columns') or []) or 'none'}")


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def print_rows(columns: Sequence[str], rows: Sequence[Sequence[Any]], title: str | None = None) -> None:
    table = Table(title=title, show_lines=False)
    for c in columns:
        table.add_column(c)
    for r in rows:
        table.add_row(*("NULL" if v is None else escape(str(v)) for v in r))
    out.print(table)


def print_mapping(data: dict[str, Any], title: str | None = None) -> None:
    table = Table(title=title, show_header=False)
    table.add_column("key", style="bold")
    table.add_column("value")
    for k, v in data.items():
        table.add_row(escape(k), escape(json.dumps(v, default=str) if isinstance(v, (list, dict)) else str(v)))
    out.print(table)


@contextmanager
def progress_bar(description: str, total: int, enabled: bool = True) -> Iterator[Any]:
    """A rich progress bar on a terminal; a no-op elsewhere. Yields ``update(done, total)``."""
    if not enabled or not err.is_terminal or total <= 0:
        yield lambda done, total: None
        return
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err, transient=True) as bar:
        task = bar.add_task(description, total=total)
        yield lambda done, total: bar.update(task, completed=done, total=total)


class _FilesPerSecond(ProgressColumn):
    def render(self, task: Task) -> Text:
        return Text(f"{task.speed:,.0f} files/s" if task.speed else "- files/s", style="progress.data.speed")


@contextmanager
def footer_progress(enabled: bool = True) -> Iterator[Any]:
    """Progress of reading Parquet footers (files done of total, files per second, time left) on a terminal's
    stderr; nothing elsewhere or with ``--json``. Yields ``update(done, total)``; the bar appears at the first
    update, so a command that reads no footer shows none."""
    if not enabled or not err.is_terminal:
        yield None
        return
    bar = Progress(TextColumn("reading Parquet footers"), BarColumn(), MofNCompleteColumn(), _FilesPerSecond(),
                   TimeRemainingColumn(), console=err, transient=True)
    task: list[Any] = []

    def update(done: int, total: int) -> None:
        if not task:
            bar.start()
            task.append(bar.add_task("footers", total=total))
        bar.update(task[0], completed=done, total=total)

    try:
        yield update
    finally:
        if task:
            bar.stop()
