"""The Java side of the Kryo tests: ``java/HiveKryoOracle.java`` compiled once per Hive release against that release's
jars (:mod:`tests.hive_releases`) and run as ONE long-lived JVM per release that answers one request line with one
response line (see the Java file's header).

``python -m tests.decode.kryo_oracle [RELEASE ...]`` regenerates ``storage_handler/decode/kryo/layouts/hive_*.py``,
one table per release, from what each release's Kryo reports (see :mod:`tests.decode.kryo_layout_render`).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests import hive_releases

SOURCE = Path(__file__).parent / "java" / "HiveKryoOracle.java"
JAVA_FLAGS = [
    "--add-opens", "java.base/java.lang=ALL-UNNAMED", "--add-opens", "java.base/java.util=ALL-UNNAMED",
    "--add-opens", "java.base/java.net=ALL-UNNAMED", "--add-opens", "java.sql/java.sql=ALL-UNNAMED",
    "-Duser.timezone=UTC", "-Dlog4j2.level=OFF", "-XX:TieredStopAtLevel=1", "-Xmx768m",
]
NEWEST = hive_releases.RELEASES[-1]


def jars_dir(release: str = NEWEST) -> Path:
    return hive_releases.jars_dir(release)


class Oracle:
    """A running ``HiveKryoOracle`` on ``release``'s jars; close() stops it (its own process, through the pipe)."""

    def __init__(self, classes: Path, release: str = NEWEST) -> None:
        self.release = release
        self.process = subprocess.Popen(
            ["java", *JAVA_FLAGS, "-cp", f"{classes}:{jars_dir(release)}/*", "HiveKryoOracle"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, encoding="utf-8",
            bufsize=1,
        )

    def ask(self, line: str) -> str:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline()
        if not answer:
            raise RuntimeError(f"the Hive {self.release} oracle died answering {line[:200]!r}")
        return answer.rstrip("\n")

    def expression(self, tree: dict[str, Any]) -> list[str]:
        """[base64, toString, toOldString, fixed toString, fixed toOldString] or ["ERROR ..."]."""
        answer = self.ask("E " + json.dumps(tree))
        return answer.split("\t")[1:] if answer.startswith("OK\t") else [answer]

    def sarg_pushdown(self, tree: dict[str, Any]) -> list[str]:
        answer = self.ask("S " + json.dumps(tree))
        return answer.split("\t")[1:] if answer.startswith("OK\t") else [answer]

    def time_zone(self, zone: str) -> None:
        assert self.ask(f"Z {zone}") == "OK"

    def layouts(self) -> list[dict[str, Any]]:
        out = []
        while (line := self.ask("L") if not out else self._next()) != "END":
            out.append(json.loads(line))
        return out

    def _next(self) -> str:
        assert self.process.stdout is not None
        return self.process.stdout.readline().rstrip("\n")

    def close(self) -> None:
        if self.process.poll() is None:
            assert self.process.stdin is not None
            self.process.stdin.close()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def compile_oracle(out: Path, release: str = NEWEST) -> Path | None:
    """Compile the oracle against ``release``'s jars into ``out``; None when no JDK is available. Raises
    :class:`RuntimeError` when the release's jars are missing (tests call ``hive_releases.require_jars`` first)."""
    if shutil.which("javac") is None or shutil.which("java") is None:
        return None
    reason = hive_releases.missing(release)
    if reason is not None:
        raise RuntimeError(reason)
    jars = jars_dir(release)
    sources = [str(SOURCE)]
    if not any(jars.glob("hive-llap-common-*.jar")):  # the stub stands in for the LLAP jar only where it is absent
        sources += map(str, sorted((SOURCE.parent / "stub").glob("*.java")))
    subprocess.run(["javac", "-nowarn", "-cp", f"{jars}/*", "-d", str(out), *sources], check=True,
                   capture_output=True, timeout=180)
    return out


def jar_names(release: str) -> tuple[str, ...]:
    """The jars whose classes decide the Kryo bytes of a filter: Hive's, Hadoop's (``Text``) and Kryo's."""
    jars = jars_dir(release)
    patterns = ("hive-exec-*.jar", "hive-serde-*.jar", "hive-storage-api-*.jar", "hadoop-client-api-*.jar",
                "hadoop-common-*.jar", "kryo-shaded-*.jar")
    return tuple(sorted({path.name for pattern in patterns for path in jars.glob(pattern)}))


def main(argv: list[str]) -> None:
    """Regenerate the layout table of each release named (all supported ones by default) from its jars."""
    import tempfile

    from tests.decode.kryo_layout_render import write_modules
    from tests.decode.kryo_trees import inventory_trees

    releases = argv or list(hive_releases.RELEASES)
    for release in releases:
        reason = hive_releases.missing(release)
        if reason is not None:
            raise SystemExit(reason)
    generated = {}
    for release in releases:
        with tempfile.TemporaryDirectory() as tmp:
            classes = compile_oracle(Path(tmp), release)
            if classes is None:
                raise SystemExit("javac/java not on PATH")
            oracle = Oracle(classes, release)
            try:
                for tree in inventory_trees():
                    oracle.ask("E " + json.dumps(tree))
                    oracle.ask("S " + json.dumps(tree))
                generated[release] = (jar_names(release), oracle.layouts())
            finally:
                oracle.close()
    for path in write_modules(generated, hive_releases.RELEASES):
        print(f"wrote {path}")


if __name__ == "__main__":
    main(sys.argv[1:])
