"""The JVM half of the Spark integration: compiling it for the user's Spark, and the settings that load it.

``java/`` holds a Spark session extension (``spark.sql.extensions``) that reads registered tables with Spark's
native Parquet scan over the files the handler keeps. It is laid out like Iceberg's per-Spark-line modules: one
shared core, and a small source set per Spark line only where Spark's or Scala's API differs::

    java/core/   everything, written against what all supported lines share
    java/v3.5/   Spark 3.5 (Scala 2.12): scala.collection.Seq in FileIndex, JavaConverters, 4-field LogicalRelation
    java/v4.0/   Spark 4.0 through 4.3 (Scala 2.13): immutable.Seq, scala.jdk.javaapi, 5-field LogicalRelation

The Spark in use (:func:`storage_handler.home.spark_version`, read from its jars) picks the source set, and the
classes are compiled with the JDK's ``javac`` against that Spark's own jars -- no build tool, no download --
once per source version and Spark version, into the build cache (:mod:`storage_handler.toolchain`).

Decision: without ``javac`` (a JRE only) the extension is left out with a warning and Spark reads registered tables
as the plain Hive tables they are (no pruning); ``read_table`` still prunes.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from storage_handler.errors import UnsupportedSparkError
from storage_handler.home import SparkVersion, spark_conf_dir, spark_jars, spark_version
from storage_handler.toolchain import compile_java

log = logging.getLogger(__name__)
EXTENSION_CLASS = "hsh.spark.HshExtensions"
#: Spark's session catalog, re-using a registered table's definition while the metastore's is unchanged
SESSION_CATALOG_CLASS = "hsh.spark.HshSessionCatalog"
SESSION_CATALOG_SETTING = "spark.sql.catalog.spark_catalog"
SOURCES = Path(__file__).with_name("java")
CONTRACT = Path(__file__).parent.parent / "contract.json"  # the Java-Python contract, loaded by Contract.java

#: the per-line source set of each supported Spark line
SOURCE_SETS: dict[tuple[int, int], str] = {
    (3, 5): "v3.5", (4, 0): "v4.0", (4, 1): "v4.0", (4, 2): "v4.0", (4, 3): "v4.0",
}


def supported_lines() -> str:
    return ", ".join(f"{major}.{minor}" for major, minor in SOURCE_SETS)


def source_set(version: SparkVersion) -> str:
    """The per-line source folder for ``version``; a one-line error for a Spark line this package does not know."""
    try:
        return SOURCE_SETS[version.line]
    except KeyError:
        raise UnsupportedSparkError(
            f"{version} is not supported by the session extension: supported Spark lines are {supported_lines()}; "
            "set spark.hsh.nativeScan=false to read registered tables as plain Hive tables, or use read_table()"
        ) from None


def extension_sources(version: SparkVersion) -> list[Path]:
    """The Java files compiled for ``version``: the shared core and its line's source set."""
    return sorted([*(SOURCES / "core").rglob("*.java"), *(SOURCES / source_set(version)).rglob("*.java")])


def extension_classpath() -> Path | None:
    """The compiled session extension for the Spark in use (see the module docstring); None without javac."""
    version = spark_version()
    return compile_java(
        f"extension-spark{version.spark}", extension_sources(version), f"{spark_jars()}/*",
        key=f"spark {version.spark} scala {version.scala}",
        resources=[(CONTRACT, "hsh/spark/contract.json"), *line_resources(version)],
    )


def line_resources(version: SparkVersion) -> list[tuple[Path, str]]:
    """Non-Java files of the line's source set (e.g. ``META-INF/services`` entries), with their class-path names."""
    root = SOURCES / source_set(version)
    return [(f, f.relative_to(root).as_posix()) for f in sorted(root.rglob("*")) if f.is_file()
            and f.suffix != ".java"]


def native_scan_conf() -> dict[str, str]:
    """Spark settings loading the session extension into a driver (empty, with a warning, without javac).

    They include the handler's session catalog (``hsh.spark.HshSessionCatalog``: Spark's own, re-using a
    registered table's definition while the metastore's table is unchanged) unless the Spark installation's
    ``spark-defaults.conf`` already names one (Delta's, Iceberg's): that one is kept, and registered tables are
    pruned all the same, each query then paying Spark's own table lookup."""
    classpath = extension_classpath()
    if classpath is None:
        log.warning("no javac (JDK) found: spark.sql reads registered tables natively without pruning; "
                    "read_table() still prunes; install a JDK 17 for Spark's native scan")
        return {}
    conf = {
        "spark.sql.extensions": EXTENSION_CLASS,
        "spark.driver.extraClassPath": str(classpath),
        # the JVM asks this interpreter which files to read: it has this project installed
        "spark.hsh.python": sys.executable,
    }
    if SESSION_CATALOG_SETTING not in spark_defaults():
        conf[SESSION_CATALOG_SETTING] = SESSION_CATALOG_CLASS
    return conf


def spark_defaults() -> dict[str, str]:
    """The settings of the Spark installation's ``spark-defaults.conf`` (``$SPARK_CONF_DIR``, else
    ``$SPARK_HOME/conf``); empty when there is none. Spark reads it when the JVM starts, after this package has
    chosen its settings, so a catalog the installation configures is found here."""
    folder = spark_conf_dir()
    path = None if folder is None else folder / "spark-defaults.conf"
    if path is None or not path.is_file():
        return {}
    out: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        parts = line.strip().split(None, 1)
        if parts and not parts[0].startswith("#"):
            out[parts[0]] = parts[1].strip() if len(parts) > 1 else ""
    return out
