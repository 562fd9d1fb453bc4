"""``hsh``: register Parquet datasets in a Hive Metastore and query them with pruning.

Every command that needs a metastore takes ``--metastore thrift://host:port``, falls back to
``$HSH_METASTORE_URI``, and otherwise starts (or reuses) the embedded metastore. Errors are one line on stderr and
exit code 2; ``--json`` prints machine-readable output on stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import traceback
from collections.abc import Sequence
from typing import NoReturn

from rich.markup import escape

from storage_handler.cli import follow, pruning, services, sql, stats, tables
from storage_handler.cli.output import err
from storage_handler.errors import StorageHandlerError


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage error as one ``error:`` line (exit code 2) like every other error."""

    def error(self, message: str) -> NoReturn:
        err.print(f"[bold red]error:[/bold red] {escape(self.prog)}: {escape(message)} "
                  f"(see `{escape(self.prog)} --help`)", highlight=False)
        self.exit(2)


_VERBOSE_HELP = "log at INFO level, and show tracebacks and Spark's output"


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="hsh", description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help=_VERBOSE_HELP)
    parser.add_argument("--version", action="version", version=f"hsh {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    services.add_commands(sub)
    tables.add_commands(sub)
    sql.add_commands(sub)
    pruning.add_commands(sub)
    follow.add_commands(sub)
    stats.add_commands(sub)
    _verbose_everywhere(parser)
    return parser


def _verbose_everywhere(parser: argparse.ArgumentParser) -> None:
    """``-v`` after the command too (``hsh sql -v ...``), as people type it; absent there, the top level's stands."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                if not any("-v" in a.option_strings for a in child._actions):
                    child.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                                       help=_VERBOSE_HELP)
                _verbose_everywhere(child)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("hive-storage-handler")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "(not installed)"


class _Lines(logging.Formatter):
    """Log records as the CLI's other messages (``warning: ...``); with ``-v`` with the logger's name too."""

    def __init__(self, verbose: bool) -> None:
        super().__init__()
        self.verbose = verbose

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        return f"{record.levelname.lower()}: {record.name}: {text}" if self.verbose else \
            f"{record.levelname.lower()}: {text}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = logging.StreamHandler()
    handler.setFormatter(_Lines(args.verbose))
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, handlers=[handler])
    # thrift logs every failed connect attempt at ERROR; our own error message says it better, once.
    logging.getLogger("thrift").setLevel(logging.CRITICAL)
    try:
        return int(args.func(args) or 0)
    except StorageHandlerError as e:
        one_line = " ".join(str(e).split())  # a library's message may carry newlines; ours is one line
        err.print(f"[bold red]error:[/bold red] {escape(one_line)}", highlight=False)
        return 2
    except OSError as e:  # the machine refused (an HSH_HOME that cannot be created, a full disk): one line
        if args.verbose:
            raise
        err.print(f"[bold red]error:[/bold red] {escape(' '.join(str(e).split()))} (check HSH_HOME / HSH_CACHE and "
                  "their permissions; -v shows where it failed)", highlight=False)
        return 2
    except KeyboardInterrupt:
        err.print("interrupted")
        return 130


def entry() -> NoReturn:
    """The ``hsh`` executable: :func:`main`, then an exit that skips the interpreter's teardown.

    Why: pyarrow (14 through 26 at least, apache/arrow#49942) can abort the process *after* a command has finished
    and printed its result (``terminate called without an active exception``, exit status -6), when its C++
    thread pools and buffers that reference Python objects are destroyed while the interpreter shuts down. That
    turns a successful command into a failure for every script that checks the exit status. Everything a command
    owns is released before :func:`main` returns (files closed, pools joined, processes it started stopped by
    PID, a Spark session stopped -- its JVM also exits when this process's pipe closes), so after flushing the
    output nothing is left for the teardown to do but the part that can crash; the exit status is main's.
    """
    try:
        code = main()
    except SystemExit as e:  # argparse's --help and usage errors
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if e.code is not None and not isinstance(e.code, int):
            print(e.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 - an unexpected error: its traceback, then the usual status 1
        traceback.print_exc()
        code = 1
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing more can be said
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    entry()
