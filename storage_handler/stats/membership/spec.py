"""Which columns of a table get bloom filters and value lists: table parameters, as ORC's
``orc.bloom.filter.columns`` / ``orc.bloom.filter.fpp`` choose them per table and per column.

* ``hsh.bloom.filter.columns``: comma-separated column names (case-insensitive) that get a bloom filter per file;
* ``hsh.bloom.filter.fpp``: the false-positive rate each filter is sized for (default 0.01, Parquet's default);
* ``hsh.value.list.columns``: columns that keep, per file, the exact distinct values, when they number at most
* ``hsh.value.list.max`` (default 64); above it the file has no list for that column (min/max still apply).

The spec travels inside :class:`~storage_handler.stats.index.file_stats.StatsOptions` and is recorded in every index
snapshot (``hsh.index.membership``), so a refresh knows which filters it must add or drop.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from storage_handler.errors import ConfigurationError, StatsIndexError
from storage_handler.stats.membership.bloom import MEMBERSHIP_TYPES
from storage_handler.types import HiveType

TABLE_PARAM_BLOOM_COLUMNS = "hsh.bloom.filter.columns"
TABLE_PARAM_BLOOM_FPP = "hsh.bloom.filter.fpp"
TABLE_PARAM_VALUE_LIST_COLUMNS = "hsh.value.list.columns"
TABLE_PARAM_VALUE_LIST_MAX = "hsh.value.list.max"
TABLE_PARAMETERS = (TABLE_PARAM_BLOOM_COLUMNS, TABLE_PARAM_BLOOM_FPP, TABLE_PARAM_VALUE_LIST_COLUMNS,
                    TABLE_PARAM_VALUE_LIST_MAX)
DEFAULT_FPP = 0.01
DEFAULT_VALUE_LIST_MAX = 64
MAX_VALUE_LIST_MAX = 100_000


@dataclass(frozen=True, slots=True)
class MembershipSpec:
    """The bloom-filter and value-list choice of one table (column names lower-case, in the order given)."""

    bloom_columns: tuple[str, ...] = ()
    fpp: float = DEFAULT_FPP
    value_list_columns: tuple[str, ...] = ()
    value_list_max: int = DEFAULT_VALUE_LIST_MAX

    @property
    def is_empty(self) -> bool:
        return not (self.bloom_columns or self.value_list_columns)

    @property
    def columns(self) -> tuple[str, ...]:
        """Every column with a filter or a list, each once."""
        return tuple(dict.fromkeys((*self.bloom_columns, *self.value_list_columns)))

    @classmethod
    def for_table(cls, parameters: Mapping[str, str], table: str = "") -> MembershipSpec:
        """The spec a table's parameters ask for; a malformed value is a ConfigurationError naming it."""
        where = f"table {table}: " if table else ""
        fpp_text = str(parameters.get(TABLE_PARAM_BLOOM_FPP, DEFAULT_FPP)).strip()
        max_text = str(parameters.get(TABLE_PARAM_VALUE_LIST_MAX, DEFAULT_VALUE_LIST_MAX)).strip()
        try:
            fpp = float(fpp_text)
        except ValueError:
            fpp = math.nan
        if not 0.0 < fpp < 1.0:
            raise ConfigurationError(
                f"{where}table parameter {TABLE_PARAM_BLOOM_FPP}={fpp_text!r} is not a false-positive rate; "
                "use a number between 0 and 1 such as 0.01"
            )
        if not (max_text.isascii() and max_text.isdigit()) or not 1 <= int(max_text) <= MAX_VALUE_LIST_MAX:
            raise ConfigurationError(
                f"{where}table parameter {TABLE_PARAM_VALUE_LIST_MAX}={max_text!r} is not a count; use a whole "
                f"number from 1 to {MAX_VALUE_LIST_MAX} such as {DEFAULT_VALUE_LIST_MAX}"
            )
        return cls(_names(parameters.get(TABLE_PARAM_BLOOM_COLUMNS)), fpp,
                   _names(parameters.get(TABLE_PARAM_VALUE_LIST_COLUMNS)), int(max_text))

    def check(self, table: str, columns: Iterable[tuple[str, HiveType]]) -> None:
        """Refuse a column the table lacks, or whose type cannot have a filter, naming it and the fix."""
        types = {name.lower(): hive_type for name, hive_type in columns}
        for param, chosen in ((TABLE_PARAM_BLOOM_COLUMNS, self.bloom_columns),
                              (TABLE_PARAM_VALUE_LIST_COLUMNS, self.value_list_columns)):
            for column in chosen:
                hive_type = types.get(column)
                if hive_type is None:
                    raise ConfigurationError(
                        f"table {table}: {param} names column {column!r}, which is not a data column of the table "
                        f"(columns: {', '.join(sorted(types)) or 'none'}); fix the name or remove it"
                    )
                if hive_type.name not in MEMBERSHIP_TYPES:
                    raise ConfigurationError(
                        f"table {table}: {param} names column {column!r} of type {hive_type}; bloom filters and value "
                        "lists are kept for tinyint, smallint, int, bigint, decimal, string, varchar, date and "
                        "timestamp columns only; remove it from the parameter"
                    )

    def parameters(self) -> dict[str, str]:
        """The table parameters that spell this spec (empty values for an empty spec)."""
        return {
            TABLE_PARAM_BLOOM_COLUMNS: ",".join(self.bloom_columns),
            TABLE_PARAM_BLOOM_FPP: repr(self.fpp),
            TABLE_PARAM_VALUE_LIST_COLUMNS: ",".join(self.value_list_columns),
            TABLE_PARAM_VALUE_LIST_MAX: str(self.value_list_max),
        }

    def restricted(self, names: Collection[str]) -> MembershipSpec:
        """Only the columns in ``names`` (what a query loads)."""
        wanted = {n.lower() for n in names}
        return MembershipSpec(tuple(c for c in self.bloom_columns if c in wanted), self.fpp,
                              tuple(c for c in self.value_list_columns if c in wanted), self.value_list_max)

    def to_json(self) -> str:
        return json.dumps({"bloom_columns": list(self.bloom_columns), "fpp": self.fpp,
                           "value_list_columns": list(self.value_list_columns),
                           "value_list_max": self.value_list_max}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str | bytes | None) -> MembershipSpec:
        """The spec recorded in an index (an index without one has no filters: every leaf keeps the file)."""
        if not text:
            return cls()
        try:
            data = json.loads(text)
            return cls(tuple(str(c) for c in data["bloom_columns"]), float(data["fpp"]),
                       tuple(str(c) for c in data["value_list_columns"]), int(data["value_list_max"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise StatsIndexError(
                f"index metadata hsh.index.membership is corrupt ({exc}); delete the index folder and rebuild it"
            ) from exc


def _names(text: str | None) -> tuple[str, ...]:
    if not text:
        return ()
    return tuple(dict.fromkeys(n.strip().strip("`").lower() for n in str(text).split(",") if n.strip()))
