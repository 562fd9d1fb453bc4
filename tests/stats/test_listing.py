"""Listing the real data files, and Hive's partition-path escaping (checked against Hive's own jar)."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from storage_handler.errors import ConfigurationError, DatasetError
from storage_handler.stats import (
    HIVE_DEFAULT_PARTITION,
    DataFile,
    escape_partition_value,
    escape_path_name,
    list_data_files,
    partition_path,
    unescape_partition_value,
    unescape_path_name,
)
from storage_handler.storage import local_path
from tests.stats.util import write

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
def test_escaping_agrees_with_hive_jar(tmp_path):
    jars = glob.glob(os.path.join(os.path.dirname(pa.__file__), "..", "pyspark", "jars", "hive-common-*.jar"))
    if not jars:
        pytest.skip("pyspark's hive-common jar not found")
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
        ["java", "-cp", f"{os.path.dirname(jars[0])}/*{os.pathsep}.", "Esc", *samples], cwd=tmp_path, check=True, timeout=120,
        capture_output=True, text=True,
    ).stdout.split("\n")

    def hex_of(s: str) -> str:
        return "".join(f"{ord(c):x}." for c in s)

    for sample, line in zip(samples, out, strict=False):
        assert line == f"{hex_of(escape_path_name(sample))} {hex_of(unescape_path_name(sample))}", sample


# ---------------------------------------------------------------- listing
def make_tree(root) -> None:
    table = pa.table({"x": [1]})
    write(root, "dt=2024-01-01/part-0.parquet", table)
    write(root, "dt=2024-01-01/000000_0", table)  # Hive's extension-less file names
    write(root, f"dt={HIVE_DEFAULT_PARTITION}/part-0.parquet", table)
    write(root, "dt=a%2Fb%3Dc/part-0.parquet", table)
    write(root, "dt=été/part-0.parquet", table)
    write(root, "dt=/part-0.parquet", table)
    for hidden in ["_SUCCESS", ".part-0.parquet.crc", "dt=2024-01-01/_tmp.parquet", "_hsh_index/x.parquet",
                   ".hidden/part-9.parquet", "dt=2024-01-01/_temporary/part-1.parquet"]:
        write(root, hidden, table)


def test_list_data_files(tmp_path):
    make_tree(tmp_path)
    files = list_data_files(str(tmp_path))
    assert [f.path for f in files] == [
        "dt=/part-0.parquet",
        "dt=2024-01-01/000000_0",
        "dt=2024-01-01/part-0.parquet",
        f"dt={HIVE_DEFAULT_PARTITION}/part-0.parquet",
        "dt=a%2Fb%3Dc/part-0.parquet",
        "dt=été/part-0.parquet",
    ]
    values = {f.path: f.partition_values["dt"] for f in files}
    assert values[f"dt={HIVE_DEFAULT_PARTITION}/part-0.parquet"] is None
    assert values["dt=a%2Fb%3Dc/part-0.parquet"] == "a/b=c"
    assert values["dt=été/part-0.parquet"] == "été"
    assert values["dt=/part-0.parquet"] is None  # an empty value is Hive's default partition
    first = files[2]
    st_ = os.stat(tmp_path / first.path)
    assert first == DataFile(first.path, st_.st_size, st_.st_mtime_ns // 1_000_000, {"dt": "2024-01-01"},
                             str(st_.st_ctime_ns))


def test_partition_columns_select_the_hive_layout(tmp_path):
    table = pa.table({"x": [1]})
    write(tmp_path, "stray.parquet", table)
    write(tmp_path, "Y=2024/m=1/a.parquet", table)
    write(tmp_path, "m=1/y=2024/b.parquet", table)  # wrong order
    write(tmp_path, "y=2024/c.parquet", table)  # too shallow
    write(tmp_path, "y=2024/m=1/sub/d.parquet", table)  # too deep
    files = list_data_files(str(tmp_path), partition_columns=["y", "M"])
    assert [(f.path, dict(f.partition_values)) for f in files] == [("Y=2024/m=1/a.parquet", {"y": "2024", "m": "1"})]
    assert len(list_data_files(str(tmp_path))) == 5


def test_locations(tmp_path):
    write(tmp_path, "a b/f.parquet", pa.table({"x": [1]}))
    root = str(tmp_path / "a b")
    assert local_path(f"file://{root}") == root
    assert local_path(f"file:{root}") == root
    assert local_path(f"file://localhost{root}") == root
    # Hive/Hadoop locations are not URI-encoded: '%20' names a folder called '%20', as Hadoop's Path reads it
    assert local_path(f"file:{root}%20") == root + "%20"
    assert [f.path for f in list_data_files(f"file://{root}")] == ["f.parquet"]
    assert list_data_files(str(tmp_path / "missing")) == []
    with pytest.raises(DatasetError):
        list_data_files(str(tmp_path / "a b" / "f.parquet"))
    for bad in ["s3://bucket/x", "hdfs://nn:8020/x", "file://otherhost/x"]:
        with pytest.raises(ConfigurationError):
            local_path(bad)
