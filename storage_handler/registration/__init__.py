"""Putting a Parquet dataset into the metastore and keeping it there: register, sync, describe, drop.

Owns: :mod:`.dataset` (what a folder holds: partition keys, the union schema, every file's statistics in one
pass), :mod:`.table_spec` (the table and partitions as the metastore records them: Hive's Parquet classes plus the
handler's ``hsh.*`` parameters), :mod:`.register` and :mod:`.sync` (plans, then applies them through the meta
hook), :mod:`.hooked` (metastore calls wrapped in the meta hook as Hive's client wraps them), :mod:`.lanes` (batches of
metastore calls run a few at a time), the statistics published from the index (:mod:`.statistics` and the modules
it names; :mod:`.background` publishes partitions' after ``register`` returns) and :mod:`.describe`.
May import: the handler and everything below it, including the bottom package ``metastore`` (the Thrift client).
"""
