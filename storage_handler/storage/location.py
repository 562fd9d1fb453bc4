"""Table and file locations as the metastore records them: which storage they are on, and how they join.

Hive records locations as URIs (``file:/data/t``, ``s3a://lake/t``, ``hdfs://nn:8020/t``) and users type bare paths
(``/data/t``); this module is the one place that tells them apart. Rules:

* ``file:`` URIs and bare paths are the local file system. A ``file:`` URI with a host other than ``localhost``
  is refused. Hive locations are not URI-encoded: ``%25`` in a location is the three characters ``%25``, and
  ``#`` and ``?`` are part of the path (as in Hadoop's ``Path``), never a fragment or a query.
* ``s3://``, ``s3a://`` and ``s3n://`` are S3 (the three spellings Hadoop has used; one store). The spelling of
  the table's own location is kept for everything derived from it, so Spark reads the files with the connector
  the user configured for that scheme.
* ``gs://``, ``gcs://``, ``abfs://``, ``abfss://`` and ``hdfs://`` are read through ``pyarrow.fs`` where this
  machine's pyarrow supports them (see :mod:`storage_handler.storage.arrow`).
* Anything else is refused with a one-line error naming the scheme.
"""

from __future__ import annotations

import os
import posixpath
import re
from dataclasses import dataclass

from storage_handler.errors import ConfigurationError

LOCAL = "local"
S3 = "s3"
ARROW = "arrow"
S3_SCHEMES = frozenset({"s3", "s3a", "s3n"})
ARROW_SCHEMES = frozenset({"gs", "gcs", "abfs", "abfss", "hdfs", "viewfs"})
_ARROW_FAMILY = {"gcs": "gs", "abfss": "abfs"}  # one store, two spellings
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")


@dataclass(frozen=True, slots=True)
class Location:
    """A parsed location: ``kind`` (local / s3 / arrow), the URI ``scheme`` as written, the ``bucket`` (or
    authority; empty for local) and the ``key``: an absolute path for local storage, the object key prefix
    without a leading or trailing ``/`` for object stores."""

    kind: str
    scheme: str
    bucket: str
    key: str

    @property
    def uri(self) -> str:
        """The canonical string form: a plain absolute path for local storage, ``scheme://bucket/key`` else."""
        if self.kind == LOCAL:
            return self.key
        return f"{self.scheme}://{self.bucket}/{self.key}" if self.key else f"{self.scheme}://{self.bucket}"

    @property
    def place(self) -> tuple[str, str, str]:
        """What the location names, whatever its spelling: ``s3://b/t``, ``s3a://b/t`` and ``s3n://b/t/`` are one
        place (one store, see the module docstring), so two locations are the same folder when their places are
        equal. Stores read through ``pyarrow.fs`` keep their scheme (``gs://b/t`` is not ``hdfs://b/t``), up to
        their own spellings (``gcs``, ``abfss``)."""
        if self.kind == ARROW:
            return _ARROW_FAMILY.get(self.scheme, self.scheme), self.bucket, self.key
        return self.kind, self.bucket, self.key

    def join(self, relative: str) -> Location:
        """This location with a relative POSIX path appended (``a/b.parquet``)."""
        if not relative:
            return self
        if self.kind == LOCAL:
            return Location(LOCAL, "file", "", posixpath.join(self.key, relative))
        return Location(self.kind, self.scheme, self.bucket, f"{self.key}/{relative}" if self.key else relative)

    def relative_to(self, root: Location) -> str | None:
        """This location as a path relative to ``root`` ('' for ``root`` itself), or None when outside it."""
        if (self.kind, self.bucket) != (root.kind, root.bucket):
            return None
        if self.key == root.key:
            return ""
        prefix = root.key.rstrip("/") + "/" if root.key else ""
        if self.kind == LOCAL and root.key == "/":
            prefix = "/"
        return self.key[len(prefix):] if self.key.startswith(prefix) else None


def parse_location(text: str) -> Location:
    """Parse a location as the metastore or a user writes it (see the module docstring for the rules)."""
    if not text or not str(text).strip():
        raise ConfigurationError("empty location: give a folder path or a URI such as s3a://bucket/folder")
    text = str(text)
    match = _SCHEME.match(text)
    if match is None or len(match.group(1)) == 1:  # no scheme (a one-letter "scheme" is a Windows drive)
        return Location(LOCAL, "file", "", _normal_local(text))
    scheme = match.group(1).lower()
    if scheme == "file":
        host, path = _authority_and_path(text[len(match.group(0)):])
        if host not in ("", "localhost"):
            raise ConfigurationError(
                f"location {text!r} names host {host!r}: a file: URI must be local (file:///path)"
            )
        return Location(LOCAL, "file", "", _normal_local(path or "/"))
    if scheme in S3_SCHEMES or scheme in ARROW_SCHEMES:
        rest = text[len(match.group(0)):]
        if not rest.startswith("//"):
            raise ConfigurationError(f"location {text!r}: write it as {scheme}://bucket/folder")
        bucket, _, key = rest[2:].partition("/")
        if not bucket:
            raise ConfigurationError(f"location {text!r} names no bucket: write it as {scheme}://bucket/folder")
        key = key.strip("/")
        if any(part in ("", ".", "..") for part in key.split("/")) and key:
            raise ConfigurationError(f"location {text!r} has an empty, '.' or '..' path segment; write it plainly")
        return Location(S3 if scheme in S3_SCHEMES else ARROW, scheme, bucket, key)
    raise ConfigurationError(
        f"location {text!r}: the {scheme}:// scheme is not supported (local paths, file:, s3://, s3a://, s3n://, "
        "gs://, abfs[s]:// and hdfs:// are)"
    )


def metastore_location(location: str) -> str:
    """``location`` as the metastore is given it: as written, but a bucket's root as ``s3a://bucket/``, since the
    metastore's ``Warehouse.getDnsPath`` refuses ``s3a://bucket`` (no path) as an empty path."""
    parsed = parse_location(location)
    return f"{parsed.uri}/" if parsed.kind != LOCAL and not parsed.key else location


def file_uri(location: str) -> str:
    """The URI Spark and Hadoop read a file or folder by: ``file://`` + path for local storage (not
    percent-encoded, as Hadoop's ``Path`` takes it), the location itself (its own scheme) elsewhere."""
    parsed = parse_location(location)
    return "file://" + parsed.key if parsed.kind == LOCAL else parsed.uri


def local_path(location: str) -> str:
    """The local folder of a location given as a path or a ``file:`` URI; refuses every other storage."""
    parsed = parse_location(location)
    if parsed.kind != LOCAL:
        raise ConfigurationError(f"location {location!r} is on {parsed.scheme}://, not on this machine's disk")
    return parsed.key


def is_absolute(path: str) -> bool:
    """Whether a file path names a location of its own -- an absolute local path or a URI -- rather than one
    relative to its table folder (an index row or a listed file of a partition registered outside the table
    folder names its file this way)."""
    return path.startswith("/") or "://" in path


def is_local(location: str) -> bool:
    return parse_location(location).kind == LOCAL


def _authority_and_path(rest: str) -> tuple[str, str]:
    """Split what follows ``file:`` as Hadoop's ``Path`` does: an authority only after ``//``, and everything else
    the path -- ``#`` and ``?`` included. Why not ``urllib``: it reads ``#x`` as a fragment and ``?x`` as a query,
    so ``file:/data/bf#2`` (a folder Hive reads) became ``/data/bf``, another folder's files under this one's name."""
    if not rest.startswith("//"):
        return "", rest
    host, slash, path = rest[2:].partition("/")
    return host, slash + path


def _normal_local(path: str) -> str:
    return os.path.abspath(path)
