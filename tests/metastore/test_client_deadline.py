"""A metastore that accepts connections and never answers: calls fail by their deadline, not after every retry.

The server is a real TCP listener on loopback that accepts and then stays silent (a hung metastore JVM looks
exactly like this to a client).
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from metastore.client import MetastoreClient
from storage_handler.errors import MetastoreUnavailableError


@pytest.fixture
def silent_metastore() -> Iterator[str]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(0.2)  # so the accept loop notices the end of the test
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            held.append(conn)  # never read, never answered, never closed until the test ends

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"thrift://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=5)
        server.close()
        for conn in held:
            conn.close()


def test_idempotent_call_gives_up_at_its_deadline(silent_metastore: str) -> None:
    client = MetastoreClient(silent_metastore, socket_timeout=1.0, call_deadline=3.0, retries=8, backoff=0.1)
    start = time.monotonic()
    with client, pytest.raises(MetastoreUnavailableError, match=r"did not complete the database list within 3 s"):
        client.get_all_databases()
    elapsed = time.monotonic() - start
    assert 2.5 <= elapsed < 6, elapsed  # without the deadline: 9 attempts x 1 s timeout + backoff


def test_an_attempt_never_outlives_the_deadline(silent_metastore: str) -> None:
    """The socket timeout of each attempt is cut to what is left of the call's deadline."""
    client = MetastoreClient(silent_metastore, socket_timeout=60.0, call_deadline=2.0, retries=8)
    start = time.monotonic()
    with client, pytest.raises(MetastoreUnavailableError):
        client.get_all_databases()
    assert time.monotonic() - start < 5


def test_a_write_is_not_retried_and_says_it_may_have_run(silent_metastore: str) -> None:
    client = MetastoreClient(silent_metastore, socket_timeout=1.0, call_deadline=30.0)
    start = time.monotonic()
    with client, pytest.raises(MetastoreUnavailableError, match="may or may not have been applied"):
        client.create_database("x")
    assert time.monotonic() - start < 4
