"""Bloom filters and value lists in the vectorized pass: EQUALS, NULL_SAFE_EQUALS and IN leaves.

Why this shape (ORC's ``RecordReaderImpl.evaluatePredicateBloomFilter``, made exact for value lists): for a file in
the *range* state (``vectorized.py``), min/max give each leaf a ``(yes, no)`` pair -- every row true, every row
false. A file's bloom filter or value list can only add certainty, never remove it:

* ``no`` also holds where the file's filter rules out every literal of the leaf (a bloom filter: "definitely
  absent"; a value list: no listed value is a literal);
* ``yes`` also holds where the file's value list holds only literals (``x = 'a'`` over a file whose only value is
  ``'a'``; ``x in (1, 2)`` over values {1, 2}) -- which is what makes ``<>`` and ``NOT IN`` prune.

The NULL variants come unchanged from ``leaf_planes``: with nulls in the column, a ruled-out ``=`` is ``NO_NULL``,
a ruled-out ``<=>`` is ``NO``. Literals are the leaf's *domain points* (``domain.py``): a literal that is not a value
of the column (``int_col = 1.5``) was already answered, one that does not convert at all never reaches here (its
leaf is unbound, ``YES_NO_NULL``). The exact points are encoded like the stored values (``stats/bloom.py``), once
per query; probing is one numpy gather per literal over all files.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from storage_handler.pruning.bind import BoundLeaf, BoundNode, StatsColumn
from storage_handler.pruning.domain import DomainPoint
from storage_handler.pruning.statistics import PruningStatistics
from storage_handler.pruning.tree import postorder
from storage_handler.pruning.truth_codes import Plane, p_or
from storage_handler.sarg import LeafOperator
from storage_handler.stats.membership.bloom import MEMBERSHIP_TYPES, canonical_hashes, ruled_out
from storage_handler.types import HiveType, hive_to_arrow

MEMBERSHIP_OPERATORS = frozenset({LeafOperator.EQUALS, LeafOperator.NULL_SAFE_EQUALS, LeafOperator.IN})


@dataclass(frozen=True, slots=True)
class Probe:
    """A leaf's exact literals, as column values and as their bloom-filter hashes (built once per query)."""

    values: pa.Array
    hashes: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class MembershipInput:
    """One column's filters for every file of a batch (None: the index keeps none for that column)."""

    bloom: pa.Array | None
    values: pa.Array | None


def compile_probe(op: LeafOperator, points: tuple[DomainPoint, ...], hive_type: HiveType) -> Probe | None:
    """The probe of an EQUALS / NULL_SAFE_EQUALS / IN leaf on a column that can have filters, else None."""
    if op not in MEMBERSHIP_OPERATORS or hive_type.name not in MEMBERSHIP_TYPES:
        return None
    exact = [p.floor for p in points if p.exact and p.floor is not None]
    if not exact:
        return None  # no literal is a column value: min/max already say NO
    values = pa.array(exact, hive_to_arrow(hive_type))
    return Probe(values, tuple(int(h) for h in canonical_hashes(values, hive_type)))


def membership_input(stats: PruningStatistics, source: StatsColumn) -> MembershipInput | None:
    """The filters of ``source``'s column in every container, or None when none keeps any."""
    if source.hive_type.name not in MEMBERSHIP_TYPES:
        return None
    bloom, _, ok_bloom = stats.bloom_filters(source.name)
    values, _, ok_values = stats.value_lists(source.name, hive_to_arrow(source.hive_type))
    bloom = bloom if ok_bloom else None
    values = values if ok_values else None
    if bloom is None and values is None:
        return None
    return MembershipInput(bloom, values)


def refine(probe: Probe, inp: MembershipInput, yes: Plane, no: Plane) -> tuple[Plane, Plane]:
    """Min/max's ``(yes, no)`` with what the file's filters prove added (see the module docstring)."""
    if inp.bloom is not None:
        absent = np.ones(len(inp.bloom), dtype=bool)
        for h in probe.hashes:
            absent &= ruled_out(inp.bloom, h)
            if not absent.any():
                break
        if absent.any():
            no = p_or(no, pa.array(absent, pa.bool_()))
    if inp.values is not None and inp.values.null_count < len(inp.values):
        lists = inp.values
        n = len(lists)
        flat = pc.list_flatten(lists)
        parents = pc.list_parent_indices(lists).to_numpy(zero_copy_only=False)
        hit = pc.fill_null(pc.is_in(flat, value_set=probe.values), False).to_numpy(zero_copy_only=False)
        hits = np.bincount(parents[hit], minlength=n)
        lengths = pc.fill_null(pc.list_value_length(lists), 0).to_numpy(zero_copy_only=False)
        listed = pc.is_valid(lists).to_numpy(zero_copy_only=False)
        no = p_or(no, pa.array(listed & (hits == 0), pa.bool_()))
        yes = p_or(yes, pa.array(listed & (lengths > 0) & (hits == lengths), pa.bool_()))
    return yes, no


def membership_columns(bound: BoundNode | None) -> frozenset[str]:
    """The data columns whose filters a query can use (what ``store.load`` reads of the index's filters)."""
    if bound is None:
        return frozenset()
    return frozenset(
        node.source.name for node in postorder(bound)
        if isinstance(node, BoundLeaf) and isinstance(node.source, StatsColumn)
        and node.leaf.operator in MEMBERSHIP_OPERATORS and node.source.hive_type.name in MEMBERSHIP_TYPES
    )
