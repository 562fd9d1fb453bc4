"""``hsh metastore|thriftserver start|stop|status``: the embedded services; ``hsh spark-conf``: the settings that
load the handler into a Spark you start yourself (``spark-submit``, ``spark-sql``, ``pyspark``).

Both services are unauthenticated and bound to 127.0.0.1 by default; ``start --kerberos --keytab K --principal P``
makes them require Kerberos as P (still on 127.0.0.1 only)."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from typing import Any

from storage_handler.cli.common import (
    add_json_option,
    add_kerberos_options,
    add_metastore_option,
    configure_security,
    metastore_uri,
)
from storage_handler.cli.output import print_json, print_mapping, say
from storage_handler.errors import ConfigurationError


def add_commands(sub: Any) -> None:
    for name, helptext in (("metastore", "the embedded Hive Metastore (Derby-backed, from the pyspark wheel)"),
                           ("thriftserver", "the embedded HiveServer2 (Spark Thrift Server, bound to 127.0.0.1)")):
        p = sub.add_parser(name, help=helptext)
        actions = p.add_subparsers(dest="action", required=True)
        for action in ("start", "stop", "status"):
            a = actions.add_parser(action)
            add_json_option(a)
            if action == "start":
                a.add_argument("--port", type=int, help="port to listen on (default: a free one)")
                a.add_argument("--kerberos", action="store_true",
                               help=f"require Kerberos: the {name} runs as --principal (e.g. hive/127.0.0.1@REALM; "
                                    "_HOST becomes 127.0.0.1) from --keytab"
                                    + ("; it also authenticates to a secured metastore with them"
                                       if name == "thriftserver" else ""))
                if name == "thriftserver":
                    add_metastore_option(a)  # --keytab/--principal come with the metastore's Kerberos options
                else:
                    a.add_argument("--keytab", metavar="FILE", help="the metastore's keytab (with --kerberos)")
                    a.add_argument("--principal", metavar="NAME",
                                   help="the metastore's principal (with --kerberos), e.g. hive/127.0.0.1@REALM")
                    a.add_argument("--rpc-protection", choices=("authentication", "integrity", "privacy"),
                                   default="authentication",
                                   help="with --kerberos: hadoop.rpc.protection, the SASL protection the metastore "
                                        "requires (default authentication; privacy encrypts every call)")
            a.set_defaults(func=_run, service=name)
    conf = sub.add_parser("spark-conf", help="the --conf flags that make spark-submit / spark-sql / pyspark read "
                                             "registered tables through the handler")
    conf.add_argument("--s3", action="store_true",
                      help="also the settings that let Spark read s3a:// (and s3://, s3n://) tables: hadoop-aws for "
                           "this Spark's Hadoop version, S3A for the s3 and s3n schemes, and the endpoint / path-style "
                           "settings of $AWS_ENDPOINT_URL (credentials stay in the AWS chain)")
    conf.add_argument("--env", action="store_true",
                      help="print instead the environment a Spark on a Kerberos-secured metastore needs before it "
                           "starts (HADOOP_CONF_DIR with a core-site.xml saying Kerberos, KRB5_CONFIG, HSH_*), as "
                           "`export` lines for eval (nothing for an unsecured metastore)")
    add_kerberos_options(conf)
    add_json_option(conf)
    conf.set_defaults(func=_spark_conf)


def _spark_conf(args: argparse.Namespace) -> int:
    """Print the session extension's settings (compiling it if needed) as ``--conf`` flags, or JSON; with a
    Kerberos-secured metastore, its Kerberos settings too (or, with ``--env``, the environment)."""
    import shlex

    from metastore.security.config import krb5_conf_path
    from metastore.security.spark import spark_kerberos_conf
    from storage_handler.spark.config import kerberos_environment
    from storage_handler.spark.jvm import native_scan_conf

    settings = configure_security(args)
    if args.env:
        env = kerberos_environment(settings)
        if args.json:
            print_json(env)
        else:
            for key, value in env.items():
                print(f"export {key}={shlex.quote(value)}")
        return 0
    conf = {"spark.sql.python.filterPushdown.enabled": "true", **native_scan_conf()}
    if args.s3:
        from storage_handler.spark.config import s3_spark_conf

        conf.update(s3_spark_conf())
    conf.update(spark_kerberos_conf(settings, krb5_conf=krb5_conf_path()))
    if args.json:
        print_json(conf)
    else:
        print(" ".join(f"--conf {shlex.quote(f'{k}={v}')}" for k, v in conf.items()))
        if settings.sasl_enabled:
            say("the metastore requires Kerberos: before starting Spark, run `eval \"$(hsh spark-conf --env ...)\"` "
                "with the same Kerberos options (HADOOP_CONF_DIR with a core-site.xml saying hadoop.security."
                "authentication=kerberos: Spark reads it before any --conf), and kinit unless spark.kerberos.keytab "
                "is set")
    return 0


def _kerberos(args: argparse.Namespace) -> Any:
    """The service's own Kerberos identity for ``start --kerberos`` (None without the flag)."""
    from metastore.security.server import ServiceKerberos

    if not getattr(args, "kerberos", False):
        if args.service == "metastore" and (args.keytab or args.principal):
            raise ConfigurationError("--keytab and --principal of `hsh metastore start` are the metastore's own: "
                                     "add --kerberos to start it secured")
        return None
    return ServiceKerberos.on_loopback(args.keytab, args.principal,
                                       protection=getattr(args, "rpc_protection", "authentication"))


def _service(args: argparse.Namespace) -> Any:
    from metastore.local import LocalMetastore, LocalThriftServer
    from storage_handler.spark.config import thrift_server

    start = args.action == "start"
    if args.service == "metastore":
        return LocalMetastore(kerberos=_kerberos(args)) if start else LocalMetastore()
    if not start:
        return LocalThriftServer()
    kerberos = _kerberos(args)  # before the metastore is resolved: a wrong keytab fails before anything starts
    return thrift_server(metastore_uri(args), kerberos=kerberos)


def _run(args: argparse.Namespace) -> int:
    service = _service(args)
    if args.action == "start":
        info = service.start(args.port, progress=None if args.json else say)
        if info.kerberos_principal and not args.json:
            say(f"{args.service} requires Kerberos as {info.kerberos_principal}: clients kinit (or pass --keytab and "
                "--principal)" + (f"; hsh commands that use the embedded metastore know its principal, others "
                                  f"need --metastore-principal {info.kerberos_principal} or "
                                  "hive.metastore.kerberos.principal" if args.service == "metastore" else ""))
    elif args.action == "stop":
        info = service.stop()
        if info is None and not args.json:
            say(f"the embedded {args.service} is not running")
            return 0
    else:
        info = service.status()
    data = {"service": args.service, "running": info is not None and args.action != "stop",
            **(asdict(info) if info else {})}
    if args.action == "stop":
        data["stopped"] = info is not None
    if args.json:
        print_json(data)
    elif info is None:
        say(f"the embedded {args.service} is not running")
        return 1 if args.action == "status" else 0
    else:
        print_mapping(_for_people(data), title=f"{args.service} {args.action}")
    return 0


def _for_people(data: dict[str, Any]) -> dict[str, Any]:
    """The service's record as a person reads it: the start time as a date, without the process start tick (kept
    in ``--json``: it tells a reused PID from the service's own)."""
    import datetime as dt

    shown = {k: v for k, v in data.items() if k != "proc_start"}
    if isinstance(shown.get("started_at"), (int, float)):
        shown["started_at"] = dt.datetime.fromtimestamp(shown["started_at"]).astimezone().isoformat(timespec="seconds")
    return shown
