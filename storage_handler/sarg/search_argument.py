"""The SearchArgument: de-duplicated leaves plus the expression over them, as Hive's ``SearchArgumentImpl``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from storage_handler.sarg.leaf import PredicateLeaf
from storage_handler.sarg.printing import sarg_to_old_string, tree_to_string
from storage_handler.sarg.tree import ExpressionTree
from storage_handler.sarg.truth import TruthValue


@dataclass(frozen=True, slots=True, repr=False)
class SearchArgument:
    """A built, normalized filter. Create it with ``SearchArgumentFactory.new_builder()``.

    * ``leaves`` - the distinct leaves of ``expression``, numbered depth-first (Hive's ``getLeaves()``).
    * ``expression`` - the CNF-normalized tree (Hive's ``getExpression()``); LEAF nodes index ``leaves``.
    * ``compact_expression`` - the tree before CNF expansion (NOTs pushed down, YES_NO_NULL folded, flattened;
      Hive's ``getCompactExpression()``). It never blows up, and where the CNF gave up (YES_NO_NULL past 256
      combinations) it still holds the real predicate, so it is the better tree to evaluate.
      Its LEAF nodes index ``compact_leaves``.
    * ``extra_leaves`` - leaves only the compact expression uses (dropped from ``expression`` by the CNF
      threshold). Hive leaves their id at -1; we number them after ``leaves`` so the compact tree stays usable.
    """

    leaves: tuple[PredicateLeaf, ...]
    expression: ExpressionTree
    compact_expression: ExpressionTree
    extra_leaves: tuple[PredicateLeaf, ...] = ()

    @property
    def compact_leaves(self) -> tuple[PredicateLeaf, ...]:
        """The leaf list ``compact_expression`` indexes: ``leaves`` followed by ``extra_leaves``."""
        return self.leaves + self.extra_leaves

    def evaluate(self, leaf_values: Sequence[TruthValue]) -> TruthValue:
        """Hive's ``SearchArgument.evaluate``: the CNF expression given one TruthValue per leaf (by index)."""
        return self.expression.evaluate(leaf_values)

    def evaluate_compact(self, leaf_values: Sequence[TruthValue]) -> TruthValue:
        """Evaluate ``compact_expression`` given one TruthValue per entry of ``compact_leaves``."""
        return self.compact_expression.evaluate(leaf_values)

    def to_string(self) -> str:
        """Hive 2.8.1's ``SearchArgumentImpl.toString()``: the CNF expression with leaves inlined."""
        return tree_to_string(self.expression, self.leaves)

    def to_old_string(self) -> str:
        """Hive's ``toOldString()``: ``leaf-0 = (EQUALS event_id 1), expr = leaf-0``."""
        return sarg_to_old_string(self.leaves, self.expression)

    def __str__(self) -> str:
        return self.to_string()

    def __repr__(self) -> str:
        return f"SearchArgument<{self.to_old_string()}>"
