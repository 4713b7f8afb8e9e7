"""Anytime-valid intervals over runs for several settings at once: what the advise
race (``analysis.stats.race``) looks at after every round.

A race looks at its data after every round and stops on the first look that
decides, so an interval that holds at 95% for one fixed number of runs does not
keep its promise over the race. Here a setting's interval is a confidence
sequence: it holds at every look at once. Three parts, each its own function:

- **the scale**: runs' values are taken on the log scale (latency percentiles and
  throughputs spread in proportion to their level), so the interval is for the
  geometric mean of the runs' values (the typical run's value), and settings whose
  levels differ share one spread;
- **pooling** (``fit_prior``, ``moderated``): the between-run variance of log values
  is pooled over all the settings, with their degrees of freedom summed (two runs of
  five settings give 5, not 1 each). That assumes one relative spread for all, so a
  setting whose own variance is above the pool's gets its own, with the pool's
  degrees of freedom borrowed only as far as it looks like the pool (scaled by the
  squared ratio of the variances); and no variance is taken below the runs'
  within-run variance (each run's percentile from order statistics) nor below what
  rounding to the values' resolution adds (``analysis.stats.resolution``). Simulated with
  spreads equal, 6x apart, one 6x noisier than four others, heavy tails and whole
  milliseconds, every interval of every look held together in 95-99.7% of 300
  trials (``tests/unit/test_sequential.py``). A fitted empirical-Bayes weight (Smyth
  2004) was tried first: with 1-3 degrees of freedom per setting it came out near 1
  even for equal spreads, which is no pooling at all;
- **spending** (``look_alpha``): the error rate ``alpha`` of one setting is spent
  over its looks, one look per run count n >= 2: 90% of it evenly over the first 32
  (2 to 33 runs, where a race's decisions fall), the rest in proportion to
  1 / (n - 1)^2 beyond, so the shares sum to alpha over any number of runs. A union
  bound over looks is the simplest confidence sequence (Howard, Ramdas et al. 2021,
  "Time-uniform, nonparametric, nonasymptotic confidence sequences"); their stitched
  and normal-mixture boundaries are narrower only beyond the tens of runs a race
  affords, and they take the variance as known.

Pure, stdlib only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from xwatch.core.analysis.stats.intervals import Interval
from xwatch.core.analysis.stats.resolution import resolution_ms, resolved_sd, widen
from xwatch.core.analysis.stats.runs import t_ppf

ALPHA = 0.05
POWER = 2.0  # how fast a noisier setting stops borrowing the pool's degrees of freedom
#: the looks that share most of the error rate evenly (a race affords 2 to ~30 runs
#: of a candidate), and how much
LOOKS, FRONT = 32, 0.9
_TAIL = math.pi ** 2 / 6.0 - sum(1.0 / m ** 2 for m in range(1, LOOKS + 1))


@lru_cache(maxsize=8192)
def t_quantile(p: float, df: int) -> float:
    return t_ppf(p, df)


# ------------------------------------------------------------ spending
def look_alpha(alpha: float, n: int) -> float:
    """The share of ``alpha`` spent at a setting's look on ``n`` runs (n >= 2): the
    first ``LOOKS`` looks (2 to LOOKS + 1 runs) share ``FRONT`` of it evenly, the rest
    ``1 - FRONT`` in proportion to 1 / (n - 1)^2; over all n the shares sum to alpha."""
    if n < 2:
        return 0.0
    if n <= LOOKS + 1:
        return alpha * FRONT / LOOKS
    return alpha * (1.0 - FRONT) / (_TAIL * (n - 1) ** 2)


# ------------------------------------------------------------ one setting's runs
@dataclass(frozen=True)
class LogRuns:
    """One setting's runs on the log scale: how many, their mean and sum of squared
    deviations (``ss``), the floor of one run's variance (within-run and
    resolution), the resolution of the values (their own unit), and whether every
    run bounds its value (False: too few requests for the percentile's upper
    order statistic, so an upper bound over runs would be a guess)."""

    n: int
    mean: float
    ss: float
    floor: float
    resolution: float
    bounded: bool = True

    @property
    def df(self) -> int:
        return max(0, self.n - 1)

    @property
    def var(self) -> float:
        """Own variance of one run's log value, never below the floor (NaN: < 2 runs)."""
        return max(self.ss / self.df, self.floor) if self.df else math.nan


def log_runs(values: Sequence[float], ses: Sequence[float] = (), *,
             histogram: bool = True, bounded: bool = True) -> LogRuns | None:
    """``values`` (one per run, > 0) with their within-run standard errors ``ses``
    (the same unit; NaN or missing: unknown, no floor from it). None: no value.
    Values at or below 0 are taken as a tenth of the smallest positive one."""
    pairs = [(v, s) for v, s in zip(values, [*ses, *[math.nan] * len(values)])
             if v == v and not math.isinf(v)]
    if not pairs:
        return None
    pos = [v for v, _ in pairs if v > 0]
    if not pos:
        return None
    tiny = min(pos) / 10.0
    logs = [math.log(max(v, tiny)) for v, _ in pairs]
    n = len(logs)
    mean = sum(logs) / n
    ss = sum((x - mean) ** 2 for x in logs)
    res = resolution_ms([v for v, _ in pairs], histogram=histogram)
    geo = math.exp(mean)
    rel = [(s / max(v, tiny)) ** 2 for v, s in pairs if s == s and s >= 0]
    within = sum(rel) / len(rel) if rel else 0.0
    floor = resolved_sd(math.sqrt(within), res / geo) ** 2
    return LogRuns(n, mean, ss, floor, res, bounded)


# ------------------------------------------------------------ pooling
@dataclass(frozen=True)
class Prior:
    """The variance of one run's log value pooled over settings, and its degrees of
    freedom (the settings' own, summed)."""

    var: float
    df: int


def fit_prior(runs: Sequence[LogRuns | None]) -> Prior | None:
    """The pooled variance of the settings with 2 runs or more (None: none has)."""
    own = [r for r in runs if r is not None and r.df > 0]
    df = sum(r.df for r in own)
    if not df:
        return None
    return Prior(sum(r.ss for r in own) / df, df)


def moderated(r: LogRuns, prior: Prior | None) -> tuple[float, int]:
    """The variance of one run's log value for ``r`` and its degrees of freedom: the
    pooled one, but never below ``r``'s own (a setting noisier than the rest is not
    hidden by the quiet ones) nor its floor; (NaN, 0): nothing to go on."""
    if prior is None or prior.df < r.df:
        return (r.var, r.df) if r.df else (math.nan, 0)
    own = r.var if r.df else 0.0
    if own <= prior.var:
        return max(prior.var, r.floor), prior.df
    # noisier than the pool: its own variance, with the pool's degrees of freedom
    # borrowed only as far as it looks like the pool
    df = r.df + int((prior.df - r.df) * (prior.var / own) ** POWER)
    return max(own, r.floor), df


# ------------------------------------------------------------ the interval
def half_width(var: float, df: int, n: int, alpha: float) -> float:
    """Half the two-sided interval of a mean of ``n`` log values at error ``alpha``
    (already spent for this look); inf where there is nothing to go on."""
    if df < 1 or n < 1 or var != var:
        return math.inf
    return t_quantile(1.0 - alpha / 2.0, df) * math.sqrt(var / n)


def interval(r: LogRuns | None, prior: Prior | None, alpha: float,
             cut_upper: bool = False) -> Interval:
    """The geometric mean of ``r``'s values and its interval at this look (``alpha``
    for this setting and metric, before spending over looks), on the values' scale,
    widened to their resolution. Open where there is no variance to go on, or above
    when a run could not bound its value (``r.bounded`` False, or ``cut_upper``)."""
    if r is None:
        return Interval(math.nan, None, None)
    est = math.exp(r.mean)
    if r.n < 2:
        return Interval(est, None, None)
    var, df = moderated(r, prior)
    h = half_width(var, df, r.n, look_alpha(alpha, r.n))
    if h > 50.0:  # beyond a factor e^50 either way: nothing to go on
        return Interval(est, None, None)
    lo, hi = widen(math.exp(r.mean - h), math.exp(r.mean + h), est, r.resolution)
    return Interval(est, max(0.0, lo), hi if r.bounded and not cut_upper else None)


def runs_to_clear(r: LogRuns, prior: Prior | None, bound: float, alpha: float,
                  most: int = 200) -> int | None:
    """About how many more runs would put ``r``'s interval wholly on one side of
    ``bound`` if its mean and variance stay as they are (0: it is already; None: not
    within ``most`` runs in all, or it cannot: no variance, a mean on the bound, an
    unbounded run for a bound above)."""
    if r.n < 2 or not bound > 0:
        return None
    gap = abs(r.mean - math.log(bound))
    if not gap > 0 or (not r.bounded and r.mean < math.log(bound)):
        return None
    var, df = moderated(r, prior)
    for k in range(r.n, most + 1):
        # each more run adds a degree of freedom to the pooled variance
        if half_width(var, df + k - r.n, k, look_alpha(alpha, k)) < gap:
            return k - r.n
    return None


def runs_to_separate(a: LogRuns, b: LogRuns, prior: Prior | None, alpha: float,
                     most: int = 200) -> int | None:
    """About how many more runs of each would make the intervals of ``a`` and ``b``
    stop overlapping (None: not within ``most``, or the means are equal)."""
    if a.n < 2 or b.n < 2:
        return None
    gap = abs(a.mean - b.mean)
    if not gap > 0:
        return None
    (va, da), (vb, db) = moderated(a, prior), moderated(b, prior)
    for k in range(max(a.n, b.n), most + 1):
        more = 2 * k - a.n - b.n  # both run: the pool gains a degree of freedom for each
        ha = half_width(va, da + more, k, look_alpha(alpha, k))
        hb = half_width(vb, db + more, k, look_alpha(alpha, k))
        if ha + hb < gap:
            return k - max(a.n, b.n)
    return None
