"""Reading Parquet footers: their statistics as columns, guarded, and turned into table-typed bounds.

Owns: :mod:`.thrift_compact` (the footer's Thrift bytes) and :mod:`.guard` (which chunks pyarrow cannot decode,
or would decode with half bounds), :mod:`.raw` (a chunk of footers' statistics as arrays) and
:mod:`.native_reader` (the same, read by the Parquet C++ library of the installed pyarrow), :mod:`.convert` (one
footer value as a value of the table column's type, conservatively) and :mod:`.bounds` (every file's min / max /
null count at once).
May import: ``stats.files`` and the layers below ``stats``. Not membership, the index or the engines.
"""
