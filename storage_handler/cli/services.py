"""``hsh metastore|thriftserver start|stop|status``: the embedded services; ``hsh spark-conf``: the settings that
load the handler into a Spark you start yourself (``spark-submit``, ``spark-sql``, ``pyspark``)."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from typing import Any

from storage_handler.cli.common import add_json_option, add_metastore_option, metastore_uri
from storage_handler.cli.output import print_json, print_mapping, say


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
                if name == "thriftserver":
                    add_metastore_option(a)
            a.set_defaults(func=_run, service=name)
    conf = sub.add_parser("spark-conf", help="the --conf flags that make spark-submit / spark-sql / pyspark read "
                                             "registered tables through the handler")
    conf.add_argument("--s3", action="store_true",
                      help="also the settings that let Spark read s3a:// (and s3://, s3n://) tables: hadoop-aws for "
                           "this Spark's Hadoop version, S3A for the s3 and s3n schemes, and the endpoint / path-style "
                           "settings of $AWS_ENDPOINT_URL (credentials stay in the AWS chain)")
    add_json_option(conf)
    conf.set_defaults(func=_spark_conf)


def _spark_conf(args: argparse.Namespace) -> int:
    """Print the session extension's settings (compiling it if needed) as ``--conf`` flags, or JSON."""
    import shlex

    from storage_handler.spark.jvm import native_scan_conf

    conf = {"spark.sql.python.filterPushdown.enabled": "true", **native_scan_conf()}
    if args.s3:
        from storage_handler.spark.config import s3_spark_conf

        conf.update(s3_spark_conf())
    if args.json:
        print_json(conf)
    else:
        print(" ".join(f"--conf {shlex.quote(f'{k}={v}')}" for k, v in conf.items()))
    return 0


def _service(args: argparse.Namespace) -> Any:
    from metastore.local import LocalMetastore, LocalThriftServer
    from storage_handler.spark.config import thrift_server

    if args.service == "metastore":
        return LocalMetastore()
    return thrift_server(metastore_uri(args)) if args.action == "start" else LocalThriftServer()


def _run(args: argparse.Namespace) -> int:
    service = _service(args)
    if args.action == "start":
        info = service.start(args.port, progress=None if args.json else say)
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
        print_mapping(data, title=f"{args.service} {args.action}")
    return 0
