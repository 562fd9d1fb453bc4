"""A context-managed Hive Metastore client over ``hmsclient`` + ``thrift``.

Why a wrapper and not ``hmsclient.HMSClient`` directly:

* **Timeouts.** A bare ``TSocket`` waits forever on a metastore that accepted the connection but hangs; we set a
  connect timeout, a socket timeout per attempt, and a deadline per call across all its retries (default 1.5× the
  socket timeout), so a metastore that accepts connections and never answers fails a call in minutes, not after
  every retry has waited out its full socket timeout.
* **Retries only where they are safe.** A call is retried (after reconnecting, with bounded exponential backoff)
  only if repeating it cannot change the outcome: reads, and writes that are idempotent by construction
  (``add_partitions`` with ``ifNotExists``, ``alter_table`` with a complete table object). ``create_table`` and
  ``drop_table`` are not retried: after a dropped connection we cannot know whether they ran; the error says so.
* **Errors that say what happened.** Thrift's exceptions become :mod:`storage_handler.errors` classes whose
  messages name the object (database / table) and the metastore URI.
* **Kerberos when the configuration says so** (:mod:`metastore.security`). A client takes its ``security``
  settings once, when it is made (default: :func:`metastore.security.config.current` -- Hive's keys in the site
  files, or the ``HSH_*`` variables the CLI and Spark sessions set; unsecured when nothing says otherwise), and
  every connection it opens authenticates with SASL/GSSAPI under them. Authentication fails at ``open`` -- before
  any call, so before any write -- with one :class:`~storage_handler.errors.MetastoreAuthError` line naming the
  metastore and the principal, never retried. The reverse mismatch (this client unsecured, the metastore
  secured) shows as a connection closed on the first call without an answer; one SASL probe tells it from a
  dying metastore at once.
"""

from __future__ import annotations

import contextlib
import getpass
import logging
import os
import socket
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any, TypeVar

from hmsclient.genthrift.hive_metastore import ThriftHiveMetastore
from hmsclient.genthrift.hive_metastore import ttypes as hms
from thrift.protocol import TBinaryProtocol
from thrift.protocol.TProtocol import TProtocolException
from thrift.Thrift import TApplicationException
from thrift.transport import TSocket, TTransport

from metastore.locks import table_lock
from metastore.security.config import KerberosSettings, current
from metastore.security.errors import HANDSHAKE_TIMEOUT, SERVER_NOT_SASL, SERVER_REQUIRES_SASL
from metastore.uri import METASTORE_URI_ENV, parse_metastore_uris
from metastore.uri import MetastoreAddress as MetastoreAddress  # re-exported: callers found them here
from metastore.uri import parse_metastore_uri as parse_metastore_uri
from metastore.uri import redact as redact
from storage_handler.errors import (
    AlreadyExistsError,
    MetastoreAuthError,
    MetastoreError,
    MetastoreUnavailableError,
    NoSuchObjectError,
)

log = logging.getLogger(__name__)
T = TypeVar("T")

_TRANSPORT_ERRORS = (TTransport.TTransportException, OSError, EOFError, socket.timeout)


# what thrift's fastbinary codec raises for bytes that are no valid reply (its pure-Python twin raises
# TProtocolException); raised only while decoding a reply, never by the transport
_DECODE_ERRORS = (TypeError, ValueError, OverflowError, MemoryError)  # UnicodeDecodeError is a ValueError


class _ReplySniffingSocket(TSocket.TSocket):
    """A socket that remembers the first bytes of each reply, so an HTTP answer is recognized, not retried."""

    reply_start = b""

    def write(self, buff: bytes) -> None:
        self.reply_start = b""
        super().write(buff)

    def read(self, sz: int) -> bytes:
        data: bytes = super().read(sz)
        if len(self.reply_start) < 5:
            self.reply_start += data[: 5 - len(self.reply_start)]
        return data


class MetastoreClient:
    """One connection to one metastore. Use as a context manager; calls reconnect on demand."""

    def __init__(
        self,
        uri: str,
        *,
        connect_timeout: float = 5.0,
        socket_timeout: float = 120.0,
        retries: int = 8,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        call_deadline: float | None = None,
        security: KerberosSettings | None = None,
    ) -> None:
        # every metastore of ``hive.metastore.uris``; ``address`` / ``uri``: the one connected to (or tried first)
        self.addresses = parse_metastore_uris(uri)
        self.address = self.addresses[0]
        self.security = (current() if security is None else security).validated()
        self.uri = self.address.uri
        self.uris = ",".join(a.uri for a in self.addresses)  # what another client of the same metastore is given
        self.connect_timeout = connect_timeout
        self.socket_timeout = socket_timeout
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.call_deadline = 1.5 * socket_timeout if call_deadline is None else call_deadline
        self._ever_connected = False
        self._socket: _ReplySniffingSocket | None = None
        self._transport: TTransport.TTransportBase | None = None
        self._client: ThriftHiveMetastore.Client | None = None
        self._answered = False  # whether the current connection has answered a call yet
        self._speaks_sasl: bool | None = None  # asked only when a fresh connection is closed unanswered

    def sibling(self, *, retries: int | None = None, socket_timeout: float | None = None) -> MetastoreClient:
        """Another connection to the same metastore with the same timeouts and retries (for calls in parallel:
        a Thrift connection carries one call at a time). ``retries`` and ``socket_timeout`` override this one's
        (a lock heartbeat retries once and waits briefly: the next beat is the retry)."""
        timeout = self.socket_timeout if socket_timeout is None else socket_timeout
        return MetastoreClient(self.uris, connect_timeout=self.connect_timeout, socket_timeout=timeout,
                               retries=self.retries if retries is None else retries, backoff=self.backoff,
                               max_backoff=self.max_backoff,
                               call_deadline=self.call_deadline if socket_timeout is None else None,
                               security=self.security)

    # ------------------------------------------------------------------ connection
    def __enter__(self) -> MetastoreClient:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self) -> None:
        """Connect to the metastore last connected to, else to the next of :attr:`addresses` that answers (a highly
        available metastore's failover, as Hive's client does it); raise for the last one when none does."""
        if self._client is not None:
            return
        start = self.addresses.index(self.address)
        for i in range(len(self.addresses)):
            address = self.addresses[(start + i) % len(self.addresses)]
            if address != self.address:
                self.address, self.uri, self._speaks_sasl = address, address.uri, None
            try:
                self._open_one()
                return
            except MetastoreUnavailableError:
                if i == len(self.addresses) - 1:
                    raise
                log.warning("metastore %s does not answer; trying %s", self.uri,
                            self.addresses[(start + i + 1) % len(self.addresses)].uri)

    def _open_one(self) -> None:
        sock = _ReplySniffingSocket(self.address.host, self.address.port)
        sock.setTimeout(int(self.connect_timeout * 1000))  # bounds the connect and each read of a SASL handshake
        transport: TTransport.TTransportBase
        if self.security.sasl_enabled:
            from metastore.security.sasl import kerberos_transport

            transport = kerberos_transport(self.address.host, self.address.port, self.security, sock=sock,
                                           address=self.uri)
        else:
            transport = TTransport.TBufferedTransport(sock)
        try:
            transport.open()  # a MetastoreAuthError (Kerberos) goes out as it is: not retried, not "unavailable"
        except _TRANSPORT_ERRORS as e:
            if os.environ.get(METASTORE_URI_ENV, "").strip() in (self.uri, self.uris):  # the user's setting chose it
                hint = ("it comes from $HSH_METASTORE_URI: point that at a running metastore, or unset it to use "
                        "the embedded one (`hsh metastore start`)")
            else:
                hint = ("start the embedded one with `hsh metastore start`, or pass --metastore / set "
                        "HSH_METASTORE_URI to a running metastore")
            raise MetastoreUnavailableError(
                f"cannot reach the Hive Metastore at {self.uri} ({_reason(e)}); {hint}"
            ) from e
        sock.setTimeout(int(self.socket_timeout * 1000))
        self._ever_connected = True
        self._answered = False
        self._socket = sock
        self._transport = transport
        # the C-accelerated codec (thrift's fastbinary; pure Python where it is missing): decoding a few hundred
        # partitions in pure Python costs ~0.4 ms each, a query's whole planning budget at 400 partitions
        self._client = ThriftHiveMetastore.Client(TBinaryProtocol.TBinaryProtocolAccelerated(transport))

    def close(self) -> None:
        if self._transport is not None:
            with contextlib.suppress(*_TRANSPORT_ERRORS):  # closing a dead socket is not worth reporting
                self._transport.close()
        self._transport = None
        self._socket = None
        self._client = None

    def _call(self, subject: str, fn: Callable[[ThriftHiveMetastore.Client], T], *, idempotent: bool) -> T:
        """Run ``fn(thrift_client)``; translate errors; reconnect and retry transport failures if idempotent."""
        attempt = 0
        start = time.monotonic()
        while True:
            try:
                try:
                    self.open()
                except MetastoreUnavailableError as e:
                    # Never reached: fail fast. Reached before: it is restarting, so retry like a dropped call.
                    if not self._ever_connected:
                        raise
                    raise TTransport.TTransportException(message=str(e)) from e
                except MetastoreAuthError as e:
                    # A secured metastore we were connected to, closing or stalling a new handshake: it is
                    # restarting (it spoke SASL a moment ago), so retry. Any other refusal is final.
                    if not (self._ever_connected and e.reason in (SERVER_NOT_SASL, HANDSHAKE_TIMEOUT)):
                        raise
                    raise TTransport.TTransportException(message=str(e)) from e
                assert self._client is not None and self._socket is not None
                remaining = self.call_deadline - (time.monotonic() - start)
                self._socket.setTimeout(int(max(0.1, min(self.socket_timeout, remaining)) * 1000))
                result = fn(self._client)
                self._answered = True
                return result
            except hms.NoSuchObjectException as e:
                raise NoSuchObjectError(f"{subject} does not exist in the metastore at {self.uri}") from e
            except hms.AlreadyExistsException as e:
                raise AlreadyExistsError(f"{subject} already exists in the metastore at {self.uri}") from e
            except (hms.MetaException, hms.InvalidObjectException, hms.InvalidOperationException) as e:
                raise MetastoreError(
                    f"the metastore at {self.uri} refused the call for {subject}: {getattr(e, 'message', e)}"
                ) from e
            except (TApplicationException, TProtocolException) as e:
                raise MetastoreError(
                    f"the metastore at {self.uri} failed on {subject}: {e.message or e} "
                    "(is it a Hive 2.x/3.x/4.x metastore speaking the binary Thrift protocol?)"
                ) from e
            except _DECODE_ERRORS as e:  # the C codec reports a malformed reply with built-in exceptions
                self.close()  # the stream is out of step: the next call starts on a fresh connection
                raise MetastoreError(
                    f"the metastore at {self.uri} sent a malformed reply to {subject} ({type(e).__name__}: {e}); "
                    "is it a Hive 2.x/3.x/4.x metastore speaking the binary Thrift protocol?"
                ) from e
            except _TRANSPORT_ERRORS as e:
                if self._socket is not None and self._socket.reply_start.startswith(b"HTTP/"):
                    self.close()
                    raise MetastoreError(
                        f"the server at {self.uri} answered {subject} with HTTP, not the metastore's binary Thrift "
                        "protocol: is that the metastore's Thrift port (usually 9083) and not an HTTP endpoint?"
                    ) from e
                closed_unanswered = (self._socket is not None and not self._answered
                                     and not self._socket.reply_start and _closed_by_peer(e))
                self.close()
                if closed_unanswered and not self.security.sasl_enabled and self._requires_sasl():
                    from metastore.security.sasl import plain_connection_closed_message

                    raise MetastoreAuthError(plain_connection_closed_message(self.uri),
                                             reason=SERVER_REQUIRES_SASL) from e
                delay = min(self.max_backoff, self.backoff * (2**attempt))
                elapsed = time.monotonic() - start
                if idempotent and attempt < self.retries and elapsed + delay >= self.call_deadline:
                    raise MetastoreUnavailableError(
                        f"the Hive Metastore at {self.uri} did not complete {subject} within {self.call_deadline:.0f} s "
                        f"({attempt + 1} attempt(s), last: {_reason(e)}); if it accepts connections but never "
                        "answers, check its log and restart it"
                    ) from e
                if not idempotent or attempt >= self.retries:
                    hint = "" if idempotent else "; the call may or may not have been applied, re-running the command is safe"
                    raise MetastoreUnavailableError(
                        f"lost the connection to the Hive Metastore at {self.uri} during {subject} "
                        f"({_reason(e)}) after {attempt + 1} attempt(s){hint}"
                    ) from e
                log.warning("metastore %s: %s during %s; retrying in %.1fs", self.uri, _reason(e), subject, delay)
                time.sleep(delay)
                attempt += 1

    def _requires_sasl(self) -> bool:
        """Whether the metastore, which just closed a fresh connection without answering, speaks SASL (then it
        requires Kerberos and this client is unsecured). Asked once per client: a metastore does not switch."""
        if self._speaks_sasl is None:
            from metastore.security.sasl import speaks_sasl

            # None: cannot tell (e.g. not listening while it restarts): ask again after the next such close
            self._speaks_sasl = speaks_sasl(self.address.host, self.address.port, timeout=self.connect_timeout)
        return bool(self._speaks_sasl)

    # ------------------------------------------------------------------ databases
    def user_name(self) -> str:
        """The user the metastore knows this client as, which Hive records as the owner of what it creates: with
        Kerberos the short name of the authenticated principal (``svc@REALM`` and ``svc/host@REALM`` are ``svc``,
        as Hadoop's DEFAULT ``auth_to_local`` rule maps a principal of its realm; a site with other rules passes
        ``--owner``), else the operating-system user, as Hive's own unsecured clients send it."""
        if not self.security.sasl_enabled:
            return getpass.getuser()
        from metastore.security.credentials import authenticated_principal, short_name

        return short_name(authenticated_principal(self.security.client_principal))

    def get_all_databases(self) -> list[str]:
        return self._call("the database list", lambda c: c.get_all_databases(), idempotent=True)

    def get_database(self, name: str) -> hms.Database:
        return self._call(f"database {name!r}", lambda c: c.get_database(name), idempotent=True)

    def database_exists(self, name: str) -> bool:
        try:
            self.get_database(name)
        except NoSuchObjectError:
            return False
        return True

    def create_database(self, name: str, *, location: str | None = None, description: str = "") -> None:
        db = hms.Database(name=name, description=description, locationUri=location, parameters={})
        self._call(f"database {name!r}", lambda c: c.create_database(db), idempotent=False)

    def ensure_database(self, name: str) -> bool:
        """Create the database unless it exists; returns True if it was created. Safe against a racing creator."""
        if self.database_exists(name):
            return False
        try:
            self.create_database(name)
        except AlreadyExistsError:
            return False
        return True

    # ------------------------------------------------------------------ tables
    def get_table(self, db: str, table: str) -> hms.Table:
        return self._call(f"table {db}.{table}", lambda c: c.get_table(db, table), idempotent=True)

    def table_exists(self, db: str, table: str) -> bool:
        try:
            self.get_table(db, table)
        except NoSuchObjectError:
            return False
        return True

    def get_tables(self, db: str, pattern: str = "*") -> list[str]:
        return self._call(f"tables of database {db!r}", lambda c: c.get_tables(db, pattern), idempotent=True)

    def create_table(self, table: hms.Table) -> None:
        self._call(f"table {table.dbName}.{table.tableName}", lambda c: c.create_table(table), idempotent=False)

    def alter_table(self, table: hms.Table) -> None:
        """Replace the table's definition. Idempotent: the same full object twice gives the same table."""
        self._call(
            f"table {table.dbName}.{table.tableName}",
            lambda c: c.alter_table(table.dbName, table.tableName, table),
            idempotent=True,
        )

    def drop_table(self, db: str, table: str, *, delete_data: bool = False) -> None:
        self._call(f"table {db}.{table}", lambda c: c.drop_table(db, table, delete_data), idempotent=False)

    # ------------------------------------------------------------------ partitions
    def get_partition_names(self, db: str, table: str) -> list[str]:
        return self._call(
            f"partitions of {db}.{table}", lambda c: c.get_partition_names(db, table, -1), idempotent=True
        )

    def get_partitions(self, db: str, table: str) -> list[hms.Partition]:
        return self._call(f"partitions of {db}.{table}", lambda c: c.get_partitions(db, table, -1), idempotent=True)

    def get_partitions_by_names(self, db: str, table: str, names: Sequence[str]) -> list[hms.Partition]:
        """The partitions called ``names`` (``k=v/k2=v2``); names that do not exist are left out."""
        return self._call(f"partitions of {db}.{table}",
                          lambda c: c.get_partitions_by_names(db, table, list(names)), idempotent=True)

    def add_partitions(self, db: str, table: str, partitions: Sequence[hms.Partition]) -> None:
        """Add partitions that do not exist yet (``ifNotExists``): idempotent, so safely retried."""
        request = hms.AddPartitionsRequest(
            dbName=db, tblName=table, parts=list(partitions), ifNotExists=True, needResult=False
        )
        self._call(f"partitions of {db}.{table}", lambda c: c.add_partitions_req(request), idempotent=True)

    def drop_partitions(self, db: str, table: str, names: Sequence[str]) -> None:
        """Drop partitions by name (``k=v/k2=v2``); missing ones are ignored, so the call is idempotent."""
        request = hms.DropPartitionsRequest(
            dbName=db, tblName=table, parts=hms.RequestPartsSpec(names=list(names)), deleteData=False,
            ifExists=True, needResult=False,
        )
        self._call(f"partitions of {db}.{table}", lambda c: c.drop_partitions_req(request), idempotent=True)

    # ------------------------------------------------------------------ locks
    def table_lock(self, db: str, table: str, *, wait: float = 180.0) -> AbstractContextManager[bool]:
        """Exclusive HMS table lock (see :mod:`metastore.locks`); yields False where the metastore has none."""
        return table_lock(self, db, table, wait=wait)

    def raw(self, subject: str, fn: Callable[[Any], T], *, idempotent: bool) -> T:
        """Escape hatch for Thrift calls not wrapped above, with the same error translation."""
        return self._call(subject, fn, idempotent=idempotent)


def _closed_by_peer(e: BaseException) -> bool:
    """Whether the server closed (or reset) the connection -- as opposed to a timeout or a refused connect."""
    if isinstance(e, TTransport.TTransportException):
        # thrift reports a reset (the server closed with our request unread) as "unexpected exception" + inner
        return (e.type == TTransport.TTransportException.END_OF_FILE
                or isinstance(getattr(e, "inner", None), (ConnectionResetError, BrokenPipeError)))
    return isinstance(e, (EOFError, ConnectionResetError, BrokenPipeError))


def _reason(e: BaseException) -> str:
    text = getattr(e, "message", None) or str(e) or type(e).__name__
    return str(text).strip()
