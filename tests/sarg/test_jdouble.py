"""Double.toString as JDK 17 prints it (Hive prints FLOAT literals with it)."""

from __future__ import annotations

import math
import random
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from storage_handler.sarg.jdouble import java_double_to_string
from tests.helpers import examples

from .oracle import HiveOracle

# Recorded from JDK 17's Double.toString; several are not Python's shortest repr.
KNOWN = [
    (1.0e10, "1.0E10"), (1.0e7, "1.0E7"), (9999999.0, "9999999.0"), (0.001, "0.001"), (1.0e-4, "1.0E-4"),
    (123456789.0, "1.23456789E8"), (2.0**62, "4.6116860184273879E18"), (2.0**63, "9.223372036854776E18"),
    (1.0e23, "9.999999999999999E22"), (2.0e-3, "0.002"), (5e-324, "4.9E-324"),
    (1.7976931348623157e308, "1.7976931348623157E308"), (0.1 + 0.2, "0.30000000000000004"), (100.0, "100.0"),
    (2.82879384806159e17, "2.82879384806159008E17"), (1.9400994884341945e25, "1.9400994884341944E25"),
    (-0.0, "-0.0"), (0.0, "0.0"), (math.nan, "NaN"), (math.inf, "Infinity"), (-math.inf, "-Infinity"),
    (-1.5, "-1.5"), (1.0, "1.0"),
]  # fmt: skip


@pytest.mark.parametrize(("value", "expected"), KNOWN)
def test_known_values(value: float, expected: str) -> None:
    assert java_double_to_string(value) == expected


def test_nan_payload_does_not_matter() -> None:
    odd_nan = struct.unpack(">d", struct.pack(">Q", 0xFFF0000000000001))[0]
    assert java_double_to_string(odd_nan) == "NaN"


def test_oracle_jvm_prints_doubles_like_jdk17(hive_oracle: HiveOracle) -> None:
    """JDK 19+ switched Double.toString to shortest digits (1e23 -> "1.0E23"); we emulate the JDK 17 we run on."""
    printed = hive_oracle.doubles([1.0e23])[0]
    assert printed == "9.999999999999999E22", (
        f"the java on PATH prints 1e23 as {printed}: it is not the JDK 17 this project targets, so Hive would print "
        "FLOAT literals differently from storage_handler.sarg.jdouble"
    )


def _interesting(rng: random.Random) -> float:
    kind = rng.randrange(5)
    if kind == 0:
        return struct.unpack(">d", struct.pack(">Q", rng.getrandbits(64)))[0]
    if kind == 1:
        return rng.randint(1, 10 ** rng.randint(1, 17)) * 10.0 ** rng.randint(-30, 30)
    if kind == 2:  # few significant bits: exercises the integer and small-int paths
        return struct.unpack(
            ">d", struct.pack(">Q", (rng.getrandbits(11) << 52) | (rng.getrandbits(6) << 46))
        )[0]
    if kind == 3:  # subnormals
        return struct.unpack(">d", struct.pack(">Q", rng.getrandbits(52) >> rng.randint(0, 52)))[0]
    return round(rng.uniform(-1e8, 1e8), rng.randint(0, 10))


def test_random_bit_patterns_match_the_jvm(hive_oracle: HiveOracle) -> None:
    rng = random.Random(20240102)
    values = [_interesting(rng) for _ in range(20000)]
    java = hive_oracle.doubles(values)
    mismatches = [
        (v, ours, theirs)
        for v, theirs in zip(values, java, strict=True)
        if (ours := java_double_to_string(v)) != theirs
    ]
    assert not mismatches[:5]


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=200))
def test_hypothesis_floats_match_the_jvm(hive_oracle: HiveOracle, values: list[float]) -> None:
    assert [java_double_to_string(v) for v in values] == hive_oracle.doubles(values)
