"""How the capacity search judges one load and spends its runs (pure): the search's
``Design`` (``NOW``, xwatch's; ``BEFORE``, the search until 2026-11-29, kept for
``benchmarks/stats/capacity_sim.py``), the error a load's look on n runs spends
(``look_alpha``), the load's interval at a look (``interval``: the race's pooled
variance, ``sequential.moderated``), and how many more runs would tell it from the
objective (``runs_to_clear``), how far apart its runs lie (``spread``), and a rate as a
scenario would write it (``nice``). ``search`` runs the searches over these."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from statistics import NormalDist

from xwatch.core.analysis.stats import looks
from xwatch.core.analysis.stats import sequential as seq
from xwatch.core.analysis.stats.intervals import Interval
from xwatch.core.analysis.stats.resolution import widen

MIN_RUNS = 2  # no interval on fewer runs (``BEFORE``)
MAX_RUNS = 10  # a load still open after these is taken as at the knee within noise
#: a load's first look on one run takes its variance from the pool alone, once the
#: pool has this many degrees of freedom
POOL_DF = 4
NO_INTERVAL = Interval(math.nan, None, None)
#: the looks ``T_TABLE`` is for (``Design.first``, ``Design.max_runs`` of ``NOW``)
T_LOOKS = (2, 10)
#: alpha = 10^(-k/4) for k in T_K[0]..T_K[1]: the level each look at 2..10 runs may
#: spend with Student's t on the load's own runs alone, all nine looks crossing together
#: with probability at most alpha (``benchmarks/stats/t_looks.py``: 200 million
#: Gaussian paths, each level the highest whose crossing rate's 99% upper bound is
#: under alpha)
T_K = (4, 20)
T_TABLE = (2.1968e-02, 1.1256e-02, 5.8699e-03, 3.1006e-03, 1.6547e-03, 8.8986e-04, 4.8149e-04,
           2.6141e-04, 1.4293e-04, 7.8522e-05, 4.2947e-05, 2.3567e-05, 1.3053e-05, 7.1805e-06,
           3.9219e-06, 2.1369e-06, 1.1854e-06)
T_MARGIN = 0.01  # taken off an interpolated level
_NORM = NormalDist()


@dataclass(frozen=True)
class Design:
    """How a search spends its runs (``NOW`` is xwatch's; ``BEFORE`` the search until
    2026-11-29, kept for ``benchmarks/stats/capacity_sim.py``, which compares them).

    ``first``: the runs a load has at its first look (1: the variance from the pool
    alone, once it has ``POOL_DF`` degrees of freedom); ``spread``: how a load's error
    rate is spread over its looks, from ``first`` to ``max_runs`` runs (``look_alpha``:
    "even", the same at each; "front", in proportion to 1 / (the look's number);
    "pocock", one boundary calibrated to the looks' correlation); ``place``: where the
    next load goes ("knee": ``knee.place``, around the crossing of the loads'
    estimates; "bisect": the widest gap's geometric middle); ``skip``: a load whose
    estimate lies on the far side of the objective from the knee's bracket end it
    could be is not run again (growth loads under it, once a higher load is probed);
    ``give_up``: a load is left open (``exhausted``) once its mean and variance as
    they are would need more runs than this to be told from the objective;
    ``narrow``: the loads a search may probe beyond its growth (None: the bisection's
    from ``GROWTH`` to ``TARGET`` and ``EXTRA_LOADS``); ``flat``: the growth extrapolates
    a curve that shows no rise above ``knee.SLOPE`` along the rise it shows, down to
    ``knee.FLAT`` (the step grows with the margin; else along ``knee.SLOPE``): not
    xwatch's, as it bought no runs in simulation (growth loads under the objective are
    run once, so a longer step trades them for narrowing loads of 2-3 runs each:
    docs/results/cpu-2026-11-29-capacity-speed2.md); ``keep``: a load's verdict, once
    given, is kept at later looks (``BEFORE``'s). xwatch's judges every load afresh at
    each look: with log-normal runs a verdict could be kept (the intervals hold over
    every look together), but near a knee a run's queue now and then runs away, and a
    load whose two or three runs happened not to is met on a pool that has seen none
    (``benchmarks/stats/capacity_sim.py --case intensive-runaway``, 300 trials: a knee
    missed in 56.7% kept, 11.7% afresh; docs/results/cpu-2026-11-29-runaway.md);
    ``wary``: once runs of one of a search's loads have lain ``search.RUNAWAY`` apart,
    a load of that search is met only on at least this many runs (0: no such rule;
    ``BEFORE``'s): a few quiet runs are no evidence that a load's queue does not run
    away, where the search has seen one that did (the same trials with four searches:
    22% missed without it, 1% with 8); ``own``: a load's interval is the narrower of
    the pooled one and the one on its own runs alone, each at half its error rate
    (``interval``; False: the pooled one only, ``BEFORE``'s)."""

    first: int = 2
    spread: str = "pocock"
    place: str = "knee"
    skip: bool = True
    give_up: int | None = 6
    narrow: int | None = 8
    max_runs: int = 10
    flat: bool = False
    keep: bool = False
    wary: int = 8
    own: bool = True


NOW = Design()
#: LOW's throughputs: the pooled interval only, at its whole error rate
POOLED = Design(own=False)
BEFORE = Design(first=MIN_RUNS, spread="even", place="bisect", skip=False, give_up=None,
                narrow=None, max_runs=MAX_RUNS, keep=True, wary=0, own=False)


def look_alpha(alpha: float, n: int, design: Design) -> float:
    """The two-sided error a load's look on ``n`` runs spends of the load's ``alpha``
    (see ``Design``): "even" and "front" a union bound (over the looks ``design.first``
    to ``design.max_runs`` the shares sum to ``alpha``); "pocock" one level at every
    look, the highest at which those looks, on cumulative runs, each with Student's t on
    the load's own runs alone, cross together with probability at most ``alpha``
    (``t_level``). The boundary calibrated for a known variance (``pocock_level``,
    ``looks.calibrate``) is not enough there: with 1 to 9 degrees of freedom the looks
    cross more independently, and at its level they spent 12.1% of a promised 10%; a
    pooled variance only adds degrees of freedom, and spends less."""
    first, last = design.first, design.max_runs
    if not first <= n <= last:
        return 0.0
    if design.spread == "even":
        return alpha / (last - first + 1)
    if design.spread == "front":
        return alpha * (1.0 / (n - first + 1)) / sum(1.0 / m for m in range(1, last - first + 2))
    return t_level(alpha, first, last)


def pocock_level(alpha: float, first: int, last: int) -> float:
    """The marginal level of the constant boundary that looks on ``first``..``last``
    cumulative Gaussian runs of a known variance cross together with probability
    ``alpha`` (``looks.calibrate``)."""
    return 2.0 * _NORM.cdf(-_boundary(alpha, first, last))


def t_level(alpha: float, first: int, last: int) -> float:
    """The level each look spends when its variance is estimated (``T_TABLE``, for
    ``T_LOOKS``; elsewhere, or outside the table's alphas, the union bound's
    ``alpha / looks``, always valid)."""
    looks_n = last - first + 1
    k = -4.0 * math.log10(alpha) if alpha > 0 else math.inf
    if (first, last) != T_LOOKS or not T_K[0] <= k <= T_K[1]:
        return alpha / looks_n
    i = min(int(k) - T_K[0], len(T_TABLE) - 2)
    f = k - (T_K[0] + i)
    level = math.exp((1.0 - f) * math.log(T_TABLE[i]) + f * math.log(T_TABLE[i + 1]))
    return max(alpha / looks_n, level * (1.0 - T_MARGIN))


@lru_cache(maxsize=64)
def _boundary(alpha: float, first: int, last: int) -> float:
    """``looks.calibrate``'s boundary, bisected between one look's and the union bound's
    (it lies between them) to 1e-4 and rounded up: half the bisection's steps (about
    half a second here, once a run: the search's rate is fixed)."""
    lo, hi = _NORM.inv_cdf(1.0 - alpha / 2.0), looks.union(alpha, last - first + 1)
    while hi - lo > 1e-4:
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if looks.crossing(mid, first, last) > alpha else (lo, mid)
    return hi


def interval(r: seq.LogRuns | None, prior: seq.Prior | None, alpha: float,
             design: Design = NOW, alone: bool = True) -> Interval:
    """``sequential.interval`` with the error rate spent over a load's looks as a search
    has them: at most ``design.max_runs`` runs of a load, its looks from
    ``design.first`` runs on, each spending ``look_alpha`` of ``alpha`` (a union bound;
    the race's spending covers up to 65 looks and beyond, which a load never has). The
    variance is the race's (``sequential.moderated``: pooled over every load, never
    below a load's own nor its within-run floor; on one run, the pool's, once it has
    ``POOL_DF`` degrees of freedom), the interval widened to the values' resolution.

    With ``design.own`` the interval is the narrower of that and the one on the load's
    own runs alone (its own variance, never below its floor, on its own degrees of
    freedom), each spending half of ``alpha`` over the looks: the one taken misses only
    if one of the two does, so at most ``alpha`` together. ``alone`` False: the pooled
    one only, still at half of ``alpha`` (a load that may not use its own runs now may
    have at an earlier look). On a GPU the pool takes in loads at the knee, whose runs
    now and then run away, and a load under it whose runs agree to 2% was held open by
    their spread (docs/capacity.md, "The pool and a load's own runs")."""
    if r is None:
        return NO_INTERVAL
    est = math.exp(r.mean)
    if r.n < max(1, design.first) or (r.n < 2 and (prior is None or prior.df < POOL_DF)):
        return Interval(est, None, None)
    h = half(r, prior, alpha, design, r.n, alone=alone)
    if h > 50.0:
        return Interval(est, None, None)
    lo, hi = widen(math.exp(r.mean - h), math.exp(r.mean + h), est, r.resolution)
    return Interval(est, max(0.0, lo), hi if r.bounded else None)


def half(r: seq.LogRuns, prior: seq.Prior | None, alpha: float, design: Design,
         n: int, more: int = 0, alone: bool = True) -> float:
    """The half-width of ``interval``'s log interval at a look on ``n`` runs (``more``
    of them still to come, each adding a degree of freedom; ``r``'s mean and variances
    as they are); inf where nothing goes on it or no look is spent there."""
    share = alpha / 2.0 if design.own else alpha
    a = look_alpha(share, n, design)
    if not a > 0:  # past the most runs a load gets: no look is spent there
        return math.inf
    var, df = seq.moderated(r, prior)
    h = seq.half_width(var, df + more if df else df, n, a) if var == var else math.inf
    if design.own and alone and r.df >= 1:
        h = min(h, seq.half_width(r.var, r.df + more, n, a))
    return h


def runs_to_clear(r: seq.LogRuns, prior: seq.Prior | None, bound: float, alpha: float,
                  design: Design, alone: bool = True) -> int | None:
    """How many more runs would put ``r``'s interval (``interval`` at ``alpha``) wholly on
    one side of ``bound`` if its mean and variances stay as they are, each run adding a
    degree of freedom (``design.max_runs`` + 1: none within the most runs a load gets;
    None: no variance to go on yet)."""
    never = design.max_runs + 1
    var, df = seq.moderated(r, prior)
    if (var != var or df < 1) and not (design.own and alone and r.df >= 1):
        return None
    gap = abs(r.mean - math.log(bound))
    if not gap > 0:
        return never
    for k in range(max(r.n, design.first), design.max_runs + 1):
        if half(r, prior, alpha, design, k, k - r.n, alone) < gap:
            return k - r.n
    return never


def spread(values: Sequence[float]) -> float:
    """The largest of a load's positive values over the smallest (1: fewer than two)."""
    pos = [v for v in values if v > 0]
    return max(pos) / min(pos) if len(pos) >= 2 else 1.0


def nice(rate: float, taken: Sequence[float] = (),
         within: tuple[float, float] | None = None) -> float:
    """``rate`` to three significant figures (four, five... where that is a load
    already probed, or falls outside ``within``): rates a scenario can be given as they
    are."""
    for digits in (3, 4, 5, 6):
        r = float(f"{rate:.{digits}g}")
        if r not in taken and (within is None or within[0] <= r <= within[1]):
            return r
    return rate
