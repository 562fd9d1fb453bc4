"""Compile a bound tree once; evaluate it over every file at once with pyarrow.compute.

The compiled form is a flat post-order program (no recursion at evaluation time); each step works on whole
columns, so the cost per file is a few bitmap operations plus the bound comparisons, never a Python call.

Leaf semantics (ORC's ``evaluatePredicateRange`` / ``evaluatePredicateMinMax``, Hive 2.3, made conservative for
unknowns), per file, first matching state wins:

1. *no stats* -- ``stats_error`` set, the column absent from the index, or inconsistent stats (min > max,
   null_count > num_records, negative counts), or an unparseable partition value -> ``YES_NO_NULL``;
2. *empty* -- ``num_records == 0`` -> ``NO`` (data columns only);
3. *all null* -- ``null_count == num_records`` (or a NULL partition value) -> IS_NULL ``YES``, NULL_SAFE_EQUALS
   ``NO``, anything else ``NULL``;
4. *range* -- compare the literal(s) with ``[min, max]`` (a missing or NaN bound is unbounded on that side):

   ============  ===========================================  ============================================
   operator      YES when                                     NO when
   ============  ===========================================  ============================================
   EQUALS        min = v = max                                v < min or v > max, or v not a column value
   NULL_SAFE_EQ  min = v = max and no NULLs                   v < min or v > max, or v not a column value
   LESS_THAN     max < v                                      min >= v
   LESS_THAN_EQ  max <= v                                     min > v
   IN            min = vi = max for some vi                   every vi < min or > max or not a column value
   BETWEEN       lo <= min and max <= hi                      max < lo or min > hi
   IS_NULL       never                                        no NULLs
   ============  ===========================================  ============================================

   otherwise YES_NO; when the column may hold NULLs (``null_count`` > 0 or unknown) every operator but IS_NULL and
   NULL_SAFE_EQUALS adds NULL. A partition value behaves as min = max = value without NULLs.
   EQUALS, NULL_SAFE_EQUALS and IN also consult the file's bloom filter and value list when the index keeps them
   (``membership.py``): they can only turn YES_NO into NO or YES.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from storage_handler.pruning.bind import BoundLeaf, BoundNode, StatsColumn, UnboundLeaf
from storage_handler.pruning.domain import DomainPoint, domain_arrow_type, to_arrow_scalar
from storage_handler.pruning.membership import MembershipInput, Probe, compile_probe, membership_input, refine
from storage_handler.pruning.partitions import PartitionValue, single_chunk
from storage_handler.pruning.statistics import PruningStatistics, as_statistics
from storage_handler.pruning.tree import And, Constant, Not, Or, children_of, postorder
from storage_handler.pruning.truth_codes import (
    Plane,
    TruthPlanes,
    code_of,
    p_and,
    p_not,
    p_or,
    planes_and,
    planes_not,
    planes_or,
)
from storage_handler.sarg import LeafOperator

Op = LeafOperator
#: Column types whose index bounds are trustworthy enough to prove a leaf true for *every* row (strict
#: evaluation). Bounds that are valid for pruning are valid for this too (a proof of YES uses the same
#: inequalities as a proof of NO); left out are float/double (NaN is no bound) and char/varchar (Spark reads a
#: value whole, Hive cut to the declared length: the bounds hold for both, so they are wider than either's).
STRICT_TYPES = frozenset({"tinyint", "smallint", "int", "bigint", "decimal", "string", "boolean", "date",
                          "timestamp"})
_NO_NULL_VARIANT = (Op.IS_NULL, Op.NULL_SAFE_EQUALS)
_UNKNOWN = TruthPlanes(True, True, True)


@dataclass(slots=True)
class LeafInput:
    """What a leaf needs per file: typed bounds (``None`` = no bound known for any file) and the state masks."""

    mn: pa.Array | None
    mx: pa.Array | None
    nostats: Plane
    empty: Plane
    allnull: Plane
    rng: Plane
    has_null: Plane
    membership: MembershipInput | None = None  # the column's bloom filters / value lists, if the index keeps any


_NO_INPUT = LeafInput(None, None, True, False, False, False, True)


@dataclass(frozen=True, slots=True)
class _Point:
    """A :class:`DomainPoint` with its Arrow scalars, built once at compile time."""

    floor: pa.Scalar | None
    ceil: pa.Scalar | None
    exact: bool


# ---------------------------------------------------------------- Kleene condition helpers (None = all false)
Cond = Any  # pa.BooleanArray (may hold nulls) | bool


def _k_and(a: Cond, b: Cond) -> Cond:
    if a is False or b is False:
        return False
    return pc.and_kleene(a, b)


def _k_or(a: Cond, b: Cond) -> Cond:
    if a is False:
        return b
    if b is False:
        return a
    return pc.or_kleene(a, b)


def _filled(cond: Cond) -> Plane:
    return cond if isinstance(cond, bool) else pc.fill_null(cond, False)


def _eq(b: pa.Array | None, p: _Point) -> Cond:
    return False if b is None or not p.exact else pc.equal(b, p.floor)


def _gt(b: pa.Array | None, p: _Point) -> Cond:  # b > v
    if b is None or p.ceil is None:
        return False
    return pc.greater(b, p.ceil) if p.exact else pc.greater_equal(b, p.ceil)


def _ge(b: pa.Array | None, p: _Point) -> Cond:  # b >= v
    return False if b is None or p.ceil is None else pc.greater_equal(b, p.ceil)


def _lt(b: pa.Array | None, p: _Point) -> Cond:  # b < v
    if b is None or p.floor is None:
        return False
    return pc.less(b, p.floor) if p.exact else pc.less_equal(b, p.floor)


def _le(b: pa.Array | None, p: _Point) -> Cond:  # b <= v
    return False if b is None or p.floor is None else pc.less_equal(b, p.floor)


def _point_eq(inp: LeafInput, p: _Point) -> Cond:
    if inp.mn is inp.mx:  # a partition value: min and max are the same array
        return _eq(inp.mn, p)
    return _k_and(_eq(inp.mn, p), _eq(inp.mx, p))


def _outside(inp: LeafInput, p: _Point) -> Cond:
    return _k_or(_gt(inp.mn, p), _lt(inp.mx, p))


def _conditions(op: LeafOperator, points: tuple[_Point, ...], inp: LeafInput,
                probe: Probe | None = None) -> tuple[Plane, Plane]:
    """``(yes, no)``: every row is YES (resp. NO) for files in the range state."""
    if op == Op.IS_NULL:
        return False, p_not(inp.has_null)
    yes: Cond
    no: Cond
    if op in (Op.EQUALS, Op.NULL_SAFE_EQUALS) and not points[0].exact:
        yes, no = False, True  # no column value equals a literal outside the domain (int = 1.5)
    elif op in (Op.EQUALS, Op.NULL_SAFE_EQUALS):
        yes, no = _point_eq(inp, points[0]), _outside(inp, points[0])
    elif op == Op.LESS_THAN:
        yes, no = _lt(inp.mx, points[0]), _ge(inp.mn, points[0])
    elif op == Op.LESS_THAN_EQUALS:
        yes, no = _le(inp.mx, points[0]), _gt(inp.mn, points[0])
    elif op == Op.IN:
        yes, no = False, True
        for p in (p for p in points if p.exact):  # items outside the domain can never match
            yes = _k_or(yes, _point_eq(inp, p))
            no = _k_and(no, _outside(inp, p)) if no is not True else _outside(inp, p)
    elif op == Op.BETWEEN:
        lo, hi = points
        yes = _k_and(_ge(inp.mn, lo), _le(inp.mx, hi))
        no = _k_or(_lt(inp.mx, lo), _gt(inp.mn, hi))
    else:  # pragma: no cover - LeafOperator is closed
        raise AssertionError(op)
    yes_f, no_f = _filled(yes), _filled(no)
    if probe is not None and inp.membership is not None:
        yes_f, no_f = refine(probe, inp.membership, yes_f, no_f)
    if op == Op.NULL_SAFE_EQUALS:
        yes_f = p_and(yes_f, p_not(inp.has_null))
    return yes_f, no_f


def leaf_planes(op: LeafOperator, points: tuple[_Point, ...], inp: LeafInput,
                probe: Probe | None = None) -> TruthPlanes:
    """One leaf over every file (the table in the module docstring)."""
    yes, no = _conditions(op, points, inp, probe)
    y = p_or(inp.nostats, p_and(inp.rng, p_not(no)))
    n = p_or(p_or(inp.nostats, inp.empty), p_and(inp.rng, p_not(yes)))
    if op == Op.IS_NULL:
        y = p_or(y, inp.allnull)
    if op == Op.NULL_SAFE_EQUALS:
        n = p_or(n, inp.allnull)
    if op in _NO_NULL_VARIANT:
        u = inp.nostats
    else:
        u = p_or(p_or(inp.nostats, inp.allnull), p_and(inp.rng, inp.has_null))
    return TruthPlanes(y, n, u)


# ---------------------------------------------------------------- per-batch inputs
@dataclass(frozen=True, slots=True)
class _Range:
    """min / max / null count of an int64 column (one aggregate), to turn uniform masks into constants."""

    low: int | None
    high: int | None
    nulls: int

    @staticmethod
    def of(values: pa.Array | None) -> _Range:
        if values is None:
            return _Range(None, None, 0)
        extremes = pc.min_max(values)
        return _Range(extremes["min"].as_py(), extremes["max"].as_py(), values.null_count)


class _Batch:
    """One evaluation's view of the containers' statistics, caching per-source inputs."""

    def __init__(self, stats: PruningStatistics, strict: bool = False) -> None:
        self.stats = stats
        self.strict = strict
        self.length = stats.num_containers
        self._inputs: dict[object, LeafInput] = {}
        self._file: tuple[Plane, pa.Array | None, _Range, Plane] | None = None

    def file_state(self) -> tuple[Plane, pa.Array | None, _Range, Plane]:
        """``(stats_error set, num_records, its range, bad num_records)`` -- shared by every data column.

        Masks that are uniform over the batch (no footer errors, no empty files ...) are found with one min/max
        aggregate and become Python constants, which fold away in every leaf that uses them.
        """
        if self._file is None:
            error = self.stats.errors()
            errored: Plane = False if error is None or error.null_count == len(error) else pc.is_valid(error)
            records = self.stats.row_counts()
            if records is not None and records.type != pa.int64():
                records = pc.cast(records, pa.int64())
            span = _Range.of(records)
            bad: Plane = False
            if records is not None and span.low is not None and span.low < 0:
                bad = pc.fill_null(pc.less(records, 0), False)
            self._file = (errored, records, span, bad)
        return self._file

    def leaf_input(self, source: object) -> LeafInput:
        if source not in self._inputs:
            if isinstance(source, StatsColumn) and self.strict and source.hive_type.name not in STRICT_TYPES:
                self._inputs[source] = _NO_INPUT  # unknown: never proves a row true
            elif isinstance(source, StatsColumn):
                self._inputs[source] = self._stats_input(source)
            else:
                assert isinstance(source, PartitionValue)
                self._inputs[source] = self._partition_input(source)
        return self._inputs[source]

    def _stats_input(self, source: StatsColumn) -> LeafInput:
        target = domain_arrow_type(source.hive_type)
        mn, has_min, ok_min = self.stats.min_values(source.name, target)
        mx, has_max, ok_max = self.stats.max_values(source.name, target)
        nc, has_nc, ok_nc = self.stats.null_counts(source.name)
        if not (has_min or has_max or has_nc) or not (ok_min and ok_max and ok_nc):
            return _NO_INPUT
        errored, records, span, bad_records = self.file_state()
        corrupt: Cond = bad_records
        if mn is not None and mx is not None:
            corrupt = _k_or(corrupt, pc.greater(mn, mx))
        counts = _Range.of(nc)
        if nc is not None and counts.low is not None and counts.low < 0:
            corrupt = _k_or(corrupt, pc.less(nc, 0))
        # Can a null count reach num_records anywhere? Only then are there all-null (or overfull) files.
        reach = nc is not None and records is not None and counts.high is not None and span.low is not None \
            and counts.high >= span.low
        if reach:
            corrupt = _k_or(corrupt, pc.greater(nc, records))
        nostats = p_or(errored, _filled(corrupt))
        empty: Plane = False
        allnull: Plane = False
        if records is not None and span.low is not None and span.low <= 0:
            empty = p_and(p_not(nostats), pc.fill_null(pc.equal(records, 0), False))
        if reach:
            same = pc.fill_null(pc.and_kleene(pc.equal(nc, records), pc.greater(records, 0)), False)
            allnull = p_and(p_not(nostats), same)
        rng = p_not(p_or(p_or(nostats, empty), allnull))
        has_null: Plane
        if nc is None or counts.nulls:
            has_null = True if nc is None else pc.fill_null(pc.not_equal(nc, 0), True)
        elif counts.high == 0:
            has_null = False  # no file has nulls in this column
        elif counts.low is not None and counts.low > 0:
            has_null = True
        else:
            has_null = pc.not_equal(nc, 0)
        return LeafInput(mn, mx, nostats, empty, allnull, rng, has_null, membership_input(self.stats, source))

    def _partition_input(self, source: PartitionValue) -> LeafInput:
        values, unknown = source.evaluate(self.stats)
        values = single_chunk(values)
        isnull = p_and(pc.is_null(values), p_not(unknown))
        return LeafInput(values, values, unknown, False, isnull, p_not(p_or(unknown, isnull)), False)


# ---------------------------------------------------------------- the compiled program
Step = tuple[str, Any, tuple[int, ...]]  # (kind, payload, registers of the children)


class CompiledPredicate:
    """A bound tree compiled into a flat post-order program over whole columns.

    Each distinct node is one step writing one register, so a sub-expression shared by several CNF clauses is
    evaluated once.
    """

    def __init__(self, bound: BoundNode) -> None:
        self.bound = bound
        self._steps: list[Step] = []
        register: dict[int, int] = {}
        for node in postorder(bound):
            kids = tuple(register[id(c)] for c in children_of(node))
            if isinstance(node, BoundLeaf):
                step: Step = ("leaf", _compile_leaf(node), kids)
            elif isinstance(node, UnboundLeaf):
                step = ("const", _UNKNOWN, kids)
            elif isinstance(node, Constant):
                step = ("const", TruthPlanes.constant(code_of(node.value)), kids)
            elif isinstance(node, And):
                step = ("and", None, kids)
            elif isinstance(node, Or):
                step = ("or", None, kids)
            elif isinstance(node, Not):
                step = ("not", None, kids)
            else:  # pragma: no cover
                raise AssertionError(f"unexpected node {node!r}")
            register[id(node)] = len(self._steps)
            self._steps.append(step)

    def evaluate(self, data: PruningStatistics | pa.RecordBatch | pa.Table, *, strict: bool = False) -> TruthPlanes:
        """One TruthValue per container (a file: a row of an index-shaped ``data``), as planes.

        ``strict``: as sound for proving ``YES`` as for proving ``NO`` -- leaves on columns whose bounds cannot
        prove a row true (see :data:`STRICT_TYPES`) are unknown.
        """
        view = _Batch(as_statistics(data), strict)
        regs: list[TruthPlanes] = []
        for kind, payload, kids in self._steps:
            if kind == "leaf":
                leaf, points, probe = payload
                regs.append(leaf_planes(leaf.leaf.operator, points, view.leaf_input(leaf.source), probe))
            elif kind == "const":
                regs.append(payload)
            elif kind == "and":
                regs.append(planes_and([regs[k] for k in kids]))
            elif kind == "or":
                regs.append(planes_or([regs[k] for k in kids]))
            else:
                regs.append(planes_not(regs[kids[0]]))
        return regs[-1]

    def truth_values(self, batch: PruningStatistics | pa.RecordBatch | pa.Table) -> pa.Int8Array:
        """Int8 TruthValue codes (``YES=1, NO=2, NULL=4`` bit sets), one per file."""
        return self.evaluate(batch).to_codes(as_statistics(batch).num_containers)

    def keep(self, batch: PruningStatistics | pa.RecordBatch | pa.Table) -> pa.BooleanArray:
        """True for every file that may hold a matching row."""
        return self.evaluate(batch).needed(as_statistics(batch).num_containers)

    def certain(self, batch: PruningStatistics | pa.RecordBatch | pa.Table) -> pa.BooleanArray:
        """True for every container each of whose rows certainly matches (strict evaluation: exactly ``YES``)."""
        return self.evaluate(batch, strict=True).certain(as_statistics(batch).num_containers)

    def leaf_truth_values(self, batch: PruningStatistics | pa.RecordBatch | pa.Table) -> dict[int, pa.Int8Array]:
        """Each leaf's codes, keyed by the SearchArgument leaf index (for ``explain``)."""
        stats = as_statistics(batch)
        view = _Batch(stats)
        result: dict[int, pa.Int8Array] = {}
        for node in postorder(self.bound):
            if isinstance(node, BoundLeaf) and node.leaf.index not in result:
                _, points, probe = _compile_leaf(node)
                planes = leaf_planes(node.leaf.operator, points, view.leaf_input(node.source), probe)
                result[node.leaf.index] = planes.to_codes(stats.num_containers)
            elif isinstance(node, UnboundLeaf) and node.leaf.index not in result:
                result[node.leaf.index] = _UNKNOWN.to_codes(stats.num_containers)
        return result


def _compile_leaf(node: BoundLeaf) -> tuple[BoundLeaf, tuple[_Point, ...], Probe | None]:
    hive_type = node.source.hive_type
    points = tuple(_compile_point(p, hive_type) for p in node.points)
    probe = compile_probe(node.leaf.operator, node.points, hive_type) if isinstance(node.source, StatsColumn) else None
    return node, points, probe


def _compile_point(point: DomainPoint, hive_type: Any) -> _Point:
    return _Point(to_arrow_scalar(point.floor, hive_type), to_arrow_scalar(point.ceil, hive_type), point.exact)


def compile_predicate(bound: BoundNode) -> CompiledPredicate:
    """Compile a bound tree (see :class:`CompiledPredicate`)."""
    return CompiledPredicate(bound)

