"""``hsh stats publish``: the index published as a table's metastore statistics (issue 27).

What ``register``, ``sync`` and ``index refresh`` do after indexing, on its own: for a table registered with
``--no-stats``, after statistics were refused, and as the background step ``register`` starts for many partitions
(:mod:`storage_handler.registration.background`). It reads the table, its partitions and the committed index, and
writes only what differs; running it again is safe.
"""

from __future__ import annotations

import argparse
from typing import Any

from storage_handler.cli.common import (
    OVERWRITE_STATS_HELP,
    add_json_option,
    add_metastore_option,
    metastore_uri,
)
from storage_handler.cli.output import print_json, say, statistics_line, warn_statistics


def add_commands(sub: Any) -> None:
    p = sub.add_parser("stats", help="the metastore's statistics of registered tables")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    a = actions.add_parser("publish", help="publish the index as the table's statistics (numFiles, numRows, "
                                           "totalSize, column statistics; per partition and for the table)")
    a.add_argument("table", metavar="DB.TABLE")
    a.add_argument("--overwrite-stats", action="store_true", help=OVERWRITE_STATS_HELP)
    add_metastore_option(a)
    add_json_option(a)
    a.set_defaults(func=_publish)


def _publish(args: argparse.Namespace) -> int:
    from metastore.client import MetastoreClient
    from metastore.names import parse_table_name
    from storage_handler.registration import background
    from storage_handler.registration.statistics import StatisticsChoice, publish_statistics

    name = parse_table_name(args.table)
    uri = metastore_uri(args)
    with background.publishing(name) as result, MetastoreClient(uri) as client:
        report = publish_statistics(client, name, choice=StatisticsChoice(overwrite=args.overwrite_stats)).as_dict()
        result.update({k: report[k] for k in ("partitions", "partitions_written", "partitions_unchanged",
                                              "partitions_kept", "table_level", "warning")})
    warn_statistics(report)
    if args.json:
        print_json(report)
    else:
        say(f"statistics of {name}: {statistics_line(report)}")
    return 1 if report.get("warning") else 0
