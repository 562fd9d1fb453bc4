"""A real MIT KDC with a throw-away realm; the project's own embedded metastore and HiveServer2 started secured
through the real ``hsh`` command line; every ``hsh`` run of the suite checked for leaked secrets.

All package-scoped (one KDC, one secured metastore, one Thrift server, one registered table, one Spark probe for
this folder, stopped when its last test is done, so the rest of a run does not carry two more JVMs) and stopped by
PID (``hsh ... stop`` signals the PID its record holds). The tests skip -- with the reason -- only when
the MIT Kerberos tools or the Python Kerberos packages are not installed (``.ci/run`` installs the tools,
``pip install kerberos gssapi`` the packages).

The secured metastore requires ``privacy`` (every call sealed): the hardest quality of protection for every client
-- ours, Spark's Java client, the Thrift server's -- and the one pyhive's own SASL adapter gets wrong.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from metastore.security.config import KerberosSettings
from tests.kerberos.kdc import KDC, Realm, missing_tools
from tests.kerberos.secrets import Secrets

TABLE = "krb.events"
WHERE = "dt >= '2024-01-02' and kind = 'view'"  # what the Spark probe and pyhive ask of it
AGGREGATE_WHERE = "dt >= '2024-01-02'"  # whole partitions: every file's count answered from the index
PYTHON_MODULES = {"kerberos": "kerberos", "gssapi": "gssapi", "puresasl": "pure-sasl", "thrift_sasl": "thrift-sasl"}
SERVICE_HOST = "127.0.0.1"
REPO = Path(__file__).resolve().parents[2]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The secrets test last among this folder's tests: it reads every output and log of the whole secured run."""
    here = Path(__file__).parent
    ours = [i for i, item in enumerate(items) if Path(str(item.fspath)).parent == here]
    last = [i for i in ours if Path(str(items[i].fspath)).name == "test_secrets.py"]
    if not last or len(last) == len(ours):
        return
    moved = [items[i] for i in last]
    rest = [item for i, item in enumerate(items) if i not in last]
    end = max(i for i, item in enumerate(rest) if Path(str(item.fspath)).parent == here) + 1
    items[:] = rest[:end] + moved + rest[end:]


def _skip_reason() -> str | None:
    tools = missing_tools()
    if tools:
        return (f"MIT Kerberos tools missing ({', '.join(tools)}): apt-get install -y krb5-kdc krb5-admin-server "
                "krb5-user (.ci/run installs them)")
    modules = [pkg for mod, pkg in PYTHON_MODULES.items() if importlib.util.find_spec(mod) is None]
    if modules:
        return (f"Python Kerberos packages missing ({', '.join(modules)}): pip install them (kerberos and gssapi "
                "compile against libkrb5-dev with gcc)")
    return None


@pytest.fixture(scope="package")
def realm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Realm]:
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    root = tmp_path_factory.mktemp("krb")
    kdc = KDC(root / "kdc")
    kdc.start()
    saved = {k: os.environ.get(k) for k in ("KRB5_CONFIG", "KRB5CCNAME", "KRB5_CLIENT_KTNAME")}
    os.environ["KRB5_CONFIG"] = str(kdc.krb5_conf)  # this process's MIT library (pykerberos, gssapi)
    os.environ["KRB5CCNAME"] = f"FILE:{root / 'no-such-ccache'}"  # never the developer's own tickets
    os.environ.pop("KRB5_CLIENT_KTNAME", None)
    try:
        service_keytab = root / "hive.keytab"
        service = kdc.add_principal(f"hive/{SERVICE_HOST}", keytab=service_keytab)
        other_service = kdc.add_principal("hive/localhost")
        alice_keytab = root / "alice.keytab"
        alice = kdc.add_principal("alice", keytab=alice_keytab)
        svc_keytab = root / "svc.keytab"
        svc = kdc.add_principal("svc", keytab=svc_keytab)
        short_keytab = root / "short.keytab"
        short = kdc.add_principal("short", keytab=short_keytab, max_life="5 seconds", max_renewable_life="5 seconds")
        alice_ccache = kdc.kinit(alice, alice_keytab, root / "alice.ccache")
        yield Realm(kdc, root, service, service_keytab, other_service, alice, alice_keytab, alice_ccache, svc,
                    svc_keytab, short, short_keytab)
    finally:
        kdc.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope="package")
def secrets(realm: Realm) -> Secrets:
    """The key material of every keytab and ticket cache of the realm, to look for in outputs and logs."""
    return Secrets([realm.service_keytab, realm.alice_keytab, realm.svc_keytab, realm.short_keytab,
                    Path(realm.alice_ccache.removeprefix("FILE:"))])


@dataclass
class Hsh:
    """The real ``hsh`` command line with the realm's environment; every run's output is checked for secrets and
    kept (the secrets test looks at all of them again, with the logs)."""

    realm: Realm
    home: Path
    secrets: Secrets
    runs: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0  # how long the last failing command took

    def env(self, **extra: str | None) -> dict[str, str]:
        env = {**os.environ, "PYTHONPATH": str(REPO), "HSH_HOME": str(self.home),
               "KRB5_CONFIG": str(self.realm.krb5_conf), "KRB5CCNAME": f"FILE:{self.realm.root / 'no-such-ccache'}"}
        for key in ("HSH_METASTORE_URI", "HSH_METASTORE_SASL", "HSH_METASTORE_PRINCIPAL", "HSH_KERBEROS_KEYTAB",
                    "HSH_KERBEROS_PRINCIPAL", "HADOOP_CONF_DIR", "HIVE_CONF_DIR"):
            env.pop(key, None)
        for key, value in extra.items():
            if value is None:
                env.pop(key, None)
            else:
                env[key] = value
        return env

    @staticmethod
    def command(*args: str) -> list[str]:
        """The ``hsh`` command line for ``args`` (for a run this class does not make itself, e.g. with Popen)."""
        return [sys.executable, "-m", "storage_handler.cli.main", *args]

    def __call__(self, *args: str, prefix: tuple[str, ...] = (), timeout: float = 300,
                 **env: str | None) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run([*prefix, *self.command(*args)],
                              capture_output=True, text=True, timeout=timeout, env=self.env(**env), cwd=REPO)
        label = " ".join(args[:3])
        self.runs += [(f"hsh {label} (stdout)", proc.stdout), (f"hsh {label} (stderr)", proc.stderr)]
        self.secrets.assert_absent(proc.stdout, f"stdout of hsh {label}")
        self.secrets.assert_absent(proc.stderr, f"stderr of hsh {label}")
        return proc

    def ok(self, *args: str, timeout: float = 300, **env: str | None) -> dict:
        proc = self(*args, "--json", timeout=timeout, **env)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, (proc.stdout[-2000:], proc.stderr[-3000:])
        return json.loads(proc.stdout)

    def error(self, *args: str, prefix: tuple[str, ...] = (), **env: str | None) -> str:
        """The one ``error:`` line of a command that must fail with exit code 2 and no traceback."""
        started = time.monotonic()
        proc = self(*args, prefix=prefix, **env)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, (proc.returncode, proc.stderr[-3000:])
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        assert lines and lines[-1].startswith("error: "), proc.stderr[-3000:]
        assert sum(line.startswith("error:") for line in lines) == 1, proc.stderr[-3000:]
        self.seconds = time.monotonic() - started
        return lines[-1].removeprefix("error: ")


@pytest.fixture(scope="package")
def krb_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The state folder ($HSH_HOME) of the secured services and of every ``hsh`` run against them."""
    return tmp_path_factory.mktemp("krb_home")


@pytest.fixture(scope="package")
def hsh(realm: Realm, krb_home: Path, secrets: Secrets) -> Hsh:
    return Hsh(realm, krb_home, secrets)


@dataclass(frozen=True)
class Service:
    uri: str
    port: int
    pid: int
    log_path: Path


@pytest.fixture(scope="package")
def secured_metastore(realm: Realm, hsh: Hsh, krb_home: Path) -> Iterator[Service]:
    """The embedded metastore started by ``hsh metastore start --kerberos`` (SASL/GSSAPI as hive/127.0.0.1@REALM,
    protection privacy), on 127.0.0.1."""
    from metastore.local import LocalMetastore

    info = hsh.ok("metastore", "start", "--kerberos", "--keytab", str(realm.service_keytab),
                  "--principal", f"hive/_HOST@{realm.kdc.realm}", "--rpc-protection", "privacy")
    try:
        assert info["kerberos_principal"] == realm.service
        yield Service(info["uri"], info["port"], info["pid"], Path(info["log_path"]))
    finally:
        LocalMetastore(krb_home).stop()


@pytest.fixture(scope="package")
def kerberized_thriftserver(realm: Realm, hsh: Hsh, krb_home: Path, secured_metastore: Service) -> Iterator[Service]:
    """Spark's HiveServer2 started by ``hsh thriftserver start --kerberos``: it requires Kerberos as
    hive/127.0.0.1@REALM and authenticates to the secured metastore with the same keytab."""
    from metastore.local import LocalThriftServer

    info = hsh.ok("thriftserver", "start", "--kerberos", "--keytab", str(realm.service_keytab),
                  "--principal", realm.service, "--metastore", secured_metastore.uri,
                  "--metastore-principal", f"hive/_HOST@{realm.kdc.realm}", timeout=400)
    try:
        yield Service(info["uri"], info["port"], info["pid"], Path(info["log_path"]))
    finally:
        LocalThriftServer(home=krb_home).stop()


def service_settings(realm: Realm) -> KerberosSettings:
    """The metastore's own identity as a client: what the tests check the metastore's state with."""
    return KerberosSettings(sasl_enabled=True, service_principal=realm.service, keytab=str(realm.service_keytab),
                            client_principal=realm.service)


def hive_site(folder: Path, principal: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "hive-site.xml").write_text(
        "<?xml version='1.0'?><configuration>"
        "<property><name>hive.metastore.sasl.enabled</name><value>true</value></property>"
        f"<property><name>hive.metastore.kerberos.principal</name><value>{principal}</value></property>"
        "</configuration>")
    return folder


@dataclass(frozen=True)
class SecuredTable:
    root: Path
    registered: dict
    synced: dict
    refreshed: dict
    described: dict


@pytest.fixture(scope="package")
def secured_table(realm: Realm, hsh: Hsh, secured_metastore: Service,
                  tmp_path_factory: pytest.TempPathFactory) -> SecuredTable:
    """``krb.events`` registered, grown by a day and synced, and re-indexed, each through the real CLI and each
    authenticated another way."""
    from storage_handler.demo.data import generate_events

    root = generate_events(tmp_path_factory.mktemp("krb_data") / "events", days=3, files_per_day=2,
                           rows_per_file=60)
    uri = secured_metastore.uri
    principal = f"hive/_HOST@{realm.kdc.realm}"
    # 1. flags: the metastore's principal, and a keytab (no kinit)
    registered = hsh.ok("register", TABLE, str(root), "--metastore", uri, "--metastore-principal", principal,
                        "--keytab", str(realm.svc_keytab), "--principal", realm.svc)
    # 2. the ticket cache (kinit) and the HSH_* variables a parent process hands over
    shutil.copytree(root / "dt=2024-01-03", root / "dt=2024-01-04")
    synced = hsh.ok("sync", TABLE, "--metastore", uri, KRB5CCNAME=realm.alice_ccache,
                    HSH_METASTORE_PRINCIPAL=principal)
    # 3. Hive's own keys in hive-site.xml on $HIVE_CONF_DIR, with a keytab
    changed = root / "dt=2024-01-04" / "part-00001.parquet"
    os.utime(changed, (changed.stat().st_atime, changed.stat().st_mtime + 60))  # rewritten, for the index
    conf = hive_site(realm.root / "hive-conf", principal)
    refreshed = hsh.ok("index", "refresh", TABLE, "--metastore", uri, "--keytab", str(realm.svc_keytab),
                       "--principal", realm.svc, HIVE_CONF_DIR=str(conf))
    described = hsh.ok("describe", TABLE, "--metastore", uri, KRB5CCNAME=realm.alice_ccache,
                       HIVE_CONF_DIR=str(conf))
    return SecuredTable(root, registered, synced, refreshed, described)


def scans(home: Path) -> list[dict]:
    path = home / "scans" / "scans.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.fixture(scope="package")
def spark_probe(realm: Realm, hsh: Hsh, secured_metastore: Service, secured_table: SecuredTable,
                krb_home: Path) -> dict:
    """The probe's JSON, with its output kept for the secrets test."""
    env = hsh.env(HSH_METASTORE_PRINCIPAL=f"hive/_HOST@{realm.kdc.realm}", HSH_KERBEROS_KEYTAB=str(realm.svc_keytab),
                  HSH_KERBEROS_PRINCIPAL=realm.svc, PYSPARK_PYTHON=sys.executable)
    before = len(scans(krb_home))
    out = subprocess.run([sys.executable, "-m", "tests.kerberos.spark_probe", secured_metastore.uri, TABLE, WHERE,
                          AGGREGATE_WHERE],
                         env=env, cwd=REPO, capture_output=True, text=True, timeout=400)
    hsh.runs += [("spark probe (stdout)", out.stdout), ("spark probe (stderr)", out.stderr)]
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    assert lines, out.stdout[-2000:] + out.stderr[-3000:]
    result: dict = json.loads(lines[-1])
    result["new_scans"] = scans(krb_home)[before:]
    return result
