"""Percentiles from few requests: when a percentile is more than the maximum, and
every request of every run pooled with the run kept as the unit.

**The rule.** Nearest-rank Pq of n requests is the r-th smallest, r = ceil(q n / 100);
it is below the maximum only when r < n, i.e. ``n >= 100 / (100 - q)``
(``needed``: P50 2, P90 10, P95 20, P99 100, P99.9 1000, exactly). With fewer, "P99"
is the largest request, and every place that shows it says so (``few_note``).

**Pooling.** With several runs of too few requests each, a run's P99 is its maximum
and the mean of maxima is not a P99. Pooled, the runs' requests have one: the
percentile of all requests merged. Its interval keeps the run as the unit with a
two-stage (hierarchical) bootstrap: draw k runs with replacement, then each drawn
run's n requests with replacement from its histogram, pool, take the percentile;
``DRAWS`` times with a fixed seed. With few runs the bootstrap's spread understates
the between-run part (a resample of 3 runs has only 10 distinct run sets), so the
interval is ``estimate ± t(k-1) sd* sqrt(k / (k-1))`` from the draws' standard
deviation ``sd*`` (the t of ``analysis.stats.runs`` for k runs), never narrower than the
resolution (``analysis.stats.resolution``); a side stays **open** where the pooled count
is too small for a distribution-free bound on it (an upper bound for P99 needs 299
requests: no resampling can bound what was never observed). A difference of two
settings draws pairs of runs (repeat r of A with repeat r of B) the same way.
Checked against simulated runs with a run effect of 8% (as on the H100) and
fewer requests per run than P95 needs: 3 runs x 40 bucketed and 8 x 15 whole-ms
requests cover the true P95 in 99% and 100% of 150 trials, a difference over 3
pairs in 100 of 100 (``tests/unit/test_pooled.py``). Not promised: with run effects
as large as the requests' own spread (30%), 3 to 8 runs covered only 85-90% of 200
trials, since a pooled upper percentile of a few runs under-represents the rare
slow run and no resampling of those runs can show it.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from fractions import Fraction
from functools import lru_cache

from xwatch.core.analysis.stats.intervals import Hist, Interval, merge, percentile_interval, rank_bounds
from xwatch.core.analysis.stats.resolution import resolution_ms, widen
from xwatch.core.analysis.stats.runs import Z95, t95
from xwatch.core.engine.stats import nearest_rank

DRAWS = 1000


@lru_cache(maxsize=64)
def needed(q: float) -> int | None:
    """The fewest requests whose nearest-rank Pq is not their maximum (None: q >= 100).
    Cached: the workload table asks for four percentiles of every workload on each
    refresh, and the exact fraction took ~6 us a call."""
    f = Fraction(repr(float(q)))
    if f >= 100:
        return None
    if f <= 0:
        return 1
    return math.ceil(Fraction(100) / (100 - f))


def too_few(n: int, q: float) -> bool:
    """Fewer requests than Pq needs (and at least one: no requests is no value)."""
    k = needed(q)
    return n > 0 and (k is None or n < k)


def few_note(n: int, q: float) -> str:
    """``"P99 of 42 requests is their maximum (needs 100)"``, or "" when enough."""
    if not too_few(n, q):
        return ""
    return f"P{q:g} of {n} requests is their maximum (needs {needed(q)})"


def _sampler(h: Hist) -> tuple[list[float], list[int], int]:
    cum, vals, c = [], [], 0
    for i, k in h.items:
        c += k
        cum.append(c)
        vals.append(h.value(i))
    return vals, cum, c


def _boot(groups: Sequence[Sequence[Hist]], q: float, draws: int, seed: int
          ) -> list[list[float]]:
    """Per draw, each arm's pooled Pq; ``groups[r]`` is run (or pair) r's histograms,
    one per arm, resampled together."""
    rng = random.Random(seed)
    samplers = [[_sampler(h) for h in g] for g in groups]
    k, arms = len(groups), len(groups[0])
    out = []
    for _ in range(draws):
        chosen = [samplers[rng.randrange(k)] for _ in range(k)]
        row = []
        for a in range(arms):
            pool: list[float] = []
            for s in chosen:
                vals, cum, n = s[a]
                pool += rng.choices(vals, cum_weights=cum, k=n)
            pool.sort()
            row.append(pool[nearest_rank(len(pool), q) - 1] if pool else math.nan)
        out.append(row)
    return out


def _open(n: int, q: float) -> tuple[bool, bool]:
    """Whether n pooled requests leave Pq's lower / upper side without a bound."""
    lo, hi = rank_bounds(n, q)
    return lo is None, hi is None


def pooled_interval(runs: Sequence[Hist], q: float, draws: int = DRAWS, seed: int = 0
                    ) -> Interval:
    """Pq of every request of ``runs`` pooled, with its interval over runs (module
    docstring). One run: its own order-statistic interval."""
    rs = [h for h in runs if h.n]
    if not rs:
        return Interval(math.nan, None, None)
    pooled = merge(rs)
    if len(rs) < 2:
        return percentile_interval(pooled, q)
    est = percentile_interval(pooled, q).est
    stats = [d[0] for d in _boot([(h,) for h in rs], q, draws, seed)]
    return _interval(est, stats, len(rs), resolution_ms([est]), *_open(pooled.n, q))


def pooled_diff_interval(pairs: Sequence[tuple[Hist, Hist]], q: float, draws: int = DRAWS,
                         seed: int = 0) -> Interval:
    """Pq(B) - Pq(A), each pooled over its runs, pairs of runs drawn together. B - A
    has no lower bound where A's upper or B's lower side is open, and vice versa."""
    ps = [(a, b) for a, b in pairs if a.n and b.n]
    if not ps:
        return Interval(math.nan, None, None)
    ma, mb = merge([a for a, _ in ps]), merge([b for _, b in ps])
    ea, eb = percentile_interval(ma, q).est, percentile_interval(mb, q).est
    if len(ps) < 2:
        return Interval(eb - ea, None, None)
    stats = [d[1] - d[0] for d in _boot(ps, q, draws, seed)]
    (a_lo, a_hi), (b_lo, b_hi) = _open(ma.n, q), _open(mb.n, q)
    return _interval(eb - ea, stats, len(ps), resolution_ms([ea]) + resolution_ms([eb]),
                     a_hi or b_lo, b_hi or a_lo)


def _interval(est: float, stats: Sequence[float], k: int, res: float, open_lo: bool,
              open_hi: bool) -> Interval:
    xs = sorted(stats)
    m = len(xs)
    scale = t95(k - 1) / Z95 * math.sqrt(k / (k - 1))
    centre = statistics.median(xs)
    down = centre - xs[max(0, math.floor(0.025 * m))]
    up = xs[min(m - 1, math.ceil(0.975 * m) - 1)] - centre
    lo, hi = widen(est - scale * down, est + scale * up, est, res)
    return Interval(est, None if open_lo else lo, None if open_hi else hi)
