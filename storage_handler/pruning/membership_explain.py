"""Name the bloom filter or value list that decided a leaf for one file (``hsh explain``).

A leaf's value with the file's filters is compared with its value from min/max alone: where the filters took away
YES (or, under a NOT, NO), the note names which structure did it, e.g. ``ruled out by the bloom filter of uid``.
Only for explaining a handful of files: it evaluates the one-row batch up to four times.
"""

from __future__ import annotations

import pyarrow as pa

from storage_handler.pruning.bind import BoundLeaf, StatsColumn
from storage_handler.pruning.tree import postorder
from storage_handler.pruning.truth_codes import NO, YES
from storage_handler.pruning.vectorized import CompiledPredicate
from storage_handler.stats.columns import BLOOM_FILTERS, VALUE_LISTS

_NAMES = {BLOOM_FILTERS: "bloom filter", VALUE_LISTS: "value list"}


def membership_notes(compiled: CompiledPredicate, row: pa.RecordBatch | pa.Table) -> dict[int, str]:
    """Leaf index -> note, for the leaves of a one-row batch that the file's filters decided."""
    present = [c for c in (BLOOM_FILTERS, VALUE_LISTS) if c in row.schema.names]
    if not present:
        return {}
    full = _codes(compiled, row)
    plain = _codes(compiled, row.drop_columns(present))
    alone = {c: _codes(compiled, row.drop_columns([o for o in present if o != c])) for c in present}
    columns = {n.leaf.index: n.source.name for n in postorder(compiled.bound)
               if isinstance(n, BoundLeaf) and isinstance(n.source, StatsColumn)}
    notes: dict[int, str] = {}
    for index, code in full.items():
        for bit, verb in ((YES, "ruled out"), (NO, "made certain")):
            if code & bit or not plain.get(index, 0) & bit or index not in columns:
                continue
            which = [_NAMES[c] for c in present if not alone[c][index] & bit]
            notes[index] = f"{verb} by the {' and the '.join(which) or 'filters'} of {columns[index]}"
    return notes


def _codes(compiled: CompiledPredicate, batch: pa.RecordBatch | pa.Table) -> dict[int, int]:
    return {i: codes[0].as_py() for i, codes in compiled.leaf_truth_values(batch).items()}
