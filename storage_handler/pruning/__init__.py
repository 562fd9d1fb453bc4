"""File pruning: a SearchArgument evaluated over the column-statistics index and partition values.

Pipeline (each step once per query, never per file)::

    SearchArgument --from_sarg--> evaluator tree --bind--> bound tree --compile--> CompiledPredicate
                                                                                     |  one pass of pyarrow.compute
    scan-file batch (index rows: stats + partition_values) + selection  ------------>  new selection

``PredicateEvaluator`` wraps the three steps; ``explain`` says which leaf pruned a file. The tests keep a
per-file scalar oracle of their own (``tests/pruning/scalar_oracle.py``).
"""

from __future__ import annotations

from storage_handler.pruning.bind import BoundLeaf, StatsColumn, UnboundLeaf, bind
from storage_handler.pruning.domain import DomainPoint, UnconvertibleLiteral, convert_literal
from storage_handler.pruning.evaluator import PredicateEvaluator
from storage_handler.pruning.explain import Explanation, LeafVerdict, explain
from storage_handler.pruning.partitions import ElementAt, PartitionValue, element_at, partition_value
from storage_handler.pruning.tree import And, Constant, Leaf, Not, Or, from_sarg, leaf_text
from storage_handler.pruning.truth_codes import NO, NULL, YES, TruthPlanes, code_of, truth_of
from storage_handler.pruning.vectorized import CompiledPredicate, compile_predicate

__all__ = [
    "NO", "NULL", "YES", "And", "BoundLeaf", "CompiledPredicate", "Constant", "DomainPoint", "ElementAt",
    "Explanation", "Leaf", "LeafVerdict", "Not", "Or", "PartitionValue", "PredicateEvaluator",
    "StatsColumn", "TruthPlanes", "UnboundLeaf", "UnconvertibleLiteral", "bind", "code_of", "compile_predicate",
    "convert_literal", "element_at", "explain", "from_sarg", "leaf_text", "partition_value", "truth_of",
]
