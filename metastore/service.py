"""A background JVM owned by a state folder: started once, reused while it answers, stopped by its PID.

Two rules make it safe for several ``hsh`` commands (scripts, notebooks) to start the same service at once:

* **Check-then-start under a lock.** ``start`` holds an exclusive ``flock`` on ``<service>/start.lock`` from
  reading ``service.json`` until the service answers (or fails), so exactly one starter launches a JVM and the
  others wait and reuse it; the record is written through a temporary file of the writer's own, so no starter can
  remove another's.
* **Liveness by a held lock, not by /proc.** The JVM inherits an open ``<service>/alive.lock`` that the starter
  locked; the lock lives exactly as long as the JVM (the kernel drops it when the last holder exits), so a
  recycled PID is never mistaken for ours and no ``/proc`` is needed. Records of older versions, without it,
  fall back to the PID and its ``/proc`` start time.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from storage_handler.errors import ProcessError
from storage_handler.home import state_home
from storage_handler.toolchain import find_java

log = logging.getLogger(__name__)
LOOPBACK = "127.0.0.1"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def port_open(port: int, host: str = LOOPBACK) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


def _process_start_time(pid: int) -> str | None:
    """Kernel start time of a process (field 22 of /proc/PID/stat); None if the process is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


@dataclass(frozen=True, slots=True)
class ServiceInfo:
    """What ``service.json`` records about a running embedded service."""

    name: str
    pid: int
    port: int
    uri: str
    log_path: str
    started_at: float
    proc_start: str | None
    alive_lock: str = ""  # the lock file the service's JVM holds while it lives (empty in older records)
    kerberos_principal: str = ""  # the principal a Kerberos-secured service runs as (empty: unauthenticated)
    kerberos_protection: str = ""  # the least quality of protection it accepts (hadoop.rpc.protection)

    def alive(self) -> bool:
        if self.alive_lock:
            held = _lock_held(Path(self.alive_lock))
            if held is not None:
                return held
        start = _process_start_time(self.pid)
        if start is None:
            return _pid_exists(self.pid) and self.proc_start is None
        return self.proc_start is None or start == self.proc_start


def _lock_held(path: Path) -> bool | None:
    """Whether some process holds ``path``'s lock (None: no such file)."""
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing also drops the lock if we just took it
    return False


def _pid_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def _exclusive(path: Path) -> Iterator[None]:
    """Hold ``path``'s lock (blocking) for the ``with`` block."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


class LocalService:
    """A background JVM with a pid file, a log file, a readiness probe and stop-by-PID."""

    name = "service"
    ready_timeout = 180.0
    kerberos_principal = ""  # what a Kerberos-secured service runs as; recorded in service.json
    kerberos_protection = ""  # the least protection it accepts (a metastore's hadoop.rpc.protection); recorded too

    def __init__(self, home: Path | None = None) -> None:
        self.home = (home or state_home()).resolve()
        self.folder = self.home / self.name
        self.info_path = self.folder / "service.json"
        self.log_path = self.folder / f"{self.name}.log"
        self.start_lock = self.folder / "start.lock"
        self.alive_lock = self.folder / "alive.lock"

    # -- to be provided by subclasses
    def command(self, port: int) -> list[str]:
        raise NotImplementedError

    def env(self) -> dict[str, str]:
        return dict(os.environ)

    def uri_for(self, port: int) -> str:
        return f"{LOOPBACK}:{port}"

    def probe(self, port: int) -> bool:
        return port_open(port)

    def probe_running(self, info: ServiceInfo) -> bool:
        """Whether a service found running (started by anyone) answers."""
        return self.probe(info.port)

    def check_reuse(self, info: ServiceInfo) -> None:
        """Raise a one-line ProcessError if the running service is not what this starter asks for: another
        principal, or a weaker protection than asked for (a client that accepts any level would then send in the
        clear what was meant to be encrypted)."""
        if not self.kerberos_principal:
            return
        if info.kerberos_principal != self.kerberos_principal:
            now = f"as {info.kerberos_principal}" if info.kerberos_principal else "without Kerberos"
            raise ProcessError(
                f"the embedded {self.name} (pid {info.pid}, {info.uri}) already runs {now}; stop it first "
                f"(`hsh {self.name} stop`) to start it with Kerberos as {self.kerberos_principal}"
            )
        if info.kerberos_protection != self.kerberos_protection:
            now = info.kerberos_protection or "a protection it did not record"
            raise ProcessError(
                f"the embedded {self.name} (pid {info.pid}, {info.uri}) already runs with Kerberos as "
                f"{info.kerberos_principal} at rpc protection {now}; stop it first (`hsh {self.name} stop`) to start "
                f"it with protection {self.kerberos_protection or 'its default'}"
            )

    # -- lifecycle
    def status(self) -> ServiceInfo | None:
        """The running service, or None (a stale pid file is removed)."""
        try:
            info = ServiceInfo(**json.loads(self.info_path.read_text()))
        except (OSError, ValueError, TypeError):
            return None
        if not info.alive():
            self.info_path.unlink(missing_ok=True)
            return None
        return info

    def start(self, port: int | None = None, *, progress: Callable[[str], None] | None = None) -> ServiceInfo:
        """Start the service, or return the running one if it answers. Blocks until it is ready; concurrent
        starters wait for the first one and reuse its service (see the module docstring)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        with _exclusive(self.start_lock):
            return self._start_locked(port, progress or (lambda _msg: None))

    def _start_locked(self, port: int | None, say: Callable[[str], None]) -> ServiceInfo:
        running = self.status()
        if running is not None:
            self.check_reuse(running)
            if self.probe_running(running):
                return running
            raise ProcessError(
                f"the embedded {self.name} (pid {running.pid}) is running but does not answer on port "
                f"{running.port}; see {running.log_path}, or run `hsh {self.name} stop` and start it again"
            )
        find_java()
        port = port or free_port()
        if port_open(port):
            raise ProcessError(f"cannot start the embedded {self.name}: port {port} is already in use")
        say(f"starting the embedded {self.name} on {LOOPBACK}:{port} (log: {self.log_path})")
        command = self.command(port)
        alive_fd = os.open(self.alive_lock, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            try:
                fcntl.flock(alive_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise ProcessError(
                    f"an embedded {self.name} started earlier still runs (it holds {self.alive_lock}) but its "
                    f"record {self.info_path} is gone: stop that process (`fuser {self.alive_lock}` names it), "
                    "then start again"
                ) from None
            with open(self.log_path, "ab") as log_file:
                proc = subprocess.Popen(
                    command, cwd=self.folder, env=self.env(), stdin=subprocess.DEVNULL, stdout=log_file,
                    stderr=subprocess.STDOUT, start_new_session=True, pass_fds=(alive_fd,),
                )
        finally:
            os.close(alive_fd)  # the JVM keeps its copy, and with it the lock, for as long as it runs
        info = ServiceInfo(
            name=self.name, pid=proc.pid, port=port, uri=self.uri_for(port), log_path=str(self.log_path),
            started_at=time.time(), proc_start=_process_start_time(proc.pid), alive_lock=str(self.alive_lock),
            kerberos_principal=self.kerberos_principal, kerberos_protection=self.kerberos_protection,
        )
        with tempfile.NamedTemporaryFile("w", dir=self.folder, prefix=".service-", suffix=".tmp",
                                         delete=False) as tmp:
            tmp.write(json.dumps(asdict(info), indent=2))
        os.replace(tmp.name, self.info_path)
        deadline = time.monotonic() + self.ready_timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                self.info_path.unlink(missing_ok=True)
                raise ProcessError(
                    f"the embedded {self.name} exited with code {proc.returncode} while starting; "
                    f"last lines of {self.log_path}:\n{_tail(self.log_path)}"
                )
            if self.probe(port):
                say(f"{self.name} ready at {info.uri} (pid {proc.pid})")
                return info
            time.sleep(0.5)
        self.stop()
        raise ProcessError(
            f"the embedded {self.name} did not become ready within {self.ready_timeout:.0f}s; "
            f"last lines of {self.log_path}:\n{_tail(self.log_path)}"
        )

    def stop(self, timeout: float = 30.0) -> ServiceInfo | None:
        """Stop the service started by ``start`` (SIGTERM to its process group, SIGKILL after ``timeout``)."""
        info = self.status()
        if info is None:
            return None
        _signal_group(info.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while info.alive() and time.monotonic() < deadline:
            _reap(info.pid)
            time.sleep(0.2)
        if info.alive():
            _signal_group(info.pid, signal.SIGKILL)
            while info.alive() and time.monotonic() < deadline + 10:
                _reap(info.pid)
                time.sleep(0.1)
        _reap(info.pid)
        self.info_path.unlink(missing_ok=True)
        return info


def _signal_group(pid: int, sig: int) -> None:
    """Signal the process group ``start`` created for this PID (start_new_session makes pgid == pid)."""
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass
    except PermissionError:
        os.kill(pid, sig)


def _reap(pid: int) -> None:
    """Collect a zombie child of this process so it stops looking alive."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"
