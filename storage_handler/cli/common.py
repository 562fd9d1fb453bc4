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
                   help="footers read at once (default: 2 per core on a local disk, 32 on an object store; "
                        "per Spark task with --engine spark)")
    p.add_argument("--engine", choices=("local", "spark", "auto"), default="auto",
                   help="where footers are read: in this process (local), as a Spark job (spark), or auto "
                        "(default): on Spark only when a master is given and at least --engine-threshold files "
                        "need reading, else locally")
    p.add_argument("--spark-master", metavar="URL",
                   help="Spark master of the footer job, e.g. spark://host:7077 (default: $HSH_SPARK_MASTER; "
                        "--engine spark without one runs local[*])")
    p.add_argument("--engine-threshold", type=int, metavar="N",
                   help="with --engine auto: files to read from which Spark is used (default: "
                        "$HSH_SPARK_THRESHOLD, else 200000)")


def footer_engine(args: argparse.Namespace) -> FooterEngine:
    """The engine the options ask for (see :func:`storage_handler.stats.engines.spark.choose_engine`)."""
    from storage_handler.errors import ConfigurationError
    from storage_handler.stats.engines.spark import choose_engine

    workers = getattr(args, "workers", None)
    if workers is not None and workers < 1:
        raise ConfigurationError(f"--workers {workers}: give at least 1")
    return choose_engine(getattr(args, "engine", "auto"), master=getattr(args, "spark_master", None),
                         threshold=getattr(args, "engine_threshold", None), max_workers=workers)
