"""Where things live on this machine: the state folder of the hsh processes and the installed Spark.

``state_home`` (``$HSH_HOME``, default ``~/.local/state/hsh``) holds the embedded metastore and HiveServer2
(``metastore.local``), the compiled helpers (:mod:`storage_handler.compiled`) and the scan metrics. ``spark_home``
is the pyspark package, whose ``jars/`` both the metastore launcher and the Spark helpers use. One function each,
so every part agrees, and the Spark modules need not import the metastore launcher to ask.
"""

from __future__ import annotations

import os
from pathlib import Path


def spark_home() -> Path:
    """The installed pyspark package folder, which holds ``jars/`` and ``bin/spark-submit``."""
    import pyspark  # optional and heavy: only callers that start a JVM pay for it

    return Path(pyspark.__file__).resolve().parent


def state_home() -> Path:
    """The state folder: ``$HSH_HOME`` or ``~/.local/state/hsh``."""
    return Path(os.environ.get("HSH_HOME") or Path.home() / ".local" / "state" / "hsh").expanduser().resolve()
