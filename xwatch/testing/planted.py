"""A planted run of advise's race (``benchmarks/stats/race_sim.py``) and of the capacity
search (``benchmarks/stats/capacity_sim.py``): the run's P99 drawn as the order statistic
of its requests around a true P99 moved by a run-level effect, with the within-run
standard error the product would record."""

from __future__ import annotations

import math
import random
import statistics
from dataclasses import dataclass

from xwatch.core.analysis.stats.intervals import rank_bounds

SHAPE = 0.5  # log-normal SD of a run's request latencies
Z95 = 1.959963984540054


@dataclass(frozen=True)
class Scenario:
    name: str
    equal: bool = False  # every candidate at sigma 0.15
    heavy: bool = False
    whole: bool = False
    requests: int = 400


SCENARIOS = {s.name: s for s in (
    Scenario("equal", equal=True), Scenario("unequal"), Scenario("heavy", heavy=True),
    Scenario("whole", heavy=True, whole=True), Scenario("few", requests=16))}
_NORM = statistics.NormalDist()


def _q(u: float, p99: float) -> float:
    """The latency at quantile u of a run whose true P99 is ``p99``."""
    u = min(max(u, 1e-12), 1 - 1e-12)
    return p99 * math.exp(SHAPE * (_NORM.inv_cdf(u) - _NORM.inv_cdf(0.99)))


def one_run(rng: random.Random, sc: Scenario, p99: float, sigma: float) -> tuple[float, float]:
    """(the run's P99 as measured, its within-run standard error)."""
    e = rng.gauss(0, 1)
    if sc.heavy:
        e = rng.gauss(0, 1) / math.sqrt(rng.gammavariate(1.5, 2.0) / 3.0) / math.sqrt(3.0)
    true = p99 * math.exp((0.15 if sc.equal else sigma) * e)
    n = sc.requests
    k = max(1, math.ceil(0.99 * n))
    lo_r, hi_r = rank_bounds(n, 99.0)
    top = hi_r or n
    ut = rng.betavariate(top, n + 1 - top)
    uk = ut * rng.betavariate(k, top - k) if top > k else ut
    ul = uk * rng.betavariate(lo_r, k - lo_r) if lo_r and k > lo_r else uk
    est, lo, hi = _q(uk, true), _q(ul, true), _q(ut, true)
    if sc.whole:
        est, lo, hi = float(round(est)), float(round(lo)), float(round(hi))
    se = (hi - lo) / (2 * Z95) if hi_r is not None and lo_r is not None else math.nan
    return est, se
