"""Hive's path rules (:mod:`storage_handler.hive_paths`), checked against Hive's own ``FileUtils``."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from hypothesis import given
from hypothesis import strategies as st

from storage_handler.hive_paths import (
    HIVE_DEFAULT_PARTITION,
    escape_partition_value,
    escape_path_name,
    partition_path,
    unescape_partition_value,
    unescape_path_name,
)

# Output of hive-common-2.3.10's FileUtils.escapePathName over U+0000..U+01FF: the code points it escapes.
HIVE_ESCAPED = set(range(0x20)) | {0x22, 0x23, 0x25, 0x27, 0x2A, 0x2F, 0x3A, 0x3D, 0x3F, 0x5B, 0x5C, 0x5D, 0x5E, 0x7B, 0x7F}


def test_escaped_set_is_hives():
    for code in range(0x200):
        ch = chr(code)
        expected = f"%{code:02X}" if code in HIVE_ESCAPED else ch
        assert escape_path_name(ch) == expected


@pytest.mark.parametrize(
    ("value", "folder"),
    [
        ("a/b", "a%2Fb"),
        ("..", ".."),  # dots are not escaped: "k=.." is still one harmless folder name
        ("x=y", "x%3Dy"),
        ("100%", "100%25"),
        ("été 東京 😀", "été 東京 😀"),
        ("a b\tc\n", "a b%09c%0A"),
        ("C:\\dir", "C%3A%5Cdir"),
        ("", HIVE_DEFAULT_PARTITION),
        (None, HIVE_DEFAULT_PARTITION),
    ],
)
def test_escape_partition_value(value, folder):
    assert escape_partition_value(value) == folder
    assert unescape_partition_value(folder) == (None if value in ("", None) else value)


@pytest.mark.parametrize(
    ("text", "decoded"),
    [
        ("%+1x", "\x01x"),  # Java's parseInt accepts a sign
        ("%-1x", "%-1x"),  # negative: kept
        ("%-0x", "\x00x"),
        ("a%2", "a%2"),  # too short: kept
        ("a%2F", "a/"),
        ("a%2f", "a/"),
        ("%zz", "%zz"),
        ("%C3%A9", "\u00c3\u00a9"),  # no UTF-8 decoding, exactly like Hive
        ("% 1", "% 1"),  # Python's int() would accept the space; Java does not
        ("%%41", "%A"),
        ("%1", "%1"),
    ],
)
def test_unescape_quirks_match_hive(text, decoded):
    assert unescape_path_name(text) == decoded


@given(st.text())
def test_escape_round_trips(text):
    assert unescape_path_name(escape_path_name(text)) == text
    escaped = escape_path_name(text)
    assert "/" not in escaped and "=" not in escaped


def test_partition_path():
    assert partition_path([("DT", "2024-01-01"), ("c", None), ("s", "a/b")]) == (
        f"dt=2024-01-01/c={HIVE_DEFAULT_PARTITION}/s=a%2Fb"
    )


@pytest.mark.skipif(shutil.which("javac") is None or shutil.which("java") is None, reason="needs a JDK")
@pytest.mark.jvm
def test_escaping_agrees_with_hive_jar(tmp_path):
    from storage_handler.home import spark_jars

    jars = sorted(str(j) for j in spark_jars().glob("hive-common-*.jar"))
    if not jars:
        pytest.fail(f"the Spark in use has no hive-common jar in {spark_jars()}")
    samples = ["a/b", "x=y:z", "100%", "été", "%+1x", "%C3%A9", "a%2", "\x01\x7f", "[]^{}'\"*?#\\", "%%41", "% 1"]
    (tmp_path / "Esc.java").write_text(
        "import org.apache.hadoop.hive.common.FileUtils;\n"
        "public class Esc { public static void main(String[] a) throws Exception {\n"
        "  for (String s : a) {\n"
        "    System.out.println(hex(FileUtils.escapePathName(s)) + \" \" + hex(FileUtils.unescapePathName(s)));\n"
        "  } }\n"
        "  static String hex(String s) { StringBuilder b = new StringBuilder();\n"
        "    for (char c : s.toCharArray()) b.append(Integer.toHexString(c)).append('.'); return b.toString(); } }\n"
    )
    subprocess.run(["javac", "-cp", jars[0], "Esc.java"], cwd=tmp_path, check=True, timeout=120)
    out = subprocess.run(
        ["java", "-cp", f"{spark_jars()}/*:.", "Esc", *samples], cwd=tmp_path, check=True, timeout=120,
        capture_output=True, text=True,
    ).stdout.split("\n")

    def hex_of(s: str) -> str:
        return "".join(f"{ord(c):x}." for c in s)

    for sample, line in zip(samples, out, strict=False):
        assert line == f"{hex_of(escape_path_name(sample))} {hex_of(unescape_path_name(sample))}", sample


