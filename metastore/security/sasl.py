"""A Thrift transport that authenticates with Kerberos (SASL/GSSAPI), for metastores and HiveServer2.

Libraries only: the SASL framing is ``thrift_sasl.TSaslClientTransport``'s, the GSSAPI mechanism (RFC 4752
security-layer negotiation included) is ``pure-sasl``'s, the Kerberos work is MIT Kerberos's through the
``kerberos`` package. What is ours is glue, each piece there for a reason verified here:

* :class:`GssapiSaslClient` -- thrift_sasl calls the API of the C ``sasl`` package (``start/step/encode/
  decode/getError``), which pure-sasl does not have. pyhive ships such an adapter (``pyhive.sasl_compat``), but it
  swaps wrap and unwrap and omits the length prefix of wrapped frames, so it only works for the ``auth`` quality
  of protection: against a metastore with ``hadoop.rpc.protection=privacy`` it fails with "Token header is
  malformed or corrupt". This one works for ``auth``, ``auth-int`` and ``auth-conf``.
* :class:`KerberosTransport` -- points the handshake at a keytab login's private credential cache (if any) and
  turns every failure into one :class:`~metastore.security.errors.MetastoreAuthError` line naming the server,
  the principals and the fix (see :func:`explain`).

The server's host in the GSSAPI name is the host part of the configured principal (``_HOST`` expanded to the
address we connect to, as Hive's Java client does). MIT Kerberos may still canonicalize that host: with its
defaults (``rdns = true``) ``hive@127.0.0.1`` becomes ``hive/localhost@REALM``; the Java client does not do
that. :func:`requested_principal` shows what MIT will ask for, and :func:`explain` says so when it differs.
"""

from __future__ import annotations

import contextlib
import logging
import os
import struct
import threading
from collections.abc import Iterator
from typing import Any

from thrift.transport import TSocket, TTransport
from thrift_sasl import TSaslClientTransport

from metastore.security import errors as E
from metastore.security.config import KerberosSettings, split_principal
from metastore.security.credentials import KeytabLogin, require_sasl_libraries
from metastore.security.errors import MetastoreAuthError

log = logging.getLogger(__name__)

SERVICE_METASTORE = "metastore"
#: Seconds into a Kerberos handshake after which the user is told what it is waiting for. MIT Kerberos tries a KDC
#: that does not answer for about a minute (54 s measured here) before it fails, and shows nothing meanwhile.
SLOW_HANDSHAKE_SECONDS = 5.0
SERVICE_HIVESERVER2 = "HiveServer2"


class GssapiSaslClient:
    """python-sasl's client API (what thrift_sasl calls) over pure-sasl's GSSAPI mechanism.

    Errors are not swallowed into ``getError`` (as python-sasl does): the Kerberos exception itself propagates
    out of ``TSaslClientTransport.open``, so :func:`explain` can read its codes.
    """

    def __init__(self, host: str, service: str, qops: tuple[str, ...] = ("auth-conf", "auth-int", "auth")) -> None:
        from puresasl.client import SASLClient

        self._client = SASLClient(host, service=service, mechanism="GSSAPI", qops=[q.encode() for q in qops])
        self._error: str | None = None

    def start(self, mechanism: str) -> tuple[bool, str, bytes]:
        return True, mechanism, self._client.process()

    def step(self, challenge: bytes) -> tuple[bool, bytes]:
        return True, self._client.process(challenge)

    @property
    def qop(self) -> str:
        """The negotiated quality of protection: ``auth``, ``auth-int`` or ``auth-conf``."""
        value = self._client.qop
        return value.decode() if isinstance(value, bytes) else str(value)

    def encode(self, data: bytes) -> tuple[bool, bytes]:
        """An outgoing frame: as is under ``auth`` (thrift_sasl then adds the length), else wrapped (signed or
        sealed) with its own 4-byte length, as thrift_sasl expects of an encoding SASL library."""
        if self.qop == "auth":
            return True, data
        wrapped = self._client.wrap(data)
        return True, struct.pack(">I", len(wrapped)) + wrapped

    def decode(self, data: bytes) -> tuple[bool, bytes]:
        """An incoming wrapped frame (thrift_sasl passes it with its length prefix) unwrapped."""
        return True, self._client.unwrap(data[4:])

    def getError(self) -> str | None:  # noqa: N802 - the name thrift_sasl calls
        return self._error

    def dispose(self) -> None:
        with contextlib.suppress(Exception):
            self._client.dispose()


class KerberosTransport(TSaslClientTransport):
    """``TSaslClientTransport`` with GSSAPI whose ``open`` uses the right credentials and fails in one line.

    Build it with :func:`kerberos_transport`; open and use it like any Thrift transport (it frames, and buffers
    writes until ``flush``; it supports the C-accelerated binary protocol).
    """

    def __init__(self, sock: TSocket.TSocket, settings: KerberosSettings, *, host: str, port: int,
                 login: KeytabLogin | None = None, server_kind: str = SERVICE_METASTORE,
                 address: str | None = None) -> None:
        self.settings = settings
        self.server_principal = settings.service_principal_for(host)
        self.address = address or f"{host}:{port}"
        self.server_kind = server_kind
        self.login = login
        service, sasl_host = settings.sasl_service_and_host(host)
        self.sasl_service, self.sasl_host = service, sasl_host
        super().__init__(lambda: GssapiSaslClient(sasl_host, service, settings.qops), "GSSAPI", sock)

    def open(self) -> None:
        require_sasl_libraries()
        scope = self.login.scope() if self.login is not None else contextlib.nullcontext()
        try:
            with _told_if_slow(self._slow_message()), scope:
                super().open()
        except MetastoreAuthError as e:
            self._discard()
            if e.reason == E.KEYTAB:  # from the keytab login: say which server it was for
                raise MetastoreAuthError(
                    f"cannot authenticate to the {self.server_kind} at {self.address} (principal "
                    f"{self.server_principal}): {e}", reason=e.reason) from e
            raise
        except Exception as e:
            self._discard()
            mapped = explain(e, address=self.address, server_principal=self.server_principal,
                             client_principal=self.login.principal if self.login else None,
                             sasl_service=self.sasl_service, sasl_host=self.sasl_host, server_kind=self.server_kind)
            if mapped is None:
                raise
            raise mapped from e

    def _slow_message(self) -> str:
        realm = self.server_principal.rpartition("@")[2] or "the default realm"
        who = f" as {self.login.principal}" if self.login is not None else ""
        return (f"still authenticating{who} to the {self.server_kind} at {self.address} after "
                f"{SLOW_HANDSHAKE_SECONDS:.0f} s: Kerberos is waiting for a KDC of {realm} or for the server. MIT "
                "Kerberos gives up on a KDC that does not answer after about a minute; check the realm's kdc in "
                f"krb5.conf ({os.environ.get('KRB5_CONFIG', '/etc/krb5.conf')})")

    @property
    def qop(self) -> str | None:
        """The negotiated quality of protection once open."""
        sasl: Any = getattr(self, "sasl", None)
        return sasl.qop if isinstance(sasl, GssapiSaslClient) else None

    def _discard(self) -> None:
        """Forget a half-done handshake so the transport can be opened again (thrift_sasl refuses a second
        ``open`` while ``self.sasl`` is set) and close the socket."""
        sasl: Any = getattr(self, "sasl", None)
        if isinstance(sasl, GssapiSaslClient):
            sasl.dispose()
        self.sasl = None
        self.encode = None  # thrift_sasl decides framing on the first flush of each connection
        with contextlib.suppress(Exception):
            self._trans.close()

    def close(self) -> None:
        self._discard()


_logins: dict[tuple[str, str], KeytabLogin] = {}
_logins_lock = threading.Lock()


@contextlib.contextmanager
def _told_if_slow(message: str, after: float = SLOW_HANDSHAKE_SECONDS) -> Iterator[None]:
    """Logs ``message`` once (a warning: the CLI shows it) if the block is still running after ``after`` seconds.

    A timer thread, because the wait is inside MIT Kerberos (python-gssapi releases the GIL there)."""
    timer = threading.Timer(after, log.warning, args=("%s", message))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def login_for(settings: KerberosSettings) -> KeytabLogin | None:
    """The process-wide keytab login for these settings (one private cache per keytab and principal, shared by
    every connection), or None to use the default ticket cache."""
    if not (settings.keytab and settings.client_principal):
        return None
    key = (settings.keytab, settings.client_principal)
    with _logins_lock:
        if key not in _logins:
            _logins[key] = KeytabLogin(settings.keytab, settings.client_principal)
        return _logins[key]


def kerberos_transport(
    host: str,
    port: int,
    settings: KerberosSettings,
    *,
    sock: TSocket.TSocket | None = None,
    connect_timeout: float = 10.0,
    login: KeytabLogin | None = None,
    server_kind: str = SERVICE_METASTORE,
    address: str | None = None,
) -> KerberosTransport:
    """An unopened Kerberos transport to ``host:port`` (a metastore, or HiveServer2 with ``server_kind``).

    ``sock`` lets the caller keep its own socket subclass (``metastore.client`` sniffs replies); otherwise a
    ``TSocket`` with ``connect_timeout`` (which also bounds each read of the handshake, so a server that never
    answers fails instead of hanging). ``login`` defaults to :func:`login_for` ``(settings)``. ``address`` is how
    messages name the server (default ``host:port``; ``metastore.client`` passes the ``thrift://`` URI).
    """
    settings = settings.validated()
    if sock is None:
        sock = TSocket.TSocket(host, port)
        sock.setTimeout(int(connect_timeout * 1000))
    return KerberosTransport(sock, settings, host=host, port=port,
                             login=login if login is not None else login_for(settings), server_kind=server_kind,
                             address=address)


@contextlib.contextmanager
def credentials_scope(settings: KerberosSettings) -> Iterator[None]:
    """For code that opens its own GSSAPI connections (e.g. plain ``pyhive.hive.connect(auth="KERBEROS")``):
    within the block, this thread uses the keytab login's private cache, if settings name a keytab."""
    login = login_for(settings)
    with login.scope() if login is not None else contextlib.nullcontext():
        yield


def requested_principal(service: str, host: str) -> str | None:
    """The service principal MIT Kerberos will really ask the KDC for, for ``service@host`` under this
    machine's krb5.conf (canonicalization, ``rdns``); None if ``gssapi`` is not installed."""
    try:
        import gssapi

        name = gssapi.Name(f"{service}@{host}", gssapi.NameType.hostbased_service)
        return str(name.canonicalize(gssapi.MechType.kerberos))
    except Exception:  # noqa: BLE001 - a diagnostic only: no answer rather than a new failure
        return None


def _canonicalization_hint(service: str, host: str, principal: str) -> str:
    requested = requested_principal(service, host)
    if not requested:
        return ""
    wanted = principal.split("@", 1)[0]
    if requested.split("@", 1)[0] == wanted:
        return ""
    return (f"; note: this machine's Kerberos configuration turns {service}@{host} into {requested} "
            "(host name canonicalization): set rdns = false and dns_canonicalize_hostname = false in "
            "[libdefaults] of krb5.conf, or give the metastore a principal for that name")


def _gss_codes(e: BaseException) -> tuple[int, str, int, str] | None:
    """(major, major text, minor, minor text) of a ``kerberos.GSSError`` (args ((text, code), (text, code)))."""
    args: Any = getattr(e, "args", ())
    try:
        (major_text, major), (minor_text, minor) = args[0], args[1]
        return int(major), str(major_text), int(minor), str(minor_text)
    except (IndexError, TypeError, ValueError):
        return None


def explain(
    e: BaseException,
    *,
    address: str,
    server_principal: str,
    client_principal: str | None = None,
    sasl_service: str | None = None,
    sasl_host: str | None = None,
    server_kind: str = SERVICE_METASTORE,
) -> MetastoreAuthError | None:
    """One-line MetastoreAuthError for an exception raised while opening a Kerberos transport; None when it is
    not about authentication (connection refused, timeouts: the caller's "unavailable" path handles those)."""
    if isinstance(e, MetastoreAuthError):
        return e
    who = f" as {client_principal}" if client_principal else ""
    target = f"the {server_kind} at {address} (principal {server_principal})"
    if sasl_service is None or sasl_host is None:
        sasl_service, sasl_host, _ = split_principal(server_principal)
    hint = _canonicalization_hint(sasl_service, sasl_host, server_principal)

    codes = _gss_codes(e) if type(e).__name__ == "GSSError" else None
    if codes is not None:
        major, major_text, minor, minor_text = codes
        mit = minor_text or major_text
        if minor in (E.KRB5_FCC_NOFILE, E.KRB5_CC_NOTFOUND) or (major == E.GSS_S_NO_CRED and minor == 0):
            return MetastoreAuthError(
                f"no Kerberos ticket{' for ' + client_principal if client_principal else ''} to authenticate to "
                f"{target}: run kinit, or pass --keytab and --principal ({mit})", reason=E.NO_TICKET)
        if minor == E.KRB5KRB_AP_ERR_TKT_EXPIRED:
            return MetastoreAuthError(
                f"the Kerberos ticket{' of ' + client_principal if client_principal else ''} has expired; cannot "
                f"authenticate to {target}: run kinit again, or use --keytab/--principal so tickets are renewed",
                reason=E.EXPIRED)
        if minor == E.KRB5KDC_ERR_S_PRINCIPAL_UNKNOWN:
            return MetastoreAuthError(
                f"the KDC does not know the service principal of {target}: check hive.metastore.kerberos.principal "
                f"({mit}){hint}", reason=E.UNKNOWN_SERVICE)
        if minor == E.KRB5KRB_AP_ERR_SKEW:
            return MetastoreAuthError(
                f"clock skew too great between this machine and the KDC while authenticating{who} to {target}: "
                "synchronise the clocks (NTP); Kerberos tolerates 5 minutes", reason=E.CLOCK_SKEW)
        if minor in (E.KRB5_KDC_UNREACH, E.KRB5_REALM_UNKNOWN):
            return MetastoreAuthError(
                f"cannot reach a KDC to authenticate{who} to {target}: check the realm's kdc in krb5.conf "
                f"($KRB5_CONFIG) ({mit})", reason=E.KDC_UNREACHABLE)
        return MetastoreAuthError(f"Kerberos authentication{who} to {target} failed: {mit}{hint}", reason=E.OTHER)

    if isinstance(e, TTransport.TTransportException):
        message = str(getattr(e, "message", None) or e)
        if message.startswith("Bad status:"):
            detail = message.split("(", 1)[-1].rstrip(")").strip("b'\"")
            return MetastoreAuthError(
                f"{target} rejected the Kerberos authentication{who} ({detail}): it does not run as that principal "
                "(compare hive.metastore.kerberos.principal with the server's), or its clock differs from this "
                f"machine's by more than 5 minutes; the server's log says which{hint}", reason=E.REJECTED)
        if e.type == TTransport.TTransportException.TIMED_OUT:
            return MetastoreAuthError(
                f"{target} did not answer the Kerberos (SASL) handshake{who} in time: an unsecured {server_kind} "
                "that does not check its protocol waits like this (does it require Kerberos?); otherwise it is "
                "hung -- check its log", reason=E.HANDSHAKE_TIMEOUT)
        if e.type == TTransport.TTransportException.END_OF_FILE or "read 0 bytes" in message:
            return MetastoreAuthError(
                f"{target} closed the connection during the Kerberos (SASL) handshake{who}: it does not require "
                f"Kerberos; connect without it (hive.metastore.sasl.enabled=false and no --metastore-principal), or "
                f"secure that {server_kind}", reason=E.SERVER_NOT_SASL)
        return None
    if type(e).__module__.startswith("puresasl"):
        return MetastoreAuthError(f"SASL negotiation{who} with {target} failed: {e}", reason=E.OTHER)
    return None


def speaks_sasl(host: str, port: int, *, timeout: float = 5.0) -> bool | None:
    """Whether the server at ``host:port`` answers a SASL negotiation: True if it answers with a SASL status
    (even a refusal, such as Hive's "Unsupported mechanism type PLAIN"), False if it closes the connection
    without one, None if it cannot be asked (not listening, no answer in time).

    Why: a metastore that requires Kerberos closes an unauthenticated client's connection on its first call
    without a byte of answer -- which is also what a metastore killed in the middle of that call looks like. One
    extra connection tells them apart at once instead of after every retry. The negotiation is thrift-sasl's and
    pure-sasl's (the PLAIN mechanism through pyhive's adapter, with a fixed probe identity and no secret), and no
    metastore call is made on it.
    """
    from pyhive.sasl_compat import PureSASLClient

    sock = TSocket.TSocket(host, port)
    sock.setTimeout(int(timeout * 1000))
    transport = TSaslClientTransport(
        lambda: PureSASLClient(host, mechanism="PLAIN", username="hsh-sasl-probe", password="-"), "PLAIN", sock
    )
    try:
        transport.open()
        return True
    except TTransport.TTransportException as e:
        message = str(getattr(e, "message", None) or e)
        if message.startswith("Bad status:"):
            return True
        if (e.type == TTransport.TTransportException.END_OF_FILE or "read 0 bytes" in message
                or isinstance(getattr(e, "inner", None), (ConnectionResetError, BrokenPipeError))):
            return False
        return None
    except Exception:  # noqa: BLE001 - a diagnostic only: "cannot tell" rather than a new failure
        return None
    finally:
        with contextlib.suppress(Exception):
            sock.close()


def plain_connection_closed_message(uri: str) -> str:
    """What ``metastore.client`` says when an unauthenticated client's first call is answered by a closed
    connection and the server does speak SASL: it requires Kerberos."""
    return (f"the metastore at {uri} requires Kerberos (SASL) but this client connects without it (no principal "
            "configured): set hive.metastore.sasl.enabled=true and hive.metastore.kerberos.principal (e.g. "
            "hive/_HOST@REALM) in hive-site.xml on $HIVE_CONF_DIR or $HADOOP_CONF_DIR, or pass "
            "--metastore-principal; then kinit, or pass --keytab and --principal")
