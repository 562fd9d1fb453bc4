"""How sure a ratio of medians is: a bootstrap interval over the rounds of an interleaved run.

The targets (issue 24, issue 30) compare two medians within 15 %, while runs of the same code on this machine
spread 10-20 % between them. A median alone then reads as a verdict it is not; next to it the report gives the
range the ratio takes when the same rounds are drawn again (with replacement), paired by round: the paths ran
interleaved, so a round's two times share the machine's state of that moment.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Sequence

DRAWS = 2000
LEVEL = 0.90


def ratio_interval(over: Sequence[float], under: Sequence[float], *, seed: int = 0) -> tuple[float, float]:
    """The central ``LEVEL`` interval of median(over) / median(under) over ``DRAWS`` resamplings of the rounds
    (pairs by index; the longer list's extra rounds left out). Seeded: a report shows the same interval again."""
    n = min(len(over), len(under))
    if n == 0:
        raise ValueError("ratio_interval needs at least one round of each path")
    rng = random.Random(seed)
    ratios = []
    for _ in range(DRAWS):
        rounds = [rng.randrange(n) for _ in range(n)]
        ratios.append(statistics.median(over[i] for i in rounds) / statistics.median(under[i] for i in rounds))
    ratios.sort()
    tail = (1 - LEVEL) / 2
    return ratios[int(tail * DRAWS)], ratios[int((1 - tail) * DRAWS) - 1]


def with_interval(over: Sequence[float], under: Sequence[float]) -> str:
    """``1.19× (1.12-1.25)``: the ratio of the medians and its interval."""
    lo, hi = ratio_interval(over, under)
    return f"{statistics.median(over) / statistics.median(under):.2f}× ({lo:.2f}-{hi:.2f})"
