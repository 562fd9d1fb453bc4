"""Filter trees for the Kryo tests, in the oracle's JSON form (see ``java/HiveKryoOracle.java``).

``inventory_trees()`` is a systematic set: every pushed operator over every primitive type, constants on either
side, NULL constants, column-vs-column comparisons of every pair of types, and the functions filters commonly
hold. Serializing it makes Hive's Kryo meet every class a filter can contain; the layouts of exactly those classes
are what each release's table in ``storage_handler/decode/kryo/layouts/`` holds.
"""

from __future__ import annotations

import datetime as _dt
import math
from decimal import Context, Decimal
from typing import Any

from hypothesis import strategies as st

Tree = dict[str, Any]

#: One constant (Java text form) per column type.
SAMPLES = {
    "tinyint": "5", "smallint": "5", "int": "5", "bigint": "5", "float": "1.5", "double": "1.5", "string": "ab",
    "varchar(5)": "ab", "char(5)": "ab", "date": "2020-01-01", "timestamp": "2020-01-01 00:00:00.123456789",
    "decimal(10,2)": "1.5", "decimal(38,18)": "1.5", "boolean": "true",
}
OPERATORS = ("=", "<>", "<=>", "<", "<=", ">", ">=")
_EXACT = Context(prec=100)


def col(hive_type: str, name: str = "x") -> Tree:
    return {"col": name, "type": hive_type}


def const(hive_type: str, text: str | None = None) -> Tree:
    return {"const": SAMPLES[hive_type] if text is None else text, "type": hive_type}


def null(hive_type: str) -> Tree:
    return {"const": None, "type": hive_type}


def fn(name: str, *args: Tree) -> Tree:
    return {"fn": name, "args": list(args)}


def inventory_trees() -> list[Tree]:
    trees: list[Tree] = []
    for t in SAMPLES:
        for op in OPERATORS:
            trees += [fn(op, col(t), const(t)), fn(op, const(t), col(t)), fn(op, col(t), col(t, "y")),
                      fn(op, col(t), null(t))]
        trees += [fn("in", col(t), const(t), null(t)),
                  fn("between", const("boolean", "false"), col(t), const(t), const(t)),
                  fn("between", const("boolean", "true"), col(t), const(t), null(t)),
                  fn("isnull", col(t)), fn("isnotnull", col(t))]
        for u in SAMPLES:
            trees += [fn("=", col(t), col(u, "y")), fn("<", col(t), const(u))]
    b = "boolean"
    trees.append(fn("and", col(b), fn("or", col(b, "y"), fn("not", col(b, "z")))))
    s, i = "string", "int"
    struct, array, mapping = "struct<a:int,b:string>", "array<int>", "map<string,int>"
    trees += [fn("isnull", col(struct, "st")), fn("isnotnull", col(array, "arr")), fn("isnull", col(mapping, "m")),
              fn("=", {"field": "a", "of": col(struct, "st")}, const(i)),
              fn("=", fn("index", col(array, "arr"), const(i)), const(i)),
              fn("=", fn("index", col(mapping, "m"), const(s)), const(i)),
              fn(">", fn("size", col(array, "arr")), const(i))]
    trees += [fn("=", fn(f, col(s)), const(s)) for f in ("upper", "lower", "trim")]
    trees += [fn("=", fn(f, col(i), const(i)), const(i)) for f in ("+", "-", "*", "%", "coalesce", "nvl")]
    trees += [
        fn("=", fn("-", col("bigint"), const("bigint")), const("bigint")),
        fn("=", fn("*", col("double"), const("double")), const("double")),
        fn("=", fn("/", col(i), const(i)), const("double")), fn("=", fn("negative", col(i)), const(i)),
        fn("=", fn("abs", col(i)), const(i)), fn("=", fn("concat", col(s), const(s)), const(s)),
        fn("=", fn("double", col(i)), const("double")), fn("=", fn("string", col(i)), const(s)),
        fn("=", fn("bigint", col(s)), const("bigint")), fn("=", fn("int", col(s)), const(i)),
        fn("=", fn("date", col(s)), const("date")), fn("=", fn("timestamp", col(s)), const("timestamp")),
        fn("like", col(s), const(s)), fn("rlike", col(s), const(s)),
        fn("=", fn("substr", col(s), const(i), const(i)), const(s)), fn("=", fn("length", col(s)), const(i)),
        fn("=", fn("year", col("date")), const(i)), fn("=", fn("to_date", col("timestamp")), const(s)),
        fn("=", fn("if", col(b), col(i), const(i)), const(i)), fn("=", fn("when", col(b), col(i), const(i)), const(i)),
    ]
    return trees


def is_pushable_shape(tree: Tree) -> bool:
    """Trees a SearchArgument can be built from directly (no function applied to a column)."""
    return all("fn" not in arg or arg["fn"] in OPERATORS for arg in tree.get("args", []))


# ------------------------------------------------------------------------------------------- random trees
# Planner-shaped trees: what Hive 2.3's type checker hands ConvertAstToSearchArg. Constants have the column's type,
# except the lossless mixes the planner leaves in IN lists and comparisons (an int in a bigint, double or decimal
# list; a 'yyyy-mm-dd' string against a date). Where the constant's type differs in a lossy way (1.5 against an
# int column) Hive truncates and prunes wrongly; we keep YES_NO_NULL on purpose (test_kryo_conformance checks that
# separately), and char columns are never pushed (pad semantics).
COLUMNS = {
    "i": "int", "big": "bigint", "t": "tinyint", "sm": "smallint", "s": "string", "v": "varchar(8)", "f": "double",
    "fl": "float", "dec": "decimal(10,2)", "wide": "decimal(38,10)", "d": "date", "ts": "timestamp", "b": "boolean",
}
_RANGES = {"int": 31, "bigint": 63, "tinyint": 7, "smallint": 15}
_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r\t\x85\u2028\u2029"),
                max_size=70)


def java_double(value: float) -> str:
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return repr(value)


def _decimal_text(draw: st.DrawFn, precision: int, scale: int) -> str:
    limit = 10**precision - 1
    unscaled = draw(st.one_of(st.integers(-999, 999), st.integers(-limit, limit)))
    return format(Decimal(unscaled).scaleb(-scale, _EXACT), "f")  # the default context would round to 28 digits


@st.composite
def value_text(draw: st.DrawFn, hive_type: str) -> str:
    """A Java text form of a value of ``hive_type`` (Hive's own parsers read it in the oracle)."""
    if hive_type in _RANGES:
        bits = _RANGES[hive_type]
        return str(draw(st.one_of(st.integers(-100, 100), st.integers(-(2**bits), 2**bits - 1))))
    if hive_type == "double":
        return java_double(draw(st.floats(allow_nan=False)))
    if hive_type == "float":
        return java_double(draw(st.floats(allow_nan=False, width=32)))
    if hive_type.startswith("decimal"):
        precision, scale = (int(x) for x in hive_type[8:-1].split(","))
        return _decimal_text(draw, precision, scale)
    if hive_type in ("string", "varchar(8)"):
        return draw(_TEXT if hive_type == "string" else st.text(st.characters(max_codepoint=0x7F,
                                                                           blacklist_categories=("Cc",)), max_size=8))
    if hive_type == "date":
        day = draw(st.one_of(st.dates(_dt.date(1, 1, 1), _dt.date(9999, 12, 31)),
                             st.dates(_dt.date(1582, 10, 1), _dt.date(1582, 10, 20))))  # Java's calendar switch
        return f"{day.year:04d}-{day.month:02d}-{day.day:02d}"
    if hive_type == "timestamp":
        stamp = draw(st.datetimes(_dt.datetime(1, 1, 1), _dt.datetime(9999, 12, 31, 23, 59, 59)))
        nanos = draw(st.sampled_from([0, stamp.microsecond * 1000, stamp.microsecond // 1000 * 1_000_000,
                                      draw(st.integers(0, 999_999_999))]))
        fraction = f".{nanos:09d}".rstrip("0") if nanos else ""
        return f"{stamp.year:04d}-{stamp:%m-%d %H:%M:%S}{fraction}"
    return draw(st.sampled_from(["true", "false"]))


@st.composite
def constant_of(draw: st.DrawFn, column_type: str, *, nulls: bool = True) -> Tree:
    """A constant for a column of ``column_type``: usually of that type, sometimes a lossless planner mix."""
    if nulls and draw(st.integers(0, 14)) == 0:
        return null(column_type)
    mix = draw(st.integers(0, 5)) == 0
    if mix and column_type in ("bigint", "double", "decimal(38,10)"):
        return const("int", draw(value_text("int")))
    if mix and column_type == "date":
        return const("string", draw(value_text("date")))
    return const(column_type, draw(value_text(column_type)))


@st.composite
def leaf_tree(draw: st.DrawFn, columns: dict[str, str] = COLUMNS) -> Tree:
    name = draw(st.sampled_from(sorted(columns)))
    hive_type = columns[name]
    column = col(hive_type, name)
    kind = draw(st.sampled_from(["cmp", "cmp", "flip", "null", "notnull", "in", "between", "colcol", "func",
                                 "bare", "consts", "complex"]))
    if kind in ("cmp", "flip"):
        operator = draw(st.sampled_from(OPERATORS))
        value = draw(constant_of(hive_type))
        return fn(operator, column, value) if kind == "cmp" else fn(operator, value, column)
    if kind in ("null", "notnull"):
        return fn("isnull" if kind == "null" else "isnotnull", column)
    if kind == "in":
        return fn("in", column, *draw(st.lists(constant_of(hive_type), min_size=1, max_size=4)))
    if kind == "between":
        invert = const("boolean", draw(st.sampled_from(["true", "false"])))
        return fn("between", invert, column, draw(constant_of(hive_type)), draw(constant_of(hive_type)))
    if kind == "colcol":
        other = draw(st.sampled_from([n for n, t in columns.items() if t == hive_type]))
        return fn(draw(st.sampled_from(OPERATORS)), column, col(hive_type, other))
    if kind == "func":
        return fn("=", fn("upper", col("string", "s")), const("string", draw(value_text("string"))))
    if kind == "complex":  # complex columns are never pushed; they must still decode
        struct = col("struct<a:int,b:string>", "st")
        return draw(st.sampled_from([
            fn("isnull", struct), fn("=", {"field": "a", "of": struct}, const("int", "1")),
            fn(">", fn("size", col("array<int>", "arr")), const("int", "0")),
            fn("=", fn("index", col("map<string,int>", "m"), const("string", "k")), const("int", "2"))]))
    if kind == "consts":
        return fn("=", const("int", "1"), const("int", draw(st.sampled_from(["1", "2"]))))
    return col("boolean", "b")


def filter_trees(max_leaves: int = 24) -> st.SearchStrategy[Tree]:
    """Random filters whose root is a function call (serializeExpression takes an ExprNodeGenericFuncDesc)."""
    def extend(children: st.SearchStrategy[Tree]) -> st.SearchStrategy[Tree]:
        return st.one_of(
            st.builds(lambda kid: fn("not", kid), children),
            st.lists(children, min_size=2, max_size=3).map(lambda kids: fn("and", *kids)),
            st.lists(children, min_size=2, max_size=3).map(lambda kids: fn("or", *kids)),
        )

    trees = st.recursive(leaf_tree(), extend, max_leaves=max_leaves)
    return trees.map(lambda tree: tree if "fn" in tree else fn("not", fn("not", tree)))


def has_inverted_between(tree: Tree) -> bool:
    if tree.get("fn") == "between" and tree["args"][0].get("const") == "true":
        return True
    return any(has_inverted_between(arg) for arg in tree.get("args", []))
