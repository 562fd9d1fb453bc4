"""``PredicateEvaluator``: a SearchArgument bound and compiled once, applied to scan-file batches.

Delta-kernel style: the caller hands over a batch of scan files (Arrow; one row per file, with the
``partition_values`` map column and, when available, the index's stats columns) and its current selection vector;
the evaluator returns the selection AND "the file may hold a matching row". Partition leaves and data leaves are
evaluated in the same pass and combined with TruthValue logic, so an OR mixing both still prunes correctly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeAlias

import pyarrow as pa
import pyarrow.compute as pc

from storage_handler.errors import FilterError
from storage_handler.pruning.bind import SchemaLike, UnboundLeaf, bind, bound_leaves
from storage_handler.pruning.explain import Explanation, explain
from storage_handler.pruning.partitions import single_chunk
from storage_handler.pruning.tree import Node, from_sarg
from storage_handler.pruning.vectorized import CompiledPredicate
from storage_handler.sarg import SearchArgument

Selection: TypeAlias = pa.BooleanArray | pa.ChunkedArray | Sequence[bool] | None


class PredicateEvaluator:
    """Bind ``predicate`` to the table's columns and compile it, once; then evaluate batches of scan files.

    ``schema`` lists the data columns and ``partition_columns`` the partition columns, each as
    ``(name, HiveType or type string)``; names match case-insensitively. ``compact=True`` evaluates the
    SearchArgument's compact (pre-CNF) expression instead of the CNF one (see ``tree.from_sarg``).
    """

    def __init__(self, predicate: SearchArgument | Node, schema: SchemaLike,
                 partition_columns: SchemaLike = (), *, compact: bool = False) -> None:
        self.tree: Node = (
            from_sarg(predicate, compact=compact) if isinstance(predicate, SearchArgument) else predicate
        )
        self.bound = bind(self.tree, schema, partition_columns)
        self.compiled = CompiledPredicate(self.bound)

    @property
    def unbound_leaves(self) -> tuple[UnboundLeaf, ...]:
        """Leaves that cannot prune (unknown column, unconvertible literal ...), with the reason."""
        return tuple(leaf for leaf in bound_leaves(self.bound) if isinstance(leaf, UnboundLeaf))

    def eval(self, batch: pa.RecordBatch | pa.Table, existing_selection: Selection = None) -> pa.BooleanArray:
        """The new selection vector: ``existing_selection AND needed``.

        A missing selection selects every file; a selection shorter than the batch selects the files past its end
        (Delta-kernel's convention) and a NULL entry counts as selected -- both keep rather than lose files.
        """
        keep = self.compiled.keep(batch)
        selection = _selection(existing_selection, batch.num_rows)
        return keep if selection is None else pc.and_(keep, selection)

    def certain(self, batch: pa.RecordBatch | pa.Table) -> pa.BooleanArray:
        """True for every file each of whose rows certainly satisfies the predicate (see
        :meth:`~storage_handler.pruning.vectorized.CompiledPredicate.certain`): what aggregates may take from
        the index instead of reading the file."""
        return self.compiled.certain(batch)

    def truth_values(self, batch: pa.RecordBatch | pa.Table) -> pa.Int8Array:
        """One TruthValue code per file (``YES=1, NO=2, NULL=4`` bit sets)."""
        return self.compiled.truth_values(batch)

    def explain(self, batch: pa.RecordBatch | pa.Table, row: int) -> Explanation:
        """Why file ``row`` of ``batch`` is kept or pruned (see :func:`~storage_handler.pruning.explain.explain`)."""
        return explain(self.compiled, batch, row)


def _selection(existing: Selection, length: int) -> pa.BooleanArray | None:
    if existing is None:
        return None
    if isinstance(existing, (pa.Array, pa.ChunkedArray)):
        selection = single_chunk(existing)
    else:
        selection = pa.array(list(existing), pa.bool_())
    if selection.type != pa.bool_():
        raise FilterError(f"the selection vector must be boolean, got {selection.type}")
    if len(selection) > length:
        raise FilterError(
            f"the selection vector has {len(selection)} entries for a batch of {length} files; pass one entry per file"
        )
    selection = pc.fill_null(selection, True)
    if len(selection) < length:
        padding = pc.fill_null(pa.nulls(length - len(selection), pa.bool_()), True)
        selection = pa.concat_arrays([selection, padding])
    return selection
