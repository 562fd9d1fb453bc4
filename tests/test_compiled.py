"""Native helpers are built once per source and command; a failed build is remembered, not retried per command."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from storage_handler.compiled import native_library

FAKE_COMPILER = """#!/bin/sh
echo run >> "{log}"
[ -f "{fail}" ] && {{ echo "fatal: no such header" >&2; exit 1; }}
while [ "$1" != "-o" ]; do shift; done
echo binary > "$2"
"""


@pytest.fixture
def compiler(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path]:
    monkeypatch.setenv("HSH_HOME", str(tmp_path / "home"))
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
    markers = list((Path(os.environ["HSH_HOME"]) / "native").glob("*.failed"))
    assert len(markers) == 1
    fail.unlink()
    markers[0].unlink()
    assert native_library("x", [tmp_path / "x.c"], str(script), []).is_file() and runs(log) == 2
