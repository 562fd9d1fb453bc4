"""The oracle's ``L`` answer -> the generated table of one Hive release (``storage_handler/decode/kryo/layouts/``).

One module per release, each a set of plain literal tables (see :mod:`storage_handler.decode.kryo.layouts` for
what they mean). The module's docstring lists how its table differs from the other releases' tables, computed when
it is generated, so a reader sees what changes between releases without running anything.
"""

from __future__ import annotations

import importlib
import json
import textwrap
from pathlib import Path
from typing import Any

LAYOUTS_PACKAGE = Path(__file__).parents[2] / "storage_handler" / "decode" / "kryo" / "layouts"
TABLES = ("HIVE_REGISTERED", "PLAIN_REGISTERED", "HIVE_SERIALIZERS", "PLAIN_SERIALIZERS", "FIELDS", "ENUMS", "ARRAYS")
#: Registered by Hive's SerializationUtilities for query plans (ids 12 and 14-31); never part of a filter.
_PLAN_IDS = frozenset(range(12, 32)) - {13}
#: Never written in a filter: a NULL constant is Kryo's null marker, not a Void object.
_NEVER = frozenset({"java.lang.Void"})
#: Why a class's layout differs between releases, for the generated docstrings.
_WHY = {
    "org.apache.hadoop.io.Text": (
        "Hadoop's class (``hadoop-client-api``), not Hive's: Hadoop 3.5.0 (the pyspark 4.3 wheel, with Hive 2.3.10) "
        "adds a ``textLength`` field that Hadoop 3.3.4 (the pyspark 3.5 wheel, with Hive 2.3.9) does not have. "
        "Filters hold a Text where an initialized UDF keeps one: the constant string ObjectInspectors of BETWEEN "
        "over string/varchar/char, and trim's result. So what decides this layout is the Hadoop version the "
        "writing Hive runs with"
    ),
}


def module_path(release: str) -> Path:
    return LAYOUTS_PACKAGE / f"hive_{release.replace('.', '_')}.py"


def collect_layouts(layouts: list[dict[str, Any]]) -> dict[str, dict[Any, Any]]:
    """The oracle's ``L`` answer as the tables of a release module."""
    from storage_handler.decode.kryo.graph import SERIALIZER_READERS

    tables: dict[str, dict[Any, Any]] = {name: {} for name in TABLES}
    for item in layouts:
        name, flavor, ident = item["class"], item["kryo"], item["id"]
        prefix = "HIVE" if flavor == "hive" else "PLAIN"
        if ident >= 0:
            tables[f"{prefix}_REGISTERED"][ident] = name
        if (flavor == "hive" and ident in _PLAN_IDS) or name in _NEVER:
            continue
        serializer = item["serializer"].rsplit(".", 1)[-1]
        if serializer not in SERIALIZER_READERS:
            raise AssertionError(f"{name}: serializer {item['serializer']} has no reader in the Python decoder")
        tables[f"{prefix}_SERIALIZERS"][name] = serializer
        if "enum" in item:
            entry, table = tuple(item["enum"]), "ENUMS"
        elif "elementFinal" in item and serializer == "DefaultArraySerializers$ObjectArraySerializer":
            entry, table = item["elementFinal"], "ARRAYS"
        elif serializer == "FieldSerializer":
            entry, table = tuple((f, k) for f, k in item["fields"]), "FIELDS"
        else:
            continue
        assert tables[table].setdefault(name, entry) == entry, name
    return tables


def tables_of_module(release: str) -> dict[str, dict[Any, Any]] | None:
    """The tables of ``release``'s generated module as it is now (None when there is none)."""
    if not module_path(release).exists():
        return None
    module = importlib.import_module(f"storage_handler.decode.kryo.layouts.hive_{release.replace('.', '_')}")
    return {name: dict(getattr(module, name)) for name in TABLES}


def differences(release: str, tables: dict[str, dict[Any, Any]], others: dict[str, dict[str, dict[Any, Any]]]
                ) -> list[str]:
    """One docstring line per table entry that differs between ``release`` and each other release."""
    lines = []
    for other, theirs in sorted(others.items()):
        if other == release:
            continue
        found = []
        for table in TABLES:
            ours, their = tables[table], theirs[table]
            for key in sorted(set(ours) | set(their), key=str):
                if ours.get(key) != their.get(key):
                    found.append(f"  ``{table}[{key!r}]``: here {_short(ours.get(key))}, in Hive {other} "
                                 f"{_short(their.get(key))}.")
                    if key in _WHY:
                        found += textwrap.wrap(f"Why: {_WHY[key]}.", 110, initial_indent="  ",
                                               subsequent_indent="  ")
        count = sum(1 for line in found if line.startswith("  ``"))
        lines.append(f"* against Hive {other}: {count or 'no'} difference{'' if count == 1 else 's'}")
        lines += found
    return lines


def _short(entry: Any) -> str:
    if entry is None:
        return "absent"
    if isinstance(entry, tuple) and entry and isinstance(entry[0], tuple):
        return "(" + ", ".join(name for name, _ in entry) + ")"
    return repr(entry)


_HEADER = '''"""Kryo layouts of the classes Hive {release} writes in a pushed filter, as its jars define them.

Jars: {jars}.

GENERATED -- do not edit. ``python -m tests.decode.kryo_oracle {release}`` rewrites this file from what Kryo reports
for each class when ``tests/decode/java/HiveKryoOracle.java`` (request ``L``) runs on these jars, after serializing a
broad set of filters with Hive's ``SerializationUtilities`` and Spark's plain ``new Kryo()``;
``tests/decode/test_kryo_layouts.py`` fails whenever the jars say something else. The tables are explained in
:mod:`storage_handler.decode.kryo.layouts`.

What differs from the other supported releases (computed from their tables when this one was generated):

{differences}

Compared by hand as well (``javap -c -p``): hive-exec's ``SerializationUtilities`` -- its class registrations
(ids 10-31) and its ``java.sql.Date``, ``java.sql.Timestamp`` and ``Arrays.asList`` serializers -- is the same
bytecode in hive-exec 2.3.9 and 2.3.10, and Kryo 4.0.2 and 4.0.3 write these classes alike.
"""

from __future__ import annotations
'''


def render(release: str, jars: tuple[str, ...], tables: dict[str, dict[Any, Any]],
           others: dict[str, dict[str, dict[Any, Any]]]) -> str:
    """The text of ``release``'s module."""
    q = json.dumps
    lines = [_HEADER.format(release=release, jars=", ".join(jars),
                            differences="\n".join(differences(release, tables, others)))]
    lines.append(f"VERSION = {q(release)}")
    lines.append("JARS: tuple[str, ...] = (" + "".join(f"{q(j)}, " for j in jars).rstrip(" ") + ")")
    for title, who in (("HIVE_REGISTERED", "Hive's SerializationUtilities"),
                       ("PLAIN_REGISTERED", "a plain new Kryo() (Spark's toKryo)")):
        lines.append(f"#: Class ids registered by {who}.")
        lines.append(f"{title}: dict[int, str] = {{")
        lines += [f"    {i}: {q(name)}," for i, name in sorted(tables[title].items())]
        lines.append("}")
    for title, who in (("HIVE_SERIALIZERS", "Hive's Kryo"), ("PLAIN_SERIALIZERS", "a plain new Kryo()")):
        lines.append(f"#: The serializer {who} uses for each class a filter holds (Kryo's or Hive's class name).")
        lines.append(f"{title}: dict[str, str] = {{")
        lines += [f"    {q(name)}: {q(s)}," for name, s in sorted(tables[title].items())]
        lines.append("}")
    lines.append("#: FieldSerializer classes: (field name, kind) in the order Kryo writes them.")
    lines.append("FIELDS: dict[str, tuple[tuple[str, str], ...]] = {")
    for name, fields in sorted(tables["FIELDS"].items()):
        pairs = "".join(f"({q(f)}, {q(k)}), " for f, k in fields).rstrip(" ")
        lines.append(f"    {q(name)}: ({pairs}),")
    lines.append("}")
    lines.append("#: Enum classes: constant names by ordinal.")
    lines.append("ENUMS: dict[str, tuple[str, ...]] = {")
    lines += [f"    {q(name)}: ({''.join(f'{q(c)}, ' for c in constants).rstrip(' ')}),"
              for name, constants in sorted(tables["ENUMS"].items())]
    lines.append("}")
    lines.append("#: Object arrays: whether elements are written without their class (element class final).")
    lines.append("ARRAYS: dict[str, bool] = {")
    lines += [f"    {q(name)}: {final!r}," for name, final in sorted(tables["ARRAYS"].items())]
    lines.append("}")
    return "\n".join(lines) + "\n"


def write_modules(generated: dict[str, tuple[tuple[str, ...], list[dict[str, Any]]]],
                  supported: tuple[str, ...]) -> list[Path]:
    """Write the module of each release in ``generated`` ({release: (jars, L answer)}); the other supported
    releases' tables are read from their modules for the docstrings' differences."""
    fresh = {release: collect_layouts(layouts) for release, (_, layouts) in generated.items()}
    others = {release: fresh.get(release) or tables_of_module(release) for release in supported}
    known = {release: tables for release, tables in others.items() if tables is not None}
    written = []
    for release, (jars, _) in generated.items():
        path = module_path(release)
        path.write_text(render(release, jars, fresh[release], known))
        written.append(path)
    return written
