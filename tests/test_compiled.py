"""Native helpers are built once per source and command; a failed build is remembered, not retried per command;
their answers are copied out of C memory into Arrow."""

from __future__ import annotations

import ctypes
import os
import stat
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from storage_handler.compiled import copy_strings
from storage_handler.toolchain import native_library

FAKE_COMPILER = """#!/bin/sh
echo run >> "{log}"
[ -f "{fail}" ] && {{ echo "fatal: no such header" >&2; exit 1; }}
while [ "$1" != "-o" ]; do shift; done
echo binary > "$2"
"""


@pytest.fixture
def compiler(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path]:
    monkeypatch.setenv("HSH_CACHE", str(tmp_path / "cache"))
    log, fail = tmp_path / "runs.log", tmp_path / "fail"
    script = tmp_path / "cc"
    script.write_text(FAKE_COMPILER.format(log=log, fail=fail))
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    source = tmp_path / "x.c"
    source.write_text("int x;\n")
    return script, log, fail


def runs(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_a_library_is_built_once(compiler: tuple[Path, Path, Path], tmp_path: Path) -> None:
    script, log, _ = compiler
    first = native_library("x", [tmp_path / "x.c"], str(script), ["-O2"])
    again = native_library("x", [tmp_path / "x.c"], str(script), ["-O2"])
    assert first == again and first.read_text() == "binary\n" and runs(log) == 1
    other = native_library("x", [tmp_path / "x.c"], str(script), ["-O3"])  # another command: built anew
    assert other != first and runs(log) == 2


def test_a_failed_build_is_remembered_until_its_marker_is_removed(compiler: tuple[Path, Path, Path],
                                                                   tmp_path: Path) -> None:
    script, log, fail = compiler
    fail.touch()
    with pytest.raises(OSError, match="no such header"):
        native_library("x", [tmp_path / "x.c"], str(script), [])
    with pytest.raises(OSError, match="remembered in .*failed; delete it to try again"):
        native_library("x", [tmp_path / "x.c"], str(script), [])
    assert runs(log) == 1  # the second process did not compile again
    markers = list((Path(os.environ["HSH_CACHE"]) / "native").glob("*.failed"))
    assert len(markers) == 1
    fail.unlink()
    markers[0].unlink()
    assert native_library("x", [tmp_path / "x.c"], str(script), []).is_file() and runs(log) == 2


def test_copy_strings_cuts_c_memory_into_arrow_values_of_either_offset_width() -> None:
    """What the lister (int32 offsets, strings) and the footer reader (int64 offsets, large binary) hand back:
    the same values, independent of the C buffers once copied."""
    values = ["", "a", "héllo", "", "xyz"]
    raw = "".join(values).encode()
    data = ctypes.create_string_buffer(raw, len(raw))
    for arrow_type, width in ((pa.string(), np.int32), (pa.large_binary(), np.int64)):
        offsets = np.cumsum([0, *(len(v.encode()) for v in values)]).astype(width)
        got = copy_strings(offsets.ctypes.data, ctypes.addressof(data), len(values), arrow_type)
        got.validate(full=True)
        expected = pa.array([v if arrow_type == pa.string() else v.encode() for v in values], arrow_type)
        assert got.equals(expected)
        assert copy_strings(None, None, 0, arrow_type).equals(pa.array([], arrow_type))
