"""Artifacts this package compiles for itself (the Spark extension's classes, the C lister, the footer reader),
cached by content; the one rule for loading a compiled helper or falling back (:func:`load_helper`); and the one
way their answers are copied out of C memory (:func:`copy_array`, :func:`copy_strings`).

Each is built once per source version into a folder named by a hash of the sources under ``$HSH_HOME``, and
several processes may start at once (a Spark session and a Thrift server; prune-service processes). One rule for
all: build into a temporary sibling folder and rename it into place, so no process ever loads half an artifact;
when another process won the race, its (identical) folder is used.
"""

from __future__ import annotations

import ctypes
import hashlib
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import numpy as np
import pyarrow as pa

from storage_handler.home import state_home

log = logging.getLogger(__name__)
T = TypeVar("T")


def build_once(target: Path, build: Callable[[Path], None]) -> Path:
    """``target``, built by ``build(folder)`` into a temporary folder and renamed into place unless it exists."""
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = tempfile.mkdtemp(dir=target.parent, prefix=".compiling-")
    try:
        build(Path(tmp))
        try:
            os.rename(tmp, target)
        except OSError:
            if not target.is_dir():  # unless another process won the race (then its build is used)
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def native_library(name: str, sources: Sequence[Path], compiler: str, flags: Sequence[str], key: str = "") -> Path:
    """``lib<name>.so`` built from ``sources`` with ``compiler`` and ``flags`` into
    ``$HSH_HOME/native/<hash>/``, where the hash covers the sources, the command and ``key`` (e.g. the pyarrow
    build a library links against), so a change of any of them builds anew and nothing stale is ever loaded.

    Raises ``OSError`` with the compiler's own message when the build fails. A failure is remembered next to the
    target (``<hash>.failed``), so later processes fall back at once instead of compiling again on every
    command; deleting that file makes the next process try again (after installing missing headers, say).
    """
    digest = hashlib.sha256()
    for source in sources:
        digest.update(source.name.encode() + b"\0" + source.read_bytes() + b"\0")
    digest.update("\0".join([compiler, *flags, key]).encode())
    target = state_home() / "native" / digest.hexdigest()[:16]
    library = target / f"lib{name}.so"
    if library.is_file():
        return library
    failed = target.with_name(target.name + ".failed")
    if failed.is_file():
        raise OSError(f"{failed.read_text().strip()} (remembered in {failed}; delete it to try again)")

    def build(folder: Path) -> None:
        out = folder / library.name
        proc = subprocess.run([compiler, "-o", str(out), *map(str, sources), *flags], capture_output=True,
                              text=True, timeout=300)
        if proc.returncode != 0:
            raise OSError(f"{compiler} failed building {', '.join(s.name for s in sources)}: "
                          f"{proc.stderr.strip()[-800:]}")

    try:
        build_once(target, build)
    except OSError as exc:
        failed.parent.mkdir(parents=True, exist_ok=True)
        failed.write_text(str(exc))
        raise
    return library


def copy_array(pointer: int | None, n: int, dtype: type[np.generic]) -> np.ndarray:
    """``n`` values of ``dtype`` at ``pointer`` (memory a compiled helper returned), copied into numpy so the
    helper can free its own buffer at once."""
    if n == 0 or not pointer:
        return np.zeros(0, dtype=dtype)
    return np.frombuffer(ctypes.string_at(pointer, n * np.dtype(dtype).itemsize), dtype=dtype).copy()


def copy_strings(offsets: int | None, data: int | None, n: int, arrow_type: pa.DataType) -> pa.Array:
    """``n`` variable-width values (``arrow_type``: string or binary, large or not) a compiled helper returned as
    ``n + 1`` offsets and the concatenated bytes, copied into an Arrow array."""
    width = np.int64 if arrow_type in (pa.large_string(), pa.large_binary()) else np.int32
    cuts = copy_array(offsets, n + 1, width) if n else np.zeros(1, width)
    size = int(cuts[-1])
    body = ctypes.string_at(data, size) if size and data else b""
    return pa.Array.from_buffers(arrow_type, n, [None, pa.py_buffer(cuts), pa.py_buffer(body)])


def load_helper(switch: str, what: str, build: Callable[[], Path | None], wrap: Callable[[ctypes.CDLL], T],
                fallback: str) -> T | None:
    """A compiled helper ready to call, or None: the caller then does the same work in Python (``fallback``).

    One rule for every helper: off with ``<switch>=0`` or on a platform other than Linux; ``build()`` returns
    None when there is no compiler (said at INFO: an ordinary machine), and a build or load that fails is a
    WARNING naming the error (the result is the same, only slower).
    """
    if os.environ.get(switch, "1") == "0" or not sys.platform.startswith("linux"):
        return None
    try:
        library = build()
        if library is None:
            log.info("no compiler for the %s: %s", what, fallback)
            return None
        return wrap(ctypes.CDLL(str(library)))
    except (OSError, subprocess.SubprocessError, AttributeError) as exc:
        log.warning("the %s could not be built (%s); %s", what, exc, fallback)
        return None
