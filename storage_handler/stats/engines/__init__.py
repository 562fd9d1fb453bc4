"""Who reads many footers: a local pool, registration's one-pass scan, or a Spark job.

Owns: :mod:`.pool` (one rule sizing the pool: threads, processes, chunk size), :mod:`.chunks` (one chunk of files
read into index rows), :mod:`.local` (the engine protocol and the local engine), :mod:`.scan` (registration's
single pass: schemas and rows), :mod:`.spark` and :mod:`.spark_app` (the same work as a Spark job) and
:mod:`.memory` (returning freed Arrow memory).
May import: every other ``stats`` sub-package and the layers below ``stats``. Nothing imports the engines but
``stats.refresh`` and the layers above ``stats``.
"""
