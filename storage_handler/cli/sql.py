"""``hsh sql|demo``: the commands that run Spark (a Hive-enabled session on the metastore), and their errors."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from storage_handler.cli.common import add_json_option, add_metastore_option, metastore_uri
from storage_handler.cli.output import narrate, print_json, print_rows, say
from storage_handler.errors import StorageHandlerError


def add_commands(sub: Any) -> None:
    p = sub.add_parser("demo", help="generate data, register it, query it via Spark and HiveServer2")
    p.set_defaults(func=_demo)

    p = sub.add_parser("sql", help="run a SQL statement in a Hive-enabled SparkSession")
    p.add_argument("statement")
    p.add_argument("--limit", type=int, default=1000, help="rows to print at most (default 1000)")
    add_metastore_option(p)
    add_json_option(p)
    p.set_defaults(func=_sql)


class SqlError(StorageHandlerError, RuntimeError):
    """Spark refused or failed the statement of ``hsh sql``: its error class and the first line of its message."""


def _sql(args: argparse.Namespace) -> int:
    """Run one statement. Spark's own output (the JVM's log, and pyspark's JSON record of a failed query) goes to
    ``$HSH_HOME/sql/spark.log``, so a failure is the one ``error:`` line every command prints; ``-v`` shows all of
    it here, and the traceback."""
    from metastore.client import MetastoreClient
    from storage_handler.home import state_home
    from storage_handler.spark import session

    uri = metastore_uri(args)
    with MetastoreClient(uri) as client:  # a metastore that is not there, or that wants another authentication,
        client.get_all_databases()  # fails here in one line, before a JVM starts (opening alone only connects)
    if not args.json:
        narrate("starting a Hive-enabled SparkSession")
    log = None if args.verbose else state_home() / "sql" / "spark.log"
    with _spark_errors(verbose=args.verbose, log=log):
        _query_error_records_to(log)
        with _jvm_output_to(log):  # the JVM starts here and keeps this stderr for its life
            spark = session(uri)
        try:
            df = spark.sql(args.statement)
            columns = df.columns
            rows = [tuple(r) for r in df.limit(args.limit).collect()] if columns else []
        finally:
            spark.stop()
    if args.json:
        print_json({"columns": columns, "rows": [list(r) for r in rows]})
    elif columns:
        print_rows(columns, rows)
    else:  # a statement with no result (ALTER, INSERT, CREATE): say it ran, not an empty line
        say("done")
    return 0


@contextmanager
def _spark_errors(*, verbose: bool, log: Path | None) -> Iterator[None]:
    """Spark's errors (pyspark's, and a JVM or Py4J failure pyspark does not convert) as one :class:`SqlError`
    line; with ``verbose`` the traceback is printed first."""
    spark_errors: tuple[type[BaseException], ...] = ()
    try:
        from py4j.protocol import Py4JError
        from pyspark.errors import PySparkException
    except ImportError:  # no pyspark: the session says so in one line
        pass
    else:
        spark_errors = (PySparkException, Py4JError)
    try:
        yield
    except spark_errors as e:
        if verbose:
            traceback.print_exc()
        raise SqlError(spark_error_line(e, log)) from None


def spark_error_line(error: BaseException, log: Path | None = None) -> str:
    """``[ERROR_CLASS] first line of the message``: Spark's error class (pyspark's ``getCondition``, or
    ``getErrorClass`` before 4.0) and the first non-empty line of its message, which is the sentence; what
    follows (search path, SQL excerpt, plan, JVM trace) is for ``-v``. An error without a class names Spark's
    log, where its trace is."""
    condition = _error_class(error)
    text = str(error)
    java = getattr(error, "java_exception", None)  # a Py4JJavaError pyspark did not convert
    if java is not None:
        with contextlib.suppress(Exception):  # the JVM may be gone: the Python text is still something
            text = f"{java.getClass().getName()}: {java.getMessage()}"
    first = next((line.strip() for line in text.splitlines() if line.strip()), type(error).__name__)
    if condition:  # "org.apache.spark.SparkException: [FAILED_READ_FILE.NO_HINT] ...": from the class on
        at = first.find(f"[{condition}]")
        first = first[at:] if at >= 0 else f"[{condition}] {first}"
    if not condition and log is not None:
        first += f" (Spark's log: {log}; -v shows the trace)"
    return first


def _error_class(error: BaseException) -> str | None:
    """Spark's error class of ``error``, if it has one (pyspark 3.5: ``getErrorClass``; 4.x: ``getCondition``)."""
    import warnings

    target: Any = getattr(error, "java_exception", None) or error
    for method in ("getCondition", "getErrorClass"):
        getter = getattr(target, method, None)
        if getter is None:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)  # getErrorClass is deprecated from 4.0
                found = getter()
        except Exception:  # noqa: BLE001 - a Java exception that is no SparkThrowable, or a JVM gone
            continue
        if found:
            return str(found)
    return None


@contextmanager
def _jvm_output_to(log: Path | None) -> Iterator[None]:
    """While the Spark JVM is launched, this process's stderr is ``log`` (truncated): the JVM inherits it and
    writes its log there for its life (and so do the prune service and Python workers it starts), while this
    process gets its own stderr back. ``None``: leave stderr alone (``-v``)."""
    if log is None:
        yield
        return
    log.parent.mkdir(parents=True, exist_ok=True)
    sys.stderr.flush()
    saved = os.dup(2)
    target = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
    try:
        os.dup2(target, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(target)


def _query_error_records_to(log: Path | None) -> None:
    """pyspark 4.x logs every failed query as a JSON record on stderr (``SQLQueryContextLogger`` /
    ``DataFrameQueryContextLogger``, :class:`pyspark.logger.PySparkLogger`, written when the exception is made):
    send those records to ``log`` instead. pyspark 3.5 has no such records. ``None``: leave them (``-v``)."""
    if log is None:
        return
    try:
        from pyspark.logger import PySparkLogger
    except ImportError:
        return
    log.parent.mkdir(parents=True, exist_ok=True)
    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        logger = PySparkLogger.getLogger(name)
        for handler in list(logger.handlers):
            logger.removeHandler(handler)
        logger.addHandler(logging.FileHandler(log, delay=True))


def _demo(args: argparse.Namespace) -> int:
    from storage_handler.demo.run import run_demo

    return run_demo()
