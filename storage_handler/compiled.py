"""Artifacts this package compiles for itself (the Spark extension's classes, the C lister), cached by content.

Both are built once per source version into a folder named by a hash of the sources under ``$HSH_HOME``, and
several processes may start at once (a Spark session and a Thrift server; prune-service processes). One rule for
both: build into a temporary sibling folder and rename it into place, so no process ever loads half an artifact;
when another process won the race, its (identical) folder is used.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path


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
