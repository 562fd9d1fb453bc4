"""HiveQL filter text (``hive.io.filter.text``, ``hsh explain --where``) -> the typed expression model.

Parsed with sqlglot's ``hive`` dialect, then bound against the table schema: column names are matched
case-insensitively and come out lower-case with their Hive type. Literal typing follows Hive 3 and Spark:
``5`` int (bigint / decimal when larger), ``12.50`` decimal(4,2) (exact, not a double), ``1.5E0`` / ``1.5D``
double, ``5L`` / ``5S`` / ``5Y`` bigint / smallint / tinyint, ``12.5BD`` decimal, ``DATE '...'``,
``TIMESTAMP '...'``; casts of constants are folded when exact (:func:`~storage_handler.decode.literals.cast_constant`),
except casts to a string type in a filter that names ``char`` or ``varchar``: sqlglot's hive dialect reads
``CHAR(n)`` and ``VARCHAR(n)`` as ``STRING``, so ``CAST('abcdef' AS VARCHAR(3))`` (Hive: ``'abc'``) would fold to
``'abcdef'`` and prune the files holding ``'abc'``.

Operators map to Hive's function names (see :mod:`storage_handler.expr.nodes`); a small set of common functions
keeps its name and arguments (``upper(x)``); any other construct the model has no node for (``CASE``, struct
fields ``s.a``, ``a[0]``, most functions) is kept as an opaque HiveQL sub-expression (function ``<hiveql>``,
never pushed) whose columns are still checked. Subqueries, aggregates, window functions and ``*`` are refused.

Errors are :class:`~storage_handler.errors.FilterError`: syntax errors name the line, column and offending text;
unknown columns name the column and list the table's columns.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal
from functools import singledispatchmethod
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import TokenType

from storage_handler.decode.literals import cast_constant
from storage_handler.decode.schema import Schema, bind_column, normalize_schema
from storage_handler.errors import FilterError, SchemaError
from storage_handler.expr.nodes import (
    BOOLEAN,
    DOUBLE,
    OPAQUE,
    STRING,
    Call,
    Column,
    Constant,
    Expr,
    decimal_type_of,
    lit,
)
from storage_handler.types import HiveType, parse_hive_type

_COMPARISONS: dict[type, str] = {
    exp.EQ: "=", exp.NEQ: "<>", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">=", exp.NullSafeEQ: "<=>",
}
_ARITHMETIC: dict[type, str] = {
    exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/", exp.Mod: "%", exp.IntDiv: "div",
    exp.BitwiseAnd: "&", exp.BitwiseOr: "|", exp.BitwiseXor: "^",
}
# sqlglot function classes whose arguments, in this order, are exactly Hive's arguments
_FUNCTIONS: dict[type, tuple[str, tuple[str, ...]]] = {
    exp.Upper: ("upper", ("this",)), exp.Lower: ("lower", ("this",)), exp.Abs: ("abs", ("this",)),
    exp.Length: ("length", ("this",)), exp.Year: ("year", ("this",)), exp.Month: ("month", ("this",)),
    exp.Day: ("day", ("this",)), exp.Sqrt: ("sqrt", ("this",)), exp.Ln: ("ln", ("this",)),
    exp.Exp: ("exp", ("this",)), exp.Floor: ("floor", ("this",)), exp.Ceil: ("ceil", ("this",)),
    exp.Unhex: ("unhex", ("this",)), exp.Round: ("round", ("this", "decimals")),
    exp.Coalesce: ("coalesce", ("this", "expressions")), exp.Concat: ("concat", ("expressions",)),
    exp.Greatest: ("greatest", ("this", "expressions")), exp.Least: ("least", ("this", "expressions")),
    exp.Substring: ("substr", ("this", "start", "length")), exp.If: ("if", ("this", "true", "false")),
    exp.Pow: ("pow", ("this", "expression")), exp.DateDiff: ("datediff", ("this", "expression")),
}
_IGNORED_FLAGS = frozenset({"safe", "coalesce", "is_nvl", "is_null"})  # spelling variants of the same Hive function
_FORBIDDEN = (exp.Query, exp.Subquery, exp.Exists, exp.Star, exp.AggFunc, exp.Window, exp.Placeholder,
              exp.Parameter, exp.Alias, exp.Block)
_HEX = re.compile(r"(?:[0-9A-Fa-f]{2})*\Z")
_INT = re.compile(r"-?\d+\Z")


def parse_filter(text: str, schema: Schema) -> Expr:
    """Parse HiveQL filter ``text`` and bind it to ``schema``; raise FilterError on syntax or binding errors."""
    columns = normalize_schema(schema)
    if not text or not text.strip():
        raise FilterError("the filter is empty; give a condition such as \"event_id = '1'\"")
    try:
        tree = sqlglot.parse_one(text, dialect="hive")
        lengthed = any(t.token_type in _LENGTHED_STRINGS for t in sqlglot.Dialect.get_or_raise("hive").tokenize(text))
        return _Binder(columns, text, fold_string_casts=not lengthed).convert(tree)
    except ParseError as e:
        raise _syntax_error(text, e) from e
    except TokenError as e:
        raise _token_error(text, e) from e
    except RecursionError as e:
        raise FilterError(f"filter {text!r} is nested too deeply to analyse") from e


def _syntax_error(text: str, error: ParseError) -> FilterError:
    if not error.errors:
        return FilterError(f"cannot parse filter {text!r}: {error}")
    first = error.errors[0]
    line, col, highlight = first.get("line"), first.get("col"), first.get("highlight") or ""
    if isinstance(col, int) and highlight:
        col = col - len(highlight) + 1  # sqlglot points at the end of the offending token
    return FilterError(
        f"syntax error in filter {text!r} at line {line}, column {col} near {highlight!r}: "
        f"{_plain(str(first.get('description')), highlight)}"
    )


_MISSING = re.compile(r"Required keyword: '(\w+)' missing for <class '[\w.]*?(\w+)'>")


def _plain(description: str, near: str) -> str:
    """sqlglot's description in the filter's terms: "Required keyword: 'expression' missing for <class
    'sqlglot.expressions.core.EQ'>" names a parser class; the user wrote an operator with an operand missing."""
    m = _MISSING.fullmatch(description.strip())
    if m is None:
        return description
    what = "a value or column after it" if m[1] == "expression" else f"its {m[1]}"
    return f"{m[2].upper()} ({near!r}) is missing {what}" if near else f"{m[2].upper()} is missing {what}"


def _token_error(text: str, error: TokenError) -> FilterError:
    cause = str(error.__cause__ or error)
    m = re.match(r"Missing (.+) from \d+:(\d+)", cause)
    if m:
        offset = int(m[2])
        line = text.count("\n", 0, offset) + 1
        col = offset - (text.rfind("\n", 0, offset) + 1) + 1
        return FilterError(
            f"syntax error in filter {text!r} at line {line}, column {col}: {m[1]} opened here is never closed "
            f"(near {text[offset:offset + 20]!r})"
        )
    return FilterError(f"syntax error in filter {text!r}: cannot split it into tokens ({cause})")


#: the tokens of types sqlglot's hive dialect reads as STRING, losing their length (and char's padding)
_LENGTHED_STRINGS = frozenset({TokenType.CHAR, TokenType.VARCHAR, TokenType.NCHAR, TokenType.NVARCHAR})


class _Binder:
    """Converts one sqlglot tree into the expression model, binding columns against ``columns``."""

    def __init__(self, columns: Mapping[str, HiveType], text: str, *, fold_string_casts: bool = True) -> None:
        self.columns = columns
        self.text = text
        self.fold_string_casts = fold_string_casts  # False: a char / varchar type may hide behind STRING

    def bind(self, name: str) -> Column:
        return bind_column(name, self.columns, self.text)

    # ------------------------------------------------------------ dispatch
    @singledispatchmethod
    def convert(self, node: exp.Expression) -> Expr:
        return self.opaque(node)

    @convert.register
    def _paren(self, node: exp.Paren) -> Expr:
        return self.convert(node.this)

    @convert.register
    def _connector(self, node: exp.Connector) -> Expr:
        kind = type(node)
        if kind not in (exp.And, exp.Or):
            return self.opaque(node)
        operands: list[Any] = []
        stack: list[Any] = [node]
        while stack:  # iterative: sqlglot builds left-deep chains
            current = stack.pop()
            while isinstance(current, exp.Paren):
                current = current.this
            if type(current) is kind:
                stack.append(current.expression)
                stack.append(current.this)
            else:
                operands.append(current)
        return Call("and" if kind is exp.And else "or", tuple(self.convert(o) for o in operands))

    @convert.register
    def _not(self, node: exp.Not) -> Expr:
        inner = node.this
        if isinstance(inner, exp.Is) and isinstance(inner.expression, exp.Null):
            return Call("isnotnull", (self.convert(inner.this),))
        if isinstance(inner, exp.Between) and self._plain(inner, ("this", "low", "high")):
            return self._between(inner, invert=True)
        return Call("not", (self.convert(inner),))

    @convert.register
    def _binary(self, node: exp.Binary) -> Expr:
        kind = type(node)
        left, right = node.this, node.expression
        if kind in _COMPARISONS:
            return Call(_COMPARISONS[kind], (self.convert(left), self.convert(right)))
        if kind is exp.NullSafeNEQ:
            return Call("not", (Call("<=>", (self.convert(left), self.convert(right))),))
        if kind in _ARITHMETIC and not node.args.get("padside"):
            return Call(_ARITHMETIC[kind], (self.convert(left), self.convert(right)))
        if kind is exp.DPipe:
            return Call("concat", (self.convert(left), self.convert(right)))
        if kind in (exp.Like, exp.RegexpLike) and self._plain(node, ("this", "expression", "negate")):
            call = Call("like" if kind is exp.Like else "rlike", (self.convert(left), self.convert(right)))
            return Call("not", (call,)) if node.args.get("negate") else call
        if kind is exp.Is and isinstance(right, exp.Null):
            return Call("isnull", (self.convert(left),))
        return self.opaque(node)

    @convert.register
    def _in(self, node: exp.In) -> Expr:
        if node.args.get("query") or node.args.get("unnest"):
            raise FilterError(f"filter {self.text!r}: IN with a subquery is not supported; list the values")
        if not self._plain(node, ("this", "expressions")):
            return self.opaque(node)
        if not node.expressions:
            raise FilterError(f"filter {self.text!r}: {node.this.sql(dialect='hive')} IN () has no values; an IN "
                              "list needs at least one value")
        return Call("in", (self.convert(node.this), *(self.convert(v) for v in node.expressions)))

    @convert.register
    def _between_node(self, node: exp.Between) -> Expr:
        if not self._plain(node, ("this", "low", "high")):
            return self.opaque(node)
        return self._between(node, invert=False)

    def _between(self, node: exp.Between, *, invert: bool) -> Expr:
        args = (self.convert(node.this), self.convert(node.args["low"]), self.convert(node.args["high"]))
        return Call("between", (Constant(invert, BOOLEAN), *args))

    @convert.register
    def _neg(self, node: exp.Neg) -> Expr:
        inner = node.this
        while isinstance(inner, exp.Paren):
            inner = inner.this
        if isinstance(inner, exp.Literal) and not inner.is_string:
            return self.number("-" + inner.this)
        value = self.convert(inner)
        if isinstance(value, Constant) and isinstance(value.value, (int, float, Decimal)) \
                and not isinstance(value.value, bool):
            try:
                return Constant(-value.value, value.hive_type)  # type: ignore[operator]
            except FilterError:
                pass  # e.g. -(-128Y) is out of the tinyint range: keep the call
        return Call("negative", (value,))

    @convert.register
    def _bitwise_not(self, node: exp.BitwiseNot) -> Expr:
        return Call("~", (self.convert(node.this),))

    @convert.register
    def _column(self, node: exp.Column) -> Expr:
        parts = [p.name for p in node.parts]
        if len(parts) == 1:
            return self.bind(parts[0])
        if parts[0].lower() in self.columns:  # struct field access such as s.a
            return self.opaque(node)
        raise FilterError(
            f"unknown column {'.'.join(parts)!r} in filter {self.text!r}: qualified names (table.column) are not "
            f"supported, write the bare column name; the table's columns are: {', '.join(self.columns)}"
        )

    @convert.register
    def _literal(self, node: exp.Literal) -> Expr:
        if node.is_string:
            return Constant(node.this, STRING)
        return self.number(node.this)

    @convert.register
    def _boolean(self, node: exp.Boolean) -> Expr:
        return Constant(bool(node.this), BOOLEAN)

    @convert.register
    def _null(self, node: exp.Null) -> Expr:
        return Constant(None, None)

    @convert.register
    def _cast(self, node: exp.Cast) -> Expr:
        try:
            target = parse_hive_type(node.to.sql(dialect="hive"))
        except SchemaError:
            return self.opaque(node)
        value = self.convert(node.this)
        if isinstance(value, Constant) and (self.fold_string_casts or not target.is_string):
            folded = cast_constant(value, target)
            if folded is not None:
                return folded
        return Call("cast", (value, Constant(str(target), STRING)))

    @convert.register
    def _func(self, node: exp.Func) -> Expr:
        if isinstance(node, _FORBIDDEN):
            return self.opaque(node)  # raises
        if isinstance(node, exp.Anonymous):
            name = node.name.lower()
            args = node.expressions
        elif type(node) in _FUNCTIONS:
            name, keys = _FUNCTIONS[type(node)]
            if not self._plain(node, keys + tuple(_IGNORED_FLAGS)):
                return self.opaque(node)
            args = []
            for key in keys:
                value = node.args.get(key)
                if isinstance(value, list):
                    args.extend(value)
                elif value is not None:
                    args.append(value)
        else:
            return self.opaque(node)
        converted = tuple(self.convert(a) for a in args)
        if name == "unhex" and len(converted) == 1:
            arg = converted[0]
            if isinstance(arg, Constant) and isinstance(arg.value, str) and _HEX.match(arg.value):
                return lit(bytes.fromhex(arg.value))
        if name == "concat" and all(isinstance(a, Constant) and isinstance(a.value, str) for a in converted):
            return Constant("".join(a.value for a in converted), STRING)  # type: ignore[union-attr,misc]
        try:
            return Call(name, converted)
        except FilterError:
            return self.opaque(node)

    # ------------------------------------------------------------ helpers
    @staticmethod
    def _plain(node: Any, keys: tuple[str, ...]) -> bool:
        """True if every argument of ``node`` other than ``keys`` is unset (no modifier we would drop)."""
        return not any(v for k, v in node.args.items() if k not in keys)

    def number(self, text: str) -> Constant:
        """A numeric literal typed like Hive 3 / Spark: int, bigint, exact decimal, or double with an exponent."""
        if _INT.match(text):
            if len(text) <= 40:
                value = int(text)
                if -(2**63) <= value < 2**63:
                    return lit(value)
            try:
                return Constant(Decimal(text), decimal_type_of(Decimal(text)))
            except FilterError:
                return Constant(float(text), DOUBLE)
        if "e" in text.lower():
            try:
                return Constant(float(text), DOUBLE)
            except ValueError as e:
                raise FilterError(f"{text!r} is not a number; write an exponent with digits, as in 5e3") from e
        try:
            return Constant(Decimal(text), decimal_type_of(Decimal(text)))
        except FilterError:  # more than 38 digits: Hive falls back to a double
            return Constant(float(text), DOUBLE)

    def opaque(self, node: Any) -> Expr:
        """Keep ``node`` as HiveQL text; refuse what a filter cannot contain; bind the columns it uses."""
        bad = node if isinstance(node, _FORBIDDEN) else node.find(*_FORBIDDEN)
        if bad is not None:
            what = type(bad).__name__.lower()
            raise FilterError(
                f"filter {self.text!r} contains {bad.sql(dialect='hive')!r} ({what}); a pushed filter may only "
                "use columns, constants, operators and scalar functions"
            )
        used: dict[str, Column] = {}
        for column in node.find_all(exp.Column, bfs=False):
            bound = self.bind(column.parts[0].name)
            used[bound.name] = bound
        args: Any = (Constant(node.sql(dialect="hive"), STRING), *used.values())
        return Call(OPAQUE, args)
