"""Reading the footers of many local files in C++, with no Python object per file (``native/footers.cc``).

Why: a table of a hundred thousand small files spent most of its registration in Python turning each footer's
statistics into objects (tens of microseconds a file, serialized on the GIL). The C++ side reads the footers with
the Parquet library inside the installed pyarrow (so every rule about which statistics count is pyarrow's own) and
returns :class:`~storage_handler.stats.footers.raw.RawFooters` columns; the call releases the GIL, so several
threads read chunks of files at once.

Built with the system C++ compiler (``$CXX``, ``c++`` or ``g++``) against ``pyarrow.get_include()`` and the
wheel's ``libparquet``, once per source and pyarrow build, into ``$HSH_HOME/native/<hash>/``
(:func:`storage_handler.toolchain.native_library`). Decision: without a compiler, when the build fails, on a platform
other than Linux, or with ``HSH_NATIVE_FOOTERS=0``, :func:`native_reader` returns None and footers are read
through pyarrow in Python: the same index, only slower (a property test compares both).
"""

from __future__ import annotations

import ctypes
import functools
import glob
import logging
import os
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from storage_handler.compiled import copy_array, copy_strings, load_helper
from storage_handler.stats.footers.raw import RawFooters
from storage_handler.stats.footers.thrift_compact import footer_bytes
from storage_handler.toolchain import native_library

log = logging.getLogger(__name__)
SOURCE = Path(__file__).with_name("native") / "footers.cc"


class _Footers(ctypes.Structure):
    _fields_ = [
        ("files", ctypes.c_int64), ("chunks", ctypes.c_int64), ("schemas", ctypes.c_int32),
        *((name, ctypes.c_void_p) for name in (
            "num_rows", "schema", "row_groups", "first_chunk", "schema_file", "rg_rows", "flags",
            "null_count", "min_offsets", "max_offsets", "min_data", "max_data", "schema_offsets", "schema_data",
            "writer_offsets", "writer_data")),
    ]


class NativeFooterReader:
    """The compiled ``hsh_read_footers``; callable from any thread (it keeps no state)."""

    def __init__(self, library: ctypes.CDLL) -> None:
        self._read = library.hsh_read_footers
        self._read.argtypes = [ctypes.c_char_p, ctypes.c_int64, ctypes.POINTER(_Footers)]
        self._read.restype = ctypes.c_int
        self._parse = library.hsh_parse_footers
        self._parse.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_int64, ctypes.POINTER(_Footers)]
        self._parse.restype = ctypes.c_int
        self._free = library.hsh_footers_free
        self._free.argtypes = [ctypes.POINTER(_Footers)]
        self._free.restype = None

    def read(self, paths: Sequence[str], error_of: Callable[[str], str | None]) -> RawFooters | None:
        """The raw statistics of the local files ``paths``. A file the C++ reader could not read is read again
        through pyarrow, which gives the error text (``error_of(path)``: the error, or None when pyarrow reads
        it after all -- then None is returned and the caller reads the whole chunk through pyarrow)."""
        encoded = b"".join(os.fsencode(p) + b"\0" for p in paths)
        columns = self._call(self._read, encoded, len(paths))
        del columns["schema_file"]
        schemas = tuple(_schema(footer) for footer in columns.pop("schema_footers"))
        errors: list[str | None] = [None] * len(paths)
        for i in np.flatnonzero(columns["num_rows"] < 0):
            why = error_of(paths[int(i)])
            if why is None:
                return None
            errors[int(i)] = why
        return RawFooters(schemas=schemas, errors=tuple(errors), **columns)

    def parse(self, footers: Sequence[pq.FileMetaData | str]) -> RawFooters:
        """The raw statistics of footers pyarrow has read (a ``str``: a file that could not be read, why):
        serialized again and parsed here, so that no chunk's statistics are decoded by pyarrow's bindings."""
        blobs = [b"" if isinstance(md, str) else footer_bytes(md) for md in footers]
        offsets = np.cumsum([0, *(len(b) for b in blobs)]).astype(np.int64)
        columns = self._call(self._parse, b"".join(blobs), offsets.ctypes.data_as(ctypes.c_void_p), len(blobs))
        firsts = columns.pop("schema_file")
        del columns["schema_footers"]
        schemas = tuple(footers[int(i)].schema for i in firsts)  # type: ignore[union-attr]
        errors = tuple(md if isinstance(md, str) else None for md in footers)
        unreadable = [i for i in np.flatnonzero(columns["num_rows"] < 0) if errors[int(i)] is None]
        if unreadable:  # pyarrow read it, its bytes do not parse again: cannot happen; never guess
            raise ValueError(f"footer {int(unreadable[0])} of this chunk did not parse again")
        return RawFooters(schemas=schemas, errors=errors, **columns)

    def _call(self, fn: Any, *args: Any) -> dict[str, Any]:
        out = _Footers()
        err = fn(*args, ctypes.byref(out))
        if err:
            raise MemoryError(f"reading footers natively: {os.strerror(err)}")
        try:
            n, chunks = out.files, out.chunks
            return {
                "num_rows": copy_array(out.num_rows, n, np.int64), "schema": copy_array(out.schema, n, np.int32),
                "row_groups": copy_array(out.row_groups, n, np.int32),
                "first_chunk": copy_array(out.first_chunk, n, np.int64),
                "schema_file": copy_array(out.schema_file, out.schemas, np.int64),
                "rg_rows": copy_array(out.rg_rows, chunks, np.int64), "flags": copy_array(out.flags, chunks, np.uint8),
                "null_count": copy_array(out.null_count, chunks, np.int64),
                "mins": copy_strings(out.min_offsets, out.min_data, chunks, pa.large_binary()),
                "maxs": copy_strings(out.max_offsets, out.max_data, chunks, pa.large_binary()),
                "schema_footers": copy_strings(out.schema_offsets, out.schema_data, out.schemas,
                                               pa.large_binary()).to_pylist(),
                "writers": tuple(v.decode("utf-8", "replace") for v in copy_strings(
                    out.writer_offsets, out.writer_data, n, pa.large_binary()).to_pylist()),
            }
        finally:
            self._free(ctypes.byref(out))


def raw_of(footers: Sequence[pq.FileMetaData | str]) -> RawFooters:
    """The raw statistics of footers pyarrow has read: parsed natively when the reader is built, else in Python
    (:meth:`RawFooters.from_metadata`); the same arrays either way."""
    reader = native_reader()
    return reader.parse(footers) if reader is not None else RawFooters.from_metadata(footers)


def _schema(footer: bytes) -> pq.ParquetSchema:
    """pyarrow's schema object of a serialized footer (framed as the tail of a file: footer, length, magic)."""
    tail = b"PAR1" + footer + len(footer).to_bytes(4, "little") + b"PAR1"
    return pq.read_metadata(pa.BufferReader(tail)).schema


#: the first pyarrow whose ``HasMinMax`` is false for a chunk holding only a min or only a max (see
#: :mod:`.footer_guard`): the native reader has no Thrift guard of its own, so older pyarrows read in Python
MIN_PYARROW = (18, 0)


@functools.lru_cache(maxsize=1)
def native_reader() -> NativeFooterReader | None:
    """The compiled reader, or None (see the module docstring: footers are then read through pyarrow)."""
    if tuple(int(p) for p in pa.__version__.split(".")[:2]) < MIN_PYARROW:
        log.info("pyarrow %s reports half-present footer bounds as complete; the native footer reader needs "
                 "pyarrow 18 or newer: reading footers through pyarrow, guarded", pa.__version__)
        return None
    return load_helper("HSH_NATIVE_FOOTERS", "native footer reader (c++)", _compile, NativeFooterReader,
                       "reading footers through pyarrow (slower on big tables)")


def _compile() -> Path | None:
    compiler = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")
    if not compiler:
        return None
    folder = Path(pa.__file__).parent
    libs = [_versioned(folder, "parquet"), _versioned(folder, "arrow")]
    flags = ["-std=c++20", "-O2", "-shared", "-fPIC", f"-I{pa.get_include()}", f"-L{folder}",
             *(f"-l:{lib.name}" for lib in libs), f"-Wl,-rpath,{folder}"]
    return native_library("footers", [SOURCE], compiler, flags, key=f"pyarrow {pa.__version__}")


def _versioned(folder: Path, name: str) -> Path:
    """The wheel's ``lib<name>.so.<ABI>`` (wheels ship no unversioned link to it)."""
    found = sorted(glob.glob(str(folder / f"lib{name}.so.*")), key=len)
    if not found:
        raise OSError(f"pyarrow at {folder} has no lib{name}.so.*")
    return Path(found[0])
