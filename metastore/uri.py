"""A metastore's address: ``thrift://host:port``, parsed and printed without credentials.

Apart from :mod:`metastore.client` so that code which only names a metastore (Spark's configuration, the CLI's
messages) does not import thrift and the generated Hive API to do so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlparse

from storage_handler.errors import ConfigurationError

#: the environment variable naming the metastore every command uses when none is given
METASTORE_URI_ENV = "HSH_METASTORE_URI"


@dataclass(frozen=True, slots=True)
class MetastoreAddress:
    host: str
    port: int

    @property
    def uri(self) -> str:
        return f"thrift://{self.host}:{self.port}"


def parse_metastore_uris(uri: str) -> tuple[MetastoreAddress, ...]:
    """Parse ``hive.metastore.uris``: one ``thrift://host:port`` or several, comma-separated (highly available
    metastores; a client connects to the first that answers, as Hive's does)."""
    return tuple(parse_metastore_uri(part) for part in uri.split(",") if part.strip()) or (parse_metastore_uri(uri),)


def parse_metastore_uri(uri: str) -> MetastoreAddress:
    """Parse one ``thrift://host:port`` (of a list, the first: see :func:`parse_metastore_uris`)."""
    first = uri.split(",")[0].strip()
    parsed = urlparse(first)
    try:
        port = parsed.port
    except ValueError:
        port = None
    if parsed.scheme != "thrift" or not parsed.hostname or not port:
        raise ConfigurationError(
            f"metastore URI {redact(uri)!r} is not of the form thrift://host:port (e.g. thrift://127.0.0.1:9083)"
        )
    return MetastoreAddress(parsed.hostname, port)


def redact(uri: str) -> str:
    """``scheme://user:secret@host`` -> ``scheme://***@host``: credentials never reach messages or logs."""
    return re.sub(r"(?<=://)[^/@\s]*@", "***@", uri)
