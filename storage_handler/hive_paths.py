"""Hive's rules for the paths of a table's files: partition folder names and hidden names.

Why one small module at the bottom: the index must describe exactly the files a Hive or Spark reader would read,
and partition values must be decoded exactly as Hive decodes them (``FileUtils.unescapePathName``), or pruning
would compare the wrong strings. The walk of a table (:mod:`storage_handler.stats.files.walk`), the table model
(:mod:`storage_handler.catalog`), registration and the Spark reader all apply the same rules from here.

Rules (Hive's and Spark's, checked against ``hive-common-2.3.10.jar``):

* Names starting with ``_`` or ``.`` are hidden (``_SUCCESS``, ``_hsh_index``, ``.part-0.crc``) at every level.
* A folder ``k=v`` gives the partition value ``v`` of key ``k``: both unescaped with Hive's rules, the key
  lower-cased (Hive lower-cases column names), ``__HIVE_DEFAULT_PARTITION__`` meaning NULL.
* ``escape_path_name`` escapes exactly Hive's set: U+0000-U+001F, ``" # % ' * / : = ? [ \\ ] ^ {`` and U+007F, as
  ``%XX`` with upper-case hex; everything else (unicode included) is kept. ``unescape_path_name`` mirrors Hive's
  decoder and its quirks: ``%XX`` becomes the single char U+00XX (no UTF-8 decoding), ``%+1`` decodes because Java's
  ``Integer.parseInt`` accepts a sign, and a ``%`` not followed by a valid code is kept.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

HIVE_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"

# Hive 2.3 FileUtils.charToEscape (non-Windows): verified by running the jar over U+0000..U+01FF.
_ESCAPED = frozenset([chr(c) for c in range(0x20)] + list("\"#%'*/:=?[\\]^{") + ["\x7f"])
_JAVA_HEX_INT = re.compile(r"[+-]?[0-9A-Fa-f]+")


def escape_path_name(text: str) -> str:
    """Hive's ``FileUtils.escapePathName`` for a non-empty string (no default-partition substitution)."""
    return "".join(f"%{ord(ch):02X}" if ch in _ESCAPED else ch for ch in text)


def escape_partition_value(value: str | None) -> str:
    """The folder-name form of a partition value: NULL and the empty string become the default partition."""
    if value is None or value == "":
        return HIVE_DEFAULT_PARTITION
    return escape_path_name(value)


def unescape_path_name(text: str) -> str:
    """Hive's ``FileUtils.unescapePathName``, quirks included (see the module docstring)."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "%" and i + 2 < n:  # Java: i + 2 < path.length()
            code = _java_parse_hex(text[i + 1 : i + 3])
            if code is not None and code >= 0:
                out.append(chr(code))
                i += 3
                continue
        out.append(ch)
        i += 1
    return "".join(out)


def unescape_partition_value(text: str) -> str | None:
    """Decode a partition folder value: ``__HIVE_DEFAULT_PARTITION__`` and the empty value (``k=``) are NULL, as
    Hive writes both as the default partition; anything else is Hive-unescaped."""
    if text in (HIVE_DEFAULT_PARTITION, ""):
        return None
    return unescape_path_name(text)


def partition_path(values: Sequence[tuple[str, str | None]]) -> str:
    """``[("dt", "2024-01-01"), ("c", None)]`` -> ``dt=2024-01-01/c=__HIVE_DEFAULT_PARTITION__`` (Hive's makePartName)."""
    return "/".join(f"{escape_path_name(k.lower())}={escape_partition_value(v)}" for k, v in values)


def _java_parse_hex(two: str) -> int | None:
    """``Integer.parseInt(two, 16)`` or None where Java would throw (Python's int() also allows spaces and ``_``)."""
    if not _JAVA_HEX_INT.fullmatch(two):
        return None
    return int(two, 16)


#: the suffix ``hadoop fs -put`` / ``-cp`` give a file while they copy it (renamed to its name when done)
COPYING_SUFFIX = "._COPYING_"


def is_hidden(name: str) -> bool:
    """Names no reader reads: those starting with ``_`` or ``.`` (markers, checksums, our ``_hsh_index``; Hive and
    Spark alike) and those ending in ``._COPYING_``. The last is Spark's rule (``HadoopFSUtils``), not Hive's: such a
    file is a copy in flight, partial until it is renamed, and then read again under its own name; Spark's plain
    read of the table skips it, so the handler's must too (its answers are compared with Spark's)."""
    return name.startswith(("_", ".")) or name.endswith(COPYING_SUFFIX)
