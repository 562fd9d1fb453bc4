"""A dataset with every column type the metastore can hold statistics for (and the ones it cannot), and pyarrow's
own answer for it: the oracle the published statistics are compared with."""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from storage_handler.hive_paths import HIVE_DEFAULT_PARTITION

SCHEMA = pa.schema([
    ("c_tiny", pa.int8()), ("c_small", pa.int16()), ("c_int", pa.int32()), ("c_big", pa.int64()),
    ("c_float", pa.float32()), ("c_double", pa.float64()), ("c_dec", pa.decimal128(10, 2)),
    ("c_bigdec", pa.decimal128(38, 10)), ("c_date", pa.date32()), ("c_bool", pa.bool_()), ("c_true", pa.bool_()),
    ("c_str", pa.string()), ("c_ts", pa.timestamp("us")), ("c_bin", pa.binary()), ("c_allnull", pa.int32()),
])
#: the columns that get statistics when float columns are scanned (everywhere but c_bool, whose values are of both
#: kinds, and c_double in the partition holding a NaN, whose bounds are unknown)
PUBLISHED = {"c_tiny", "c_small", "c_int", "c_big", "c_float", "c_double", "c_dec", "c_bigdec", "c_date", "c_true",
             "c_allnull"}
#: ... and without the scan: float bounds are unknown, so the float columns get nothing
PUBLISHED_UNSCANNED = PUBLISHED - {"c_float", "c_double"}
SKIPPED = {"c_bool", "c_str", "c_ts", "c_bin"}
PARTITIONS = ["2024-01-01", "2024-01-02", HIVE_DEFAULT_PARTITION]
WORDS = ["ünïcødé", "日本語", "zeta", "", "émoji 🎉", "a" * 300]
EPOCH = dt.date(1970, 1, 1)


def _rows(seed: int, n: int, nan: bool) -> pa.Table:
    def maybe(i: int, value: Any, every: int = 5) -> Any:
        return None if (i + seed) % every == 0 else value

    return pa.table({
        "c_tiny": pa.array([maybe(i, (i * 37 + seed) % 256 - 128) for i in range(n)], pa.int8()),
        "c_small": pa.array([maybe(i, i * 811 - 16000 + seed) for i in range(n)], pa.int16()),
        "c_int": pa.array([maybe(i, i * 100_003 - 2**31 + seed, 7) for i in range(n)], pa.int32()),
        "c_big": pa.array([maybe(i, (i - 10) * 10**17 + seed) for i in range(n)], pa.int64()),
        "c_float": pa.array([maybe(i, (i - seed) / 8) for i in range(n)], pa.float32()),
        "c_double": pa.array([float("nan") if nan and i == 3 else maybe(i, (i - 10) * 1e300 / 7)
                              for i in range(n)], pa.float64()),
        "c_dec": pa.array([maybe(i, Decimal(i * 3 - 128 - seed) / 100) for i in range(n)], pa.decimal128(10, 2)),
        "c_bigdec": pa.array([Decimal(f"{(i - 10) * 10**36 + seed * 10**20 + i}E-10") for i in range(n)],
                             pa.decimal128(38, 10)),
        "c_date": pa.array([maybe(i, dt.date(1969, 12, 1) + dt.timedelta(days=i * 3 + seed)) for i in range(n)],
                           pa.date32()),
        "c_bool": pa.array([maybe(i, i % 2 == 0) for i in range(n)], pa.bool_()),
        "c_true": pa.array([maybe(i, True, 3) for i in range(n)], pa.bool_()),
        "c_str": pa.array([maybe(i, WORDS[i % len(WORDS)]) for i in range(n)], pa.string()),
        "c_ts": pa.array([dt.datetime(2024, 1, 1) + dt.timedelta(minutes=i + seed) for i in range(n)],
                         pa.timestamp("us")),
        "c_bin": pa.array([bytes([i % 256]) * (i % 3) for i in range(n)], pa.binary()),
        "c_allnull": pa.array([None] * n, pa.int32()),
    }, schema=SCHEMA)


def generate(root: Path, *, partitioned: bool = True, files: int = 2, rows: int = 24) -> Path:
    """``files`` files per partition (``dt=`` folders, one of them Hive's NULL partition) or in ``root`` itself;
    the second partition has a NaN in ``c_double``."""
    folders = [root / f"dt={p}" for p in PARTITIONS] if partitioned else [root]
    for p, folder in enumerate(folders):
        folder.mkdir(parents=True, exist_ok=True)
        for f in range(files):
            write(folder / f"part-{f}.parquet", p * 10 + f, rows, nan=partitioned and p == 1 and f == 0)
    return root


def write(path: Path, seed: int, rows: int = 24, *, nan: bool = False) -> None:
    pq.write_table(_rows(seed, rows, nan), path)


def oracle(folder: Path) -> dict[str, Any]:
    """pyarrow's answer for the data files in ``folder``: files, bytes, rows, and per column nulls / min / max
    (None: no bound, e.g. NaN present or no value) / non-null count / true count."""
    paths = sorted(folder.glob("*.parquet"))
    data = pa.concat_tables([pq.read_table(p) for p in paths])
    columns: dict[str, dict[str, Any]] = {}
    for name in SCHEMA.names:
        col = data.column(name)
        values = pc.drop_null(col)
        low = high = None
        if len(values) and not (pa.types.is_floating(col.type) and pc.any(pc.is_nan(values)).as_py()):
            mm = pc.min_max(values)
            low, high = mm["min"].as_py(), mm["max"].as_py()
        columns[name] = {"nulls": col.null_count, "low": low, "high": high, "values": len(values),
                         "trues": pc.sum(values).as_py() if pa.types.is_boolean(col.type) and len(values) else 0}
    return {"files": len(paths), "size": sum(p.stat().st_size for p in paths), "rows": data.num_rows,
            "columns": columns}


def decoded(obj: Any) -> dict[str, Any]:
    """A ``ColumnStatisticsObj`` as plain values: low/high decoded from Hive's encodings."""
    from storage_handler.registration.hive_stats import decimal_of, union_value

    data = union_value(obj.statsData)
    out = {"type": type(data).__name__, "nulls": data.numNulls}
    if hasattr(data, "numDVs"):
        out["ndv"] = data.numDVs
    if hasattr(data, "numTrues"):
        out["trues"], out["falses"] = data.numTrues, data.numFalses
    for key in ("lowValue", "highValue"):
        value = getattr(data, key, None)
        if value is not None and hasattr(value, "unscaled"):
            value = decimal_of(value)
        elif value is not None and hasattr(value, "daysSinceEpoch"):
            value = EPOCH + dt.timedelta(days=value.daysSinceEpoch)
        out["low" if key == "lowValue" else "high"] = value
    return out


def expected(name: str, truth: dict[str, Any], rows: int, *, floats: bool = True) -> dict[str, Any] | None:
    """What the metastore must hold for column ``name`` given pyarrow's ``truth`` (None: nothing at all);
    ``floats``: whether the float columns were scanned (else their bounds are unknown)."""
    if name in SKIPPED or (name in ("c_float", "c_double") and not floats and truth["columns"][name]["values"]):
        return None
    t = truth["columns"][name]
    if name == "c_true":
        return {"type": "BooleanColumnStatsData", "nulls": t["nulls"], "trues": t["trues"], "falses": 0}
    kind = {"c_float": "Double", "c_double": "Double", "c_dec": "Decimal", "c_bigdec": "Decimal",
            "c_date": "Date"}.get(name, "Long")
    low, high = t["low"], t["high"]
    if isinstance(low, float) and not (math.isfinite(low) and math.isfinite(high)):
        low = high = None
    if t["values"] != 0 and low is None:
        return None  # values whose range is unknown: nothing, or Hive would take them for none
    ndv = 0 if t["values"] == 0 else (1 if low == high else 2)
    return {"type": f"{kind}ColumnStatsData", "nulls": t["nulls"], "ndv": ndv, "low": low, "high": high}
