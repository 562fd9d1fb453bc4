"""Hive's job-configuration keys, and the typed view of them the input format works from.

The handler writes these (``configure_input_job_properties``) and the input format reads them back, exactly as a
Hive ``TableDesc``'s properties travel to ``MapredParquetInputFormat`` in a Hive job:

* ``mapreduce.input.fileinputformat.inputdir`` and ``location``: the table location;
* ``name``: ``db.table``;
* ``columns`` (comma-separated) and ``columns.types`` (colon-separated, Hive type strings);
* ``partition_columns`` (slash-separated, as Hive writes it) and ``partition_columns.types`` (colon-separated);
* the filter, as the handler writes it: ``hsh.sarg`` (the SearchArgument) and ``hsh.filter.expr`` (the
  expression), both our versioned JSON under our own keys, and ``hive.io.filter.text`` (HiveQL, Hive's own format);
* the filter, as Hive and Spark write it (read, never written by the handler): ``hive.io.filter.expr.serialized``
  (Kryo of an ``ExprNodeGenericFuncDesc``) and ``sarg.pushdown`` (Kryo of a ``SearchArgumentImpl``);
  ``hsh.filter.time.zone`` names the zone of the JVM that wrote them (default UTC), and
  ``hsh.hive.writer.version`` the Hive release that wrote them (``2.3.9``, ``2.3.10``, or ``auto``: the bytes tell;
  default: Spark's ``spark.sql.hive.version`` when the job configuration carries it, else ``auto``). Hive 2.3
  itself writes no version key into a JobConf (``HiveConf`` has none; ``HiveVersionInfo`` is not copied into the
  configuration); Spark's Thrift server and ``spark-sql`` set ``spark.sql.hive.version`` to their built-in Hive,
  and Spark copies its SQL settings into each job's Hadoop configuration;
* ours, namespaced: ``hsh.index.version`` (informational: readers always load the current index from storage).

Which key wins when several are present is :mod:`storage_handler.decode.serialized`'s precedence.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from storage_handler.errors import ConfigurationError
from storage_handler.types import HiveType, parse_hive_type, split_top_level

INPUT_DIR = "mapreduce.input.fileinputformat.inputdir"
LOCATION = "location"
TABLE_NAME = "name"
COLUMNS = "columns"
COLUMN_TYPES = "columns.types"
PARTITION_COLUMNS = "partition_columns"
PARTITION_COLUMN_TYPES = "partition_columns.types"
FILTER_EXPR = "hive.io.filter.expr.serialized"
FILTER_TEXT = "hive.io.filter.text"
SARG_PUSHDOWN = "sarg.pushdown"
HSH_SARG = "hsh.sarg"
HSH_FILTER_EXPR = "hsh.filter.expr"
FILTER_TIME_ZONE = "hsh.filter.time.zone"
HIVE_WRITER_VERSION = "hsh.hive.writer.version"
#: "true" when the SearchArgument stands for the *whole* filter of the read (no part of it was left out on the way,
#: e.g. a Spark filter with no Hive form): only then may a file be called fully matched (aggregates from the index)
FILTER_COMPLETE = "hsh.filter.complete"
SPARK_HIVE_VERSION = "spark.sql.hive.version"
INDEX_VERSION = "hsh.index.version"
FILTER_KEYS = (HSH_SARG, HSH_FILTER_EXPR, FILTER_EXPR, FILTER_TEXT, SARG_PUSHDOWN, FILTER_COMPLETE)


def _pairs(names_text: str, types_text: str, sep: str, what: str) -> tuple[tuple[str, HiveType], ...]:
    names = [n for n in names_text.split(sep) if n] if names_text else []
    types = [t for t in split_top_level(types_text, ":") if t] if types_text else []
    if len(names) != len(types):
        raise ConfigurationError(
            f"job configuration lists {len(names)} {what} names but {len(types)} types; "
            "configure it with StorageHandler.configure_input_job_properties"
        )
    return tuple((n.lower(), parse_hive_type(t)) for n, t in zip(names, types, strict=True))


@dataclass(frozen=True, slots=True)
class JobConf:
    """The typed table description a read is configured with."""

    table: str
    location: str
    columns: tuple[tuple[str, HiveType], ...]
    partition_keys: tuple[tuple[str, HiveType], ...]

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> JobConf:
        location = props.get(INPUT_DIR) or props.get(LOCATION)
        if not location:
            raise ConfigurationError(
                f"job configuration has no {INPUT_DIR!r}; configure it with "
                "StorageHandler.configure_input_job_properties"
            )
        return cls(
            table=props.get(TABLE_NAME, "?"),
            location=location.split(",")[0],
            columns=_pairs(props.get(COLUMNS, ""), props.get(COLUMN_TYPES, ""), ",", "column"),
            partition_keys=_pairs(
                props.get(PARTITION_COLUMNS, ""), props.get(PARTITION_COLUMN_TYPES, ""), "/", "partition column"
            ),
        )

    def to_properties(self) -> dict[str, str]:
        return table_properties(self.table, self.location, self.columns, self.partition_keys)


def table_properties(
    table: str,
    location: str,
    columns: Sequence[tuple[str, HiveType]],
    partition_keys: Sequence[tuple[str, HiveType]],
) -> dict[str, str]:
    return {
        TABLE_NAME: table,
        LOCATION: location,
        INPUT_DIR: location,
        COLUMNS: ",".join(n for n, _ in columns),
        COLUMN_TYPES: ":".join(str(t) for _, t in columns),
        PARTITION_COLUMNS: "/".join(n for n, _ in partition_keys),
        PARTITION_COLUMN_TYPES: ":".join(str(t) for _, t in partition_keys),
    }


# ------------------------------------------------------------------------------------------- job.xml / .properties
def read_job_conf_file(path: str) -> dict[str, str]:
    """The properties in a Hadoop ``job.xml`` (``<configuration><property><name>..<value>..``) or a Java
    ``.properties``-style ``key=value`` file (what Hive logs can be pasted into); ``-`` reads standard input."""
    import sys

    try:
        if path == "-":
            text = sys.stdin.read()
        else:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
    except OSError as e:
        raise ConfigurationError(f"cannot read job configuration {path!r}: {e.strerror or e}") from e
    except UnicodeDecodeError as e:
        raise ConfigurationError(f"job configuration {path!r} is not UTF-8 text: {e}") from e
    return parse_hadoop_xml(text, path) if text.lstrip().startswith("<") else parse_properties(text)


def parse_hadoop_xml(text: str, source: str = "job.xml") -> dict[str, str]:
    """``<configuration>``'s ``<property>`` entries; a later entry for the same name wins, as in Hadoop."""
    import xml.etree.ElementTree as ElementTree

    try:
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError as e:
        raise ConfigurationError(f"{source} is not a Hadoop configuration XML file: {e}") from e
    if root.tag != "configuration":
        raise ConfigurationError(f"{source}: the root element is <{root.tag}>, not <configuration>")
    props: dict[str, str] = {}
    for prop in root.iter("property"):
        name = prop.findtext("name")
        if name is None or not name.strip():
            raise ConfigurationError(f"{source}: a <property> has no <name>")
        props[name.strip()] = prop.findtext("value") or ""
    return props


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def parse_properties(text: str) -> dict[str, str]:
    """Java ``.properties`` lines: ``key=value``, ``key: value`` or ``key value``; ``#``/``!`` comments,
    backslash line continuations and escapes (``\\t``, ``\\uXXXX``, ``\\=``...)."""
    props: dict[str, str] = {}
    logical: list[str] = []
    for raw in text.splitlines():
        line = raw.lstrip() if logical else raw.strip()
        if not logical and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2:  # an odd number of backslashes continues the line
            logical.append(line[:-1])
            continue
        logical.append(line)
        key, value = _split_property("".join(logical))
        props[key] = value
        logical = []
    if logical:
        key, value = _split_property("".join(logical))
        props[key] = value
    return props


def _split_property(line: str) -> tuple[str, str]:
    key: list[str] = []
    i = 0
    while i < len(line) and line[i] not in "=: \t":
        if line[i] == "\\" and i + 1 < len(line):
            i += 1
        key.append(line[i])
        i += 1
    while i < len(line) and line[i] in " \t":
        i += 1
    if i < len(line) and line[i] in "=:":
        i += 1
        while i < len(line) and line[i] in " \t":
            i += 1
    return _unescape("".join(key)), _unescape(line[i:])


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            n = text[i + 1]
            if n == "u" and i + 6 <= len(text):
                try:
                    out.append(chr(int(text[i + 2:i + 6], 16)))
                    i += 6
                    continue
                except ValueError:
                    pass
            out.append(_ESCAPES.get(n, n))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)
