"""Test helpers: tree specs, replaying them on our builder, and the client of the Java oracle (Hive's real jar).

A *spec* is the list of builder calls under the implicit root AND, as nested tuples with Python literals::

    ("and", child, ...)  ("or", child, ...)  ("not", child)  ("lit", TruthValue.YES)
    ("leaf", LeafOperator.EQUALS, LeafType.LONG, "x", 1)      # IN: any number of literals; BETWEEN: two

The same spec is replayed on our ``Builder`` (:func:`build`) and sent to ``HiveSargOracle.java``
(:func:`to_java`), whose protocol is documented in that file.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os
import shutil
import struct
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from storage_handler.sarg import LeafOperator, LeafType, SearchArgument, SearchArgumentFactory, TruthValue
from storage_handler.sarg.builder import Builder

Spec = Sequence[Any]

JAVA_SOURCE = Path(__file__).parent / "java" / "HiveSargOracle.java"


def wheel_jars() -> Path | None:
    """The pyspark wheel's jar folder, whose hive-storage-api-2.8.1.jar is the reference implementation."""
    try:
        import pyspark
    except ImportError:
        return None
    jars = Path(pyspark.__file__).parent / "jars"
    return jars if (jars / "hive-storage-api-2.8.1.jar").exists() else None


def replay(builder: Builder, node: Any) -> None:
    """Apply one spec node to our builder, exactly as the Java oracle applies it to Hive's."""
    kind = node[0]
    if kind in ("and", "or", "not"):
        {"and": builder.start_and, "or": builder.start_or, "not": builder.start_not}[kind]()
        for child in node[1:]:
            replay(builder, child)
        builder.end()
    elif kind == "lit":
        builder.literal(node[1])
    elif kind == "leaf":
        _, op, leaf_type, column, *lits = node
        if op is LeafOperator.IN:
            builder.in_(column, leaf_type, *lits)
        elif op is LeafOperator.BETWEEN:
            builder.between(column, leaf_type, lits[0], lits[1])
        elif op is LeafOperator.IS_NULL:
            builder.is_null(column, leaf_type)
        else:
            method = {
                LeafOperator.EQUALS: builder.equals,
                LeafOperator.NULL_SAFE_EQUALS: builder.null_safe_equals,
                LeafOperator.LESS_THAN: builder.less_than,
                LeafOperator.LESS_THAN_EQUALS: builder.less_than_equals,
            }[op]
            method(column, leaf_type, lits[0])
    else:
        raise ValueError(f"bad spec node {node!r}")


def build(spec: Spec) -> SearchArgument:
    builder = SearchArgumentFactory.new_builder()
    for node in spec:
        replay(builder, node)
    return builder.build()


def java_literal(leaf_type: LeafType, value: Any) -> str | None:
    """Encode a Python literal as the oracle's typed text (see HiveSargOracle.java)."""
    if value is None:
        return None
    if leaf_type is LeafType.FLOAT:
        return f"{struct.unpack('>Q', struct.pack('>d', value))[0]:016x}"
    if leaf_type is LeafType.BOOLEAN:
        return "true" if value else "false"
    if leaf_type is LeafType.DATE:
        return f"{value.year}-{value.month}-{value.day}"
    if leaf_type is LeafType.TIMESTAMP:
        return (
            f"{value.year}-{value.month}-{value.day} {value.hour}:{value.minute}:{value.second}."
            f"{value.microsecond * 1000}"
        )
    if leaf_type is LeafType.DECIMAL:
        assert isinstance(value, decimal.Decimal)
    return str(value)


def to_java(node: Any) -> list[Any]:
    kind = node[0]
    if kind in ("and", "or", "not"):
        return [kind, *(to_java(child) for child in node[1:])]
    if kind == "lit":
        return ["lit", node[1].value]
    _, op, leaf_type, column, *lits = node
    return ["leaf", op.value, leaf_type.value, column, *(java_literal(leaf_type, x) for x in lits)]


class HiveOracle:
    """A running ``HiveSargOracle`` JVM; one request per line, one response per line."""

    def __init__(self, workdir: Path) -> None:
        jars = wheel_jars()
        javac, java = shutil.which("javac"), shutil.which("java")
        if jars is None or javac is None or java is None:
            raise RuntimeError("needs javac, java and the pyspark wheel's jars")
        classpath = f"{jars}{os.sep}*"
        classes = workdir / "classes"
        classes.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [javac, "-nowarn", "-d", str(classes), "-cp", classpath, str(JAVA_SOURCE)],
            check=True,
            capture_output=True,
            timeout=120,
        )
        self.stderr_path = workdir / "oracle-stderr.log"
        self._stderr = open(self.stderr_path, "wb")  # noqa: SIM115 - lives as long as the process
        self.process = subprocess.Popen(
            [
                java,
                "-Xss16m",
                "-Duser.timezone=UTC",
                "-cp",
                f"{classes}{os.pathsep}{classpath}",
                "HiveSargOracle",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
        )

    def request(self, payload: dict[str, Any]) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(payload, ensure_ascii=True).encode("ascii") + b"\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"oracle died; see {self.stderr_path}: {self.stderr_path.read_text()[-2000:]}")
        return json.loads(line)

    def sargs(self, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Build each ``{"spec": [...], "evals": [[TruthValue name...]...]}`` with Hive's builder."""
        return self.request({"cmd": "sarg", "items": items})["results"]

    def truth(self) -> dict[str, Any]:
        return self.request({"cmd": "truth"})

    def doubles(self, values: Sequence[float]) -> list[str]:
        bits = [f"{struct.unpack('>Q', struct.pack('>d', v))[0]:016x}" for v in values]
        return self.request({"cmd": "double", "bits": bits})["results"]

    def close(self) -> None:
        """Ask the JVM to quit; kill this very process (by its Popen) if it does not."""
        try:
            if self.process.poll() is None and self.process.stdin is not None:
                self.process.stdin.write(b'{"cmd":"quit"}\n')
                self.process.stdin.close()
                self.process.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait(timeout=10)
        finally:
            self._stderr.close()


def python_result(spec: Spec, evals: Sequence[Sequence[TruthValue]] = ()) -> dict[str, Any]:
    """What our implementation says for a spec, in the oracle's response shape."""
    from storage_handler.errors import FilterError
    from storage_handler.sarg.printing import tree_to_string

    try:
        sarg = build(spec)
    except FilterError as exc:
        return {"error": str(exc)}
    return {
        "string": sarg.to_string(),
        "old": sarg.to_old_string(),
        "compact": tree_to_string(sarg.compact_expression, sarg.compact_leaves),
        "leaves": len(sarg.leaves),
        "evals": [sarg.evaluate(values).value for values in evals],
    }


def assert_same_as_hive(
    oracle: HiveOracle, specs: Sequence[Spec], evals: Sequence[Sequence[Sequence[TruthValue]]]
) -> None:
    """Build every spec on both sides in one round trip; compare strings, leaf counts and evaluations."""
    items = [
        {
            "spec": [to_java(node) for node in spec],
            "evals": [[v.value for v in values] for values in spec_evals],
        }
        for spec, spec_evals in zip(specs, evals, strict=True)
    ]
    for spec, spec_evals, java in zip(specs, evals, oracle.sargs(items), strict=True):
        ours = python_result(spec, spec_evals)
        if "error" in java or "error" in ours:
            assert ("error" in java) == ("error" in ours), f"spec={spec!r}\nhive={java}\nours={ours}"
            continue
        assert ours == java, f"spec={spec!r}"


def date_range_sample() -> list[dt.date]:
    """Dates around the 1582 calendar switch and the ends of Python's range."""
    return [dt.date(1582, 10, d) for d in range(1, 21)] + [dt.date(1, 1, 1), dt.date(9999, 12, 31)]
