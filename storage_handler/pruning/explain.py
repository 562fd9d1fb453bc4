"""Explain one file's verdict: which leaf (or leaves) ruled it out.

A file is pruned when its TruthValue lacks YES. Walking down from the root: an AND lacks YES because some child
does (each such child alone suffices, all are reported); an OR lacks YES because every child does; a NOT lacks YES
because its child lacks NO, and the walk continues with YES and NO swapped. The walk ends at leaves (or constants),
which are reported with their own TruthValue and whether they sit under a NOT (``negated``: the leaf ruled the file
out by being certainly true rather than certainly false). Used by ``hsh explain``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import pyarrow as pa

from storage_handler.pruning.bind import BoundLeaf, UnboundLeaf
from storage_handler.pruning.membership_explain import membership_notes
from storage_handler.pruning.tree import And, Constant, Not, Or, children_of, leaf_text, postorder
from storage_handler.pruning.truth_codes import NO, YES, and_codes, code_of, not_code, or_codes, truth_of
from storage_handler.pruning.vectorized import CompiledPredicate
from storage_handler.sarg import TruthValue


@dataclass(frozen=True, slots=True)
class LeafVerdict:
    """A leaf's value for one file. ``index`` is the SearchArgument leaf number (-1 for a constant)."""

    index: int
    text: str
    value: TruthValue
    negated: bool = False
    note: str = ""

    def __str__(self) -> str:
        name = f"leaf-{self.index} {self.text}" if self.index >= 0 else self.text
        prefix = "not " if self.negated else ""
        suffix = f" ({self.note})" if self.note else ""
        return f"{prefix}{name} = {self.value.name}{suffix}"


@dataclass(frozen=True, slots=True)
class Explanation:
    """One file's verdict: its TruthValue, whether it is kept, the deciding leaves, and every leaf's value."""

    row: int
    value: TruthValue
    kept: bool
    reasons: tuple[LeafVerdict, ...]
    leaves: tuple[LeafVerdict, ...]

    def __str__(self) -> str:
        if self.kept:
            return f"file {self.row}: kept ({self.value.name})"
        because = "; ".join(str(r) for r in self.reasons)
        return f"file {self.row}: pruned ({self.value.name}) by {because}"


def explain(compiled: CompiledPredicate, batch: pa.RecordBatch | pa.Table, row: int) -> Explanation:
    """Explain the verdict for file ``row`` of ``batch``."""
    if not 0 <= row < batch.num_rows:
        raise IndexError(f"row {row} is outside the batch of {batch.num_rows} files")
    leaf_codes = {i: codes[0].as_py() for i, codes in compiled.leaf_truth_values(batch.slice(row, 1)).items()}
    notes = membership_notes(compiled, batch.slice(row, 1))  # a bloom filter / value list decided a leaf
    value: dict[int, int] = {}
    verdicts: dict[int, LeafVerdict] = {}
    for node in postorder(compiled.bound):
        if isinstance(node, (BoundLeaf, UnboundLeaf)):
            code = leaf_codes[node.leaf.index]
            note = node.reason if isinstance(node, UnboundLeaf) else notes.get(node.leaf.index, "")
            verdicts.setdefault(node.leaf.index, LeafVerdict(node.leaf.index, leaf_text(node.leaf), truth_of(code),
                                                             note=note))
        elif isinstance(node, Constant):
            code = code_of(node.value)
        elif isinstance(node, And):
            code = and_codes([value[id(c)] for c in node.children])
        elif isinstance(node, Or):
            code = or_codes([value[id(c)] for c in node.children])
        else:
            assert isinstance(node, Not)
            code = not_code(value[id(node.child)])
        value[id(node)] = code
    root = value[id(compiled.bound)]
    kept = bool(root & YES)
    reasons = () if kept else tuple(replace(r, note=notes.get(r.index, "")) for r in _reasons(compiled.bound, value))
    return Explanation(row, truth_of(root), kept, reasons, tuple(verdicts[i] for i in sorted(verdicts)))


def _reasons(root: object, value: dict[int, int]) -> list[LeafVerdict]:
    """Walk down from the root along nodes lacking the wanted bit (iteratively)."""
    found: list[LeafVerdict] = []
    seen: set[tuple[int, bool]] = set()
    stack: list[tuple[object, int]] = [(root, YES)]
    while stack:
        node, want = stack.pop()
        code = value[id(node)]
        if code & want:
            continue
        if isinstance(node, (BoundLeaf, UnboundLeaf)):
            key = (node.leaf.index, want == NO)
            if key not in seen:
                seen.add(key)
                found.append(LeafVerdict(node.leaf.index, leaf_text(node.leaf), truth_of(code), negated=want == NO))
        elif isinstance(node, Constant):
            found.append(LeafVerdict(-1, f"constant {node.value.name}", node.value, negated=want == NO))
        elif isinstance(node, Not):
            stack.append((node.child, NO if want == YES else YES))
        else:
            stack.extend((child, want) for child in reversed(children_of(node)))
    return found
