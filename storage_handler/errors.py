"""The project's error hierarchy: one root, subclasses that also inherit the matching built-in.

Every message names what it is about (table, column, value, metastore URI) and what to do next, because these
errors reach the command line as one line with no traceback (see ``storage_handler.cli``).
"""

from __future__ import annotations


class StorageHandlerError(Exception):
    """Root of every error this project raises on purpose."""


class ConfigurationError(StorageHandlerError, ValueError):
    """A setting, option or environment is unusable (bad URI, Java missing, bad option value)."""


class JavaNotFoundError(ConfigurationError):
    """No usable ``java`` executable: the embedded metastore and Spark need Java 17."""


class UnsupportedSparkError(ConfigurationError):
    """The Spark (or pyspark) in use lacks an API a feature needs; the message names the version and the feature."""


class MetastoreError(StorageHandlerError):
    """The Hive Metastore refused a call or could not be reached."""


class MetastoreUnavailableError(MetastoreError, ConnectionError):
    """Transport failure: the metastore is not listening, timed out, or dropped the connection."""


class MetastoreAuthError(MetastoreError):
    """Kerberos (SASL/GSSAPI) authentication with a metastore or HiveServer2 failed, or the two sides disagree on
    whether to use it. Never retried: a refused ticket does not get better by asking again (deliberately not a
    ``ConnectionError``). ``reason`` names the kind of failure (``metastore.security.errors`` lists them), for
    callers and tests that act on the kind rather than on the text."""

    def __init__(self, message: str, *, reason: str = "other") -> None:
        super().__init__(message)
        self.reason = reason


class KerberosConfigurationError(ConfigurationError):
    """Kerberos settings that cannot work as given: a missing or malformed principal, a keytab without a
    principal, a Python package that is not installed."""


class NoSuchObjectError(MetastoreError, LookupError):
    """A database, table or partition that the call needs does not exist."""


class AlreadyExistsError(MetastoreError):
    """The object being created exists already."""


class DatasetError(StorageHandlerError, ValueError):
    """The Parquet dataset on storage cannot be registered as it is (no files, unreadable, conflicting schemas)."""


class SchemaError(DatasetError):
    """A type that Hive or the index cannot represent, or an incompatible schema change."""


class InvalidNameError(StorageHandlerError, ValueError):
    """A database, table or column name Hive would not accept."""


class FilterError(StorageHandlerError, ValueError):
    """A filter (HiveQL text, serialized expression, SearchArgument) that cannot be parsed or bound."""


class StorageError(StorageHandlerError, OSError):
    """Storage refused or failed a request: a missing bucket, denied credentials, an endpoint that is down."""


class ObjectChangedError(StorageError):
    """A file changed (or was replaced) between its listing and a read of it: list again."""


class StatsIndexError(StorageHandlerError, RuntimeError):
    """The column-statistics index is missing, corrupt, or refers to files it must not."""


class ProcessError(StorageHandlerError, RuntimeError):
    """An embedded process (metastore, Thrift server) failed to start or stop."""
