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
- **pooling** (``fit_prior``, ``moderated``, ``borrowed``): the between-run variance
  of log values is pooled over all the settings, with their degrees of freedom summed
  (two runs of five settings give 5, not 1 each). That assumes one relative spread for
  all, so a setting whose own variance is above the pool's gets its own, with the
  other settings' degrees of freedom borrowed only as far as its runs cannot tell it
  from them: their degrees of freedom times the p-value of the F test of its
  variance against theirs (``borrowed``; since 2026-11-29 two-sided at a setting's
  looks before ``EARLY`` runs, one-sided from there; before, one-sided, and before that
  the squared ratio of its variance to the pool's, which lent a setting 6x noisier than
  the rest 5-15% of the pool however many runs showed it noisier); a setting no noisier
  than the pool gets the pool's variance on all its degrees of freedom (its own few
  would widen the interval of runs that agree); at a setting's looks before ``EARLY``
  runs, a setting noisier than all the others with 99.99% confidence leaves the pool it
  is given (``outliers``; from there on it stays: over the calibrated looks, leaving
  when the quiet settings' variance comes out low narrowed theirs when they were most
  likely to miss); and no variance is taken below the runs' within-run variance (each
  run's percentile from order statistics) nor below what rounding to the values'
  resolution adds (``analysis.stats.resolution``). Simulated with spreads equal, 6x
  apart, one 6x noisier than four others, heavy tails and whole milliseconds, every
  interval of every look held together in 95.0-100% of 300 trials at 2 to 12 runs, and
  at 2 to 65 runs in 96.0% and 95.75% of 400 for the two hardest
  (``tests/unit/test_sequential.py``; 3,000 with another seed: 94.9% and 95.2%, 95.7%
  with a third for spreads 6x apart: at the limit, the two-sided borrowing at the first
  looks costing 0.4-0.9 points; ``docs/statistics.md`` has each, and the ways tried and
  left: pooling a quieter setting only as far as the F test lends, the narrower of its
  own and the pooled interval at half the error each, the two-sided p-value at every
  look). A fitted empirical-Bayes weight (Smyth 2004) was tried first: with 1-3 degrees
  of freedom per setting it came out near 1 even for equal spreads, which is no pooling
  at all;
- **spending** (``look_alpha``): the error rate ``alpha`` of one setting is spent over
  its looks, one look per run count n >= 2, ``FRONT`` (90%) of it on the looks 2 to 65
  runs, where a race's decisions fall, the rest in proportion to 1 / (n - 1)^2 beyond,
  so that any number of runs is covered. The looks 2 to 5 each spend ``FRONT /
  UNION_LOOKS`` of it, as before; the 60 looks 6 to 65 share the rest of ``FRONT``
  through one boundary calibrated to their correlation (``analysis.stats.looks``: the
  looks are on cumulative runs, so the chance that any of them misses is far below the
  sum of their chances). At a ten-candidate race's SLO share (0.004) a look from 6
  runs on spends 2.8e-4 instead of the union bound's 1.1e-4 (z 3.63 against 3.86
  before at 6 to 33 runs, 4.4-4.7 at 34 to 65). Each look takes Student's t at that
  marginal level with its pooled degrees of freedom (exact per look; over the looks
  held by the simulations above, not by proof). The first looks stay apart because
  there the pool carries the interval: a setting noisier than the rest whose own 1-4
  degrees of freedom happen to look like the pool's gets the pool's variance, and most
  misses of the noisier simulations fall there; with all 64 looks through the
  boundary, one 6x noisier setting among four missed in 5.1% of 2,000 simulations at 2
  to 12 runs, and spreads 6x apart in 5.4% of 3,000 at 2 to 65. With the 60 looks
  through the boundary and the squared-ratio borrowing, spreads 6x apart missed in
  5.3% of 3,000 simulations at 2 to 65 runs; hence the F test. ``union_look_alpha`` is
  the spending before (a union bound, 90% evenly over 2 to 33 runs). Howard, Ramdas et
  al.'s (2021) stitched and normal-mixture confidence sequences are narrower only
  beyond the tens of runs a race affords, and take the variance as known.

Over a fleet's boxes (``analysis.stats.blocks``, issue 68) each setting's runs come with
their boxes' levels removed: its level at the average box, its share of the additive
model's residual degrees of freedom (``LogRuns.dof``, fractional) and its effective
number of runs (``LogRuns.n_eff``); pooling, borrowing and spending are as above (the
looks still counted in runs).

Pure, stdlib only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from xwatch.core.analysis.stats import looks
from xwatch.core.analysis.stats.intervals import Interval, betainc
from xwatch.core.analysis.stats.resolution import resolution_ms, resolved_sd, widen
from xwatch.core.analysis.stats.runs import t_ppf

ALPHA = 0.05
#: the looks (2 to LOOKS + 1 runs) that share ``FRONT`` of the error rate (a race
#: affords 2 to some tens of runs of a candidate); those before ``looks.FIRST`` runs
#: each spend ``FRONT / UNION_LOOKS``, the rest share one calibrated boundary
LOOKS, FRONT = looks.LAST - 1, 0.9
_TAIL = math.pi ** 2 / 6.0 - sum(1.0 / m ** 2 for m in range(1, LOOKS + 1))
#: the union bound's looks (``union_look_alpha``, the spending before)
UNION_LOOKS = 32
_UNION_TAIL = math.pi ** 2 / 6.0 - sum(1.0 / m ** 2 for m in range(1, UNION_LOOKS + 1))
#: the share of ``FRONT`` that the calibrated looks FIRST..LAST get
_LATE = 1.0 - (looks.FIRST - 2) / UNION_LOOKS


@lru_cache(maxsize=8192)
def t_quantile(p: float, df: float) -> float:
    return t_ppf(p, df)


# ------------------------------------------------------------ spending
@lru_cache(maxsize=4096)
def look_alpha(alpha: float, n: int) -> float:
    """The two-sided error a setting's look on ``n`` runs spends (n >= 2): before
    ``looks.FIRST`` runs ``FRONT / UNION_LOOKS`` of ``alpha`` each; from there to
    LOOKS + 1 the marginal level of the boundary that those looks all cross with
    probability ``FRONT * _LATE * alpha`` (``looks.marginal``); beyond in proportion
    to 1 / (n - 1)^2, summing to the rest."""
    if n < 2:
        return 0.0
    if n < looks.FIRST:
        return alpha * FRONT / UNION_LOOKS
    if n <= LOOKS + 1:
        return looks.marginal(alpha * FRONT * _LATE)
    return alpha * (1.0 - FRONT) / (_TAIL * (n - 1) ** 2)


def union_look_alpha(alpha: float, n: int) -> float:
    """The spending before ``look_alpha``: a union bound over the looks, the first
    ``UNION_LOOKS`` (2 to UNION_LOOKS + 1 runs) sharing ``FRONT`` of ``alpha``
    evenly, the rest in proportion to 1 / (n - 1)^2; over all n the shares sum to
    alpha."""
    if n < 2:
        return 0.0
    if n <= UNION_LOOKS + 1:
        return alpha * FRONT / UNION_LOOKS
    return alpha * (1.0 - FRONT) / (_UNION_TAIL * (n - 1) ** 2)


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
    #: with blocks (``analysis.stats.blocks``): the setting's share of the additive
    #: model's residual degrees of freedom (None: ``n - 1``, no blocks)
    dof: float | None = None
    #: with blocks: 1 / the factor of the error variance that is the level's variance
    #: (``n`` on a balanced design; None: ``n``)
    n_eff: float | None = None

    @property
    def df(self) -> float:
        return max(0, self.n - 1) if self.dof is None else self.dof

    @property
    def var(self) -> float:
        """Own variance of one run's log value, never below the floor (NaN: < 2 runs)."""
        return max(self.ss / self.df, self.floor) if self.df else math.nan


def log_runs(values: Sequence[float], ses: Sequence[float] = (), *,
             histogram: bool = True, bounded: bool = True,
             resolution: float | None = None) -> LogRuns | None:
    """``values`` (one per run, > 0) with their within-run standard errors ``ses``
    (the same unit; NaN or missing: unknown, no floor from it). None: no value.
    Values at or below 0 are taken as a tenth of the smallest positive one.
    ``resolution``: the values' own (a closed loop's samples/s: one iteration's samples
    over the window, ``runs.rate_resolution``) instead of the one ``resolution_ms``
    reads from the values."""
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
    res = resolution_ms([v for v, _ in pairs], histogram=histogram) if resolution is None \
        else resolution
    geo = math.exp(mean)
    rel = [(s / max(v, tiny)) ** 2 for v, s in pairs if s == s and s >= 0]
    within = sum(rel) / len(rel) if rel else 0.0
    floor = resolved_sd(math.sqrt(within), res / geo) ** 2
    return LogRuns(n, mean, ss, floor, res, bounded)


# ------------------------------------------------------------ pooling
#: a setting leaves the others' pool when its variance is above theirs with this
#: confidence (the one-sided F test's p-value against all the others below it): the
#: quiet settings' intervals are not widened by one whose runs disagree far more
OUTLIER = 1e-4
#: a setting's looks before this many runs (each spent apart, ``look_alpha``; where a
#: race decides): only there does a far noisier setting leave the pool (``comparable``),
#: and does a noisier one borrow by the two-sided p-value (``borrowed``)
EARLY = looks.FIRST


@dataclass(frozen=True)
class Prior:
    """The variance of one run's log value pooled over settings, and its degrees of
    freedom (the settings' own, summed); ``parts``: each setting's own variance (never
    below its floor) and degrees of freedom, for the pool of the settings comparable to
    one (``comparable``; empty: every setting is)."""

    var: float
    df: float
    parts: tuple[tuple[float, float], ...] = ()


def fit_prior(runs: Sequence[LogRuns | None]) -> Prior | None:
    """The pooled variance of the settings with 2 runs or more (None: none has)."""
    own = [r for r in runs if r is not None and r.df > 0]
    df = sum(r.df for r in own)
    if not df:
        return None
    return Prior(sum(r.ss for r in own) / df, df, tuple((r.var, r.df) for r in own))


def _f_above(f: float, d1: float, d2: float) -> float:
    """P(F(d1, d2) >= f): how often a variance on ``d1`` degrees of freedom comes out
    ``f`` times one on ``d2`` or more when the two are equal."""
    if not f > 0:
        return 1.0
    return betainc(d2 / 2.0, d1 / 2.0, d2 / (d2 + d1 * f))


def outliers(parts: Sequence[tuple[float, float]]) -> list[bool]:
    """Per setting (its variance and degrees of freedom), whether its variance is above
    all the others' pooled with confidence ``1 - OUTLIER`` (one F test each against the
    rest, not against the setting it would be pooled for: a setting whose own runs
    happen to agree does not push its peers out and narrow itself on the rest)."""
    total_v = sum(v * d for v, d in parts)
    total_d = sum(d for _, d in parts)
    out = []
    for v, d in parts:
        od = total_d - d
        rest = (total_v - v * d) / od if od > 0 else 0.0
        out.append(od > 0 and rest > 0 and _f_above(v / rest, d, od) < OUTLIER)
    return out


def comparable(r: LogRuns, prior: Prior) -> tuple[float, float]:
    """The variance and degrees of freedom of the other settings pooled for ``r``:
    each setting's own variance (never below its floor), but, while ``r`` has fewer
    than ``EARLY`` runs, not those whose runs disagree far more than the rest's
    (``outliers``); the whole pool less ``r`` where ``prior`` does not carry the
    settings apart."""
    if not prior.parts:
        others = prior.df - r.df
        rest = (prior.var * prior.df - r.ss) / others if others > 0 else 0.0
        return (rest, others) if others > 0 and rest > 0 else (0.0, 0)
    parts = list(prior.parts)
    flags = outliers(parts) if r.n < EARLY else [False] * len(parts)
    if r.df and (r.var, r.df) in parts:
        i = parts.index((r.var, r.df))
        del parts[i], flags[i]
    keep = [p for p, out in zip(parts, flags) if not out]
    df = sum(d for _, d in keep)
    return (sum(v * d for v, d in keep) / df, df) if df else (0.0, 0)


def borrowed(r: LogRuns, prior: Prior) -> int:
    """How many of the comparable settings' degrees of freedom (``comparable``) a setting
    noisier than them borrows: their degrees of freedom times the p-value of the F test
    of its variance against theirs (falling as its runs tell it apart), rounded; a
    setting much noisier than the rest on many runs borrows none. At its looks before
    ``EARLY`` runs the two-sided p-value (1 where the two variances are equal: there a
    race decides, and its own 1-4 degrees of freedom tell little), from there the
    one-sided (half as much: over the calibrated looks, a setting a little noisier than
    the pool that borrowed nearly all of it missed in 5.5% of 3,000 simulations)."""
    rest, others = comparable(r, prior)
    if not rest > 0 or not others:
        return 0
    sides = 2.0 if r.n < EARLY else 1.0
    return round(others * min(1.0, sides * _f_above(r.var / rest, r.df, others)))


def moderated(r: LogRuns, prior: Prior | None) -> tuple[float, float]:
    """The variance of one run's log value for ``r`` and its degrees of freedom: pooled
    with the settings comparable to it (``comparable``), but never below ``r``'s own (a
    setting noisier than the rest is not hidden by the quiet ones) nor its floor; (NaN,
    0): nothing to go on."""
    if prior is None or prior.df < r.df:
        return (r.var, r.df) if r.df else (math.nan, 0)
    rest, others = comparable(r, prior)
    if not r.df:
        return (max(rest, r.floor), others) if others else (math.nan, 0)
    pool = (r.var * r.df + rest * others) / (r.df + others)
    if r.var <= pool:
        # no noisier than the pool: the pool's variance on all its degrees of freedom
        return max(pool, r.floor), r.df + others
    # noisier than the pool: its own variance, with the pool's degrees of freedom
    # borrowed only as far as the runs cannot tell it from the rest
    return r.var, r.df + borrowed(r, prior)


# ------------------------------------------------------------ the interval
def half_width(var: float, df: float, n: float, alpha: float) -> float:
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
    h = half_width(var, df, r.n if r.n_eff is None else r.n_eff, look_alpha(alpha, r.n))
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
