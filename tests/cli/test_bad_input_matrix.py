"""Every ``hsh`` command against every kind of bad input, as a user types it: a missing table, a missing database,
bad SQL, a bad filter, a literal of the wrong type, an unreachable metastore, a storage location that cannot be
read, a corrupt data file and an empty (0-byte) one.

Each case asserts the exit code, that stderr is exactly one line (the ``error:``, or the ``warning:`` of a command
that records unreadable files, or none for a clean ``--json`` success; nothing else in the default mode), and that a
command that failed (or only read) changed nothing: the watched table's metastore entry, partitions and index
snapshots, or -- for a table that does not exist -- that neither it nor its database came to exist.

Cost (CI has 2 cores): the commands are real ``hsh`` processes, three at a time, each refused in about a second
(the unreachable metastore too: nothing listens on port 1, so the first connect fails and nothing is retried). One
``hsh sql`` runs in its own process (its own JVM, ~25 s, alongside the rest), to show that neither Spark's JVM nor
pyspark writes to the terminal; the other ``hsh sql`` failures run the CLI in this process on the shared
SparkSession, so no further JVM starts.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metastore.names import parse_table_name
from storage_handler.registration.register import apply_registration, plan_registration
from storage_handler.stats import index_dir

UNREACHABLE = "thrift://127.0.0.1:1"
KINDS = ("corrupt", "empty")  # a file cut short by a crashed writer; a 0-byte file
#: per kind, the tables the cases use: mx.<prefix>_<kind>; "has" holds the file from registration on, the others
#: meet it when the command under test runs
TABLES = {"corrupt": ("has", "sync", "syncstrict", "refresh", "refreshstrict"),
          "empty": ("has", "syncstrict", "refresh")}


@dataclass(frozen=True)
class Case:
    id: str
    args: tuple[str, ...]  # after `hsh`; "{uri}" is the test metastore's URI
    rc: int
    needles: tuple[str, ...] = ()  # in the one stderr line
    watch: str | None = None  # "mx.t": that table must not change; "absent:db.t": db.t must not come to exist
    env: dict[str, str] = field(default_factory=dict)
    lines: int = 1  # stderr lines: the error, the warning, or none (a clean --json success)


# ---------------------------------------------------------------- the data
def write_table(root: Path) -> None:
    """dt=0 and dt=1, one file each: ``i`` int in [10 d, 10 d + 5], ``s`` string."""
    for d in (0, 1):
        (root / f"dt={d}").mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"i": pa.array(range(10 * d, 10 * d + 6), pa.int32()), "s": [f"s{d}"] * 6}),
                       root / f"dt={d}" / "part-0.parquet")


def add_bad_file(root: Path, kind: str) -> str:
    whole = (root / "dt=0" / "part-0.parquet").read_bytes()
    (root / "dt=1" / "bad.parquet").write_bytes(whole[:-20] if kind == "corrupt" else b"")
    return "dt=1/bad.parquet"


def register(hms: Any, name: str, root: Path) -> None:
    apply_registration(hms, plan_registration(hms, parse_table_name(name), str(root)))


def cases() -> list[Case]:
    found: list[Case] = []
    for command in (("sync", "mx.nope"), ("index", "refresh", "mx.nope"), ("scan", "mx.nope", "--where", "i = 1"),
                    ("explain", "mx.nope", "--where", "i = 1"), ("describe", "mx.nope"), ("drop", "mx.nope")):
        found.append(Case(f"missing_table:{command[0]}", (*command, "--metastore", "{uri}"), 2,
                          ("table mx.nope does not exist",), "absent:mx.nope"))
    found += [
        Case("usage:missing_action", ("index", "mx.nope"), 2, ("invalid choice: 'mx.nope'", "hsh index --help")),
        Case("usage:unknown_option", ("scan", "mx.ro", "--nope", "--metastore", "{uri}"), 2,
             ("unrecognized arguments: --nope", "hsh --help"), "mx.ro"),
        Case("missing_table:sarg", ("sarg", "--table", "mx.nope", "--where", "i = 1", "--metastore", "{uri}"), 2,
             ("table mx.nope does not exist",), "absent:mx.nope"),
        Case("missing_db:scan", ("scan", "nodb.t", "--where", "i = 1", "--metastore", "{uri}"), 2,
             ("does not exist",), "absent:nodb.t"),
        Case("missing_db:index refresh", ("index", "refresh", "nodb.t", "--metastore", "{uri}"), 2,
             ("does not exist",), "absent:nodb.t"),
        Case("missing_db:describe", ("describe", "nodb.t", "--metastore", "{uri}"), 2, ("does not exist",),
             "absent:nodb.t"),
        Case("bad_filter:scan", ("scan", "mx.ro", "--where", "i = = 1", "--metastore", "{uri}"), 2,
             ("syntax error", "is missing a value or column after it"), "mx.ro"),
        Case("bad_filter:explain", ("explain", "mx.ro", "--where", "(i = 1", "--metastore", "{uri}"), 2, (),
             "mx.ro"),
        Case("bad_filter:unknown_column", ("scan", "mx.ro", "--where", "nope = 1", "--metastore", "{uri}"), 2,
             ("'nope'", "i, s, dt"), "mx.ro"),
        Case("bad_filter:sarg", ("sarg", "--schema", "i int", "--where", "i in ()"), 2),
        Case("bad_sql:scan", ("scan", "mx.ro", "--where", "select * from x", "--metastore", "{uri}"), 2, (),
             "mx.ro"),
        # an int column against a string that is no int: not an error, the leaf is YES_NO_NULL, every file kept
        Case("type_mismatch:scan", ("scan", "mx.ro", "--where", "i = 'abc'", "--json", "--metastore", "{uri}"), 0,
             (), "mx.ro", lines=0),
        Case("type_mismatch:sarg", ("sarg", "--schema", "i int", "--where", "i < 'x'", "--json"), 0, lines=0),
    ]
    for command in (("register", "mx.x", "{folder:corrupt}"), ("sync", "mx.ro"), ("scan", "mx.ro"),
                    ("drop", "mx.ro"), ("sql", "select 1")):  # one connect each, refused at once: cheap
        found.append(Case(f"unreachable_metastore:{command[0]}", (*command, "--metastore", UNREACHABLE), 2,
                          (UNREACHABLE, "cannot reach")))
    found += [
        Case("location:register_missing", ("register", "mx.y", "{folder:missing}", "--metastore", "{uri}"), 2,
             ("does not exist",), "absent:mx.y"),
        Case("location:register_a_file", ("register", "mx.y", "{folder:file}", "--metastore", "{uri}"), 2,
             ("is not a folder",), "absent:mx.y"),
        Case("location:register_s3_down", ("register", "mx.y", "s3a://bucket/t", "--metastore", "{uri}"), 2,
             ("S3 endpoint does not answer",), "absent:mx.y",
             env={"AWS_ENDPOINT_URL": "http://127.0.0.1:1", "AWS_ENDPOINT_URL_S3": "http://127.0.0.1:1"}),
        Case("location:sync_vanished", ("sync", "mx.vanished", "--metastore", "{uri}"), 2, ("does not exist",),
             "mx.vanished"),
        # a registered partition whose folder is gone reads as empty, with one warning
        Case("location:scan_vanished", ("scan", "mx.vanished", "--where", "i = 1", "--json", "--metastore",
                                        "{uri}"), 0, ("does not exist or holds nothing",), "mx.vanished"),
        Case("services:metastore_status", ("metastore", "status"), 1, ("not running",),
             env={"HSH_HOME": "{empty_home}"}),
        Case("services:thriftserver_status", ("thriftserver", "status"), 1, ("not running",),
             env={"HSH_HOME": "{empty_home}"}),
    ]
    recorded = ("1 file is not readable Parquet", "recorded as unreadable", "dt=1/bad.parquet")
    refused = ("1 file is not readable Parquet", "dt=1/bad.parquet", "nothing was changed")
    for kind in KINDS:
        found += [
            Case(f"{kind}:register", ("register", f"mx.reg_{kind}", f"{{folder:{kind}}}", "--json", "--metastore",
                                      "{uri}"), 0, recorded),
            Case(f"{kind}:refresh", ("index", "refresh", f"mx.refresh_{kind}", "--json", "--metastore", "{uri}"), 0,
                 recorded),
            Case(f"{kind}:sync-strict", ("sync", f"mx.syncstrict_{kind}", "--strict", "--metastore", "{uri}"), 2,
                 refused, f"mx.syncstrict_{kind}"),
            Case(f"{kind}:scan", ("scan", f"mx.has_{kind}", "--where", "i = 3", "--json", "--metastore", "{uri}"), 0,
                 (), f"mx.has_{kind}", lines=0),
        ]
    found += [
        Case("corrupt:register-strict", ("register", "mx.regstrict", "{folder:corrupt}", "--strict", "--metastore",
                                         "{uri}"), 2, refused, "absent:mx.regstrict"),
        Case("corrupt:sync", ("sync", "mx.sync_corrupt", "--json", "--metastore", "{uri}"), 0, recorded),
        Case("corrupt:refresh-strict", ("index", "refresh", "mx.refreshstrict_corrupt", "--strict", "--metastore",
                                        "{uri}"), 2, refused, "mx.refreshstrict_corrupt"),
        Case("corrupt:explain", ("explain", "mx.has_corrupt", "--where", "i = 3", "--json", "--metastore", "{uri}"),
             0, (), "mx.has_corrupt", lines=0),
        Case("corrupt:describe", ("describe", "mx.has_corrupt", "--json", "--metastore", "{uri}"), 0, (),
             "mx.has_corrupt", lines=0),
        # `hsh sql` in its own process (a JVM): Spark's error in one line, and nothing of the JVM's own output
        Case("corrupt:sql", ("sql", "select count(*) from mx.has_corrupt", "--metastore", "{uri}"), 2,
             ("[FAILED_READ_FILE", "dt=1/bad.parquet"), "mx.has_corrupt", env={"HSH_HOME": "{sql_home}"}),
    ]
    return found


CASES = cases()
JVM_CASES = {"corrupt:sql"}


# ---------------------------------------------------------------- what must not change
def snapshot(hms: Any, watch: str | None) -> Any:
    """What a failed (or reading) command must leave as it was: the watched table's definition, partitions and
    index snapshots; or, for a table that does not exist, its database's and its own existence."""
    if watch is None:
        return None
    if watch.startswith("absent:"):
        db, table = watch.removeprefix("absent:").split(".")
        exists = hms.database_exists(db)
        return exists, exists and hms.table_exists(db, table)
    db, table = watch.split(".")
    t = hms.get_table(db, table)
    snapshots = Path(index_dir(t.sd.location)) / "snapshots"
    return (t.parameters, [(c.name, c.type) for c in t.sd.cols], hms.get_partition_names(db, table),
            sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in snapshots.iterdir())
            if snapshots.is_dir() else None)


@dataclass
class Outcome:
    proc: subprocess.CompletedProcess[str]
    before: Any
    after: Any
    seconds: float = 0.0


@dataclass
class Matrix:
    outcomes: dict[str, Outcome]
    sql_log: Path  # the log of the `hsh sql` that read a corrupt file


def run(case: Case, uri: str, subst: dict[str, str]) -> Outcome:
    from metastore.client import MetastoreClient

    subst = {"{uri}": uri, **subst}
    args = [subst.get(a, a) for a in case.args]
    env = {**os.environ, **{k: subst.get(v, v) for k, v in case.env.items()}}
    with MetastoreClient(uri) as hms:
        before = snapshot(hms, case.watch)
        started = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "storage_handler.cli.main", *args], capture_output=True,
                              text=True, env=env, timeout=600)
        seconds = time.monotonic() - started
        after = snapshot(hms, case.watch)
    return Outcome(proc, before, after, seconds)


@pytest.fixture(scope="module")
def matrix(metastore_uri: str, tmp_path_factory: pytest.TempPathFactory) -> Matrix:
    """Build every table, then run every case: the two JVM cases first (in the background), the rest four at a
    time. A table a case may change is that case's own; the others only read theirs."""
    import shutil

    from metastore.client import MetastoreClient

    base = tmp_path_factory.mktemp("matrix")
    subst = {"{folder:missing}": str(base / "missing"), "{folder:file}": str(base / "a_file"),
             "{empty_home}": str(base / "empty_home"), "{sql_home}": str(base / "sql_home")}
    (base / "a_file").write_text("not a folder")
    with MetastoreClient(metastore_uri) as hms:
        write_table(base / "ro")
        register(hms, "mx.ro", base / "ro")
        write_table(base / "vanished")
        shutil.rmtree(base / "vanished" / "dt=1")  # one partition: one warning when it reads as empty
        register(hms, "mx.vanished", base / "vanished")
        shutil.rmtree(base / "vanished")
        for kind in KINDS:
            folder = base / f"new_{kind}"
            write_table(folder)
            add_bad_file(folder, kind)
            subst[f"{{folder:{kind}}}"] = str(folder)
            for prefix in TABLES[kind]:
                root = base / f"{prefix}_{kind}"
                write_table(root)
                if prefix == "has":
                    add_bad_file(root, kind)
                register(hms, f"mx.{prefix}_{kind}", root)
                if prefix != "has":
                    add_bad_file(root, kind)  # arrives after registration: the command under test meets it

    by_id = {c.id: c for c in CASES}
    with ThreadPoolExecutor(max_workers=1) as jvm, ThreadPoolExecutor(max_workers=3) as pool:
        futures = {i: jvm.submit(run, by_id[i], metastore_uri, subst) for i in sorted(JVM_CASES)}
        futures.update({c.id: pool.submit(run, c, metastore_uri, subst) for c in CASES if c.id not in JVM_CASES})
        results = {case_id: future.result() for case_id, future in futures.items()}
    return Matrix(results, Path(subst["{sql_home}"]) / "sql" / "spark.log")


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_bad_input(matrix: Matrix, case: Case) -> None:
    outcome = matrix.outcomes[case.id]
    proc = outcome.proc
    assert proc.returncode == case.rc, (proc.returncode, proc.stdout[-1500:], proc.stderr[-3000:])
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == case.lines, proc.stderr[-3000:]
    if case.lines:
        line = lines[0]
        assert line.startswith("error: ") or case.rc != 2, line
        for needle in case.needles:
            assert needle in line, (needle, line)
    if case.rc == 0 and "--json" in case.args:
        json.loads(proc.stdout)
    assert outcome.after == outcome.before, f"{case.id} changed the metastore or the index"


def test_what_sql_keeps_off_the_terminal_is_in_its_log(matrix: Matrix) -> None:
    """`hsh sql` sent Spark's own output for the failed query (the JVM's log of the failed task) to its log,
    where `-v` or a bug report finds it."""
    text = matrix.sql_log.read_text()
    assert "FAILED_READ_FILE" in text and "ERROR" in text, text[-2000:]


# ---------------------------------------------------------------- `hsh sql` on the shared SparkSession
class _Shared:
    """The fixture's session as `hsh sql` sees it: the same object, except that the command cannot stop it."""

    def __init__(self, spark: Any) -> None:
        self._spark = spark

    def sql(self, statement: str) -> Any:
        return self._spark.sql(statement)

    def stop(self) -> None:
        """The session is shared by the whole test run."""


@pytest.fixture()
def sql_in_process(spark, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    import storage_handler.spark as spark_package
    from storage_handler.cli.main import main

    monkeypatch.setattr(spark_package, "session", lambda *_a, **_k: _Shared(spark))
    names = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")
    existing = logging.Logger.manager.loggerDict  # read, never create: pyspark must make these (PySparkLogger)
    saved = {n: list(getattr(existing.get(n), "handlers", [])) for n in names}
    try:
        yield main
    finally:  # the command sends pyspark's records to its log: give this process its handlers back
        for n, handlers in saved.items():
            logger = existing.get(n)
            if not isinstance(logger, logging.Logger):
                continue
            for h in list(logger.handlers):
                if h not in handlers:
                    logger.removeHandler(h)
                    h.close()
            for h in handlers:
                if h not in logger.handlers:
                    logger.addHandler(h)


@pytest.mark.parametrize(("statement", "needles"), [
    ("selec * from mx.ro", ("[PARSE_SYNTAX_ERROR]", "'selec'")),
    ("select * from nodb.t", ("[TABLE_OR_VIEW_NOT_FOUND]", "`nodb`.`t`")),
    ("select 1 + array(1)", ("[DATATYPE_MISMATCH",)),
    ("select * from mx.ro where i = 'abc'", ("[CAST_INVALID_INPUT]", "'abc'")),
    ("select count(*) from mx.has_corrupt where dt = 1", ("[FAILED_READ_FILE", "dt=1/bad.parquet")),
], ids=["bad_sql", "missing_db", "type_error", "type_mismatch", "corrupt_file"])
def test_sql_errors(sql_in_process: Any, matrix: Matrix, metastore_uri: str, hms,
                    capsys: pytest.CaptureFixture[str], statement: str, needles: tuple[str, ...]) -> None:
    """A Spark error is one line with its error class and message, exit code 2, nothing changed."""
    watched = ("mx.ro", "mx.has_corrupt", "absent:nodb.t")
    before = [snapshot(hms, w) for w in watched]
    assert sql_in_process(["sql", statement, "--metastore", metastore_uri]) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ["), err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    assert [snapshot(hms, w) for w in watched] == before


def test_sql_skips_an_empty_file_as_spark_does(sql_in_process: Any, matrix: Matrix,
                                               metastore_uri: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The 0-byte file is recorded as unreadable and kept; Spark reads it as no rows: the query succeeds."""
    assert sql_in_process(["sql", "select count(*) as n from mx.has_empty", "--json",
                           "--metastore", metastore_uri]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["rows"] == [[12]] and captured.err == ""


def test_verbose_sql_shows_the_trace(sql_in_process: Any, metastore_uri: str,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert sql_in_process(["-v", "sql", "select * from nodb.t", "--metastore", metastore_uri]) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and err.strip().splitlines()[-1].startswith("error: [TABLE_OR_VIEW_NOT_FOUND]")
