"""SearchArgument (SARG): Hive's model of a pushed-down filter, reproduced exactly in Python.

A SearchArgument is a list of predicate leaves (``x = 1``, ``y IN (...)``, ``z IS NULL``) and an expression tree
over them in conjunctive normal form. Building one applies Hive's normalization, and ``to_string()`` /
``to_old_string()`` print what Hive's storage-api 2.8.1 prints for the same builder calls, character for
character - checked against the real jar by ``tests/sarg``. Serialization for the ``sarg.pushdown`` job property is
in :mod:`storage_handler.sarg.serde`.
"""

from __future__ import annotations

from storage_handler.sarg.builder import Builder, SearchArgumentFactory
from storage_handler.sarg.leaf import LeafOperator, LeafType, PredicateLeaf
from storage_handler.sarg.normalize import CNF_COMBINATIONS_THRESHOLD
from storage_handler.sarg.search_argument import SearchArgument
from storage_handler.sarg.tree import ExpressionTree, ExprOp
from storage_handler.sarg.truth import TruthValue

__all__ = [
    "CNF_COMBINATIONS_THRESHOLD",
    "Builder",
    "ExprOp",
    "ExpressionTree",
    "LeafOperator",
    "LeafType",
    "PredicateLeaf",
    "SearchArgument",
    "SearchArgumentFactory",
    "TruthValue",
]
