"""``Double.toString`` exactly as the JDK 17 that runs Hive and Spark here prints it.

Hive prints a FLOAT leaf's literal with ``Double.toString``. Before JDK 19 that method did *not* produce the
shortest round-tripping digits: it runs the old ``FloatingDecimal`` digit generator, which sometimes emits an extra
digit (``2.82879384806159008E17``) or a neighbour (``1.0E23`` prints ``9.999999999999999E22``). Python's ``repr``
is always shortest, so matching Hive character for character needs the old algorithm. This module re-derives it
from the JDK's published behaviour: an exact integer-ratio digit loop whose stopping test and final rounding have
the same (asymmetric) comparisons as the JDK, including the fixed-width ``int``/``long`` overflow of its fast paths,
which we emulate with explicit wrap-around. It is verified against the running JVM on random bit patterns.
"""

from __future__ import annotations

import math
import struct

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


def _wrap(value: int, bits: int) -> int:
    """Two's-complement wrap-around of a Java ``int`` (32) or ``long`` (64) result."""
    mask = (1 << bits) - 1
    value &= mask
    return value - (1 << bits) if value >> (bits - 1) else value


def java_double_to_string(value: float) -> str:
    """Return ``java.lang.Double.toString(value)`` as printed by JDK 17 (also NaN, infinities and -0.0)."""
    bits = struct.unpack(">Q", struct.pack(">d", value))[0]
    negative = bits >> 63 == 1
    biased_exp = (bits >> _SIGNIFICAND_BITS) & 0x7FF
    fraction = bits & ((1 << _SIGNIFICAND_BITS) - 1)
    if biased_exp == 0x7FF:
        if fraction:
            return "NaN"
        return "-Infinity" if negative else "Infinity"
    if biased_exp == 0:
        if fraction == 0:
            return "-0.0" if negative else "0.0"
        # Subnormal: normalize so the leading one sits where the hidden bit would be.
        significant_bits = fraction.bit_length()
        shift = _SIGNIFICAND_BITS + 1 - significant_bits
        fraction <<= shift
        bin_exp = 1 - shift - _EXP_BIAS
    else:
        fraction |= 1 << _SIGNIFICAND_BITS
        significant_bits = _SIGNIFICAND_BITS + 1
        bin_exp = biased_exp - _EXP_BIAS
    digits, dec_exponent = _digits(bin_exp, fraction, significant_bits)
    return ("-" if negative else "") + _layout(digits, dec_exponent)


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
