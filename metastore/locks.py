"""Exclusive HMS table locks for writers (``sync``, ``index refresh``, re-``register``).

Hive 2.3's lock manager needs two things its clients usually get from a transaction manager: an explicit
``operationType`` (UNSET is refused) and heartbeats. And it only expires abandoned locks in a housekeeping thread
that an embedded or minimal metastore does not run, so the lock of a writer that was killed would block every
later writer forever. Hence:

* the holder heartbeats every ``HEARTBEAT_SECONDS`` on a connection of its own (Thrift clients are not
  thread-safe);
* a waiter watches the locks in its way: one whose heartbeat count and timestamp have not moved for
  ``STALE_SECONDS`` of the waiter's own (monotonic) clock belongs to a dead writer and is released, with a
  warning naming it. Watching for *change* rather than comparing timestamps keeps this immune to clock skew.

Without lock support the writers still cannot lose data: every step is idempotent and the index commit is
optimistic; the lock adds protection against a concurrent writer's stale table definition.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from hmsclient.genthrift.hive_metastore import ttypes as hms

from storage_handler.errors import MetastoreError, MetastoreUnavailableError

if TYPE_CHECKING:
    from metastore.client import MetastoreClient

log = logging.getLogger(__name__)
HEARTBEAT_SECONDS = 5.0
STALE_SECONDS = 30.0
HEARTBEAT_TIMEOUT = 10.0  # a beat that hangs longer is abandoned; the next one retries well before the lock is stale


@contextmanager
def table_lock(client: MetastoreClient, db: str, table: str, *, wait: float = 180.0) -> Iterator[bool]:
    subject = f"lock on {db}.{table}"
    component = hms.LockComponent(
        type=hms.LockType.EXCLUSIVE, level=hms.LockLevel.TABLE, dbname=db, tablename=table,
        operationType=hms.DataOperationType.NO_TXN,  # UNSET is refused by Hive 2.3's lock manager
    )
    request = hms.LockRequest(component=[component], user="hsh", hostname=socket.gethostname(), agentInfo="hsh")
    try:
        response = client.raw(subject, lambda c: c.lock(request), idempotent=False)
    except MetastoreError as e:
        if isinstance(e, MetastoreUnavailableError):
            raise
        log.info("metastore %s has no usable lock API (%s); relying on optimistic checks", client.uri, e)
        yield False
        return
    lock_id = response.lockid
    state = response.state
    deadline = time.monotonic() + wait
    watcher = _StaleLockWatcher(client, db, table, lock_id)
    while state == hms.LockState.WAITING:
        if time.monotonic() > deadline:
            _unlock(client, lock_id, subject)
            raise MetastoreError(
                f"timed out after {wait:.0f}s waiting for the lock on {db}.{table} at {client.uri}: another writer "
                "holds it and is still alive (heartbeating); retry when it is done"
            )
        watcher.release_stale()
        time.sleep(0.5)
        state = client.raw(subject, lambda c: c.check_lock(hms.CheckLockRequest(lockid=lock_id)), idempotent=True).state
    if state != hms.LockState.ACQUIRED:
        raise MetastoreError(f"the metastore at {client.uri} did not grant the lock on {db}.{table} (state {state})")
    stop = threading.Event()
    beat = threading.Thread(target=_heartbeat, args=(client, lock_id, stop), daemon=True, name="hms-lock-heartbeat")
    beat.start()
    try:
        yield True
    finally:
        stop.set()
        beat.join()
        _unlock(client, lock_id, subject)


class _StaleLockWatcher:
    """Remembers when each blocking lock's heartbeat last moved, by this process's monotonic clock."""

    def __init__(self, client: MetastoreClient, db: str, table: str, own: int) -> None:
        self.client, self.db, self.table, self.own = client, db, table, own
        self.seen: dict[int, tuple[tuple[int, int], float]] = {}

    def release_stale(self) -> None:
        request = hms.ShowLocksRequest(dbname=self.db, tablename=self.table)
        locks = self.client.raw("show locks", lambda c: c.show_locks(request), idempotent=True).locks or []
        now = time.monotonic()
        for lock in locks:
            if lock.lockid == self.own or lock.state != hms.LockState.ACQUIRED:
                continue
            pulse = (lock.lastheartbeat or 0, lock.heartbeatCount or 0)
            last_pulse, since = self.seen.get(lock.lockid, (pulse, now))
            if pulse != last_pulse:
                since = now
            self.seen[lock.lockid] = (pulse, since)
            if now - since >= STALE_SECONDS:
                log.warning(
                    "releasing lock %s on %s.%s held by %s@%s (%s): no heartbeat for %.0fs, its writer is gone",
                    lock.lockid, self.db, self.table, lock.user, lock.hostname, lock.agentInfo, now - since,
                )
                _unlock(self.client, lock.lockid, f"stale lock on {self.db}.{self.table}")
                self.seen.pop(lock.lockid, None)


def _heartbeat(client: MetastoreClient, lock_id: int, stop: threading.Event) -> None:
    with client.sibling(retries=1, socket_timeout=min(client.socket_timeout, HEARTBEAT_TIMEOUT)) as own:
        while not stop.wait(HEARTBEAT_SECONDS):
            try:
                own.raw("lock heartbeat", lambda c: c.heartbeat(hms.HeartbeatRequest(lockid=lock_id)),
                        idempotent=True)
            except MetastoreError as e:
                log.warning("lock heartbeat failed (the lock may be released as stale): %s", e)


def _unlock(client: MetastoreClient, lock_id: int, subject: str) -> None:
    try:
        client.raw(subject, lambda c: c.unlock(hms.UnlockRequest(lockid=lock_id)), idempotent=True)
    except MetastoreError as e:  # never mask the caller's own error; waiters release it once it looks dead
        log.warning("could not release metastore lock %s (%s): %s", lock_id, subject, e)
