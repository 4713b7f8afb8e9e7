"""A candidate's shares of a dedicated GPU's work as intervals (pure): HIGH's capacity
and LOW's throughput, each a ratio of two intervals (``ratio``), and their sum (``add``),
each holding whenever the intervals it is built from hold. ``search.Hunt.shares`` builds
them."""

from __future__ import annotations

import math
from dataclasses import dataclass

from xwatch.core.analysis.stats.intervals import Interval


@dataclass(frozen=True)
class Shares:
    high: Interval
    low: Interval
    total: Interval


def ratio(a: Interval, b: Interval) -> Interval:
    """``a / b`` for positive quantities, its interval from the ends (open where an end
    is missing)."""
    est = a.est / b.est if a.est == a.est and b.est == b.est and b.est else math.nan
    lo = a.lo / b.hi if a.lo is not None and b.hi else None
    hi = a.hi / b.lo if a.hi is not None and b.lo else None
    return Interval(est, lo, hi)


def add(a: Interval, b: Interval) -> Interval:
    est = a.est + b.est if a.est == a.est and b.est == b.est else math.nan
    lo = a.lo + b.lo if a.lo is not None and b.lo is not None else None
    hi = a.hi + b.hi if a.hi is not None and b.hi is not None else None
    return Interval(est, lo, hi)
