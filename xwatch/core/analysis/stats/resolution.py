"""What the data can resolve: the resolution of a percentile's per-run values, and
intervals over runs that are never narrower than it.

A run's percentile is never a continuous number. It comes from the 0.5% log
histogram (``engine.stats``: the reported value is the geometric centre of the
bucket holding the order statistic, clamped to the phase's min/max), or, for a
workload that reports whole milliseconds, it is a whole number. Runs whose true
percentiles differ by less than that land on the same value, their spread is 0, and
Student's t over them claims certainty (the field case: native TPOT P99 7.30
[7.30, 7.30] over 2 runs). Two rules fix that:

- **the floor** (``widen``): every reported value lies within half its resolution
  of what it measured (the bucket's centre is within half a bucket of any value in
  the bucket; a rounded whole number within 0.5), so the mean of such values lies
  within ``resolution / 2`` of the mean it estimates: an interval is at least
  ``estimate ± resolution / 2``. A whole bucket on either side (``± resolution``)
  would be needlessly wide at 3 or more runs once the spread is also floored;
- **the spread** (``resolved_sd``): the spread seen between runs is taken as at
  least the spread rounding to the grid adds, ``sd² + Σ r² / 12`` (the variance of
  a uniform error over one resolution step, Sheppard's term, added instead of
  subtracted). With 2 runs the floor alone covers only 86-89% when the run-to-run
  spread is about one bucket (two runs in one bucket do not rule out a truth just
  outside it); with both, simulated runs quantized to buckets or to whole
  milliseconds cover the truth in 93.5-100% of 400 trials at 2, 3 and 8 runs, for
  run-to-run spreads from 0 to 10 resolutions, where plain t covers 0-95%
  (``tests/unit/test_resolution.py``).

The resolution of a set of values of one percentile (``resolution_ms``):

- all of them whole numbers (a workload that prints whole milliseconds, exact
  percentiles counted per value): 1.0 ms, or the histogram bucket's width where that
  is wider (above 200 ms a 0.5% bucket holds more than one whole number, and the
  interval code reads whole-number histograms bucket by bucket);
- otherwise the width of the 0.5% bucket that holds the value (upper edge minus
  lower edge, ~0.5% of it), the largest over the values;
- ``histogram=False`` (values that are not read from the histogram: exact
  percentiles of raw values): 1.0 if all are whole numbers, else 0.0 (continuous);
- no finite value: 0.0.

A difference of two settings' values has the sum of their resolutions
(``diff_resolution``): each side is off by up to half its own. Pure, stdlib only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xwatch.core.engine.stats import RELATIVE_WIDTH, bucket_index, bucket_value

#: a bucket's width relative to its (geometric) centre: upper / c - lower / c
_REL = math.sqrt(1.0 + RELATIVE_WIDTH) - 1.0 / math.sqrt(1.0 + RELATIVE_WIDTH)
#: the resolution of whole numbers (ms)
WHOLE = 1.0


def bucket_width(v: float) -> float:
    """The width (ms) of the 0.5% histogram bucket that holds ``v``."""
    if not v > 0 or math.isinf(v):
        return 0.0
    return bucket_value(bucket_index(v)) * _REL


def resolution_ms(values: Sequence[float], *, histogram: bool = True) -> float:
    """The resolution of per-run values of one percentile (see the module's rules)."""
    xs = [float(v) for v in values if v == v and not math.isinf(v)]
    if not xs:
        return 0.0
    whole = all(x.is_integer() for x in xs)
    if not histogram:
        return WHOLE if whole else 0.0
    width = max(bucket_width(abs(x)) for x in xs)
    return max(WHOLE, width) if whole else width


def diff_resolution(a: Sequence[float], b: Sequence[float]) -> float:
    """The resolution of differences ``b - a`` of two settings' per-run values."""
    return resolution_ms(a) + resolution_ms(b)


def resolved_sd(sd: float, *resolutions: float) -> float:
    """A spread between runs never smaller than rounding to the grid adds:
    ``sqrt(sd² + Σ r² / 12)`` (one ``r`` per quantized term: one for a value, a side's
    each for a difference). NaN stays NaN."""
    return math.sqrt(sd * sd + sum(r * r for r in resolutions) / 12.0)


def widen(lo: float, hi: float, estimate: float, resolution: float) -> tuple[float, float]:
    """``(lo, hi)`` widened to at least ``estimate ± resolution / 2`` (never narrowed).
    Half a resolution each side is the most a mean of grid values can be off from the
    mean they measured (module docstring); NaN estimate or no resolution: unchanged."""
    if not resolution > 0 or estimate != estimate:
        return lo, hi
    half = resolution / 2.0
    return min(lo, estimate - half), max(hi, estimate + half)
