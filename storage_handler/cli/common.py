"""Options shared by several commands."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from storage_handler.cli.output import say

if TYPE_CHECKING:
    from storage_handler.stats import FooterEngine


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


def add_footer_options(p: argparse.ArgumentParser) -> None:
    """How the footers of new or changed files are read (``register``, ``sync``, ``index refresh``)."""
    p.add_argument("--workers", type=int, metavar="N",
                   help="footers read at once (default: 2 per core on a local disk, 32 on an object store)")


def footer_engine(args: argparse.Namespace) -> FooterEngine:
    """The engine the options ask for."""
    from storage_handler.errors import ConfigurationError
    from storage_handler.stats import LocalEngine

    workers = getattr(args, "workers", None)
    if workers is not None and workers < 1:
        raise ConfigurationError(f"--workers {workers}: give at least 1")
    return LocalEngine(max_workers=workers)
