"""Options shared by several commands."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from storage_handler.cli.output import say

if TYPE_CHECKING:
    from metastore.security.config import KerberosSettings
    from storage_handler.stats import FooterEngine


def add_metastore_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--metastore", metavar="URI",
        help="thrift://host:port of the Hive Metastore (default: $HSH_METASTORE_URI, else the embedded one)",
    )
    add_kerberos_options(p)


def add_kerberos_options(p: argparse.ArgumentParser) -> None:
    """How this process authenticates to a Kerberos-secured metastore (``hive.metastore.sasl.enabled=true``)."""
    group = p.add_argument_group(
        "Kerberos", "for a metastore that requires it; Hive's own keys (hive.metastore.sasl.enabled, "
                    "hive.metastore.kerberos.principal) are read from hive-site.xml on $HIVE_CONF_DIR / "
                    "$HADOOP_CONF_DIR, so these are needed only where those do not say it")
    group.add_argument("--metastore-principal", metavar="PRINCIPAL",
                       help="the metastore's Kerberos principal, e.g. hive/_HOST@EXAMPLE.COM (_HOST becomes the "
                            "metastore URI's host); switches Kerberos on (default: hive.metastore.kerberos."
                            "principal, or $HSH_METASTORE_PRINCIPAL)")
    group.add_argument("--keytab", metavar="FILE",
                       help="authenticate from this keytab (with --principal) instead of the ticket cache (kinit); "
                            "tickets are renewed from it when due")
    group.add_argument("--principal", metavar="NAME", help="the principal of --keytab, e.g. etl@EXAMPLE.COM")


def add_json_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print machine-readable JSON on stdout")


def metastore_uri(args: argparse.Namespace) -> str:
    """The metastore the command uses; its Kerberos settings (flags, site files, ``HSH_*``) are resolved first,
    once, and become this process's (:func:`configure_security`): every connection it and its children open uses
    them, and a wrong setting fails before anything starts."""
    from dataclasses import replace

    from metastore.local import embedded_kerberos_principal, resolve_metastore_uri
    from metastore.security.config import configure_process

    settings = configure_security(args)
    uri: str = resolve_metastore_uri(args.metastore, progress=None if getattr(args, "json", False) else say)
    if not settings.sasl_enabled:
        principal = embedded_kerberos_principal(uri)  # the embedded metastore runs secured: it says as whom
        if principal:
            configure_process(replace(settings, sasl_enabled=True, service_principal=principal))
    return uri


def configure_security(args: argparse.Namespace) -> KerberosSettings:
    """The Kerberos settings of the flags over the site files and ``HSH_*``, made this process's (and so its
    children's: a Spark session, the prune service, a footer job)."""
    from metastore.security.config import configure_process, resolve

    return configure_process(resolve(service_principal=getattr(args, "metastore_principal", None),
                                     keytab=getattr(args, "keytab", None),
                                     client_principal=getattr(args, "principal", None)))


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


NO_STATS_HELP = ("do not publish the index as the metastore's statistics (numFiles/numRows/totalSize, column "
                 "statistics); statistics published before whose files changed are still marked stale")
OVERWRITE_STATS_HELP = ("also replace statistics a user or another engine's ANALYZE wrote (by default they are kept "
                        "while their files are unchanged)")


def add_statistics_options(p: Any) -> None:
    """``--no-stats`` / ``--overwrite-stats``: what ``register``, ``sync`` (and ``index refresh``) do about the
    metastore's statistics."""
    p.add_argument("--no-stats", action="store_true", help=NO_STATS_HELP)
    p.add_argument("--overwrite-stats", action="store_true", help=OVERWRITE_STATS_HELP)


def statistics_choice(args: argparse.Namespace) -> Any:
    """The statistics choice the flags make (a ``StatisticsChoice``; imported late: no registration at start-up)."""
    from storage_handler.errors import ConfigurationError
    from storage_handler.registration.statistics import StatisticsChoice

    if getattr(args, "no_stats", False) and getattr(args, "overwrite_stats", False):
        raise ConfigurationError("--no-stats and --overwrite-stats contradict each other; give one of them")
    return StatisticsChoice(publish=not getattr(args, "no_stats", False),
                            overwrite=getattr(args, "overwrite_stats", False))
