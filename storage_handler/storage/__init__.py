"""Storage: one interface (:class:`Storage`) for everything that touches table data or index files.

* :mod:`.location` -- parsing locations and telling local, S3 and other stores apart;
* :mod:`.base` -- the :class:`Storage` protocol, :class:`FileEntry`, :class:`DirListing`;
* :mod:`.local`, :mod:`.s3` (+ :mod:`.s3_config`), :mod:`.arrow` -- the backends.

:func:`storage_for` picks the backend by the location's scheme and configures it from ``fs.s3a.*`` settings
(table parameters or a job configuration) and the environment; backends are cached per configuration, so a
process opens one S3 client per endpoint, shared by its threads.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

from storage_handler.storage.arrow import ArrowStorage
from storage_handler.storage.base import DirListing, FileEntry, Storage
from storage_handler.storage.local import LocalStorage
from storage_handler.storage.location import (
    ARROW,
    LOCAL,
    S3,
    Location,
    file_uri,
    is_absolute,
    is_local,
    local_path,
    parse_location,
)
from storage_handler.storage.s3 import S3Storage
from storage_handler.storage.s3_config import S3Config, check_no_secrets, resolve, s3a_settings

_LOCAL = LocalStorage()


def storage_for(location: str, conf: Mapping[str, str] | None = None) -> Storage:
    """The backend for ``location``; ``conf`` may carry ``fs.s3a.*`` settings (other keys are ignored)."""
    parsed = parse_location(location)
    if parsed.kind == LOCAL:
        return _LOCAL
    if parsed.kind == S3:
        return _s3(resolve(parsed.bucket, conf))
    return _arrow()


@functools.lru_cache(maxsize=64)
def _s3(config: S3Config) -> S3Storage:
    return S3Storage(config)


@functools.lru_cache(maxsize=1)
def _arrow() -> ArrowStorage:
    return ArrowStorage()


__all__ = [
    "ARROW", "LOCAL", "S3", "ArrowStorage", "DirListing", "FileEntry", "LocalStorage", "Location", "S3Config",
    "S3Storage", "Storage", "check_no_secrets", "file_uri", "is_absolute", "is_local", "local_path", "parse_location", "s3a_settings",
    "storage_for",
]
