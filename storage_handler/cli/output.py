"""Console output for the CLI: rich tables for people, JSON for scripts, one-line errors, progress on stderr."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)


def say(message: str) -> None:
    """Progress narration: stderr, so stdout stays clean for --json."""
    err.print(f"[dim]•[/dim] {escape(message)}", highlight=False)


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
