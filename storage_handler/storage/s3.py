"""S3 (and S3-compatible stores): boto3 for listings, conditional writes and deletes; pyarrow for bulk reads.

Why two well-kept libraries and not one:

* **boto3** (AWS's own SDK) lists with ETags (``ListObjectsV2``, paginated, 1,000 keys a request), writes
  conditionally (``PutObject`` with ``If-None-Match: *``: the index commit point), resolves the whole AWS
  credential chain and retries throttling. ``pyarrow.fs`` listings carry no ETag and it cannot write
  conditionally; s3fs could do both but brings an asyncio stack (aiobotocore) for the same requests.
* **pyarrow.fs.S3FileSystem** reads whole data files (the Python data source) in C++ without the GIL.
* Footers and index snapshots are read through :class:`RangeReader`: ranged GETs that need no HEAD (the size is
  known from the listing) and carry ``If-Match`` with the listed ETag, so the statistics recorded for a file are
  always those of the version that was listed (a rewrite in between fails the read, which is recorded and retried
  at the next refresh).

Errors are translated once, here, into one-line :class:`~storage_handler.errors.StorageError`\\ s naming the
bucket, the key, the endpoint and what to do.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from storage_handler.errors import ConfigurationError, ObjectChangedError, StorageError
from storage_handler.storage.base import DirListing, FileEntry
from storage_handler.storage.location import S3, parse_location
from storage_handler.storage.s3_config import S3Config

_DENIED = {"AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken",
           "AuthorizationHeaderMalformed", "403"}
_MISSING_KEY = {"NoSuchKey", "404", "NotFound"}


class S3Storage:
    """One S3 endpoint configuration; thread-safe (boto3 clients are, and pyarrow's file system is)."""

    kind = S3

    def __init__(self, config: S3Config) -> None:
        self.config = config
        self._client: Any = None
        self._arrow: pafs.S3FileSystem | None = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ listing
    def list_dir(self, uri: str) -> DirListing | None:
        bucket, key = self._split(uri)
        prefix = f"{key}/" if key else ""
        files: list[FileEntry] = []
        folders: list[str] = []
        for page in self._pages(bucket, prefix, delimiter="/"):
            for obj in page.get("Contents", ()):
                name = obj["Key"][len(prefix):]
                if name and not _is_folder_marker(name):
                    files.append(_entry(name, obj))
            folders.extend(p["Prefix"][len(prefix):].rstrip("/") for p in page.get("CommonPrefixes", ()))
        if not files and not folders:
            return None
        return DirListing(tuple(files), tuple(f for f in folders if f))

    def walk(self, uri: str, skip: Callable[[str], bool] | None = None) -> Iterator[FileEntry]:
        bucket, key = self._split(uri)
        prefix = f"{key}/" if key else ""
        for page in self._pages(bucket, prefix, delimiter=None):
            for obj in page.get("Contents", ()):
                name = obj["Key"][len(prefix):]
                if not name or _is_folder_marker(name):
                    continue
                if skip is not None and any(skip(part) for part in name.split("/")):
                    continue
                yield _entry(name, obj)

    def folders_with_files(self, uri: str, depth: int, skip: Callable[[str], bool] | None = None) -> Iterator[str]:
        seen: set[str] = set()
        for entry in self.walk(uri, skip):
            parts = entry.name.split("/")
            if len(parts) == depth + 1:
                folder = "/".join(parts[:-1])
                if folder not in seen:
                    seen.add(folder)
                    yield folder

    def stat(self, uri: str) -> FileEntry | None:
        bucket, key = self._split(uri)
        try:
            head = self.client.head_object(Bucket=bucket, Key=key)
        except Exception as exc:  # noqa: BLE001 - translated below
            if _code(exc) in _MISSING_KEY:
                return None
            raise self._error(exc, "read", bucket, key) from exc
        modified = head["LastModified"]
        return FileEntry(uri, int(head["ContentLength"]), int(modified.timestamp() * 1000), _etag(head["ETag"]))

    def is_dir(self, uri: str) -> bool:
        bucket, key = self._split(uri)
        try:
            page = self.client.list_objects_v2(Bucket=bucket, Prefix=f"{key}/" if key else "", MaxKeys=1)
        except Exception as exc:  # noqa: BLE001
            raise self._error(exc, "list", bucket, key) from exc
        return int(page.get("KeyCount", 0)) > 0

    # ------------------------------------------------------------------ reading
    def open_input(self, uri: str, entry: FileEntry | None = None) -> pa.NativeFile:
        bucket, key = self._split(uri)
        if entry is None:
            entry = self.stat(uri)
            if entry is None:
                raise StorageError(f"s3://{bucket}/{key} does not exist ({self._where()})")
        return pa.PythonFile(RangeReader(self, bucket, key, entry.size, entry.version), mode="r")

    def read_bytes(self, uri: str) -> bytes | None:
        bucket, key = self._split(uri)
        try:
            return bytes(self.client.get_object(Bucket=bucket, Key=key)["Body"].read())
        except Exception as exc:  # noqa: BLE001
            if _code(exc) in _MISSING_KEY:
                return None
            raise self._error(exc, "read", bucket, key) from exc

    def get_range(self, bucket: str, key: str, start: int, end: int, etag: str | None) -> bytes:
        """Bytes [start, end) of an object; with ``etag``, only of that version of it."""
        args: dict[str, Any] = {"Bucket": bucket, "Key": key, "Range": f"bytes={start}-{end - 1}"}
        if etag:
            args["IfMatch"] = f'"{etag}"'
        try:
            return bytes(self.client.get_object(**args)["Body"].read())
        except Exception as exc:  # noqa: BLE001
            if _code(exc) in _MISSING_KEY:
                raise FileNotFoundError(f"s3://{bucket}/{key} does not exist (any more)") from exc
            if _code(exc) in ("PreconditionFailed", "412"):
                raise ObjectChangedError(
                    f"s3://{bucket}/{key} changed since it was listed (its ETag is no longer {etag}); list again"
                ) from exc
            raise self._error(exc, "read", bucket, key) from exc

    # ------------------------------------------------------------------ writing
    def create(self, uri: str, data: bytes) -> bool:
        bucket, key = self._split(uri)
        try:
            self.client.put_object(Bucket=bucket, Key=key, Body=data, IfNoneMatch="*")
        except Exception as exc:  # noqa: BLE001
            # 412: it exists. 409: a concurrent conditional write to the same key is in flight; either way this
            # writer did not create it, and the caller's retry (which reloads) decides what comes next.
            if _code(exc) in ("PreconditionFailed", "412", "ConditionalRequestConflict", "409"):
                return False
            raise self._error(exc, "write", bucket, key) from exc
        return True

    def put(self, uri: str, data: bytes) -> None:
        bucket, key = self._split(uri)
        try:
            self.client.put_object(Bucket=bucket, Key=key, Body=data)
        except Exception as exc:  # noqa: BLE001
            raise self._error(exc, "write", bucket, key) from exc

    def delete(self, uris: Sequence[str]) -> None:
        by_bucket: dict[str, list[str]] = {}
        for uri in uris:
            bucket, key = self._split(uri)
            by_bucket.setdefault(bucket, []).append(key)
        for bucket, keys in by_bucket.items():
            for start in range(0, len(keys), 1000):
                chunk = [{"Key": k} for k in keys[start:start + 1000]]
                try:
                    self.client.delete_objects(Bucket=bucket, Delete={"Objects": chunk, "Quiet": True})
                except Exception as exc:  # noqa: BLE001
                    raise self._error(exc, "delete", bucket, chunk[0]["Key"]) from exc

    def delete_tree(self, uri: str) -> None:
        location = parse_location(uri)
        self.delete([location.join(f.name).uri for f in self.walk(uri)])

    def arrow_filesystem(self, uri: str) -> tuple[pafs.FileSystem, str]:
        bucket, key = self._split(uri)
        with self._lock:
            if self._arrow is None:
                self._arrow = _arrow_s3(self.config)
        return self._arrow, f"{bucket}/{key}"

    def describe(self) -> dict[str, str]:
        return self.config.describe()

    # ------------------------------------------------------------------ internals
    @property
    def client(self) -> Any:
        with self._lock:
            if self._client is None:
                self._client = _make_client(self.config)
            return self._client

    def _pages(self, bucket: str, prefix: str, delimiter: str | None) -> Iterator[dict[str, Any]]:
        args: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix}
        if delimiter:
            args["Delimiter"] = delimiter
        try:
            yield from self.client.get_paginator("list_objects_v2").paginate(**args)
        except Exception as exc:  # noqa: BLE001
            raise self._error(exc, "list", bucket, prefix) from exc

    def _split(self, uri: str) -> tuple[str, str]:
        location = parse_location(uri)
        if location.kind != S3:
            raise StorageError(f"{uri!r} is not an S3 location")
        return location.bucket, location.key

    def _where(self) -> str:
        info = self.config.describe()
        return f"endpoint {info['endpoint']}, region {info['region']}"

    def _error(self, exc: BaseException, verb: str, bucket: str, key: str) -> StorageError:
        code = _code(exc)
        target = f"s3://{bucket}/{key}"
        if code == "NoSuchBucket":
            return StorageError(f"cannot {verb} {target}: bucket {bucket!r} does not exist ({self._where()}); "
                                "check the location and fs.s3a.endpoint / AWS_ENDPOINT_URL")
        if code in _DENIED:
            return StorageError(f"cannot {verb} {target}: access denied ({code}, {self._where()}); check the "
                                "AWS credentials (AWS_ACCESS_KEY_ID / AWS_PROFILE / instance role) and the "
                                "bucket policy")
        name = type(exc).__name__
        if name == "NoCredentialsError":
            return StorageError(f"cannot {verb} {target}: no AWS credentials found; set AWS_ACCESS_KEY_ID and "
                                "AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or run where an instance role is available")
        if name in ("EndpointConnectionError", "ConnectTimeoutError", "ConnectionClosedError", "ReadTimeoutError"):
            return StorageError(f"cannot {verb} {target}: the S3 endpoint does not answer ({self._where()}); "
                                "check fs.s3a.endpoint / AWS_ENDPOINT_URL and the network")
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else name
        return StorageError(f"cannot {verb} {target} ({self._where()}): {detail}")


class RangeReader(io.RawIOBase):
    """A seekable reader over one object version, one ranged GET per read (see the module docstring)."""

    def __init__(self, storage: S3Storage, bucket: str, key: str, size: int, etag: str | None) -> None:
        super().__init__()
        self._storage, self._bucket, self._key, self._size, self._etag = storage, bucket, key, size, etag
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def size(self) -> int:
        return self._size

    def read(self, n: int = -1) -> bytes:
        end = self._size if n is None or n < 0 else min(self._size, self._pos + n)
        if end <= self._pos:
            return b""
        data = self._storage.get_range(self._bucket, self._key, self._pos, end, self._etag)
        self._pos += len(data)
        return data

    def readall(self) -> bytes:
        return self.read(-1)

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def _make_client(config: S3Config) -> Any:
    try:
        import boto3
        from botocore.config import Config
    except ImportError as exc:  # pragma: no cover - boto3 is a dependency
        raise StorageError("S3 locations need boto3: pip install boto3") from exc
    session = boto3.session.Session()
    return session.client(
        "s3", endpoint_url=config.endpoint, region_name=config.region,
        config=Config(s3={"addressing_style": "path" if config.path_style else "auto"},
                      retries={"mode": "standard", "max_attempts": 4}, connect_timeout=5, read_timeout=60,
                      max_pool_connections=64),
    )


def _entry(name: str, obj: dict[str, Any]) -> FileEntry:
    return FileEntry(name, int(obj["Size"]), int(obj["LastModified"].timestamp() * 1000), _etag(obj.get("ETag")))


def _etag(value: str | None) -> str | None:
    return value.strip('"') if value else None


def _code(exc: BaseException) -> str:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        error = response.get("Error") or {}
        return str(error.get("Code") or response.get("ResponseMetadata", {}).get("HTTPStatusCode") or "")
    return ""


def _arrow_s3(config: S3Config) -> pafs.S3FileSystem:
    """pyarrow's S3 file system for ``config``. pyarrow before 16 has no ``force_virtual_addressing``: it
    addresses AWS itself by virtual host and any endpoint set explicitly by path, which serves every configuration
    (AWS's own endpoints answer path-style requests too) but a custom endpoint that must be addressed by virtual
    host (refused in one line, naming the fix)."""
    args: dict[str, Any] = {"region": config.region, "endpoint_override": config.endpoint_host,
                            "scheme": config.endpoint_scheme}
    try:
        return pafs.S3FileSystem(**args, force_virtual_addressing=not config.path_style)
    except TypeError:  # pyarrow < 16
        if config.endpoint_host and not config.path_style and not config.is_aws:
            raise ConfigurationError(
                f"the S3 endpoint {config.endpoint_host} is configured for virtual-hosted addressing "
                f"(fs.s3a.path.style.access=false), which pyarrow {pa.__version__} cannot do: install pyarrow 16 "
                "or newer, or use path-style access"
            ) from None
        return pafs.S3FileSystem(**args)


def _is_folder_marker(name: str) -> bool:
    """Whether a key is a folder marker, not a file: ``folder/`` (S3A, the consoles) or ``folder_$folder$`` (s3n,
    EMRFS), which Hadoop's S3A listing skips, so Spark and Hive never read them as data files."""
    return name.endswith("/") or name.endswith("_$folder$")
