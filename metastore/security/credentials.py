"""Kerberos credentials for this process: a keytab's tickets in a private in-memory cache, kept fresh.

Why this way (each verified with MIT Kerberos 1.20, ``gssapi`` 1.12 and ``kerberos`` 1.3, see FINDINGS.md):

* ``gssapi.Credentials(usage="initiate", name=P, store={"client_keytab": K, "ccache": C})`` gets a TGT for P from
  keytab K into cache C with no ``kinit`` and no file: C is ``MEMORY:<unique>``, private to this process.
* Calling it again is cheap and is the renewal: MIT answers from the cache while the tickets are fresh (one
  AS request for three calls) and goes back to the KDC with the keytab once they are past their ``refresh_time``
  (half their life) or expired (verified with a 15-second ticket life).
* The SASL mechanism (pure-sasl over ``kerberos``) uses the default cache of the calling thread. MIT's
  ``gss_krb5_ccache_name`` sets that per thread, so :meth:`KeytabLogin.scope` points only the connecting thread
  at the private cache and restores it afterwards: no ``KRB5CCNAME`` change that a Spark JVM started later
  would inherit (Java reads only ``FILE:`` caches), nothing on disk.
* A keytab that is missing, unreadable, not a keytab, or has no key for the principal makes MIT say only "No
  credentials cache found"; acquiring *acceptor* credentials for the principal from the keytab tells the cases
  apart ("Key table file ... not found", "Unsupported key table format version number", "No key table entry
  found for ..."), so :func:`check_keytab` does that first.

Without a keytab, the default ticket cache (``kinit``; ``$KRB5CCNAME``) is used as is; it is renewed by whoever
made it (``kinit -R``, k5start, SSSD). :func:`ticket_cache_lifetime` tells how long it has left.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Iterator
from typing import Any

from metastore.security.errors import (
    EXPIRED,
    KEYTAB,
    LIBRARY_MISSING,
    NO_TICKET,
    KerberosConfigurationError,
    MetastoreAuthError,
)


def _gssapi() -> Any:
    try:
        import gssapi
    except ImportError as e:  # pragma: no cover - depends on the installation
        raise KerberosConfigurationError(
            "Kerberos with a keytab needs the Python package `gssapi` (pip install gssapi; it compiles against "
            "MIT Kerberos: apt-get install libkrb5-dev gcc)"
        ) from e
    return gssapi


def _gss_message(e: BaseException, *, minor_only: bool = False) -> str:
    """MIT's own text of a ``gssapi`` error (its minor status is the specific part)."""
    try:
        minor = "; ".join(e.get_all_statuses(e.min_code, False))  # type: ignore[attr-defined]
        if minor_only and minor:
            return minor
        major = "; ".join(e.get_all_statuses(e.maj_code, True))  # type: ignore[attr-defined]
        return f"{minor} ({major})" if minor else major
    except Exception:  # noqa: BLE001 - any other exception: its own text
        return " ".join(str(e).split())


def check_keytab(keytab: str, principal: str) -> None:
    """Raise a one-line MetastoreAuthError (reason ``keytab``) unless ``keytab`` is a readable keytab holding a
    key for ``principal``. Reads no key material into Python."""
    try:
        with open(keytab, "rb") as f:
            f.read(1)
    except OSError as e:
        raise MetastoreAuthError(
            f"cannot read the keytab {keytab} for {principal}: {e.strerror or e}", reason=KEYTAB
        ) from e
    gssapi = _gssapi()
    name = gssapi.Name(principal, gssapi.NameType.kerberos_principal)
    try:
        gssapi.Credentials(usage="accept", name=name, store={"keytab": keytab})
    except gssapi.exceptions.GSSError as e:
        raise MetastoreAuthError(
            f"the keytab {keytab} is unusable for {principal}: {_gss_message(e, minor_only=True)}", reason=KEYTAB
        ) from e


class KeytabLogin:
    """Tickets of ``principal`` from ``keytab`` in a private in-memory credential cache of this process.

    Thread-safe. :meth:`ensure` acquires or renews (cheap when nothing is due); :meth:`scope` wraps a connection
    attempt so the SASL handshake of the current thread uses this cache.
    """

    def __init__(self, keytab: str, principal: str, *, ccache: str | None = None) -> None:
        self.keytab = keytab
        self.principal = principal
        self.ccache = ccache or f"MEMORY:hsh-{uuid.uuid4().hex}"
        self._lock = threading.Lock()
        self._checked = False

    def ensure(self) -> int:
        """Acquire (first call), reuse (fresh tickets) or renew from the keytab (due or expired tickets); the
        remaining lifetime in seconds. One-line MetastoreAuthError on any failure."""
        gssapi = _gssapi()
        with self._lock:
            if not self._checked:
                check_keytab(self.keytab, self.principal)
                self._checked = True
            name = gssapi.Name(self.principal, gssapi.NameType.kerberos_principal)
            try:
                creds = gssapi.Credentials(usage="initiate", name=name,
                                           store={"client_keytab": self.keytab, "ccache": self.ccache})
                return int(creds.lifetime or 0)
            except gssapi.exceptions.GSSError as e:
                self._checked = False  # the keytab may have changed under us: check it again next time
                raise MetastoreAuthError(
                    f"cannot get Kerberos tickets for {self.principal} from the keytab {self.keytab}: "
                    f"{_gss_message(e)}", reason=KEYTAB
                ) from e

    @contextlib.contextmanager
    def scope(self) -> Iterator[None]:
        """Within the block, this thread's GSSAPI calls (and so pure-sasl / pyhive) use this login's cache."""
        self.ensure()
        with thread_ccache(self.ccache):
            yield


_thread = threading.local()


@contextlib.contextmanager
def thread_ccache(ccache: str) -> Iterator[None]:
    """Point the current thread's default Kerberos credential cache at ``ccache`` (``gss_krb5_ccache_name``),
    restoring the previous choice afterwards (the outermost scope restores "no choice", i.e. ``KRB5CCNAME`` or
    the system default again: MIT reports the resolved default name as the previous one, which would pin it)."""
    from gssapi.raw import krb5_ccache_name

    stack: list[bytes] = _thread.__dict__.setdefault("ccaches", [])
    krb5_ccache_name(ccache.encode())
    stack.append(ccache.encode())
    try:
        yield
    finally:
        stack.pop()
        krb5_ccache_name(stack[-1] if stack else None)


def ticket_cache_lifetime(principal: str | None = None) -> int:
    """Seconds left on the default ticket cache's credentials (those of ``principal`` if given); a one-line
    MetastoreAuthError (``no-ticket`` / ``expired``) if there are none. Needs ``gssapi``."""
    gssapi = _gssapi()
    name = gssapi.Name(principal, gssapi.NameType.kerberos_principal) if principal else None
    try:
        creds = gssapi.Credentials(usage="initiate", name=name)
        lifetime = int(creds.lifetime or 0)
    except gssapi.exceptions.ExpiredCredentialsError as e:
        raise MetastoreAuthError(
            f"the Kerberos ticket{' of ' + principal if principal else ''} has expired: run kinit again (or use "
            "--keytab/--principal so tickets are renewed automatically)", reason=EXPIRED
        ) from e
    except gssapi.exceptions.GSSError as e:
        raise MetastoreAuthError(
            f"no Kerberos ticket{' for ' + principal if principal else ''} ({_gss_message(e)}): run kinit, or pass "
            "--keytab and --principal", reason=NO_TICKET
        ) from e
    if lifetime <= 0:
        raise MetastoreAuthError("the Kerberos ticket has expired: run kinit again", reason=EXPIRED)
    return lifetime


def authenticated_principal(keytab_principal: str | None = None) -> str:
    """The principal this process authenticates as: ``keytab_principal`` when a keytab is used, else the default
    ticket cache's (``kinit``); a one-line MetastoreAuthError when there is none. Needs ``gssapi``."""
    if keytab_principal:
        return keytab_principal
    gssapi = _gssapi()
    try:
        return str(gssapi.Credentials(usage="initiate").name)
    except gssapi.exceptions.GSSError as e:
        raise MetastoreAuthError(f"no Kerberos ticket ({_gss_message(e)}): run kinit, or pass --keytab and "
                                 "--principal", reason=NO_TICKET) from e


def short_name(principal: str) -> str:
    """The user name Hadoop maps a principal of its own realm to (the DEFAULT ``auth_to_local`` rule):
    ``alice@REALM`` and ``alice/host@REALM`` are ``alice``."""
    return principal.split("@", 1)[0].split("/", 1)[0]


def require_sasl_libraries() -> None:
    """A one-line error naming what to install if the GSSAPI SASL client cannot work here."""
    missing = []
    for module in ("kerberos", "puresasl", "thrift_sasl"):
        try:
            __import__(module)
        except ImportError:
            missing.append(module)
    if missing:
        packages = {"kerberos": "kerberos", "puresasl": "pure-sasl", "thrift_sasl": "thrift-sasl"}
        raise MetastoreAuthError(
            "Kerberos needs the Python packages " + ", ".join(packages[m] for m in missing)
            + " (pip install them; `kerberos` compiles against MIT Kerberos: apt-get install libkrb5-dev gcc)",
            reason=LIBRARY_MISSING,
        )
