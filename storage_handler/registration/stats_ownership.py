"""Whose statistics are these? The marker that tells ours from a user's or another engine's, and Hive's staleness.

Hive's bookkeeping, kept as Hive keeps it (``StatsSetupConst``): ``COLUMN_STATS_ACCURATE`` is JSON with sorted keys
and no spaces, ``{"BASIC_STATS":"true","COLUMN_STATS":{"c":"true"}}``; something is vouched for while it is listed
there, and statistics that may be stale are marked by *removing* the claim (as the metastore does when it sees a
partition's files change), never by writing ``"false"``.

**Our marker**, one parameter per table and per partition, ``hsh.stats``::

    {"v":1,"index":7,"at":"2026-11-28T10:00:00Z","basic":"<16 hex>","cols":"<16 hex>","names":["a","b"]}

the index version the numbers come from, when they were written, a digest of ``numFiles``/``numRows``/``totalSize``
as we left them, a digest *by value* of the column statistics we wrote (what the metastore hands back hashes the
same: decimals in their shortest form, ``-0.0`` as ``0.0``), and those columns' names (left out beyond
:data:`MAX_MARKER` characters: the metastore's parameter values are ``VARCHAR(4000)``; then the columns we are about
to write stand for them). A table-level marker also counts the partitions whose statistics are ours (``parts``).

**The rules** (:func:`decide`; pure):

1. Basic statistics are *ours* when the marker's digest equals the parameters now. Ours, or numbers nobody vouches
   for (the metastore's own ``numFiles``/``totalSize``, or numbers marked stale), are rewritten. Numbers someone
   else vouches for (``BASIC_STATS`` true, not ours: a user's, or Hive's ``ANALYZE``) are kept while the files they
   describe are unchanged (same ``numFiles`` and ``totalSize`` as the index), unless ``overwrite``. Once the files
   changed they are stale, and the index, which has caught up, replaces them.
2. Column statistics are ours when the marker's digest matches; a column equal to what we would write is ours too
   (a run that stopped between the column call and the alter). A column someone else claims in
   ``COLUMN_STATS_ACCURATE`` keeps its statistics and its claim while the files are unchanged; once they change,
   ours replace them, and a column of theirs we cannot publish keeps its statistics but loses its claim (Hive's
   stale mark). A claim without statistics protects nothing.
3. A column of ours that can no longer be published is deleted; so is one losing its bounds (an update merges field
   by field: the old low/high would stay).
4. ``rawDataSize`` is removed when we take the basic statistics over: Spark prefers it to ``totalSize`` per
   partition, and footers cannot state it honestly.
5. Publishing off (``--no-stats``): nothing is written, but statistics whose files changed are marked stale the way
   the metastore marks them when it sees the files change: ``numFiles`` and ``totalSize`` updated,
   ``COLUMN_STATS_ACCURATE`` removed, the other numbers kept -- ours and others' alike. The next publish rewrites
   them.

Spark's own ``ANALYZE`` writes only ``spark.sql.statistics.*``, which is Spark's and never touched here.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hmsclient.genthrift.hive_metastore import ttypes as hms

from storage_handler.registration.hive_stats import Summary, union_value

MARKER = "hsh.stats"
ACCURATE = "COLUMN_STATS_ACCURATE"
NUM_FILES, NUM_ROWS, TOTAL_SIZE, RAW_DATA_SIZE = "numFiles", "numRows", "totalSize", "rawDataSize"
BASIC_KEYS = (NUM_FILES, NUM_ROWS, TOTAL_SIZE)
SPARK_STATS_PREFIX = "spark.sql.statistics."
MARKER_VERSION = 1
MAX_MARKER = 3000  # characters; Hive 2.3's PARTITION_PARAMS / TABLE_PARAMS values are VARCHAR(4000)
MAX_ACCURATE = 4000
#: sent with every alter: the metastore keeps the numbers we send instead of listing the folders again
KEEP_OUR_NUMBERS = hms.EnvironmentContext(properties={"DO_NOT_UPDATE_STATS": "true"})


def basic_parameters(summary: Summary) -> dict[str, str]:
    """``numFiles``/``totalSize`` always; ``numRows`` when every file's count is known."""
    params = {NUM_FILES: str(summary.files), TOTAL_SIZE: str(summary.size)}
    if summary.rows is not None:
        params[NUM_ROWS] = str(summary.rows)
    return params


def parse_accurate(text: str | None) -> tuple[bool, set[str]]:
    """(basic statistics accurate?, columns claimed accurate) from ``COLUMN_STATS_ACCURATE`` (JSON since Hive 2.1, a
    bare ``true``/``false`` before)."""
    if not text:
        return False, set()
    if text.strip().lower() in ("true", "false"):
        return text.strip().lower() == "true", set()
    try:
        doc = json.loads(text)
    except ValueError:
        return False, set()
    if not isinstance(doc, dict):
        return False, set()
    columns = doc.get("COLUMN_STATS") or {}
    claimed = {str(k).lower() for k, v in columns.items() if str(v).lower() == "true"} \
        if isinstance(columns, dict) else set()
    return str(doc.get("BASIC_STATS", "")).lower() == "true", claimed


def render_accurate(basic: bool, columns: Iterable[str]) -> str | None:
    """Hive's ``COLUMN_STATS_ACCURATE``; None when nothing is vouched for (the parameter is then removed). Column
    claims that would not fit the metastore's 4000 characters are left out (the statistics stay, unclaimed)."""
    doc: dict[str, Any] = {"BASIC_STATS": "true"} if basic else {}
    cols = sorted(set(columns))
    if cols:
        doc["COLUMN_STATS"] = {c: "true" for c in cols}
    text = json.dumps(doc, separators=(",", ":")) if doc else None
    if text is not None and len(text) > MAX_ACCURATE:
        return render_accurate(basic, ())
    return text


def _digest(parts: Iterable[bytes]) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(len(part).to_bytes(8, "big"))
        h.update(part)
    return h.hexdigest()[:16]


def basic_digest(params: Mapping[str, str]) -> str:
    return _digest(f"{k}={params.get(k)}".encode() for k in BASIC_KEYS)


def canonical(obj: hms.ColumnStatisticsObj) -> bytes:
    """A column's statistics by value, not by encoding (the metastore stores doubles and decimals in its own
    columns: ``-0.0`` comes back as ``0.0``, a decimal in Java's shortest form)."""
    data = union_value(obj.statsData)
    fields: list[str] = [obj.colName.lower(), type(data).__name__]
    for entry in data.thrift_spec[1:] if data is not None else ():
        if entry is None or entry[2] == "bitVectors":
            continue
        value = getattr(data, entry[2])
        if isinstance(value, hms.Decimal):
            unscaled, scale = int.from_bytes(value.unscaled, "big", signed=True), value.scale
            while scale > 0 and unscaled % 10 == 0:
                unscaled, scale = unscaled // 10, scale - 1
            value = (unscaled, scale)
        elif isinstance(value, hms.Date):
            value = value.daysSinceEpoch
        elif isinstance(value, float):
            value = value + 0.0
        fields.append(f"{entry[2]}={value!r}")
    return "|".join(fields).encode()


def columns_digest(objs: Iterable[hms.ColumnStatisticsObj]) -> str:
    return _digest(canonical(o) for o in sorted(objs, key=lambda o: o.colName.lower()))


def now_utc() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


@dataclass(frozen=True, slots=True)
class Marker:
    """What we wrote last on one table or partition (see the module docstring)."""

    index_version: int
    basic: str
    columns: str
    names: tuple[str, ...] | None  # None: too many to list
    at: str = ""
    parts: int | None = None  # table level of a partitioned table: partitions whose statistics are ours

    def render(self) -> str:
        doc: dict[str, Any] = {"v": MARKER_VERSION, "index": self.index_version, "at": self.at, "basic": self.basic,
                               "cols": self.columns}
        if self.parts is not None:
            doc["parts"] = self.parts
        listed = {**doc, "names": list(self.names or ())}
        text = json.dumps(listed if self.names is not None else doc, separators=(",", ":"))
        return text if len(text) <= MAX_MARKER else json.dumps(doc, separators=(",", ":"))

    @staticmethod
    def parse(text: str | None) -> Marker | None:
        if not text:
            return None
        try:
            doc = json.loads(text)
            if doc.get("v") != MARKER_VERSION:
                return None
            names = doc.get("names")
            parts = doc.get("parts")
            return Marker(int(doc["index"]), str(doc["basic"]), str(doc["cols"]),
                          None if names is None else tuple(str(n) for n in names), str(doc.get("at", "")),
                          None if parts is None else int(parts))
        except (ValueError, KeyError, TypeError, AttributeError):
            return None


@dataclass(frozen=True, slots=True)
class Decision:
    """What to do on one table or partition."""

    write_basic: bool  # replace numFiles/totalSize/numRows (ours, or nobody vouches for what is there)
    mark_stale: bool  # the files changed under statistics we do not rewrite: mark them as the metastore would
    write_columns: tuple[str, ...]
    keep_columns: tuple[str, ...]  # someone else's column statistics, files unchanged: kept with their claim
    delete_columns: tuple[str, ...]  # ours before and not publishable now, or losing their bounds: deleted first


def _files_changed(params: Mapping[str, str], new_basic: Mapping[str, str]) -> bool:
    return any(params.get(k) != new_basic.get(k) for k in (NUM_FILES, TOTAL_SIZE))


def decide(params: Mapping[str, str], current: Sequence[hms.ColumnStatisticsObj], new_basic: Mapping[str, str],
           new_objs: Sequence[hms.ColumnStatisticsObj], *, overwrite: bool = False, publish: bool = True) -> Decision:
    """Whose statistics are these, and what may be written (the module docstring's rules)."""
    basic_ok, claimed_cols = parse_accurate(params.get(ACCURATE))
    files_changed = _files_changed(params, new_basic)
    current_by_name = {o.colName.lower(): o for o in current}
    if not publish:  # rule 5: write nothing; what the files no longer support loses its claim
        return Decision(False, files_changed and (basic_ok or bool(claimed_cols)), (), (), ())
    marker = Marker.parse(params.get(MARKER))
    ours_basic = marker is not None and bool(marker.basic) and basic_digest(params) == marker.basic
    write_basic = overwrite or files_changed or ours_basic or not basic_ok
    names = marker.names if marker is not None and marker.names is not None else \
        tuple(o.colName for o in new_objs)
    ours_cols = marker is not None and columns_digest(
        [o for o in current if o.colName.lower() in names]) == marker.columns
    claimed = set(names) if ours_cols else set()
    claimed |= {o.colName for o in new_objs
                if o.colName in current_by_name and canonical(current_by_name[o.colName]) == canonical(o)}
    # someone else's claimed statistics, while their files are unchanged (after that they are stale: ours replace them)
    others = set() if overwrite or files_changed else (claimed_cols & set(current_by_name)) - claimed
    write = tuple(o.colName for o in new_objs if o.colName not in others)
    delete = {o.colName for o in new_objs
              if o.colName in write and o.colName in current_by_name and _loses_fields(current_by_name[o.colName], o)}
    new_names = {o.colName for o in new_objs}
    delete |= {n for n in claimed if n not in new_names and n in current_by_name}
    return Decision(write_basic=write_basic, mark_stale=False, write_columns=write,
                    keep_columns=tuple(sorted(others)), delete_columns=tuple(sorted(delete)))


def _loses_fields(old: hms.ColumnStatisticsObj, new: hms.ColumnStatisticsObj) -> bool:
    old_data, new_data = union_value(old.statsData), union_value(new.statsData)
    if type(old_data) is not type(new_data):
        return True
    return any(getattr(old_data, f, None) is not None and getattr(new_data, f, None) is None
               for f in ("lowValue", "highValue", "bitVectors"))


def new_parameters(params: Mapping[str, str], summary: Summary, decision: Decision,
                   written: Sequence[hms.ColumnStatisticsObj], index_version: int, *, table_of_partitions: bool = False,
                   parts: int | None = None, at: str | None = None) -> dict[str, str]:
    """The object's parameters after publishing: ours replaced, everything else as it was. The table level of a
    partitioned table never claims accuracy (Hive ignores it there; its sums are ours to keep true)."""
    out = dict(params)
    basic_ok, claimed_cols = parse_accurate(params.get(ACCURATE))
    new_basic = basic_parameters(summary)
    if decision.write_basic:
        for key in (*BASIC_KEYS, RAW_DATA_SIZE):
            out.pop(key, None)
        out.update(new_basic)
        basic_accurate = summary.rows is not None and not table_of_partitions
    elif decision.mark_stale:  # what the metastore does when a partition's files change under it
        out[NUM_FILES], out[TOTAL_SIZE] = new_basic[NUM_FILES], new_basic[TOTAL_SIZE]
        basic_accurate = False
    else:
        basic_accurate = basic_ok
    kept = set(decision.keep_columns) & claimed_cols
    accurate = render_accurate(basic_accurate, kept | {o.colName for o in written})
    if accurate is None:
        out.pop(ACCURATE, None)
    else:
        out[ACCURATE] = accurate
    if decision.write_basic or written:  # (marking stale leaves the marker: it no longer matches, which says so)
        out[MARKER] = Marker(index_version, basic_digest(out) if decision.write_basic else "",
                             columns_digest(written), tuple(sorted(o.colName for o in written)), at or now_utc(),
                             parts).render()
    return out


def unchanged(params: Mapping[str, str], summary: Summary, objs: Sequence[hms.ColumnStatisticsObj], *,
              table_of_partitions: bool = False) -> bool:
    """Whether our statistics on this object already say what the index says, judged from its parameters alone
    (no column statistics read): our marker, our basic numbers, the digest of the columns we would write, and
    Hive's claims as we left them. Then nothing is sent for it."""
    marker = Marker.parse(params.get(MARKER))
    if marker is None or not marker.basic or basic_digest(params) != marker.basic or RAW_DATA_SIZE in params:
        return False
    new_basic = basic_parameters(summary)
    if any(params.get(k) != new_basic.get(k) for k in BASIC_KEYS):
        return False
    names = {o.colName for o in objs}
    if marker.columns != columns_digest(objs) or (marker.names is not None and set(marker.names) != names):
        return False
    basic_ok, claimed = parse_accurate(params.get(ACCURATE))
    want_basic = summary.rows is not None and not table_of_partitions
    return basic_ok == want_basic and (names <= claimed or render_accurate(want_basic, names) ==
                                       render_accurate(want_basic, ()))
