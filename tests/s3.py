"""A real S3 endpoint for the tests: moto's server (``moto[server]``) on 127.0.0.1, started once, stopped by PID.

The endpoint and dummy credentials are put in the environment when this module is imported (by
``tests/conftest.py``, before any Spark JVM or subprocess starts, so they all inherit them); the server itself
starts only when a test asks for it. Every test gets buckets of its own (:func:`new_bucket`).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


PORT = int(os.environ.get("HSH_TEST_S3_PORT") or _free_port())
ENDPOINT = f"http://127.0.0.1:{PORT}"
ENV = {
    "AWS_ENDPOINT_URL": ENDPOINT, "AWS_ACCESS_KEY_ID": "hsh-test-key", "AWS_SECRET_ACCESS_KEY": "hsh-test-secret",
    "AWS_REGION": "us-east-1", "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true",
}


def configure_environment() -> None:
    """Point every AWS client of this process and its children at the test endpoint."""
    os.environ["HSH_TEST_S3_PORT"] = str(PORT)
    os.environ.update(ENV)


class S3Server:
    """moto's S3 server as a child process (through ``moto_s3_server.py``: conditional creates are atomic)."""

    def __init__(self, log_dir: Path) -> None:
        self.log_path = log_dir / "moto.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        log = open(self.log_path, "wb")  # noqa: SIM115 - the child owns it for its lifetime
        server = Path(__file__).with_name("moto_s3_server.py")  # moto, with S3's atomic conditional create
        self.proc = subprocess.Popen([sys.executable, str(server), "-H", "127.0.0.1", "-p", str(PORT)],
                                     stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", PORT), 0.2).close()
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"moto server did not start: {self.log_path.read_text()[-2000:]}") from None
                time.sleep(0.05)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()  # by the PID this fixture started
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)

    def requests(self) -> list[tuple[str, str]]:
        """(method, path) of every request served so far, from the server's access log."""
        out = []
        for line in self.log_path.read_text(errors="replace").splitlines():
            if '"' in line:
                parts = line.split('"')[1].split(" ")
                if len(parts) >= 2 and parts[0].isalpha():
                    out.append((parts[0].lstrip("\x1b[0123456789;m"), parts[1]))
        return out


def client():  # type: ignore[no-untyped-def]
    import boto3

    return boto3.client("s3", endpoint_url=ENDPOINT)


def new_bucket(prefix: str = "hsh") -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:12]}"
    client().create_bucket(Bucket=name)
    return name


def put_parquet(location: str, relative: str, table: pa.Table, **kwargs: object) -> str:
    """Write ``table`` as Parquet at ``location``/``relative`` (a local folder or an s3a:// URI); its location."""
    from storage_handler.storage import parse_location, storage_for

    target = parse_location(location).join(relative).uri
    filesystem, path = storage_for(target).arrow_filesystem(target)
    if parse_location(target).kind == "local":
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, filesystem=filesystem, **kwargs)
    return target


def put_bytes(location: str, relative: str, data: bytes) -> str:
    from storage_handler.storage import parse_location, storage_for

    target = parse_location(location).join(relative).uri
    storage_for(target).put(target, data)
    return target


def upload_tree(local_root: Path, location: str) -> str:
    """Copy every file under ``local_root`` to ``location`` (an s3a:// URI), keeping relative paths."""
    for path in sorted(p for p in Path(local_root).rglob("*") if p.is_file()):
        put_bytes(location, path.relative_to(local_root).as_posix(), path.read_bytes())
    return location
