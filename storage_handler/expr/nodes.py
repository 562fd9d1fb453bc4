"""The typed expression model of a pushed predicate, shaped like Hive's ``ExprNodeDesc``.

Three immutable node classes:

* :class:`Column` -- a bound column reference (``ExprNodeColumnDesc``): lower-case name and its Hive type.
* :class:`Constant` -- a typed literal (``ExprNodeConstantDesc``); ``hive_type`` is ``None`` only for a NULL of
  unknown type. The Python class of ``value`` must match the type (see :func:`check_constant`).
* :class:`Call` -- a function application (``ExprNodeGenericFuncDesc``) named like Hive's function registry:
  ``=``, ``<>``, ``<``, ``<=``, ``>``, ``>=``, ``<=>``, ``and``, ``or`` (n-ary), ``not``, ``isnull``,
  ``isnotnull``, ``in`` (column first, then the values), ``between`` (a leading boolean *invert* constant, like
  ``GenericUDFBetween``, then the value, low, high), ``like``, ``rlike``, arithmetic (``+ - * / % div``),
  ``negative``, ``cast`` (second argument: a string constant holding the Hive type) and any other function
  name kept as written (``upper``); ``<hiveql>`` holds a sub-expression the model has no node for as HiveQL
  text (arguments: the text, then the columns it uses).

Constants of type ``decimal(p,s)`` are normalized to exactly ``s`` fraction digits on construction.
"""

from __future__ import annotations

import datetime as dt
import re
import struct
from dataclasses import dataclass
from decimal import Decimal

from storage_handler.errors import FilterError
from storage_handler.sarg.literals import NanoTimestamp
from storage_handler.types import HiveType

ConstantValue = None | bool | int | float | Decimal | str | bytes | dt.date | dt.datetime | NanoTimestamp

COMPARISONS = frozenset({"=", "<>", "<", "<=", ">", ">=", "<=>"})
ARITHMETIC = frozenset({"+", "-", "*", "/", "%", "div", "&", "|", "^"})
BINARY_OPERATORS = COMPARISONS | ARITHMETIC | {"like", "rlike"}
_ARITY = {"not": (1, 1), "isnull": (1, 1), "isnotnull": (1, 1), "negative": (1, 1), "~": (1, 1),
          "and": (2, None), "or": (2, None), "in": (2, None), "between": (4, 4), "cast": (2, 2),
          "<hiveql>": (1, None)}
OPAQUE = "<hiveql>"
"""Function name of a sub-expression kept as HiveQL text: first argument the text, then the columns it uses."""
_FUNCTION_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

BOOLEAN = HiveType("boolean")
INT = HiveType("int")
BIGINT = HiveType("bigint")
DOUBLE = HiveType("double")
STRING = HiveType("string")
DATE = HiveType("date")
TIMESTAMP = HiveType("timestamp")
BINARY = HiveType("binary")


@dataclass(frozen=True, slots=True)
class Column:
    """A reference to a top-level table column, already bound to the table schema."""

    name: str
    hive_type: HiveType

    def __str__(self) -> str:
        from storage_handler.expr.render import to_hiveql

        return to_hiveql(self)


@dataclass(frozen=True, slots=True)
class Constant:
    """A literal with its Hive type (``None`` for a NULL whose type is unknown)."""

    value: ConstantValue
    hive_type: HiveType | None

    def __post_init__(self) -> None:
        object.__setattr__(self, "value", check_constant(self.value, self.hive_type))

    def __str__(self) -> str:
        from storage_handler.expr.render import to_hiveql

        return to_hiveql(self)


@dataclass(frozen=True, slots=True)
class Call:
    """A function or operator applied to argument expressions; ``function`` is Hive's (lower-case) name."""

    function: str
    args: tuple[Expr, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.args, tuple):
            raise FilterError(f"Call({self.function!r}) needs its arguments as a tuple, got {type(self.args).__name__}")
        for arg in self.args:
            if not isinstance(arg, (Column, Constant, Call)):
                raise FilterError(f"argument of {self.function!r} is not an expression node: {arg!r}")
        name = self.function
        if name not in BINARY_OPERATORS and name not in ("~", OPAQUE) and not _FUNCTION_NAME.match(name):
            raise FilterError(f"{name!r} is not a valid function name (letters, digits and '_', or an operator)")
        if name != name.lower():
            raise FilterError(f"function names are lower-case, like Hive's registry: write {name.lower()!r}")
        low, high = _ARITY.get(name, (2, 2) if name in BINARY_OPERATORS else (0, None))
        if len(self.args) < low or (high is not None and len(self.args) > high):
            wanted = f"{low}" if low == high else f"at least {low}" if high is None else f"{low} to {high}"
            raise FilterError(f"function {name!r} takes {wanted} arguments, got {len(self.args)}")
        if name == "between":
            invert = self.args[0]
            if not (isinstance(invert, Constant) and isinstance(invert.value, bool)):
                raise FilterError("the first argument of 'between' is the boolean invert flag (NOT BETWEEN), "
                                  f"got {invert!r}")
        if name == OPAQUE and not (isinstance(self.args[0], Constant) and isinstance(self.args[0].value, str)
                                   and all(isinstance(a, Column) for a in self.args[1:])):
            raise FilterError(f"{OPAQUE!r} takes the HiveQL text as a string constant, then the columns it uses")
        if name == "cast":
            target = self.args[1]
            if not (isinstance(target, Constant) and isinstance(target.value, str)):
                raise FilterError(f"the second argument of 'cast' is the target Hive type as a string, got {target!r}")

    def __str__(self) -> str:
        from storage_handler.expr.render import to_hiveql

        return to_hiveql(self)


Expr = Column | Constant | Call


# ---------------------------------------------------------------- constants
def check_constant(value: object, hive_type: HiveType | None) -> ConstantValue:
    """Check that ``value`` is a valid Python value for ``hive_type``; return it (decimals quantized to the scale)."""
    if value is None:
        return None
    if hive_type is None:
        raise FilterError(f"constant {value!r} needs a Hive type; only NULL may have none")
    name = hive_type.name
    ok: bool
    if name == "boolean":
        ok = isinstance(value, bool)
    elif hive_type.is_integer:
        lo, hi = hive_type.integer_range
        ok = isinstance(value, int) and not isinstance(value, bool)
        if ok and not lo <= value <= hi:  # type: ignore[operator]
            raise FilterError(f"constant {value} is out of range for {name} ({lo} .. {hi})")
    elif name == "double":
        ok = isinstance(value, float)
    elif name == "float":
        ok = isinstance(value, float)
        if ok and not is_float32(value):  # type: ignore[arg-type]
            raise FilterError(f"constant {value!r} is not exactly representable as a Hive float (32 bits)")
    elif name == "decimal":
        if not isinstance(value, Decimal):
            ok = False
        else:
            return _fit_decimal(value, hive_type)
    elif hive_type.is_string:
        ok = isinstance(value, str)
    elif name == "date":
        ok = isinstance(value, dt.date) and not isinstance(value, dt.datetime)
    elif name == "timestamp":
        ok = isinstance(value, (dt.datetime, NanoTimestamp))  # NanoTimestamp: nanoseconds from a Hive filter
        if isinstance(value, dt.datetime) and value.tzinfo is not None:
            raise FilterError(f"timestamp constant {value!r} has a time zone; Hive timestamps are zone-less")
    elif name == "binary":
        ok = isinstance(value, bytes)
    else:
        raise FilterError(f"constants of type {hive_type} are not supported (only primitive types)")
    if not ok:
        raise FilterError(f"constant {value!r} ({type(value).__name__}) does not match its Hive type {hive_type}")
    return value  # type: ignore[return-value]


def _fit_decimal(value: Decimal, hive_type: HiveType) -> Decimal:
    precision, scale = hive_type.precision or 10, hive_type.scale or 0
    fitted = fit_decimal(value, precision, scale)
    if fitted is None:
        raise FilterError(f"constant {value} does not fit {hive_type} exactly")
    return fitted


def fit_decimal(value: Decimal, precision: int, scale: int) -> Decimal | None:
    """``value`` with exactly ``scale`` fraction digits if it fits ``decimal(precision, scale)`` exactly, else None."""
    if not value.is_finite():
        return None
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    while exponent < -scale and len(digits) > 1 and digits[-1] == 0:  # trailing zeros carry no information
        digits, exponent = digits[:-1], exponent + 1
    if exponent < -scale and any(digits):
        return None  # non-zero digits beyond the scale
    if not any(digits):
        digits, exponent = (0,), -scale
    integer_digits = max(0, len(digits) + exponent) if any(digits) else 0
    if integer_digits > precision - scale:
        return None
    return Decimal((sign, digits + (0,) * (exponent + scale), -scale))


def decimal_type_of(value: Decimal) -> HiveType:
    """The smallest ``decimal(p,s)`` holding ``value`` exactly (Hive's rule for a decimal literal)."""
    if not value.is_finite():
        raise FilterError(f"decimal constant {value} is not a finite number; Hive decimals cannot hold it")
    _, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    scale = max(0, -exponent)
    integer_digits = max(0, len(digits) + exponent) if any(digits) else 0
    precision = max(1, integer_digits + scale)
    if precision > 38:
        raise FilterError(f"decimal constant {value} needs {precision} digits; Hive decimals hold at most 38")
    return HiveType("decimal", precision=precision, scale=scale)


def is_float32(value: float) -> bool:
    """True if the double ``value`` is exactly a 32-bit float (NaN and infinities included)."""
    if value != value or value in (float("inf"), float("-inf")):
        return True
    try:
        return struct.unpack("f", struct.pack("f", value))[0] == value
    except OverflowError:
        return False


def type_of_value(value: ConstantValue) -> HiveType | None:
    """The Hive type a bare Python value gets as a literal (``int`` beyond 32 bits becomes ``bigint``)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return BOOLEAN
    if isinstance(value, int):
        if -(2**31) <= value < 2**31:
            return INT
        if -(2**63) <= value < 2**63:
            return BIGINT
        return decimal_type_of(Decimal(value))
    if isinstance(value, float):
        return DOUBLE
    if isinstance(value, Decimal):
        return decimal_type_of(value)
    if isinstance(value, str):
        return STRING
    if isinstance(value, bytes):
        return BINARY
    if isinstance(value, (dt.datetime, NanoTimestamp)):
        return TIMESTAMP
    if isinstance(value, dt.date):
        return DATE
    raise FilterError(f"no Hive literal type for the Python value {value!r} ({type(value).__name__})")


# ---------------------------------------------------------------- constructors
def col(name: str, hive_type: HiveType) -> Column:
    return Column(name, hive_type)


def lit(value: ConstantValue, hive_type: HiveType | None = None) -> Constant:
    """A constant; the type is inferred from the Python value unless given (ints beyond 32 bits are bigint)."""
    if hive_type is None:
        if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**63:
            value = Decimal(value)
        hive_type = type_of_value(value)
    return Constant(value, hive_type)


def call(function: str, *args: Expr) -> Call:
    return Call(function, tuple(args))


def and_(*args: Expr) -> Expr:
    """N-ary AND, flattening nested ANDs; one argument is returned as is."""
    return _junction("and", args)


def or_(*args: Expr) -> Expr:
    """N-ary OR, flattening nested ORs; one argument is returned as is."""
    return _junction("or", args)


def not_(arg: Expr) -> Call:
    return Call("not", (arg,))


def between(arg: Expr, low: Expr, high: Expr, *, invert: bool = False) -> Call:
    return Call("between", (Constant(invert, BOOLEAN), arg, low, high))


def in_(arg: Expr, *values: Expr) -> Call:
    return Call("in", (arg, *values))


def _junction(function: str, args: tuple[Expr, ...]) -> Expr:
    flat: list[Expr] = []
    for arg in args:
        if isinstance(arg, Call) and arg.function == function:
            flat.extend(arg.args)
        else:
            flat.append(arg)
    if not flat:
        raise FilterError(f"'{function}' needs at least one argument")
    return flat[0] if len(flat) == 1 else Call(function, tuple(flat))


def conjuncts(expr: Expr) -> tuple[Expr, ...]:
    """The top-level AND terms of ``expr`` (``expr`` itself when it is not an AND)."""
    if isinstance(expr, Call) and expr.function == "and":
        out: list[Expr] = []
        stack = list(reversed(expr.args))
        while stack:
            node = stack.pop()
            if isinstance(node, Call) and node.function == "and":
                stack.extend(reversed(node.args))
            else:
                out.append(node)
        return tuple(out)
    return (expr,)


def columns_of(expr: Expr) -> frozenset[str]:
    """Names of the columns ``expr`` refers to."""
    names: set[str] = set()
    stack: list[Expr] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, Column):
            names.add(node.name)
        elif isinstance(node, Call):
            stack.extend(node.args)
    return frozenset(names)
