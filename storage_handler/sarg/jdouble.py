"""``Double.toString`` exactly as the JVM that prints Hive's SearchArguments prints it.

Hive prints a FLOAT leaf's literal with ``Double.toString``, and that method changed in JDK 19 (JDK-4511638):

* JDK <= 18 runs the old ``FloatingDecimal`` digit generator, which does *not* always produce the shortest
  round-tripping digits: it sometimes emits an extra digit (``2.82879384806159008E17``) or a neighbour (``1.0E23``
  prints ``9.999999999999999E22``). This module re-derives it from the JDK's published behaviour: an exact
  integer-ratio digit loop whose stopping test and final rounding have the same (asymmetric) comparisons as the
  JDK, including the fixed-width ``int``/``long`` overflow of its fast paths, emulated with explicit wrap-around.
* JDK 19+ prints the decimal its javadoc specifies (Giulietti's Schubfach): of all decimals that round to the
  double, those of minimal length m (of length 1 or 2 when m is 1), the one closest to it (ties: even last
  digit). That is Python's ``repr`` digits except for the two smallest subnormals (``4.9E-324``, not ``5e-324``);
  :func:`_shortest` computes it exactly, taking ``repr``'s length only as a hint it checks.

Which one to emulate is a property of the *JVM*, not of Hive. Hive 2.3's own servers run on Java 8 in practice
(the newest JVM it supports), and the SearchArgument classes this package mirrors (Hive's storage-api in Spark's
jars) run inside Spark's driver, on Java 8, 11 or 17 for Spark 3.5 and 17 or 21 for Spark 4.x: a Spark 4 driver on
Java 21 prints ``1.0E23`` where every other supported deployment prints ``9.999999999999999E22``. So
:func:`java_double_to_string` prints for the *printing JDK*: an explicit ``jdk`` argument; else the version scoped
by :func:`printing_jdk` (for a caller that knows the driver's JVM); else ``$HSH_JAVA_VERSION``; else the feature
version of the ``java`` this package launches Spark and the metastore with ($JAVA_HOME, then PATH, as Spark's own
launcher), detected once, on the first double printed; else 17, the project's JVM. Pruning never depends on this
choice: literals are compared as doubles; only the printed text (``to_string()``/``to_old_string()``, scan
metrics, logs, ``hsh`` output) differs.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import re
import struct
import subprocess
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path

from storage_handler.errors import ConfigurationError, JavaNotFoundError
from storage_handler.toolchain import find_java

_SIGNIFICAND_BITS = 52  # explicit fraction bits of an IEEE double
_EXP_BIAS = 1023
_MAX_SMALL_BIN_EXP = 62
_MIN_SMALL_BIN_EXP = -21
# Bit lengths the JDK assumes for 5**i (approximately ceil(log2(5**i))); the fast paths are chosen with them.
_N_5_BITS = (0, 3, 5, 7, 10, 12, 14, 17, 19, 21, 24, 26, 28, 31, 33, 35, 38, 40, 42, 45, 47, 49, 52, 54, 56, 59, 61)  # fmt: skip
# Number of decimal digits below the precision of 2**p, for integers beyond 2**53.
_INSIGNIFICANT_FOR_POW2 = (
    0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 8, 8, 8, 9, 9, 9, 9, 10,
    10, 10, 11, 11, 11, 12, 12, 12, 12, 13, 13, 13, 14, 14, 14, 15, 15, 15, 15, 16, 16, 16, 17, 17, 17, 18,
    18, 18, 19,
)  # fmt: skip

#: The JDK whose ``Double.toString`` printed the shortest digits first (JDK-4511638).
SHORTEST_SINCE = 19
#: The printing JDK when nothing says otherwise: the JDK this project runs Hive and Spark on.
DEFAULT_JDK = 17
JAVA_VERSION_ENV = "HSH_JAVA_VERSION"
_SCOPED_JDK: ContextVar[int | None] = ContextVar("hsh_printing_jdk", default=None)
_LOG10_2 = math.log10(2)


def _wrap(value: int, bits: int) -> int:
    """Two's-complement wrap-around of a Java ``int`` (32) or ``long`` (64) result."""
    mask = (1 << bits) - 1
    value &= mask
    return value - (1 << bits) if value >> (bits - 1) else value


@contextlib.contextmanager
def printing_jdk(version: int) -> Iterator[None]:
    """Print doubles as JDK ``version`` does within this block (this thread/task only: a ``ContextVar``)."""
    token = _SCOPED_JDK.set(_checked(version))
    try:
        yield
    finally:
        _SCOPED_JDK.reset(token)


def printing_jdk_version() -> int:
    """The JDK feature version doubles are printed for: scoped, else ``$HSH_JAVA_VERSION``, else detected, else 17."""
    scoped = _SCOPED_JDK.get()
    if scoped is not None:
        return scoped
    configured = os.environ.get(JAVA_VERSION_ENV, "").strip()
    if configured:
        version = parse_java_version(configured)
        if version is None:
            raise ConfigurationError(
                f"${JAVA_VERSION_ENV} must be a Java feature version such as 17 or 21, not {configured!r}"
            )
        return version
    detected = detected_jdk()
    return DEFAULT_JDK if detected is None else detected


def parse_java_version(text: str) -> int | None:
    """The feature version in ``17``, ``21.0.8``, ``25-ea`` or the pre-9 ``1.8.0_292`` (-> 8); None if none."""
    match = re.match(r"\s*(\d+)(?:\.(\d+))?", text)
    if match is None:
        return None
    major = int(match.group(1))
    if major == 1 and match.group(2) is not None:
        major = int(match.group(2))
    return major if major > 0 else None


@functools.cache
def detected_jdk() -> int | None:
    """Feature version of the ``java`` this package launches, or None; cached (``detected_jdk.cache_clear()``).

    The JDK's ``release`` file answers without starting a JVM (``make test-fast`` starts none); a runtime without
    one is asked for its ``java.specification.version``."""
    try:
        java = find_java()
    except JavaNotFoundError:
        return None
    release = Path(java).resolve().parent.parent / "release"
    try:
        found = re.search(r'^JAVA_VERSION="([^"]*)"', release.read_text(errors="replace"), re.MULTILINE)
    except OSError:
        found = None
    if found is not None and (version := parse_java_version(found.group(1))) is not None:
        return version
    try:
        shown = subprocess.run(
            [java, "-XshowSettings:properties", "-version"], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.search(r"java\.specification\.version = (\S+)", shown.stderr + shown.stdout)
    return parse_java_version(found.group(1)) if found else None


def _checked(version: int) -> int:
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ValueError(f"a JDK feature version is a positive int such as 17 or 21, not {version!r}")
    return version


def java_double_to_string(value: float, jdk: int | None = None) -> str:
    """Return ``java.lang.Double.toString(value)`` as JDK ``jdk`` prints it (default: :func:`printing_jdk_version`).

    Also NaN (any payload), the infinities and -0.0."""
    version = printing_jdk_version() if jdk is None else _checked(jdk)
    bits = struct.unpack(">Q", struct.pack(">d", value))[0]
    sign = "-" if bits >> 63 else ""
    biased_exp = (bits >> _SIGNIFICAND_BITS) & 0x7FF
    fraction = bits & ((1 << _SIGNIFICAND_BITS) - 1)
    if biased_exp == 0x7FF:
        return sign + "Infinity" if fraction == 0 else "NaN"
    if biased_exp == 0 and fraction == 0:
        return sign + "0.0"
    if version >= SHORTEST_SINCE:
        if biased_exp == 0:
            return sign + _layout(*_shortest(fraction, 1 - _EXP_BIAS - _SIGNIFICAND_BITS, False))
        exponent = biased_exp - _EXP_BIAS - _SIGNIFICAND_BITS
        irregular = fraction == 0 and biased_exp > 1  # a power of two: the gap below is half as wide
        return sign + _layout(*_shortest(fraction | 1 << _SIGNIFICAND_BITS, exponent, irregular))
    if biased_exp == 0:
        # Subnormal: normalize so the leading one sits where the hidden bit would be.
        significant_bits = fraction.bit_length()
        shift = _SIGNIFICAND_BITS + 1 - significant_bits
        fraction <<= shift
        bin_exp = 1 - shift - _EXP_BIAS
    else:
        fraction |= 1 << _SIGNIFICAND_BITS
        significant_bits = _SIGNIFICAND_BITS + 1
        bin_exp = biased_exp - _EXP_BIAS
    return sign + _layout(*_digits(bin_exp, fraction, significant_bits))


def _shortest(c: int, q: int, irregular: bool) -> tuple[list[int], int]:
    """JDK 19+'s decimal for x = c * 2**q, as digits and the exponent of 0.d1d2... * 10**exponent.

    R, the reals that round to x, runs from the midpoint with the double below to the one with the double above,
    both included when c is even (IEEE round half to even). In units of 2**(q - 2): x is 4c, R is (4c - 2, 4c + 2),
    or (4c - 1, 4c + 2) when the gap below is half as wide."""
    lo, hi, closed = 4 * c - (1 if irregular else 2), 4 * c + 2, c % 2 == 0
    exponents = {_floor_log10(lo, q - 2), _floor_log10(hi, q - 2)}
    hint = len(repr(math.ldexp(c, q)).split("e")[0].replace(".", "").strip("0"))  # Python's shortest: to check
    if hint > 1 and not _decimals(lo, hi, closed, q - 2, exponents, hint - 1) and (
        found := _decimals(lo, hi, closed, q - 2, exponents, hint)
    ):
        length = hint
    else:
        length, found = 1, set()
        while not (found := _decimals(lo, hi, closed, q - 2, exponents, length)):
            length += 1
    if length == 1:  # the javadoc's exception: the closest of the decimals in R of length 1 or 2
        found = _decimals(lo, hi, closed, q - 2, exponents, 2)
    if len(found) > 1:  # the closest to x, or the even one: compared on the finest grid, in integers
        finest = min(k for _, k in found)
        x, den = _scaled(4 * c, q - 2, finest)
        on_grid = {d: d[0] * 10 ** (d[1] - finest) for d in found}
        found = {min(found, key=lambda d: (abs(on_grid[d] * den - x), on_grid[d] % 2))}
    significand, exponent = found.pop()
    digits = [int(ch) for ch in str(significand)]
    return digits, exponent + len(digits)


def _decimals(lo: int, hi: int, closed: bool, e2: int, exponents: set[int], length: int) -> set[tuple[int, int]]:
    """The decimals of at most ``length`` digits in R, as (significand without trailing zeros, exponent).

    Such a decimal with leading digit at 10**e is a multiple of 10**(e - length + 1), and e is floor(log10) of R's
    low or high end (R spans at most one power of ten), so those two grids hold them all."""
    found: set[tuple[int, int]] = set()
    for e in exponents:
        k = e - length + 1
        low, den = _scaled(lo, e2, k)
        high, _ = _scaled(hi, e2, k)
        first = low // den + (0 if closed and low % den == 0 else 1)
        last = high // den - (1 if not closed and high % den == 0 else 0)
        for g in range(first, last + 1):
            exponent = k
            while g % 10 == 0:
                g, exponent = g // 10, exponent + 1
            if g < 10**length:
                found.add((g, exponent))
    return found


def _scaled(a: int, e2: int, k: int) -> tuple[int, int]:
    """a * 2**e2 / 10**k as an integer numerator and denominator."""
    num, den = a << max(e2, 0), 1 << max(-e2, 0)
    return (num * 10**-k, den) if k < 0 else (num, den * 10**k)


def _floor_log10(a: int, e2: int) -> int:
    """floor(log10(a * 2**e2)) for a > 0, exactly: a float estimate, then corrected."""
    e = math.floor((a.bit_length() - 1 + e2) * _LOG10_2)
    while True:
        num, den = _scaled(a, e2, e)
        if num < den:
            e -= 1
        elif num >= 10 * den:
            e += 1
        else:
            return e


def _digits(bin_exp: int, fract_bits: int, n_significant_bits: int) -> tuple[list[int], int]:
    """Decimal digits and the exponent such that value = 0.d1d2... * 10**exponent (the JDK's convention)."""
    tail_zeros = (fract_bits & -fract_bits).bit_length() - 1
    n_fract_bits = _SIGNIFICAND_BITS + 1 - tail_zeros
    n_tiny_bits = max(0, n_fract_bits - bin_exp - 1)
    if _MIN_SMALL_BIN_EXP <= bin_exp <= _MAX_SMALL_BIN_EXP and n_tiny_bits == 0:
        # An integer that fits a long: print it, rounding away digits below the double's precision.
        insignificant = 0
        if bin_exp > n_significant_bits:
            p2 = bin_exp - n_significant_bits - 1
            insignificant = _INSIGNIFICANT_FOR_POW2[p2] if 1 < p2 < len(_INSIGNIFICANT_FOR_POW2) else 0
        return _integer_digits(fract_bits >> tail_zeros << (bin_exp - n_fract_bits + 1), insignificant)

    dec_exp = _estimate_dec_exp(fract_bits, bin_exp)
    b5 = max(0, -dec_exp)
    b2 = b5 + n_tiny_bits + bin_exp
    s5 = max(0, dec_exp)
    s2 = s5 + n_tiny_bits
    m5 = b5
    m2 = b2 - n_significant_bits
    fract_bits >>= tail_zeros
    b2 -= n_fract_bits - 1
    common = min(b2, s2)
    b2, s2, m2 = b2 - common, s2 - common, m2 - common
    if n_fract_bits == 1:  # the gap below a power of two is half as wide
        m2 -= 1
    if m2 < 0:
        b2, s2, m2 = b2 - m2, s2 - m2, 0
    b_bits = n_fract_bits + b2 + (_N_5_BITS[b5] if b5 < len(_N_5_BITS) else b5 * 3)
    ten_s_bits = s2 + 1 + (_N_5_BITS[s5 + 1] if s5 + 1 < len(_N_5_BITS) else (s5 + 1) * 3)
    b = fract_bits * 5**b5 << b2
    s = 5**s5 << s2
    m = 5**m5 << m2
    if b_bits < 64 and ten_s_bits < 64:
        width = 32 if b_bits < 32 and ten_s_bits < 32 else 64
        digits, dec_exp, low, high, low_diff = _fixed_width_loop(b, s, m, dec_exp, width)
    else:
        digits, dec_exp, low, high, low_diff = _exact_loop(b, s, m, dec_exp)
    dec_exponent = dec_exp + 1
    if high and (not low or low_diff > 0 or (low_diff == 0 and digits[-1] & 1)):
        dec_exponent = _round_up(digits, dec_exponent)
    return digits, dec_exponent


def _integer_digits(value: int, insignificant: int) -> tuple[list[int], int]:
    """Digits of an integral double, rounded half-up at ``insignificant`` places, trailing zeros dropped."""
    exponent = 0
    if insignificant:
        pow10 = 10**insignificant
        value, residue = divmod(value, pow10)
        exponent = insignificant
        if residue >= pow10 >> 1:
            value += 1
    text = str(value)
    return [int(c) for c in text.rstrip("0")], exponent + len(text)


def _estimate_dec_exp(fract_bits: int, bin_exp: int) -> int:
    """The JDK's floor(log10(value)) estimate, computed in double arithmetic (it may be one too high)."""
    mantissa: float = struct.unpack(
        ">d",
        struct.pack(">Q", (_EXP_BIAS << _SIGNIFICAND_BITS) | (fract_bits & ((1 << _SIGNIFICAND_BITS) - 1))),
    )[0]
    estimate = (mantissa - 1.5) * 0.289529654 + 0.176091259 + float(bin_exp) * 0.301029995663981
    return math.floor(estimate)


def _needs_more(dec_exp: int) -> bool:
    """Java prints at least one digit after the point; in E-form that means a second significant digit."""
    return dec_exp < -3 or dec_exp >= 8


def _fixed_width_loop(
    b: int, s: int, m: int, dec_exp: int, width: int
) -> tuple[list[int], int, bool, bool, int]:
    """The JDK's ``int``/``long`` digit loop, wrap-around of ``m *= 10`` and ``b + m`` included."""
    b, s, m = _wrap(b, width), _wrap(s, width), _wrap(m, width)
    tens = _wrap(s * 10, width)
    digits: list[int] = []
    q, b = b // s, _wrap(10 * (b % s), width)
    m = _wrap(m * 10, width)
    low = b < m
    high = _wrap(b + m, width) > tens
    if q == 0 and not high:
        dec_exp -= 1
    else:
        digits.append(q)
    if _needs_more(dec_exp):
        low = high = False
    while not low and not high:
        q, b = b // s, _wrap(10 * (b % s), width)
        m = _wrap(m * 10, width)
        if m > 0:
            low = b < m
            high = _wrap(b + m, width) > tens
        else:  # the JDK's guard for an overflowed m
            low = high = True
        digits.append(q)
    low_diff = _wrap(_wrap(b << 1, width) - tens, width)
    return digits, dec_exp, low, high, low_diff


def _exact_loop(b: int, s: int, m: int, dec_exp: int) -> tuple[list[int], int, bool, bool, int]:
    """The JDK's big-integer digit loop; note ``high`` is ``>=`` here where the fast paths use ``>``."""
    tens = 10 * s
    m10 = 10 * m
    digits: list[int] = []
    q, r = divmod(b, s)
    b = 10 * r
    low = b < m10
    high = b + m10 >= tens
    if q == 0 and not high:
        dec_exp -= 1
    else:
        digits.append(q)
    if _needs_more(dec_exp):
        low = high = False
    while not low and not high:
        q, r = divmod(b, s)
        b = 10 * r
        m10 *= 10
        low = b < m10
        high = b + m10 >= tens
        digits.append(q)
    low_diff = 0
    if high and low:
        twice = 2 * b
        low_diff = (twice > tens) - (twice < tens)
    return digits, dec_exp, low, high, low_diff


def _round_up(digits: list[int], dec_exponent: int) -> int:
    """Add one in the last place; a carry out of all nines leaves ``10...0`` (same length) and bumps the exponent."""
    i = len(digits) - 1
    while digits[i] == 9 and i > 0:
        digits[i] = 0
        i -= 1
    if digits[i] == 9:
        digits[0] = 1
        return dec_exponent + 1
    digits[i] += 1
    return dec_exponent


def _layout(digits: list[int], dec_exponent: int) -> str:
    """Java's plain form for 1e-3 <= |x| < 1e7, computerized scientific notation otherwise."""
    text = "".join(chr(48 + d) for d in digits)
    n = len(text)
    if 0 < dec_exponent < 8:
        whole = min(n, dec_exponent)
        if whole < dec_exponent:
            return text[:whole] + "0" * (dec_exponent - whole) + ".0"
        return text[:whole] + "." + (text[whole:] if whole < n else "0")
    if -3 < dec_exponent <= 0:
        return "0." + "0" * -dec_exponent + text
    exponent = f"-{1 - dec_exponent}" if dec_exponent <= 0 else str(dec_exponent - 1)
    return text[0] + "." + (text[1:] if n > 1 else "0") + "E" + exponent
