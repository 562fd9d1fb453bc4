"""Bloom filters and value lists: what a point lookup on an unclustered column prunes by.

Owns: :mod:`.spec` (which columns get which structure, recorded in the index), :mod:`.bloom` (Parquet's
split-block filter, hashed like Parquet), :mod:`.parquet_bloom` (filters a writer put in the footer),
:mod:`.columns` (a file's filters and lists, read in the same file open as its footer, as index columns) and
:mod:`.refresh` (adding or changing them on an existing index without reading footers again).
May import: ``stats.footers`` (value conversion), ``stats.files`` and the layers below ``stats``.
"""
