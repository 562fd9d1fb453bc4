"""A throw-away MIT Kerberos realm for tests: its own KDC on a free 127.0.0.1 port, all state in one folder.

Why this shape (verified with Debian 12's krb5 1.20, see FINDINGS.md):

* Nothing global: ``KRB5_CONFIG`` (clients, kadmin.local, kdb5_util) and ``KRB5_KDC_PROFILE`` (the KDC) point at
  files in the folder; /etc/krb5.conf is neither read nor changed (Java gets ``-Djava.security.krb5.conf``).
* ``kdc = 127.0.0.1:PORT`` -- the ``tcp/host:port`` form is not understood (MIT resolves "tcp/127.0.0.1" as a host
  name); ``udp_preference_limit = 1`` makes both MIT and Java use TCP.
* ``rdns = false`` and ``dns_canonicalize_hostname = false``: with MIT's defaults a client turns ``hive@127.0.0.1``
  into ``hive/localhost@REALM`` (reverse lookup), while Java's client asks for ``hive/127.0.0.1@REALM``.
* ``krb5kdc -n`` runs in the foreground: the PID we started is the KDC, stopped with SIGTERM by that PID. Creating
  the database and starting the KDC takes about 0.2 s.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

TOOLS = ("krb5kdc", "kdb5_util", "kadmin.local", "kinit", "klist")
_SBIN = ("/usr/sbin", "/usr/local/sbin", "/sbin")


def find_tool(name: str) -> str | None:
    """``name`` on PATH or in an sbin folder (Debian installs the KDC tools in /usr/sbin, not on a user's PATH)."""
    found = shutil.which(name)
    if found:
        return found
    for folder in _SBIN:
        candidate = Path(folder) / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def missing_tools() -> list[str]:
    return [tool for tool in TOOLS if find_tool(tool) is None]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class KDC:
    """A realm in ``root``; :meth:`start` creates it and starts the KDC, :meth:`stop` ends that process."""

    def __init__(self, root: Path, realm: str = "HSH.TEST", *, max_life: str = "1h") -> None:
        self.root = root
        self.realm = realm
        self.max_life = max_life
        self.port = 0
        self.krb5_conf = root / "krb5.conf"
        self.kdc_conf = root / "kdc.conf"
        self.log_path = root / "kdc.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def env(self) -> dict[str, str]:
        """The variables that make MIT tools and libraries use this realm (merge into a process's environment)."""
        return {"KRB5_CONFIG": str(self.krb5_conf), "KRB5_KDC_PROFILE": str(self.kdc_conf)}

    def _run(self, *args: str, input_text: str | None = None) -> str:
        tool = find_tool(args[0])
        if tool is None:
            raise RuntimeError(f"{args[0]} is not installed (apt-get install krb5-kdc krb5-admin-server krb5-user)")
        proc = subprocess.run([tool, *args[1:]], env={**os.environ, **self.env}, capture_output=True, text=True,
                              input=input_text, timeout=60)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(args[:2])} failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
        return proc.stdout

    def start(self, timeout: float = 20.0) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.port = _free_port()
        self.krb5_conf.write_text(
            "[libdefaults]\n"
            f"  default_realm = {self.realm}\n"
            "  dns_lookup_realm = false\n  dns_lookup_kdc = false\n"
            "  dns_canonicalize_hostname = false\n  rdns = false\n"
            "  udp_preference_limit = 1\n"
            f"  ticket_lifetime = {self.max_life}\n  renew_lifetime = 2h\n  forwardable = true\n"
            "[realms]\n"
            f"  {self.realm} = {{\n    kdc = 127.0.0.1:{self.port}\n  }}\n"
            "[domain_realm]\n"
            f"  localhost = {self.realm}\n  127.0.0.1 = {self.realm}\n"
        )
        self.kdc_conf.write_text(
            "[kdcdefaults]\n"
            f"  kdc_listen = 127.0.0.1:{self.port}\n  kdc_tcp_listen = 127.0.0.1:{self.port}\n"
            "[realms]\n"
            f"  {self.realm} = {{\n"
            f"    database_name = {self.root / 'principal'}\n"
            f"    key_stash_file = {self.root / 'stash'}\n"
            f"    acl_file = {self.root / 'kadm5.acl'}\n"
            f"    kdc_listen = 127.0.0.1:{self.port}\n    kdc_tcp_listen = 127.0.0.1:{self.port}\n"
            f"    max_life = {self.max_life}\n    max_renewable_life = 2h\n"
            "    supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal\n"
            "  }\n"
            f"[logging]\n  kdc = FILE:{self.log_path}\n"
        )
        # the master password protects only this throw-away database; it is stashed for the KDC
        self._run("kdb5_util", "create", "-s", "-r", self.realm, "-P", os.urandom(12).hex())
        krb5kdc = find_tool("krb5kdc")
        assert krb5kdc is not None
        with open(self.root / "krb5kdc.out", "ab") as out:
            self.proc = subprocess.Popen(
                [krb5kdc, "-n", "-P", str(self.root / "krb5kdc.pid")], env={**os.environ, **self.env},
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"krb5kdc exited with {self.proc.returncode}; see {self.log_path}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                return
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"krb5kdc did not listen on 127.0.0.1:{self.port} within {timeout:.0f}s")

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM to the KDC we started (by its PID), SIGKILL if it lingers."""
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=timeout)

    def principal(self, name: str) -> str:
        return name if "@" in name else f"{name}@{self.realm}"

    def add_principal(self, name: str, *, keytab: Path | None = None, max_life: str | None = None,
                      max_renewable_life: str | None = None) -> str:
        """Create ``name`` with a random key (and export it to ``keytab``); the full principal name."""
        principal = self.principal(name)
        options = []
        if max_life:
            options.append(f'-maxlife "{max_life}"')
        if max_renewable_life:
            options.append(f'-maxrenewlife "{max_renewable_life}"')
        self._run("kadmin.local", "-q", f"addprinc -randkey {' '.join(options)} {principal}")
        if keytab is not None:
            self.export_keytab(keytab, principal)
        return principal

    def export_keytab(self, keytab: Path, *principals: str) -> Path:
        """Append the principals' current keys to ``keytab`` (``ktadd -norandkey`` keeps earlier exports valid)."""
        names = " ".join(self.principal(p) for p in principals)
        self._run("kadmin.local", "-q", f"ktadd -norandkey -k {keytab} {names}")
        return keytab

    def kinit(self, principal: str, keytab: Path, ccache: Path) -> str:
        """``kinit -kt`` into ``ccache``; its ``FILE:`` name, for ``KRB5CCNAME``."""
        name = f"FILE:{ccache}"
        self._run("kinit", "-c", name, "-kt", str(keytab), self.principal(principal))
        return name


@dataclass(frozen=True)
class Realm:
    """The realm and what the tests authenticate with. Keytabs hold random keys; no password exists."""

    kdc: KDC
    root: Path
    service: str            # hive/127.0.0.1@REALM: what the metastore and HiveServer2 run as
    service_keytab: Path
    other_service: str      # hive/localhost@REALM: exists in the KDC, but no server runs as it
    alice: str              # a user with a ticket cache made by kinit
    alice_keytab: Path
    alice_ccache: str
    svc: str                # a service account used with its keytab only (no kinit)
    svc_keytab: Path
    short: str              # tickets live 5 seconds
    short_keytab: Path

    @property
    def krb5_conf(self) -> Path:
        return self.kdc.krb5_conf
