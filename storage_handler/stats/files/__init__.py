"""A table's files: the walk of its folders, the listing as columns, and its comparison with an index.

Owns: :mod:`.walk` (the real data files under a table folder, by Hive's path rules), :mod:`.file_list` (a listing
as Arrow columns, never a Python object per file), :mod:`.diff` (which listed files an index already describes).
May import: :mod:`storage_handler.storage`, the bottom modules (errors, types, hive_paths, ...). Nothing else of
``stats``.
"""
