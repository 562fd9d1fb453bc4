"""Options shared by several commands."""

from __future__ import annotations

import argparse

from storage_handler.cli.output import say


def add_metastore_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--metastore", metavar="URI",
        help="thrift://host:port of the Hive Metastore (default: $HSH_METASTORE_URI, else the embedded one)",
    )


def add_json_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print machine-readable JSON on stdout")


def metastore_uri(args: argparse.Namespace) -> str:
    from metastore.local import resolve_metastore_uri

    return resolve_metastore_uri(args.metastore, progress=None if getattr(args, "json", False) else say)
