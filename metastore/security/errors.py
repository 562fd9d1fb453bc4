"""Kerberos failures as one-line errors that name the metastore, the principal and what to do next.

Every message was written against what the libraries really raise here (MIT Kerberos 1.20 through ``kerberos``
and ``gssapi``, thrift-sasl 0.4.3, a Hive 2.3.10 metastore and a Spark 4.3 Thrift server): see
``tests/kerberos/FINDINGS.md`` for the observed exception of each failure. Messages never contain key material
or ticket contents, only paths, principals and addresses.
"""

from __future__ import annotations

from storage_handler.errors import KerberosConfigurationError, MetastoreAuthError

__all__ = ["KerberosConfigurationError", "MetastoreAuthError"]

# MIT krb5 error-table codes (krb5.h) that the GSSAPI minor status carries
KRB5KDC_ERR_C_PRINCIPAL_UNKNOWN = -1765328378
KRB5KDC_ERR_S_PRINCIPAL_UNKNOWN = -1765328377
KRB5KDC_ERR_PREAUTH_FAILED = -1765328360
KRB5KRB_AP_ERR_BAD_INTEGRITY = -1765328353
KRB5KRB_AP_ERR_TKT_EXPIRED = -1765328352
KRB5KRB_AP_ERR_SKEW = -1765328347
KRB5_CC_NOTFOUND = -1765328243
KRB5_KDC_UNREACH = -1765328228
KRB5_FCC_NOFILE = -1765328189
KRB5_REALM_UNKNOWN = -1765328230
# GSSAPI major status
GSS_S_NO_CRED = 458752

# the ``reason`` values of MetastoreAuthError
NO_TICKET = "no-ticket"
EXPIRED = "expired"
UNKNOWN_SERVICE = "unknown-service-principal"
REJECTED = "rejected-by-server"
CLOCK_SKEW = "clock-skew"
KEYTAB = "keytab"
SERVER_NOT_SASL = "server-not-sasl"
SERVER_REQUIRES_SASL = "server-requires-sasl"
HANDSHAKE_TIMEOUT = "handshake-timeout"
KDC_UNREACHABLE = "kdc-unreachable"
LIBRARY_MISSING = "library-missing"
OTHER = "other"

