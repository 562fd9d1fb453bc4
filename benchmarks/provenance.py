"""Which code a benchmark measured: one rule for every report's commit label."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUTPUTS = ("benchmarks/results", "benchmarks/data")  # what a run writes: not a change to the code measured


def commit_label() -> str:
    """The checked-out commit, with ``-dirty`` when tracked code differs from it.

    ``git describe --dirty`` would also call the tree dirty for the results a run is rewriting (or a previous
    report removed before a rerun), which labels a clean measurement as one of uncommitted code; changes under
    :data:`OUTPUTS` do not count. "unknown" outside a git checkout.
    """
    try:
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=False).stdout.strip()
        changed = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no", "--",
                                  ".", *(f":!{p}" for p in OUTPUTS)], capture_output=True, text=True,
                                 check=False).stdout.strip()
    except OSError:
        return "unknown"
    if not head:
        return "unknown"
    return f"{head}-dirty" if changed else head
