"""The index: one row per data file, its columns and schema, and its store (the commit protocol).

Owns: :mod:`.file_stats` (one file's statistics and the options they were read with), :mod:`.layout` (the
index's columns -- the one home of their names -- its Arrow schema and helpers), :mod:`.rows` (many files' rows
at once from raw footer statistics), :mod:`.versions` (immutable snapshots committed by create-if-absent, like
Delta's log), :mod:`.store` (loading and committing, validated) and :mod:`.cache` (snapshots kept warm for
queries, exact by version).
May import: ``stats.membership``, ``stats.footers``, ``stats.files`` and the layers below ``stats``.
"""
