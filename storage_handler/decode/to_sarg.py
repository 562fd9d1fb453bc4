"""Expression model -> SearchArgument, with Hive's ``ConvertAstToSearchArg`` mapping.

=======================  ===========================================================================
expression               SearchArgument
=======================  ===========================================================================
``c = v``                ``EQUALS c v``
``c <> v``               ``NOT EQUALS c v``
``c <=> v``              ``NULL_SAFE_EQUALS c v`` (``c <=> NULL`` is ``YES_NO_NULL``, as in Hive)
``c < v`` / ``c <= v``   ``LESS_THAN`` / ``LESS_THAN_EQUALS``
``c > v``                ``NOT LESS_THAN_EQUALS c v``
``c >= v``               ``NOT LESS_THAN c v``
``v < c`` (flipped)      as ``c > v``, and so on for every comparison with the column on the right
``c IS NULL``            ``IS_NULL c``; ``c IS NOT NULL`` is ``NOT IS_NULL c``
``c IN (v, ...)``        ``IN c v ...``; a NULL in the list stays in the leaf: ``(IN c null 1)``
``c [NOT] BETWEEN a, b`` ``[NOT] BETWEEN c a b`` (Hive 2.3.10 drops the NOT: HIVE-24209; we follow the fix)
bare boolean ``c``       ``EQUALS c true``
``NOT``/``AND``/``OR``   kept (the builder normalizes: NOT pushed down, CNF, ...)
anything else            the constant ``YES_NO_NULL``: functions, ``LIKE``, arithmetic, column vs column,
                         comparisons with ``NULL``, binary/complex/char columns, and literals that cannot be
                         represented exactly in the column's type (see :mod:`storage_handler.decode.literals`)
=======================  ===========================================================================

Leaf types: tinyint..bigint LONG, float/double FLOAT, string/varchar/char STRING, date DATE, decimal DECIMAL,
timestamp TIMESTAMP, boolean BOOLEAN.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import singledispatchmethod

from storage_handler.decode.literals import leaf_literal
from storage_handler.errors import FilterError
from storage_handler.expr.nodes import Call, Column, Constant, Expr, and_, conjuncts
from storage_handler.sarg import LeafType, SearchArgument, SearchArgumentFactory, TruthValue
from storage_handler.types import HiveType

_LEAF_TYPES = {
    "tinyint": LeafType.LONG, "smallint": LeafType.LONG, "int": LeafType.LONG, "bigint": LeafType.LONG,
    "float": LeafType.FLOAT, "double": LeafType.FLOAT, "string": LeafType.STRING, "varchar": LeafType.STRING,
    "char": LeafType.STRING, "date": LeafType.DATE, "decimal": LeafType.DECIMAL, "timestamp": LeafType.TIMESTAMP,
    "boolean": LeafType.BOOLEAN,
}
_FLIPPED = {"=": "=", "<>": "<>", "<=>": "<=>", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


def leaf_type(hive_type: HiveType) -> LeafType | None:
    """The leaf type of a column of ``hive_type``; None when the type is not pushable (binary, complex types)."""
    return _LEAF_TYPES.get(hive_type.name)


@dataclass(frozen=True, slots=True)
class Decoded:
    """A decoded filter.

    ``sarg``: the SearchArgument to prune files with. ``pushed``: the AND of the conjuncts converted without any
    ``YES_NO_NULL`` (None when there is none). ``residual``: the whole original predicate -- always, because
    statistics pruning is inexact (see :func:`decompose`); None only when there is no filter. ``unpushed``: the
    conjuncts that could not be converted fully (they still prune where a part of them converted).
    """

    sarg: SearchArgument
    pushed: Expr | None
    residual: Expr | None
    unpushed: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class DecomposedPredicate:
    """Hive's ``HiveStoragePredicateHandler.DecomposedPredicate`` triple."""

    pushed_predicate: Expr | None
    pushed_object: SearchArgument
    residual_predicate: Expr | None


def to_search_argument(expr: Expr | None) -> Decoded:
    """Convert ``expr`` (a bound expression, or None for "no filter") into a :class:`Decoded`."""
    builder = SearchArgumentFactory.new_builder()
    if expr is None:
        return Decoded(builder.literal(TruthValue.YES_NO_NULL).build(), None, None, ())
    terms = conjuncts(expr)
    emitter = _Emitter(builder)
    pushed: list[Expr] = []
    unpushed: list[Expr] = []
    if len(terms) > 1:
        builder.start_and()
    for term in terms:
        emitter.exact = True
        try:
            emitter.emit(term)
        except RecursionError as e:
            raise FilterError("a filter term is nested too deeply to convert to a SearchArgument") from e
        (pushed if emitter.exact else unpushed).append(term)
    if len(terms) > 1:
        builder.end()
    return Decoded(builder.build(), and_(*pushed) if pushed else None, expr, tuple(unpushed))


def is_whole(predicate: DecomposedPredicate) -> bool:
    """Whether the SearchArgument stands for the whole predicate: every conjunct converted with no ``YES_NO_NULL``.

    Only then may a file where the SearchArgument is ``YES`` be called fully matched. A ``YES_NO_NULL`` part is
    dropped from an AND and swallows an OR or a NOT around it (Hive's normalization), so the SearchArgument left
    is a weaker condition than the predicate: ``i > 0 AND s LIKE '%y%'`` prunes as ``i > 0``, which may be YES
    for every row of a file where the predicate is not. Pruning stays sound (a weaker condition keeps more).
    """
    if predicate.residual_predicate is None:
        return True
    if predicate.pushed_predicate is None:
        return False
    return conjuncts(predicate.pushed_predicate) == conjuncts(predicate.residual_predicate)


def decompose(expr: Expr) -> DecomposedPredicate:
    """Split ``expr`` like Hive's ``decomposePredicate``: (pushed predicate, SearchArgument, residual predicate).

    The residual is the WHOLE predicate, not just the conjuncts that could not be pushed: file pruning with
    column statistics only proves that a file *cannot* contain a matching row; the files that are kept still hold
    rows that do not match, so every conjunct must be evaluated again on the rows read. Iceberg's Hive storage
    handler decides the same way. ``pushed_predicate`` is the AND of the conjuncts that were fully converted to
    leaves (None when nothing converted); ``pushed_object`` is the SearchArgument.
    """
    decoded = to_search_argument(expr)
    return DecomposedPredicate(decoded.pushed, decoded.sarg, decoded.residual)


class _Emitter:
    """Walks the expression and drives the builder; ``exact`` turns False when a YES_NO_NULL is emitted."""

    def __init__(self, builder: object) -> None:
        self.b = builder
        self.exact = True

    def maybe(self) -> None:
        self.exact = False
        self.b.literal(TruthValue.YES_NO_NULL)  # type: ignore[attr-defined]

    @singledispatchmethod
    def emit(self, node: Expr) -> None:
        self.maybe()

    @emit.register
    def _column(self, node: Column) -> None:
        if node.hive_type.name == "boolean":
            self.b.equals(node.name, LeafType.BOOLEAN, True)  # type: ignore[attr-defined]
        else:
            self.maybe()

    @emit.register
    def _call(self, node: Call) -> None:
        fn, args = node.function, node.args
        b = self.b
        if fn in ("and", "or", "not"):
            {"and": b.start_and, "or": b.start_or, "not": b.start_not}[fn]()  # type: ignore[attr-defined]
            for arg in args:
                self.emit(arg)
            b.end()  # type: ignore[attr-defined]
        elif fn in _FLIPPED:
            self._comparison(fn, args[0], args[1])
        elif fn in ("isnull", "isnotnull"):
            self._is_null(args[0], negate=fn == "isnotnull")
        elif fn == "in":
            self._in(args[0], args[1:])
        elif fn == "between":
            invert = args[0]
            assert isinstance(invert, Constant)
            self._between(args[1], args[2], args[3], invert=bool(invert.value))
        else:
            self.maybe()

    def _comparison(self, fn: str, left: Expr, right: Expr) -> None:
        if isinstance(right, Column) and isinstance(left, Constant):
            fn, left, right = _FLIPPED[fn], right, left
        if not (isinstance(left, Column) and isinstance(right, Constant)):
            return self.maybe()  # column vs column, functions, constants only
        kind = leaf_type(left.hive_type)
        if kind is None:
            return self.maybe()
        if right.value is None:  # Hive's builder makes YES_NO_NULL of a null literal, even for <=>
            return self.maybe()
        literal = _constant_literal(right, left.hive_type)
        if literal is None:
            return self.maybe()
        b, name = self.b, left.name
        negate = fn in ("<>", ">", ">=")
        if negate:
            b.start_not()  # type: ignore[attr-defined]
        if fn in ("=", "<>"):
            b.equals(name, kind, literal)  # type: ignore[attr-defined]
        elif fn == "<=>":
            b.null_safe_equals(name, kind, literal)  # type: ignore[attr-defined]
        elif fn in ("<", ">="):
            b.less_than(name, kind, literal)  # type: ignore[attr-defined]
        else:  # "<=", ">"
            b.less_than_equals(name, kind, literal)  # type: ignore[attr-defined]
        if negate:
            b.end()  # type: ignore[attr-defined]
        return None

    def _is_null(self, arg: Expr, *, negate: bool) -> None:
        kind = leaf_type(arg.hive_type) if isinstance(arg, Column) else None
        if kind is None:
            return self.maybe()
        assert isinstance(arg, Column)
        if negate:
            self.b.start_not()  # type: ignore[attr-defined]
        self.b.is_null(arg.name, kind)  # type: ignore[attr-defined]
        if negate:
            self.b.end()  # type: ignore[attr-defined]
        return None

    def _literals(
        self, column: Expr, values: tuple[Expr, ...], *, nulls: bool = False
    ) -> tuple[LeafType, list[object]] | None:
        """The leaf type and literals; None if any value is not a constant convertible to the column's type.
        ``nulls``: a NULL constant stays a None literal (Hive keeps it in an IN list) instead of failing."""
        kind = leaf_type(column.hive_type) if isinstance(column, Column) else None
        if kind is None:
            return None
        assert isinstance(column, Column)
        out: list[object] = []
        for value in values:
            if not isinstance(value, Constant):
                return None
            if value.value is None and nulls:
                out.append(None)
                continue
            literal = _constant_literal(value, column.hive_type)
            if literal is None:
                return None
            out.append(literal)
        return kind, out

    def _in(self, column: Expr, values: tuple[Expr, ...]) -> None:
        converted = self._literals(column, values, nulls=True)
        if converted is None:
            return self.maybe()
        assert isinstance(column, Column)
        self.b.in_(column.name, converted[0], *converted[1])  # type: ignore[attr-defined]
        return None

    def _between(self, column: Expr, low: Expr, high: Expr, *, invert: bool) -> None:
        converted = self._literals(column, (low, high))
        if converted is None:
            return self.maybe()
        assert isinstance(column, Column)
        if invert:
            self.b.start_not()  # type: ignore[attr-defined]
        self.b.between(column.name, converted[0], *converted[1])  # type: ignore[attr-defined]
        if invert:
            self.b.end()  # type: ignore[attr-defined]
        return None


def _constant_literal(constant: Constant, column_type: HiveType) -> object | None:
    """The leaf literal of ``constant`` compared with a column of ``column_type``; None: no exact leaf.

    A ``char(n)`` constant gives none: Hive pads its value (``HiveChar``: ``'ab   '``) and strips the padding when
    it compares it with a string (``s = CAST('ab' AS CHAR(5))`` matches ``'ab'``), while Spark keeps the spaces;
    the value alone says neither, and a literal with its spaces pruned files Hive reads rows from."""
    if constant.hive_type is not None and constant.hive_type.name == "char":
        return None
    return leaf_literal(constant.value, column_type)
