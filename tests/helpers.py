"""Helpers shared by tests (importable as ``tests.helpers``)."""

from __future__ import annotations

import os
import subprocess
import sys


def run_hsh(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run the real ``hsh`` command line in a subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "storage_handler.cli.main", *args],
        capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})},
    )
