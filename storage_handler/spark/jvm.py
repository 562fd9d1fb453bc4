"""The JVM half of the Spark integration: compiling it, and the settings that load it into a Spark driver.

``java/hsh/spark/*.java`` is a Spark session extension (``spark.sql.extensions``) that reads registered tables
with Spark's native Parquet scan over the files the handler keeps. It is compiled here with the JDK's ``javac``
against the jars inside the pyspark wheel -- no build tool, no download -- once per source version, into
``$HSH_HOME/jvm/<hash>/``, and put on the driver's class path.

Decision: without ``javac`` (a JRE only) the extension is left out with a warning and Spark reads registered tables
as the plain Hive tables they are (no pruning); ``read_table`` and ``spark.read.format("hsh")`` still prune.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from storage_handler.compiled import build_once
from storage_handler.errors import ConfigurationError
from storage_handler.home import spark_home, state_home

log = logging.getLogger(__name__)
EXTENSION_CLASS = "hsh.spark.HshExtensions"
SOURCES = Path(__file__).with_name("java")
CONTRACT = Path(__file__).parent.parent / "contract.json"  # the Java-Python contract, loaded by Contract.java


def find_javac() -> str | None:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "javac").exists():
        return str(Path(java_home) / "bin" / "javac")
    return shutil.which("javac")


def compile_java(sources: Sequence[Path], target_root: Path, resources: Sequence[tuple[Path, str]] = ()) -> Path | None:
    """Compile ``sources`` into ``target_root/<hash of the sources>`` (reused when present); None without javac.

    ``resources`` are (file, class-path name) pairs copied next to the classes (and hashed with the sources).
    The classes are compiled into a temporary folder and renamed into place, so concurrent callers (a session and
    a Thrift server starting together) never see half a class folder.
    """
    digest = hashlib.sha256()
    for source in sorted(sources):
        digest.update(source.name.encode() + b"\0" + source.read_bytes())
    for resource, name in resources:
        digest.update(name.encode() + b"\0" + resource.read_bytes())
    target = target_root / digest.hexdigest()[:16]
    if target.is_dir():
        return target
    javac = find_javac()
    if not javac:
        return None

    def build(folder: Path) -> None:
        proc = subprocess.run(
            [javac, "-nowarn", "-d", str(folder), "-cp", f"{spark_home() / 'jars'}/*", *map(str, sorted(sources))],
            capture_output=True, text=True,
        )
        if proc.returncode != 0:
            raise ConfigurationError(f"could not compile {sources[0].parent}: {proc.stderr.strip()[-800:]}")
        for resource, name in resources:
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(resource, folder / name)

    return build_once(target, build)


def extension_classpath() -> Path | None:
    """The compiled session extension (see the module docstring); None without javac."""
    return compile_java(sorted(SOURCES.rglob("*.java")), state_home() / "jvm",
                        [(CONTRACT, "hsh/spark/contract.json")])


def native_scan_conf() -> dict[str, str]:
    """Spark settings loading the session extension into a driver (empty, with a warning, without javac)."""
    classpath = extension_classpath()
    if classpath is None:
        log.warning("no javac (JDK) found: spark.sql reads registered tables natively without pruning; "
                    "read_table() and spark.read.format('hsh') still prune; install a JDK 17 for Spark's native scan")
        return {}
    return {
        "spark.sql.extensions": EXTENSION_CLASS,
        "spark.driver.extraClassPath": str(classpath),
        # the JVM asks this interpreter which files to read: it has this project installed
        "spark.hsh.python": sys.executable,
    }
