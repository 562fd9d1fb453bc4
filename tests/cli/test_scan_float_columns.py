"""``hsh register --scan-float-columns``: double columns prune, NaN included correctly; refresh follows the setting."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from tests.helpers import run_hsh


def _dataset(root: Path) -> Path:
    root.mkdir()
    for i, values in enumerate([[0.1, 0.2], [0.5, 0.6], [0.95, 0.97], [0.3, math.nan]]):
        pq.write_table(pa.table({"d": pa.array(values, pa.float64()), "i": pa.array([i, i], pa.int64())}),
                       root / f"part-{i}.parquet")
    return root


def _kept(metastore_uri: str, table: str, where: str) -> list[str]:
    proc = run_hsh("scan", table, "--where", where, "--metastore", metastore_uri, "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    return sorted(out["kept_paths"])


def test_float_bounds_prune_only_when_scanned(metastore_uri: str, tmp_path: Path) -> None:
    root = _dataset(tmp_path / "floats")
    plain = run_hsh("register", "floats.plain", str(root), "--metastore", metastore_uri, "--json")
    assert plain.returncode == 0, plain.stderr
    # footers cannot prove a double column NaN-free: nothing prunes
    assert len(_kept(metastore_uri, "floats.plain", "d > 0.9")) == 4

    scanned = run_hsh("register", "floats.scanned", str(root), "--scan-float-columns", "--location",
                      f"file:{root}", "--metastore", metastore_uri, "--json")
    assert scanned.returncode == 0, scanned.stderr
    # 0.95..0.97 matches; the file holding NaN is kept too (NaN sorts above every number in Spark and Hive)
    assert _kept(metastore_uri, "floats.scanned", "d > 0.9") == ["part-2.parquet", "part-3.parquet"]
    assert _kept(metastore_uri, "floats.scanned", "d < 0.15") == ["part-0.parquet", "part-3.parquet"]


def test_turning_it_on_later_takes_effect_at_the_next_refresh(metastore_uri: str, tmp_path: Path) -> None:
    from metastore.client import MetastoreClient

    root = _dataset(tmp_path / "later")
    assert run_hsh("register", "floats.later", str(root), "--metastore", metastore_uri).returncode == 0
    assert len(_kept(metastore_uri, "floats.later", "d > 0.9")) == 4
    with MetastoreClient(metastore_uri) as client:
        table = client.get_table("floats", "later")
        table.parameters["hsh.stats.scan_float_columns"] = "true"
        client.alter_table(table)
    refresh = run_hsh("index", "refresh", "floats.later", "--metastore", metastore_uri, "--json")
    assert refresh.returncode == 0, refresh.stderr
    assert json.loads(refresh.stdout)["full_rebuild"] is True  # no file changed, but every footer is read again
    assert _kept(metastore_uri, "floats.later", "d > 0.9") == ["part-2.parquet", "part-3.parquet"]


def test_a_bad_setting_is_one_clear_error(metastore_uri: str, tmp_path: Path) -> None:
    root = _dataset(tmp_path / "bad")
    proc = run_hsh("register", "floats.bad", str(root), "--table-property", "hsh.stats.scan_float_columns=yes",
                   "--metastore", metastore_uri)
    assert proc.returncode == 2 and "hsh.stats.scan_float_columns='yes': use true or false" in proc.stderr
    assert run_hsh("describe", "floats.bad", "--metastore", metastore_uri).returncode == 2  # nothing was created


def test_giving_it_when_registering_again_applies_it_at_once(metastore_uri: str, tmp_path: Path) -> None:
    """Registering an existing table again with the option sets it and rebuilds the index with it, as the ALTER and
    refresh above do; registering again without it does not turn it off."""
    root = _dataset(tmp_path / "again")
    assert run_hsh("register", "floats.again", str(root), "--metastore", metastore_uri).returncode == 0
    assert len(_kept(metastore_uri, "floats.again", "d > 0.9")) == 4
    again = run_hsh("register", "floats.again", str(root), "--scan-float-columns", "--metastore", metastore_uri,
                    "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["create_table"] is False
    assert _kept(metastore_uri, "floats.again", "d > 0.9") == ["part-2.parquet", "part-3.parquet"]
    assert run_hsh("register", "floats.again", str(root), "--metastore", metastore_uri).returncode == 0
    assert _kept(metastore_uri, "floats.again", "d > 0.9") == ["part-2.parquet", "part-3.parquet"]
