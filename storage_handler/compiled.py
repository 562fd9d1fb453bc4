"""Using the native helpers this package compiles for itself (the C lister, the C++ footer reader): the one rule
for loading a helper or falling back (:func:`load_helper`), and the one way their answers are copied out of C
memory (:func:`copy_array`, :func:`copy_strings`). Building them is :mod:`storage_handler.toolchain`'s.
"""

from __future__ import annotations

import ctypes
import logging
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import numpy as np
import pyarrow as pa

log = logging.getLogger(__name__)
T = TypeVar("T")


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
