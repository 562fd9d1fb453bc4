"""Keeping the index current as tables are written: at a handler session's commit, and by a follower for
everybody else's writes.

* ``scoped``   -- the one update both use: index exactly the files of a few partitions, copy every other row.
* ``written``  -- a handler session's write, handed over by the Spark extension at commit (the ``index`` request).
* ``stamps``   -- how a follower tells that a partition's folder changed without listing it.
* ``follower`` -- ``hsh follow``: polls the metastore and storage for many tables, resumes from its position.
* ``lag``      -- how far behind the index is: files it lacks, their bytes, the age of the oldest.

Correctness never depends on any of it: a file the index lacks, or whose size, mtime or version tag changed, is
kept by every query. This package only decides how soon new files can be pruned.
"""
