"""The build tools this package uses on the user's machine, and the one cache of what it builds with them.

Three things are compiled on first use: the Spark session extension (Java, against the user's Spark), the
embedded metastore's loopback launcher (Java, against the same jars), and two small native helpers (C and C++,
the second against the installed pyarrow). Each is built once into ``cache_home()/<kind>/<hash>``, where the
hash covers the sources, the command and whatever the build depends on (the Spark and Scala versions, the
pyarrow build): a change of any of them builds anew, and two versions never load each other's output.

Several processes may build at once (a Spark session and a Thrift server; prune-service processes; parallel
test runs). One rule for all: build into a temporary sibling folder and rename it into place, so no process
ever loads half an artifact; when another process won the race, its identical folder is used.

A bottom module: it imports only :mod:`storage_handler.errors` and :mod:`storage_handler.home`, so the metastore
launchers (``metastore/``) and the Spark side use the same ``find_java`` and the same compile step.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from storage_handler.errors import ConfigurationError, JavaNotFoundError
from storage_handler.home import cache_home


def find_java() -> str:
    """Path of a ``java`` executable ($JAVA_HOME first, then PATH), or a one-line error saying what to install."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").exists():
        return str(Path(java_home) / "bin" / "java")
    found = shutil.which("java")
    if not found:
        raise JavaNotFoundError(
            "Java 17 is required (the metastore and Spark are JVM programs) but no `java` was found on PATH or in "
            "$JAVA_HOME; install a JDK 17 (e.g. `apt-get install openjdk-17-jre-headless`) and retry"
        )
    return found


def find_javac() -> str | None:
    """Path of ``javac`` ($JAVA_HOME first, then PATH); None with a JRE only."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "javac").exists():
        return str(Path(java_home) / "bin" / "javac")
    return shutil.which("javac")


def build_once(target: Path, build: Callable[[Path], None]) -> Path:
    """``target``, built by ``build(folder)`` into a temporary folder and renamed into place unless it exists."""
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = tempfile.mkdtemp(dir=target.parent, prefix=".compiling-")
    try:
        build(Path(tmp))
        try:
            os.rename(tmp, target)
        except OSError:
            if not target.is_dir():  # unless another process won the race (then its build is used)
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def content_hash(sources: Sequence[Path], *extra: str) -> str:
    """16 hex digits over the sources' names and bytes and ``extra`` (what the build depends on)."""
    digest = hashlib.sha256()
    for source in sources:
        digest.update(source.name.encode() + b"\0" + source.read_bytes() + b"\0")
    digest.update("\0".join(extra).encode())
    return digest.hexdigest()[:16]


def compile_java(
    name: str,
    sources: Sequence[Path],
    classpath: str,
    *,
    key: str = "",
    resources: Sequence[tuple[Path, str]] = (),
) -> Path | None:
    """Classes of ``sources`` compiled against ``classpath``, in ``cache_home()/jvm/<name>-<hash>``; None
    without javac.

    The hash covers the sources, ``resources`` ((file, class-path name) pairs copied next to the classes) and
    ``key`` -- the versions the classes are bound to, e.g. ``"spark 3.5.9 scala 2.12"``: a cache shared by two
    Spark installations holds one folder per version.
    """
    ordered = sorted(sources)
    digest = content_hash([*ordered, *(r for r, _ in resources)], key, *(n for _, n in resources))
    target = cache_home() / "jvm" / f"{name}-{digest}"
    if target.is_dir():
        return target
    javac = find_javac()
    if not javac:
        return None

    def build(folder: Path) -> None:
        proc = subprocess.run(
            [javac, "-nowarn", "-d", str(folder), "-cp", classpath, *map(str, ordered)],
            capture_output=True, text=True,
        )
        if proc.returncode != 0:
            raise ConfigurationError(f"could not compile {name} ({key or 'no key'}): {proc.stderr.strip()[-800:]}")
        for resource, path in resources:
            (folder / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(resource, folder / path)

    return build_once(target, build)


def native_library(name: str, sources: Sequence[Path], compiler: str, flags: Sequence[str], key: str = "") -> Path:
    """``lib<name>.so`` built from ``sources`` with ``compiler`` and ``flags`` into
    ``cache_home()/native/<hash>/``, where the hash covers the sources, the command and ``key`` (e.g. the pyarrow
    build a library links against), so a change of any of them builds anew and nothing stale is ever loaded.

    Raises ``OSError`` with the compiler's own message when the build fails. A failure is remembered next to the
    target (``<hash>.failed``), so later processes fall back at once instead of compiling again on every
    command; deleting that file makes the next process try again (after installing missing headers, say).
    """
    target = cache_home() / "native" / content_hash(list(sources), compiler, *flags, key)
    library = target / f"lib{name}.so"
    if library.is_file():
        return library
    failed = target.with_name(target.name + ".failed")
    if failed.is_file():
        raise OSError(f"{failed.read_text().strip()} (remembered in {failed}; delete it to try again)")

    def build(folder: Path) -> None:
        out = folder / library.name
        proc = subprocess.run([compiler, "-o", str(out), *map(str, sources), *flags], capture_output=True,
                              text=True, timeout=300)
        if proc.returncode != 0:
            raise OSError(f"{compiler} failed building {', '.join(s.name for s in sources)}: "
                          f"{proc.stderr.strip()[-800:]}")

    try:
        build_once(target, build)
    except OSError as exc:
        failed.parent.mkdir(parents=True, exist_ok=True)
        failed.write_text(str(exc))
        raise
    return library
