"""The boundary over one setting's correlated looks: what a race's interval may spend
at each look so that all its looks hold together.

A setting's looks are on cumulative runs: the mean of n runs and the mean of n + 1
share n of them, so the looks are strongly correlated and a union bound over them
(each look at ``alpha / looks``) spends far more than it needs. Here the looks at
n = ``FIRST``..``LAST`` runs share one constant boundary ``c`` on the standardized
mean, |mean - truth| / (sd / sqrt(n)) < c at every look (Pocock's boundary, the
looks one run apart), with ``c`` chosen so that the probability that any look
crosses it is ``alpha`` exactly when the runs are Gaussian with a known variance:

- **the crossing probability** (``crossing``) by recursive numerical integration
  (Armitage, McPherson and Rowe 1969): the density of the standardized mean Z_n on
  (-c, c), carried look to look, Z_{n+1} = (sqrt(n) Z_n + X) / sqrt(n + 1), with
  Simpson's rule on ``points`` nodes (201 agree with 1,601 to 5e-6 of the
  probability);
- **the boundary** (``boundary``): ``c`` for ``alpha`` read from ``TABLE``, computed
  as ``calibrate`` does (bisection on ``crossing``, here with 401 nodes, rounded up to
  1e-4) at alpha = 10^(-k/4), k = 4..24, and interpolated linearly in c^2 against log
  alpha (c^2 is nearly linear there; the interpolated ``c`` gets ``MARGIN`` on top).
  Outside the table (alpha above 0.1 or below 1e-6) it is the union bound's, which is
  always valid;
- **the marginal level** (``marginal``): the two-sided error 2 (1 - Phi(c)) that one
  look spends. A look with an estimated variance takes Student's t at that same
  marginal level with its degrees of freedom (the "significance level approach" to
  group-sequential t tests, Jennison and Turnbull 2000, ch. 11): exact per look, and
  the looks together are held to ``alpha`` by simulation, not by proof
  (``tests/unit/test_sequential.py``: every interval of every look, pooled variances,
  unequal spreads, heavy tails, whole milliseconds).

At alpha 0.00315 (the share of the looks 6..65 in a ten-candidate race's SLO error)
the 60 looks need c = 3.63 where the union bound over them needs 4.04, and what
``sequential`` spent before 3.86 at 6 to 33 runs and 4.4-4.7 at 34 to 65; at the
price's share (0.00079) 4.01 against 4.36, 4.19 and 4.7-4.9. Pure, stdlib only.
"""

from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist

#: the looks the boundary is calibrated over (runs of one setting; before FIRST a
#: race's looks lean on the pooled variance, and ``sequential`` spends on them apart)
FIRST, LAST = 6, 65
#: c for alpha = 10^(-k/4), k = 4..24 (0.1 .. 1e-6), looks FIRST..LAST, from
#: ``calibrate(alpha, FIRST, LAST)`` rounded up to 1e-4
TABLE = (2.4449, 2.6831, 2.9002, 3.1009, 3.2885, 3.4651, 3.6325, 3.7921, 3.9447,
         4.0914, 4.2327, 4.3691, 4.5012, 4.6294, 4.7539, 4.8751, 4.9933, 5.1086, 5.2213,
         5.3315, 5.4393)
K0 = 4  # TABLE[0] is for alpha = 10^(-K0/4)
MARGIN = 1e-3  # added to an interpolated c (interpolation's error is below 2e-4)
_NORM = NormalDist()


def crossing(c: float, first: int = FIRST, last: int = LAST, points: int = 201) -> float:
    """P(|Z_n| >= c at some n in first..last) for the standardized mean Z_n of n
    independent N(0, 1) values (two-sided, the looks one value apart)."""
    m = points | 1
    h = 2.0 * c / (m - 1)
    z = [-c + i * h for i in range(m)]
    w = [h / 3.0 * (1 if i in (0, m - 1) else 4 if i % 2 else 2) for i in range(m)]
    f = [math.exp(-x * x / 2.0) / math.sqrt(2.0 * math.pi) for x in z]
    for n in range(first, last):
        a, s = math.sqrt(n / (n + 1.0)), 1.0 / math.sqrt(n + 1.0)
        g = [fi * wi for fi, wi in zip(f, w)]
        k = 1.0 / (s * math.sqrt(2.0 * math.pi))
        reach = 9.0 * s  # the kernel beyond 9 SDs is below 1e-17 of its peak
        new = []
        for x in z:
            lo = max(0, math.floor(((x - reach) / a + c) / h))
            hi = min(m, math.ceil(((x + reach) / a + c) / h) + 1)
            t = 0.0
            for j in range(lo, hi):
                d = (x - a * z[j]) / s
                t += g[j] * math.exp(-0.5 * d * d)
            new.append(k * t)
        f = new
    return 1.0 - sum(fi * wi for fi, wi in zip(f, w))


def calibrate(alpha: float, first: int = FIRST, last: int = LAST) -> float:
    """The constant boundary c whose ``crossing`` is ``alpha`` (to 1e-6)."""
    lo, hi = 0.5, 8.0
    while hi - lo > 1e-6:
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if crossing(mid, first, last) > alpha else (lo, mid)
    return hi


def union(alpha: float, looks: int) -> float:
    """The union bound's boundary: each of ``looks`` looks at ``alpha / looks``."""
    return _NORM.inv_cdf(1.0 - alpha / looks / 2.0)


@lru_cache(maxsize=1024)
def boundary(alpha: float) -> float:
    """The constant boundary c over the looks FIRST..LAST that all of them cross with
    probability at most ``alpha`` (Gaussian, known variance)."""
    if not 0.0 < alpha < 1.0:
        raise ValueError("alpha must be in (0, 1)")
    bonferroni = union(alpha, LAST - FIRST + 1)
    x = -4.0 * math.log10(alpha) - K0  # position in TABLE
    if x < 0.0 or x > len(TABLE) - 1:
        return bonferroni
    i = min(int(x), len(TABLE) - 2)
    f = x - i
    c2 = TABLE[i] ** 2 * (1.0 - f) + TABLE[i + 1] ** 2 * f
    c = math.sqrt(c2) + (MARGIN if f > 0.0 else 0.0)
    return min(c, bonferroni)


def marginal(alpha: float) -> float:
    """The two-sided error one look spends under ``boundary(alpha)``."""
    return 2.0 * _NORM.cdf(-boundary(alpha))
