"""Where things live on this machine: the state folder, the build cache, and the installed Spark.

* ``state_home`` (``$HSH_HOME``, default ``~/.local/state/hsh``) holds what the hsh processes keep: the embedded
  metastore and HiveServer2, logs, scan metrics.
* ``cache_home`` (``$HSH_CACHE``, default ``$XDG_CACHE_HOME/hsh`` or ``~/.cache/hsh``) holds what this package
  compiles for itself (:mod:`storage_handler.compiled`): the Spark extension's classes, the C lister, the footer
  reader. Each artifact sits in a folder named by a hash of its sources and of what it was built against, so
  one cache serves many state folders (every test, every user of a shared machine) and several Spark or
  pyarrow versions side by side without ever loading another build's output.
* ``spark_home`` is the Spark the user runs: ``$SPARK_HOME`` when it is set and holds ``jars/`` (a cluster's
  Spark, with pyspark on ``$SPARK_HOME/python``), else the installed pyspark package, which has the same
  ``jars/`` and ``bin/`` inside. :func:`spark_version` reads which Spark and Scala that is from its jars.

One function each, so every part agrees, and the Spark modules need not import the metastore launcher to ask.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from storage_handler.errors import ConfigurationError


def state_home() -> Path:
    """The state folder: ``$HSH_HOME`` or ``~/.local/state/hsh``."""
    return Path(os.environ.get("HSH_HOME") or Path.home() / ".local" / "state" / "hsh").expanduser().resolve()


def cache_home() -> Path:
    """The build cache: ``$HSH_CACHE``, else ``$XDG_CACHE_HOME/hsh``, else ``~/.cache/hsh``."""
    explicit = os.environ.get("HSH_CACHE")
    if explicit:
        return Path(explicit).expanduser().resolve()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return (Path(base) / "hsh").expanduser().resolve()


def spark_home() -> Path:
    """The Spark installation in use: ``$SPARK_HOME`` when it has ``jars/``, else the pyspark package folder."""
    explicit = os.environ.get("SPARK_HOME")
    if explicit and (Path(explicit) / "jars").is_dir():
        return Path(explicit).expanduser().resolve()
    try:
        import pyspark  # optional and heavy: only callers that start a JVM pay for it
    except ImportError as e:
        raise ConfigurationError(
            "no Spark found: install pyspark (pip install 'hive-storage-handler[spark]') or set SPARK_HOME to a "
            "Spark installation"
        ) from e
    return Path(pyspark.__file__).resolve().parent


def spark_conf_dir(environ: Mapping[str, str] | None = None) -> Path | None:
    """Spark's configuration folder as a cluster's Spark finds it: ``$SPARK_CONF_DIR``, else ``$SPARK_HOME/conf``;
    None when neither is set (``spark-defaults.conf`` and ``hive-site.xml`` live there)."""
    env = os.environ if environ is None else environ
    if env.get("SPARK_CONF_DIR"):
        return Path(env["SPARK_CONF_DIR"])
    return Path(env["SPARK_HOME"], "conf") if env.get("SPARK_HOME") else None


def spark_jars() -> Path:
    """The ``jars/`` folder of :func:`spark_home`."""
    jars = spark_home() / "jars"
    if not jars.is_dir():
        raise ConfigurationError(f"the Spark at {spark_home()} has no jars/ folder: set SPARK_HOME to a full "
                                 "Spark installation or reinstall pyspark")
    return jars


@dataclass(frozen=True, slots=True)
class SparkVersion:
    """The Spark and Scala versions of a Spark installation, read from its ``spark-core`` jar's name."""

    spark: str  # "3.5.9"
    scala: str  # "2.12"

    @property
    def line(self) -> tuple[int, int]:
        """(major, minor): the Spark line, e.g. (3, 5)."""
        major, minor = self.spark.split(".")[:2]
        return int(major), int(minor)

    def __str__(self) -> str:
        return f"Spark {self.spark} (Scala {self.scala})"


_CORE_JAR = re.compile(r"spark-core_(\d+\.\d+)-(\d+\.\d+\.\d+)[^/]*\.jar$")


@functools.cache
def _version_of(jars: Path) -> SparkVersion:
    for jar in sorted(jars.glob("spark-core_*.jar")):
        match = _CORE_JAR.match(jar.name)
        if match:
            return SparkVersion(spark=match.group(2), scala=match.group(1))
    raise ConfigurationError(f"cannot tell the Spark version of {jars}: it has no spark-core_<scala>-<version>.jar")


def spark_version() -> SparkVersion:
    """The version of the Spark in use (:func:`spark_home`)."""
    return _version_of(spark_jars())
