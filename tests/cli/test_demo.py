"""``make demo`` (``hsh demo``) end to end in its own state folder: both paths agree and both prune."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers import run_hsh


@pytest.mark.jvm
def test_demo_runs_and_shows_pruning(tmp_path: Path) -> None:
    proc = run_hsh("demo", env={"HSH_HOME": str(tmp_path / "home"), "HSH_METASTORE_URI": ""}, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    out = proc.stdout + proc.stderr
    assert "both paths agree" in out
    lines = re.findall(r"(Spark SQL|HiveServer2) read (\d+) files .*partitions kept (\d+) of (\d+), whose (\d+) "
                       r"files were listed .* statistics kept (\d+) \[(\S+)\]", out)
    assert [(who, path) for who, *_, path in lines] == [("Spark SQL", "spark-native"), ("HiveServer2", "spark-native")]
    for _who, kept, parts_kept, parts, listed, after_stats, _path in lines:
        assert (int(parts), int(parts_kept), int(listed), int(kept), int(after_stats)) == (3, 2, 8, 3, 3)
    assert "stopping the metastore the demo started" in out  # it stops what it started
