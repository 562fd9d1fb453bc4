"""``Split``: one unit of reading work, what ``get_splits`` hands a reader (Hadoop's ``InputSplit``, reduced).

In the core, not in ``spark/``: the input format makes splits for any engine; Spark's readers only consume them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Split:
    """A file (relative to the table location, or absolute for a partition registered elsewhere), its size, its
    partition values, and the row groups to read (None = all)."""

    path: str
    size: int
    partition_values: tuple[tuple[str, str | None], ...]
    row_groups: tuple[int, ...] | None = None
