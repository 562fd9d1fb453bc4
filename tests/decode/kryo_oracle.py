"""The Java side of the Kryo tests: ``java/HiveKryoOracle.java`` compiled once against the pyspark wheel's jars and
run as ONE long-lived JVM that answers one request line with one response line (see the Java file's header)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

SOURCE = Path(__file__).parent / "java" / "HiveKryoOracle.java"
JAVA_FLAGS = [
    "--add-opens", "java.base/java.lang=ALL-UNNAMED", "--add-opens", "java.base/java.util=ALL-UNNAMED",
    "--add-opens", "java.base/java.net=ALL-UNNAMED", "--add-opens", "java.sql/java.sql=ALL-UNNAMED",
    "-Duser.timezone=UTC", "-Dlog4j2.level=OFF", "-XX:TieredStopAtLevel=1",
]


def jars_dir() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


class Oracle:
    """A running ``HiveKryoOracle``; close() stops it (by its own PID, through the pipe)."""

    def __init__(self, classes: Path) -> None:
        self.process = subprocess.Popen(
            ["java", *JAVA_FLAGS, "-cp", f"{classes}:{jars_dir()}/*", "HiveKryoOracle"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, encoding="utf-8",
            bufsize=1,
        )

    def ask(self, line: str) -> str:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline()
        if not answer:
            raise RuntimeError(f"the Hive oracle died answering {line[:200]!r}")
        return answer.rstrip("\n")

    def expression(self, tree: dict[str, Any]) -> list[str]:
        """[base64, toString, toOldString, fixed toString, fixed toOldString] or ["ERROR ..."]."""
        return self.ask("E " + json.dumps(tree)).split("\t")[1:] or [self.ask("E " + json.dumps(tree))]

    def sarg_pushdown(self, tree: dict[str, Any]) -> list[str]:
        return self.ask("S " + json.dumps(tree)).split("\t")[1:]

    def time_zone(self, zone: str) -> None:
        assert self.ask(f"Z {zone}") == "OK"

    def layouts(self) -> list[dict[str, Any]]:
        out = []
        while (line := self.ask("L") if not out else self._next()) != "END":
            out.append(json.loads(line))
        return out

    def _next(self) -> str:
        assert self.process.stdout is not None
        return self.process.stdout.readline().rstrip("\n")

    def close(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def compile_oracle(out: Path) -> Path | None:
    """Compile the oracle into ``out``; None when no JDK is available."""
    if shutil.which("javac") is None or shutil.which("java") is None:
        return None
    jars = jars_dir()
    if not (jars / "hive-exec-2.3.10-core.jar").exists():
        raise RuntimeError("pyspark's jars/hive-exec-2.3.10-core.jar is missing: reinstall the pinned pyspark wheel")
    sources = [str(SOURCE), *map(str, sorted((SOURCE.parent / "stub").glob("*.java")))]
    subprocess.run(["javac", "-nowarn", "-cp", f"{jars}/*", "-d", str(out), *sources], check=True,
                   capture_output=True, timeout=180)
    return out


# ---------------------------------------------------------------------------------------------------------- layouts
LAYOUTS_MODULE = Path(__file__).parents[2] / "storage_handler" / "decode" / "kryo" / "layouts.py"
#: Classes the Python reader decodes with its own code (Kryo's built-in serializers and Hive's custom ones).
BUILTIN = frozenset({
    "java.lang.Boolean", "java.lang.Byte", "java.lang.Character", "java.lang.Double", "java.lang.Float",
    "java.lang.Integer", "java.lang.Long", "java.lang.Short", "java.lang.String", "java.lang.Void", "java.sql.Date",
    "java.sql.Timestamp", "java.util.ArrayList", "java.util.Arrays$ArrayList", "[B", "[J",
})
_HEADER = '''"""Kryo layouts of the classes Hive 2.3.10 writes in a pushed filter, as the pyspark wheel's jars define them.

GENERATED -- do not edit. ``python -m tests.decode.kryo_oracle`` rewrites this file from what Kryo's own
``FieldSerializer`` reports for each class (``tests/decode/java/HiveKryoOracle.java``, request ``L``), after
serializing a broad set of filters with Hive's ``SerializationUtilities`` and Spark's plain ``new Kryo()``;
``tests/decode/test_kryo_layouts.py`` fails whenever the jars say something else.

Kryo's bytes carry no field names or lengths: a reader must know, per class, which fields are written in which
order and how. ``FIELDS`` lists them in Kryo's order (sorted by name, transient and static fields left out); each
field's kind is a primitive type name, ``""`` for a field written with its class first (declared type not final),
or the final class whose serializer writes it without one.
"""

from __future__ import annotations
'''


def collect_layouts(layouts: list[dict[str, Any]]) -> dict[str, dict[Any, Any]]:
    """The oracle's ``L`` answer as the four tables of ``layouts.py`` (see there)."""
    tables: dict[str, dict[Any, Any]] = {
        "HIVE_REGISTERED": {}, "KRYO_REGISTERED": {}, "FIELDS": {}, "ENUMS": {}, "ARRAYS": {}}
    for item in layouts:
        name, flavor, ident = item["class"], item["kryo"], item["id"]
        if ident >= 0:
            tables["HIVE_REGISTERED" if flavor == "hive" else "KRYO_REGISTERED"][ident] = name
        if flavor == "hive" and ident >= 12 and ident != 13:
            continue  # registered by Hive for query plans; never part of a filter
        if name in BUILTIN:
            continue
        if "enum" in item:
            entry, table = tuple(item["enum"]), "ENUMS"
        elif "elementFinal" in item:
            entry, table = item["elementFinal"], "ARRAYS"
        elif item["serializer"].endswith(".FieldSerializer"):
            entry, table = tuple((f, k) for f, k in item["fields"]), "FIELDS"
        else:
            raise AssertionError(f"{name}: serializer {item['serializer']} has no reader in the Python decoder")
        assert tables[table].setdefault(name, entry) == entry, name
    return tables


def render_layouts(layouts: list[dict[str, Any]]) -> str:
    """The text of ``storage_handler/decode/kryo/layouts.py`` for the oracle's ``L`` answer."""
    q = json.dumps
    tables = collect_layouts(layouts)
    lines = [_HEADER]
    for title, who in (("HIVE_REGISTERED", "Hive's SerializationUtilities"),
                       ("KRYO_REGISTERED", "a plain new Kryo() (Spark's toKryo)")):
        lines.append(f"#: Class ids registered by {who}.")
        lines.append(f"{title}: dict[int, str] = {{")
        lines += [f"    {i}: {q(name)}," for i, name in sorted(tables[title].items())]
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


def main() -> None:
    """Regenerate ``layouts.py`` from the jars: ``python -m tests.decode.kryo_oracle``."""
    import tempfile

    from tests.decode.kryo_trees import inventory_trees

    with tempfile.TemporaryDirectory() as tmp:
        classes = compile_oracle(Path(tmp))
        if classes is None:
            raise SystemExit("javac/java not on PATH")
        oracle = Oracle(classes)
        try:
            for tree in inventory_trees():
                oracle.ask("E " + json.dumps(tree))
                oracle.ask("S " + json.dumps(tree))
            LAYOUTS_MODULE.write_text(render_layouts(oracle.layouts()))
        finally:
            oracle.close()
    print(f"wrote {LAYOUTS_MODULE}")


if __name__ == "__main__":
    main()
