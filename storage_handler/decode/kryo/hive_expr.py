"""Hive's decoded ``ExprNodeDesc`` graph -> the project's expression model (:mod:`storage_handler.expr.nodes`).

``ExprNodeGenericFuncDesc`` becomes a :class:`~storage_handler.expr.nodes.Call` named like Hive's function registry
(the UDF class decides the name: ``GenericUDFOPEqual`` is ``=``, ``GenericUDFBridge`` carries its own name),
``ExprNodeColumnDesc`` a :class:`~storage_handler.expr.nodes.Column` and ``ExprNodeConstantDesc`` a
:class:`~storage_handler.expr.nodes.Constant`, both typed by their ``TypeInfo``; a struct field (``ExprNodeFieldDesc``)
is kept as HiveQL text (never pushed, as in Hive). The ObjectInspectors,
``BooleanWritable`` results and other fields an initialized UDF carries were read (they are in the bytes) and are
dropped here: ``ConvertAstToSearchArg`` looks at nothing but the UDF's class, the children and their types.

Everything is checked as it is converted -- node classes, child counts (by ``Call``), constant values against their
types -- so bytes that happen to parse as Kryo but are not a filter raise :class:`KryoFormatError` instead of
becoming a different filter.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from decimal import Decimal
from typing import Any

from storage_handler.decode.kryo.graph import JavaInstant, JavaObject, class_of
from storage_handler.decode.kryo.javatime import sql_date, sql_timestamp
from storage_handler.decode.kryo.stream import KryoFormatError
from storage_handler.errors import FilterError, SchemaError
from storage_handler.expr.nodes import BINARY_OPERATORS, OPAQUE, Call, Column, Constant, Expr, decimal_type_of
from storage_handler.expr.render import to_hiveql
from storage_handler.types import HiveType, parse_hive_type

_PLAN = "org.apache.hadoop.hive.ql.plan."
_UDF = "org.apache.hadoop.hive.ql.udf.generic."
_TYPEINFO = "org.apache.hadoop.hive.serde2.typeinfo."
_TYPE = "org.apache.hadoop.hive.common.type."
_MODEL_NAME = re.compile(r"[a-z_][a-z0-9_]*\Z")
#: String fields naming a UDF or its operator (``udfName`` of trim and GenericUDFBridge, ``opName`` of comparisons).
_NAME_FIELDS = ("udfName", "udfClassName", "opName", "opDisplayName")

#: UDF class (without package) -> the function name in Hive's registry (operators by their symbol).
UDF_NAMES = {
    "GenericUDFOPEqual": "=", "GenericUDFOPNotEqual": "<>", "GenericUDFOPEqualNS": "<=>", "GenericUDFOPLessThan": "<",
    "GenericUDFOPEqualOrLessThan": "<=", "GenericUDFOPGreaterThan": ">", "GenericUDFOPEqualOrGreaterThan": ">=",
    "GenericUDFOPAnd": "and", "GenericUDFOPOr": "or", "GenericUDFOPNot": "not", "GenericUDFOPNull": "isnull",
    "GenericUDFOPNotNull": "isnotnull", "GenericUDFIn": "in", "GenericUDFBetween": "between",
    "GenericUDFOPPlus": "+", "GenericUDFOPMinus": "-", "GenericUDFOPMultiply": "*", "GenericUDFOPDivide": "/",
    "GenericUDFOPMod": "%", "GenericUDFOPNegative": "negative", "GenericUDFOPNumericPlus": "+",
    "GenericUDFOPNumericMinus": "-", "GenericUDFAbs": "abs", "GenericUDFUpper": "upper", "GenericUDFLower": "lower",
    "GenericUDFTrim": "trim", "GenericUDFConcat": "concat", "GenericUDFCoalesce": "coalesce", "GenericUDFNvl": "nvl",
    "GenericUDFIf": "if", "GenericUDFWhen": "when", "GenericUDFLength": "length", "GenericUDFDate": "to_date",
    "GenericUDFToDate": "date", "GenericUDFTimestamp": "timestamp", "GenericUDFRegExp": "rlike",
    "GenericUDFIndex": "index", "GenericUDFSize": "size",
}


def to_expression(root: Any, zone: dt.tzinfo) -> Call:
    """The filter held by a decoded ``ExprNodeGenericFuncDesc`` (the root Hive writes)."""
    node = _node(root, zone, "the filter")
    if not isinstance(node, Call):  # pragma: no cover - the root class is fixed by the caller
        raise KryoFormatError("the filter is not a function call")
    return node


def _node(value: Any, zone: dt.tzinfo, where: str) -> Expr:
    if not isinstance(value, JavaObject):
        raise KryoFormatError(f"{where} is a {class_of(value)}, not an expression node")
    cls = value.cls
    if cls == _PLAN + "ExprNodeGenericFuncDesc":
        name, children = _function(value)
        args = []
        for i, child in enumerate(children):  # a loop, not a generator: one frame less per level of nesting
            args.append(_node(child, zone, f"argument {i + 1} of {name!r}"))
        return _call(name, tuple(args))
    if cls == _PLAN + "ExprNodeColumnDesc":
        name = value["column"]
        if not isinstance(name, str) or not name:
            raise KryoFormatError(f"a column of the filter has no name ({name!r})")
        hive_type = hive_type_of(value["typeInfo"], f"column {name!r}")
        if hive_type is None:
            raise KryoFormatError(f"column {name!r} has type void")
        return Column(name, hive_type)
    if cls == _PLAN + "ExprNodeConstantDesc":
        return _constant(value, zone)
    if cls == _PLAN + "ExprNodeFieldDesc":  # s.a: never pushed (ConvertAstToSearchArg wants a column), kept as text
        name = value["fieldName"]
        if not isinstance(name, str) or not name:
            raise KryoFormatError("a struct field reference has no field name")
        of = _node(value["desc"], zone, f"the struct of field {name!r}")
        return Call(OPAQUE, (Constant(f"{to_hiveql(of)}.`{name.replace('`', '``')}`", HiveType("string")),
                             *_columns((of,))))
    raise KryoFormatError(f"{where} is a {cls}, which Hive 2.3 does not put in a pushed filter")


def _function(value: JavaObject) -> tuple[str, list[Any]]:
    """The Hive function name of a function node and its (still encoded) arguments."""
    udf = value["genericUDF"]
    children = value["chidren"]
    if not isinstance(udf, JavaObject) or not udf.cls.startswith(_UDF):
        raise KryoFormatError(f"a function node holds {class_of(udf)} instead of a GenericUDF")
    if not isinstance(children, list):
        raise KryoFormatError(f"the arguments of {udf.cls} are a {class_of(children)}, not a list")
    short = udf.cls[len(_UDF):]
    for field in _NAME_FIELDS:
        text = udf.fields.get(field)
        if text is not None and (not isinstance(text, str) or not text.isprintable()):
            # Hive sets these from constants in its source or names in its registry: never control characters.
            # A Kryo layout one field off (another release's) shifts a byte into them.
            raise KryoFormatError(f"function class {udf.cls} holds the impossible {field} {text!r}")
    if short == "GenericUDFBridge":
        name = udf["udfName"]
        if not isinstance(name, str) or not name:
            raise KryoFormatError("a GenericUDFBridge has no function name")
        name = name.lower()
    else:
        name = UDF_NAMES.get(short, "")
        if not name:
            raise KryoFormatError(f"function class {udf.cls} has no known Hive function name")
    return name, children


def _call(name: str, args: tuple[Expr, ...]) -> Expr:
    if name not in BINARY_OPERATORS and name != "~" and not _MODEL_NAME.match(name):
        # A registry name the model cannot spell as a call: keep it opaque (never pushed), with its columns.
        text = f"{name}({', '.join('?' for _ in args)})"
        return Call(OPAQUE, (Constant(text, HiveType("string")), *_columns(args)))
    try:
        return Call(name, args)
    except FilterError as e:
        raise KryoFormatError(f"function {name!r} in the filter: {e}") from e


def _columns(args: tuple[Expr, ...]) -> list[Column]:
    found: dict[str, Column] = {}
    stack = list(args)
    while stack:
        node = stack.pop()
        if isinstance(node, Column):
            found.setdefault(node.name, node)
        elif isinstance(node, Call):
            stack.extend(node.args)
    return list(found.values())


# ------------------------------------------------------------------------------------------------------ types
def hive_type_of(info: Any, what: str) -> HiveType | None:
    """The Hive type a decoded ``TypeInfo`` describes; None for ``void`` (the type of a bare NULL)."""
    if not isinstance(info, JavaObject) or not info.cls.startswith(_TYPEINFO):
        raise KryoFormatError(f"the type of {what} is a {class_of(info)}, not a TypeInfo")
    short = info.cls[len(_TYPEINFO):]
    if short in ("StructTypeInfo", "ListTypeInfo", "MapTypeInfo"):
        return _parse_type(_complex_type_text(info, what))
    text = info["typeName"]
    if not isinstance(text, str):
        raise KryoFormatError(f"the type of {what} has no name")
    if short == "DecimalTypeInfo":
        text = f"decimal({info['precision']},{info['scale']})"
    elif short in ("VarcharTypeInfo", "CharTypeInfo"):
        text = f"{text.split('(')[0]}({info['length']})"
    elif short != "PrimitiveTypeInfo":
        raise KryoFormatError(f"the type of {what} is a {info.cls}")
    if text == "void":
        return None
    try:
        hive_type = _parse_type(text)
    except SchemaError as e:
        raise KryoFormatError(f"the type of {what} is {text!r}, which this decoder does not support: {e}") from e
    return hive_type


def _complex_type_text(info: JavaObject, what: str) -> str:
    """``struct<a:int,b:string>``, ``array<int>``, ``map<string,int>`` from the nested TypeInfos."""
    def inner(child: Any) -> str:
        hive_type = hive_type_of(child, what)
        if hive_type is None:
            raise KryoFormatError(f"the type of {what} has a void part")
        return str(hive_type)

    short = info.cls[len(_TYPEINFO):]
    if short == "ListTypeInfo":
        return f"array<{inner(info['listElementTypeInfo'])}>"
    if short == "MapTypeInfo":
        return f"map<{inner(info['mapKeyTypeInfo'])},{inner(info['mapValueTypeInfo'])}>"
    names, types = info["allStructFieldNames"], info["allStructFieldTypeInfos"]
    if not (isinstance(names, list) and isinstance(types, list) and len(names) == len(types) and names
            and all(isinstance(n, str) and n for n in names)):
        raise KryoFormatError(f"the struct type of {what} has malformed fields")
    return "struct<" + ",".join(f"{n}:{inner(t)}" for n, t in zip(names, types, strict=True)) + ">"


@functools.lru_cache(maxsize=256)
def _parse_type(text: str) -> HiveType:
    """Types repeat in every filter (``int``, ``decimal(10,2)``); HiveType is immutable, so parse each once."""
    return parse_hive_type(text)


# ------------------------------------------------------------------------------------------------------ constants
def _constant(value: JavaObject, zone: dt.tzinfo) -> Constant:
    hive_type = hive_type_of(value["typeInfo"], "a constant")
    raw = value["value"]
    if raw is None:
        return Constant(None, hive_type)
    if hive_type is None:
        raise KryoFormatError(f"a constant of type void holds a {class_of(raw)}")
    python = constant_value(raw, zone)
    try:
        return Constant(python, hive_type)
    except FilterError as e:
        if isinstance(python, Decimal):  # fits no decimal(p,s) declared: keep the exact value with its own type
            return Constant(python, decimal_type_of(python))
        raise KryoFormatError(f"constant {python!r} ({class_of(raw)}) does not match its type {hive_type}: {e}") from e


def constant_value(raw: Any, zone: dt.tzinfo) -> Any:
    """The Python value of a decoded Java constant (boxed primitive, String, HiveDecimal, java.sql date/time...)."""
    if isinstance(raw, (bool, int, float, str, bytes)):
        return raw
    if isinstance(raw, JavaInstant):
        if raw.cls == "java.sql.Date":
            return sql_date(raw.millis, zone)
        return sql_timestamp(raw.millis, raw.nanos, zone)
    if isinstance(raw, JavaObject):
        if raw.cls in (_TYPE + "HiveVarchar", _TYPE + "HiveChar"):
            text = raw["value"]
            if isinstance(text, str):
                return text
        elif raw.cls in (_TYPE + "HiveDecimal", "org.apache.hadoop.hive.serde2.io.HiveDecimalWritable"):
            return hive_decimal(raw)
    raise KryoFormatError(f"constants of class {class_of(raw)} are not supported in a pushed filter")


_WORD = 10**16  # FastHiveDecimal keeps 16 decimal digits in each of fast0, fast1, fast2


def hive_decimal(raw: JavaObject) -> Decimal:
    """``FastHiveDecimal``'s fields -> the exact Decimal (signum, three 16-digit words, scale)."""
    signum, scale = raw["fastSignum"], raw["fastScale"]
    words = raw["fast0"], raw["fast1"], raw["fast2"]
    if signum not in (-1, 0, 1) or not 0 <= scale <= 38 or not all(0 <= w < _WORD for w in words):
        raise KryoFormatError(f"a HiveDecimal has impossible fields (signum {signum}, scale {scale}, {words})")
    if isinstance(raw.fields.get("isSet"), bool) and not raw["isSet"]:
        raise KryoFormatError("a HiveDecimalWritable constant holds no value")
    unscaled = words[2] * _WORD * _WORD + words[1] * _WORD + words[0]
    if (signum == 0) != (unscaled == 0) or len(str(unscaled)) > 38:
        raise KryoFormatError(f"a HiveDecimal's signum {signum} disagrees with its digits {unscaled}")
    return Decimal((1 if signum < 0 else 0, tuple(int(d) for d in str(unscaled)), -scale))
