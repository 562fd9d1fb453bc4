"""Generate a small Hive-partitioned Parquet dataset with nulls, for the demo, the tests and the benchmarks.

Rows are clustered: each file covers its own contiguous range of ``event_id`` and of ``ts`` inside its day, so a
selective predicate on those columns can skip files, as real append-only event tables allow.
"""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

SCHEMA = pa.schema([
    ("event_id", pa.int64()),
    ("user_id", pa.int32()),
    ("kind", pa.string()),
    ("amount", pa.decimal128(10, 2)),
    ("score", pa.float64()),
    ("ok", pa.bool_()),
    ("ts", pa.timestamp("us")),
    ("day", pa.date32()),
])
KINDS = ["click", "view", "purchase", "refund", "signup"]


def generate_events(
    root: Path | str,
    *,
    days: int = 3,
    files_per_day: int = 4,
    rows_per_file: int = 250,
    start: dt.date = dt.date(2024, 1, 1),
    seed: int = 7,
) -> Path:
    """Write ``dt=YYYY-MM-DD/part-N.parquet`` files under ``root``; returns ``root``."""
    rng = random.Random(seed)
    root = Path(root)
    next_id = 1
    for d in range(days):
        day = start + dt.timedelta(days=d)
        folder = root / f"dt={day.isoformat()}"
        folder.mkdir(parents=True, exist_ok=True)
        for part in range(files_per_day):
            n = rows_per_file
            ids = list(range(next_id, next_id + n))
            next_id += n
            base = dt.datetime.combine(day, dt.time()) + dt.timedelta(hours=24 * part / files_per_day)
            table = pa.table(
                {
                    "event_id": ids,
                    "user_id": [rng.randint(1, 500) if rng.random() > 0.05 else None for _ in ids],
                    "kind": [rng.choice(KINDS) if rng.random() > 0.1 else None for _ in ids],
                    "amount": [Decimal(rng.randint(0, 100000)) / 100 if rng.random() > 0.2 else None for _ in ids],
                    "score": [rng.random() * 100 if rng.random() > 0.1 else None for _ in ids],
                    "ok": [rng.random() > 0.5 if rng.random() > 0.1 else None for _ in ids],
                    "ts": [base + dt.timedelta(seconds=i * 3600 * 24 / files_per_day / n) for i in range(n)],
                    "day": [day] * n,
                },
                schema=SCHEMA,
            )
            pq.write_table(table, folder / f"part-{part:05d}.parquet")
    return root
