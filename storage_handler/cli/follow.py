"""``hsh follow``: keep the indexes of registered tables current as anybody writes them
(:mod:`storage_handler.freshness.follower` says how and at what cost).

Runs until SIGTERM or SIGINT (each stops it after the poll under way), or for one poll with ``--once``. One line per
event on stderr (``--json``: one JSON object per line on stdout). A state folder (``$HSH_HOME/follow``) serves one
follower at a time: a second one fails with one ``error:`` line.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from rich.markup import escape

from storage_handler.cli.common import add_json_option, add_metastore_option, metastore_uri
from storage_handler.cli.output import err
from storage_handler.errors import ConfigurationError, StorageHandlerError


class FollowError(StorageHandlerError, RuntimeError):
    """``--once``: a table (or the metastore) failed during the poll."""


def add_commands(sub: Any) -> None:
    p = sub.add_parser("follow", help="keep the indexes of registered tables current as anybody writes them "
                                      "(runs until stopped; --once: one poll)")
    p.add_argument("tables", nargs="*", metavar="DB.TABLE",
                   help="tables to follow; DB.* for every registered table of database DB (default, or --all: "
                        "every table registered with the handler; looked for again every --rescan-polls polls)")
    p.add_argument("--all", action="store_true", help="follow every registered table (the default without tables)")
    p.add_argument("--interval", type=float, default=2.0, metavar="SECONDS",
                   help="seconds between polls of the metastore and of local folders' stamps (default 2)")
    p.add_argument("--sweep-seconds", type=float, default=600.0, metavar="N",
                   help="list every registered folder of a table this often, which catches files rewritten in "
                        "place (default 600)")
    p.add_argument("--listing-seconds", type=float, default=10.0, metavar="N",
                   help="object stores: list the table prefix this often, ceil(objects/1000) requests each time "
                        "(default 10)")
    p.add_argument("--rescan-polls", type=int, default=15, metavar="N",
                   help="without tables: look for newly registered or dropped tables every N polls (default 15)")
    p.add_argument("--once", action="store_true", help="poll once and exit (exit code 2 if a table failed)")
    add_metastore_option(p)
    add_json_option(p)
    p.set_defaults(func=_follow)


def _follow(args: argparse.Namespace) -> int:
    from metastore.client import MetastoreClient
    from metastore.names import parse_table_name
    from storage_handler.freshness.follow_events import Event, FollowOptions
    from storage_handler.freshness.follower import Follower
    from storage_handler.freshness.stamps import exclusive
    from storage_handler.home import state_home

    if args.tables and args.all:
        raise ConfigurationError("give tables or --all, not both")
    for flag, value, least in (("--interval", args.interval, 0.01), ("--sweep-seconds", args.sweep_seconds, 0.0),
                               ("--listing-seconds", args.listing_seconds, 0.0),
                               ("--rescan-polls", args.rescan_polls, 1)):
        if not value >= least:
            raise ConfigurationError(f"{flag} {value}: give at least {least:g}")
    databases = sorted({t[:-2].lower() for t in args.tables if t.endswith(".*")})
    for db in databases:
        parse_table_name(f"{db}.t")  # the database's name, checked as a table name's first part would be
    names = [parse_table_name(t) for t in args.tables if not t.endswith(".*")]
    options = FollowOptions(interval=args.interval, sweep_seconds=args.sweep_seconds,
                            listing_seconds=args.listing_seconds, rescan_polls=args.rescan_polls)
    state = state_home() / "follow"
    incidents: list[Event] = []
    emit = _printer(args.json, incidents if args.once else None)
    uri = metastore_uri(args)
    with exclusive(state), MetastoreClient(uri, retries=2, max_backoff=2.0) as client:
        _check(client, names, databases)
        follower = Follower(client, options, state, emit, tables=names, discover=bool(databases) or not names,
                            databases=databases)
        if args.once:
            follower.poll()
            if incidents:
                more = f" (and {len(incidents) - 1} more)" if len(incidents) > 1 else ""
                first = incidents[0]
                raise FollowError(f"{first.table or 'metastore'}: {first.data.get('error')}{more}")
            return 0
        stop = threading.Event()
        previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            follower.run(stop)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    return 0


def _check(client: Any, tables: Sequence[Any], databases: Sequence[str]) -> None:
    """Refuse, before following anything, a metastore this process cannot talk to (it wants another
    authentication), a named database or table that does not exist, or a table that is not registered."""
    from storage_handler.contract import PARAM_HANDLER
    from storage_handler.freshness.follow_events import NotRegisteredError

    if not databases and not tables:
        client.get_all_databases()  # discovery makes its first call later, where failures are retried forever
    for db in databases:
        client.get_database(db)
    for name in tables:
        found = client.get_table(name.database, name.table)
        if PARAM_HANDLER not in (found.parameters or {}):
            raise NotRegisteredError(f"table {name} is not registered with the handler (no {PARAM_HANDLER} "
                                     f"parameter): `hsh register {name} <path>` first, or leave it out")


def _printer(as_json: bool, incidents: list[Any] | None) -> Callable[[Any], None]:
    """Where events go: JSON lines on stdout, or one line each on stderr; with ``incidents`` (``--once``) an
    incident is kept for the command's one ``error:`` line instead of being printed."""
    labels = {"incident": "[bold red]incident:[/bold red] ", "warning": "[bold yellow]warning:[/bold yellow] ",
              "recovered": "[green]recovered:[/green] "}

    def emit(event: Any) -> None:
        if incidents is not None and event.kind == "incident":
            incidents.append(event)
            return
        if as_json:
            sys.stdout.write(json.dumps(event.as_dict(), default=str) + "\n")
            sys.stdout.flush()
            return
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(event.at))
        err.print(f"[dim]{when}[/dim] {labels.get(event.kind, '')}{escape(event.message)}", highlight=False)

    return emit
