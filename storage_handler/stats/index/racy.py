"""Index rows of files changed in the last clock tick of a coarse file system are recorded untrusted.

An index row is trusted while the listing gives its file the same size, modification time and version tag (on a
local disk the change time in nanoseconds, which every write and rename moves). That holds only while the file
system's clock ticks finer than writes come: on ext3, HFS+, FAT and many NFS, SMB and FUSE mounts times have whole
seconds, so a file indexed right after it was written and then rewritten with the same size in the same second
keeps size, times and tag -- and its old row would prune files holding matching rows (git's "racy clean").

Rule: a row whose local version tag and modification time are both whole seconds, and whose file changed less than
:data:`RACY_MS` before the row was made, is recorded without a version tag: no listing matches it, every query
keeps the file, and the next refresh or follower poll reads it again (by then the second is over). On file
systems with sub-second times (ext4, XFS, APFS: this rule's whole-second test fails there but once in 10**9)
rows are trusted at once, so indexing at commit keeps pruning new files immediately. Object stores' ETags change
with the content, so they are never racy.
"""

from __future__ import annotations

import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

RACY_MS = 2_000
_NS_PER_S = 1_000_000_000


def trusted_versions(mtimes_ms: np.ndarray, versions: pa.Array, now_ms: int | None = None) -> pa.Array:
    """``versions`` with the racy ones (see the module docstring) replaced by null."""
    if len(versions) == 0:
        return versions
    now = int(time.time() * 1000) if now_ms is None else now_ms
    digits = pc.fill_null(pc.match_substring_regex(versions, r"^[1-8]?[0-9]{1,18}$"), False)  # ns, in int64
    if not pc.any(digits).as_py():
        return versions
    ns = pc.cast(pc.if_else(digits, versions, "0"), pa.int64()).to_numpy(zero_copy_only=False)
    mtimes = np.asarray(mtimes_ms, dtype=np.int64)
    whole = (ns % _NS_PER_S == 0) & (mtimes % 1000 == 0)
    recent = now - np.maximum(mtimes, ns // 1_000_000) < RACY_MS
    racy = digits.to_numpy(zero_copy_only=False) & whole & recent
    if not racy.any():
        return versions
    return pc.if_else(pa.array(racy), pa.scalar(None, versions.type), versions)
