"""How sure a percentile is: confidence intervals for one phase's percentiles and
for the difference between two phases, and the verdict words that follow.

Method (docs/statistics.md, "How sure a number is"):

- **One percentile** gets a distribution-free interval from order statistics.
  With n values, the number B of values below the true q-quantile is
  Binomial(n, q/100), so the order statistics at ranks l and u, chosen from
  that binomial's 2.5% and 97.5% points, cover the true quantile with at least
  95% probability, whatever the latency distribution. The ranks are exact
  (regularized incomplete beta); the values at those ranks come from the same
  0.5% histogram as the estimate. With too few values for a bound (P99 needs
  n >= 299 for an upper bound) that side is open (None):
  an upper bound for P99 needs n >= 368, for P99.9 n >= 3688.
- **A difference** between two phases (B - A) gets a bootstrap interval: the
  exact bootstrap distribution of each phase's nearest-rank percentile
  (a resampled quantile is <= the value at cumulative count C iff at least r
  of n draws land at or below it: P = P(Binomial(n, C/n) >= r)), sampled
  ``DRAWS`` times per side with a fixed seed, and the 2.5%/97.5% points of the
  differences. No raw events are needed: the histograms in every snapshot
  suffice, and pooled repeats merge histograms.
- A difference whose interval contains 0 is **within noise**; no verdict may
  call it better or worse.
"""

from __future__ import annotations

import math
import random
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from xwatch.core.engine.snapshot import MetricSnapshot, WorkloadSnapshot
from xwatch.core.engine.stats import LogHistogram, bucket_value, nan_if_none, nearest_rank

CONFIDENCE = 0.95
DRAWS = 4000
#: the percentiles every phase carries an interval for
CI_PERCENTILES: tuple[tuple[str, float], ...] = (("p50", 50.0), ("p95", 95.0), ("p99", 99.0))
_EPS = 1e-13


# ------------------------------------------------------------ binomial, exactly
def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 100000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        de = d * c
        h *= de
        if abs(de - 1.0) < _EPS:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    lbt = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + \
        b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(lbt) * _betacf(a, b, x) / a
    return 1.0 - math.exp(lbt) * _betacf(b, a, 1.0 - x) / b


def binom_sf(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p)."""
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    return betainc(k, n - k + 1, p)


def binom_cdf(k: int, n: int, p: float) -> float:
    """P(X <= k) for X ~ Binomial(n, p)."""
    return 1.0 - binom_sf(k + 1, n, p)


@lru_cache(maxsize=4096)
def rank_bounds(n: int, q: float, confidence: float = CONFIDENCE) -> tuple[int | None, int | None]:
    """1-based ranks (l, u) with P(x_(l) <= true Pq <= x_(u)) >= ``confidence``, each
    tail at most (1 - confidence) / 2; None where n is too small for that side."""
    if n <= 0:
        return None, None
    p = min(1.0, max(0.0, q / 100.0))
    tail = (1.0 - confidence) / 2.0
    # lower: the largest l with P(B >= l) >= 1 - tail, i.e. P(B <= l - 1) <= tail
    lo, hi = 0, n  # P(B <= l-1) is increasing in l; find the largest l with it <= tail
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if binom_cdf(mid - 1, n, p) <= tail:
            lo = mid
        else:
            hi = mid - 1
    low = lo if lo >= 1 else None
    # upper: the smallest u with P(B <= u - 1) >= 1 - tail
    lo, hi = 1, n + 1
    while lo < hi:
        mid = (lo + hi) // 2
        if binom_cdf(mid - 1, n, p) >= 1.0 - tail:
            hi = mid
        else:
            lo = mid + 1
    up = lo if lo <= n else None
    return low, up


# ------------------------------------------------------------ histograms
@dataclass(frozen=True)
class Hist:
    """A phase's latencies as xwatch keeps them: fine buckets plus exact min/max."""

    items: Sequence[tuple[int, int]]  # (bucket index, count), ascending
    vmin: float
    vmax: float
    #: the values were whole numbers: a bucket's value is rounded to one (exact below
    #: 200, where a 0.5% bucket holds at most one whole number)
    integral: bool = False

    @property
    def n(self) -> int:
        return sum(k for _, k in self.items)

    @classmethod
    def of(cls, h: LogHistogram, vmin: float, vmax: float) -> Hist:
        return cls(tuple(h.items()), vmin, vmax)

    def value(self, i: int) -> float:
        v = min(max(bucket_value(i), self.vmin), self.vmax)
        return float(round(v)) if self.integral else v

    def at_ranks(self, ranks: Sequence[int]) -> list[float]:
        vals = LogHistogram.from_items(self.items).at_ranks(ranks, self.vmin, self.vmax)
        return [float(round(v)) for v in vals] if self.integral else vals


def hist_of(w: WorkloadSnapshot | MetricSnapshot) -> Hist:
    """A workload's phase latencies (the censored waits of unfinished requests
    included, as in its phase percentiles), or a named metric's values."""
    h = w.latency_hist if isinstance(w, WorkloadSnapshot) else w.hist
    return Hist(h.buckets, nan_if_none(w.phase.min), nan_if_none(w.phase.max), h.integral)


def merge(hists: Iterable[Hist]) -> Hist:
    """Pooled latencies of several phases (repeats)."""
    h = LogHistogram()
    vmin, vmax = math.inf, -math.inf
    integral = True
    for x in hists:
        if not x.items:
            continue
        h.merge(LogHistogram.from_items(x.items))
        vmin, vmax = min(vmin, x.vmin), max(vmax, x.vmax)
        integral = integral and x.integral
    return Hist(tuple(h.items()), vmin, vmax, integral) if h.n else \
        Hist((), math.nan, math.nan)


@dataclass(frozen=True)
class Interval:
    """An estimate and its 95% interval; ``lo``/``hi`` None: open on that side."""

    est: float
    lo: float | None
    hi: float | None

    def contains(self, v: float) -> bool:
        return (self.lo is None or self.lo <= v) and (self.hi is None or v <= self.hi)

    @property
    def width(self) -> float:
        return math.inf if self.lo is None or self.hi is None else self.hi - self.lo

    def text(self, fmt: str = "{:.2f}") -> str:
        lo = "open" if self.lo is None else fmt.format(self.lo)
        hi = "open" if self.hi is None else fmt.format(self.hi)
        return f"{fmt.format(self.est)} [{lo}, {hi}]"

    def as_dict(self) -> dict[str, float | None]:
        def r(v: float | None) -> float | None:
            return None if v is None or v != v else round(v, 6)

        return {"est": r(self.est), "lo": r(self.lo), "hi": r(self.hi)}


NAN_INTERVAL = Interval(math.nan, None, None)
#: a log-scale end beyond this is past any float once exponentiated: the end is open
LOG_MAX = 700.0


def requests_to_bound(q: float, confidence: float = CONFIDENCE) -> int:
    """The fewest requests whose Pq has an upper order-statistic bound (``rank_bounds``'
    upper rank exists: ``(q/100)^n <= (1 - confidence) / 2``): 368 for P99 at 95%."""
    p = min(1.0, max(0.0, q / 100.0))
    if p <= 0.0:
        return 1
    if p >= 1.0:
        return 2 ** 62  # the maximum is never bounded from above
    n = max(1, math.ceil(math.log((1.0 - confidence) / 2.0) / math.log(p)))
    while rank_bounds(n, q, confidence)[1] is None:  # guard the float edge
        n += 1
    return n


def percentile_interval(h: Hist, q: float, confidence: float = CONFIDENCE) -> Interval:
    """Pq of ``h`` with its distribution-free interval."""
    n = h.n
    if n == 0:
        return NAN_INTERVAL
    lo_r, hi_r = rank_bounds(n, q, confidence)
    est, lo, hi = h.at_ranks([nearest_rank(n, q), lo_r or 1, hi_r or n])
    return Interval(est, lo if lo_r is not None else None, hi if hi_r is not None else None)


# ------------------------------------------------------------ differences
def _bootstrap_cdf(h: Hist, q: float) -> tuple[list[float], list[float]]:
    """(values, P(resampled Pq <= value)) over the buckets that matter."""
    n = h.n
    r = nearest_rank(n, q)
    p = r / n
    spread = 10.0 * math.sqrt(max(p * (1 - p), 1.0 / n) / n) + 2.0 / n
    vals: list[float] = []
    cdf: list[float] = []
    cum = 0
    for i, k in h.items:
        cum += k
        frac = cum / n
        if frac < p - spread:
            continue
        f = 1.0 if frac >= p + spread or cum >= n else binom_sf(r, n, frac)
        vals.append(h.value(i))
        cdf.append(f)
        if f >= 1.0:
            break
    if not cdf or cdf[-1] < 1.0:
        vals.append(h.vmax)
        cdf.append(1.0)
    return vals, cdf


def _draws(h: Hist, q: float, rng: random.Random, draws: int) -> list[float]:
    vals, cdf = _bootstrap_cdf(h, q)
    last = len(vals) - 1
    return [vals[min(last, bisect_left(cdf, rng.random()))] for _ in range(draws)]


def diff_interval(a: Hist, b: Hist, q: float, confidence: float = CONFIDENCE,
                  draws: int = DRAWS, seed: int = 0) -> Interval:
    """Pq(b) - Pq(a) with a bootstrap interval (deterministic for a given seed)."""
    if a.n == 0 or b.n == 0:
        return NAN_INTERVAL
    rng = random.Random(seed)
    da, db = _draws(a, q, rng, draws), _draws(b, q, rng, draws)
    d = sorted(y - x for x, y in zip(da, db))
    tail = (1.0 - confidence) / 2.0
    lo = d[max(0, math.floor(tail * draws))]
    hi = d[min(draws - 1, math.ceil((1.0 - tail) * draws) - 1)]
    est = percentile_interval(b, q).est - percentile_interval(a, q).est
    return Interval(est, min(lo, est), max(hi, est))


# ------------------------------------------------------------ words
WITHIN_NOISE = "within noise"


def direction(d: Interval) -> int:
    """+1: B is higher beyond noise, -1: lower beyond noise, 0: within noise."""
    if d.est != d.est or d.lo is None or d.hi is None:
        return 0
    if d.lo > 0:
        return 1
    if d.hi < 0:
        return -1
    return 0


def describe_change(d: Interval, unit: str = "ms", higher_is: str = "slower") -> str:
    """``+3.10 ms [+1.20, +5.00], slower`` or ``... within noise``."""
    if d.est != d.est:
        return "no data"
    lo = "?" if d.lo is None else f"{d.lo:+.2f}"
    hi = "?" if d.hi is None else f"{d.hi:+.2f}"
    s = f"{d.est:+.2f} {unit} [{lo}, {hi}]"
    way = direction(d)
    if way == 0:
        return f"{s}, {WITHIN_NOISE}"
    lower_is = {"slower": "faster", "more": "less", "higher": "lower"}.get(higher_is, "lower")
    return f"{s}, {higher_is if way > 0 else lower_is}"


def repeats_needed(width: float, target: float, repeats: int) -> int | None:
    """How many repeats (of the same length) should narrow an interval of ``width``
    to ``target``: widths shrink with the square root of the data."""
    if not (width > 0 and target > 0) or math.isinf(width):
        return None
    if width <= target:
        return None
    return math.ceil(repeats * (width / target) ** 2)
