"""Arrow arrays handled the same way across the supported pyarrow range (14 to 26), in one place.

Why: compute kernels of pyarrow 14 (the release a Spark 3.5 environment with numpy 1 gets) crash the process
with SIGSEGV on a ``ChunkedArray`` that has no chunks -- what filtering, ``take`` or ``is_in`` return for an
empty selection -- where newer releases return an empty result. Every place that goes on computing over such a
result, or needs one contiguous array (numpy views, positional loops), goes through :func:`one_array` first.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc


def one_array(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """``values`` as one contiguous array (a chunked array's chunks combined; an array as it is)."""
    if isinstance(values, pa.ChunkedArray):
        return values.chunk(0) if values.num_chunks == 1 else values.combine_chunks()
    return values


def true_positions(mask: pa.Array | pa.ChunkedArray) -> pa.Array:
    """The positions where the boolean ``mask`` is true (nulls are not), as an int64 array."""
    return pc.indices_nonzero(one_array(mask))
