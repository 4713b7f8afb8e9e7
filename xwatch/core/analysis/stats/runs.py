"""The run is the unit: intervals whose observations are whole runs (phases of one
setting), not requests.

Runs of one setting differ more than requests inside a run do (the GPU's clocks,
where the allocator placed things, which SMs the LOW kernels landed on), so an
interval that treats 1,200 requests as independent claims effects that an A/A
split refutes. Here each run contributes one estimate (its P50, its P99, its
samples/s) and the interval is Student's t on those estimates:

- a step's value: the mean of its runs' estimates, ``mean ± t(k-1) s / sqrt(k)``;
- a difference: runs paired with their neighbour in the interleaved order
  (repeat r of B with repeat r of A), ``mean(d) ± t(k-1) s_d / sqrt(k)``.

This is the "effect size with a confidence interval over the top-level unit"
of Kalibera and Jones (2013), and pyperf's "each worker process is a sample".
With k >= 2 it keeps its 95% promise whenever the run estimates are roughly
normal, whatever splits the variance between and within runs
(``tests/unit/test_runs.py`` simulates both and counts). One run has no
run-level interval: ``analysis.stats.noise`` supplies the machine's recorded floor
or says it is unmeasured.

Each run's own (within-run) standard error is kept as well, to split the
variance into its between- and within-run parts and to say whether more runs
or longer runs would narrow an interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from xwatch.core.analysis.stats.intervals import (
    CONFIDENCE,
    Interval,
    betainc,
    hist_of,
    percentile_interval,
)
from xwatch.core.analysis.stats.resolution import resolved_sd, widen
from xwatch.core.engine.snapshot import WorkloadSnapshot
from xwatch.core.engine.stats import nan_if_none, stat
from xwatch.core.model.metric import Metric

Z95 = 1.959963984540054


# ------------------------------------------------------------ Student's t
def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with ``df`` degrees of freedom."""
    if df <= 0:
        raise ValueError("df must be > 0")
    x = df / (df + t * t)
    tail = 0.5 * betainc(df / 2.0, 0.5, x)
    return 1.0 - tail if t >= 0 else tail


def t_ppf(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t (bisection on ``t_cdf``; exact to ~1e-10)."""
    if not 0.0 < p < 1.0:
        raise ValueError("p must be in (0, 1)")
    if p < 0.5:
        return -t_ppf(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * max(1.0, hi):
            break
    return (lo + hi) / 2.0


def t95(df: float) -> float:
    """The two-sided 95% critical value of t."""
    return t_ppf(1.0 - (1.0 - CONFIDENCE) / 2.0, df)


# ------------------------------------------------------------ one metric of one run
@dataclass(frozen=True)
class RunValue:
    """One run's estimate of a metric and its within-run standard error (NaN: unknown)."""

    est: float
    se: float


def run_value(w: WorkloadSnapshot, metric: Metric) -> RunValue:
    """``metric`` (P50, P99, samples/s, or a named metric's tpot_ms:P99) of one
    workload's run.

    Percentiles: the run's nearest-rank estimate; its standard error from the
    order-statistic 95% interval (half its width / 1.96). Throughput: samples per
    measured second; its standard error from the spread of the request (iteration)
    times, ``rate x cv / sqrt(n)`` (the delta method on rate = batch / mean time),
    not from whole seconds, which a loop of 6 iterations a second quantizes."""
    if metric.kind == "throughput":
        est = nan_if_none(w.throughput.samples_per_s)
        m, sd, n = stat(w.phase, "mean"), stat(w.phase, "std"), w.count
        se = est * (sd / m) / math.sqrt(n) if n > 1 and m > 0 and sd == sd else math.nan
        return RunValue(est, se)
    if metric.kind == "named":  # tpot_ms:P99
        named = w.metrics.get(metric.name)
        if named is None or not named.count:
            return RunValue(math.nan, math.nan)
        iv = percentile_interval(hist_of(named), metric.q)
        se = (iv.hi - iv.lo) / (2 * Z95) if iv.lo is not None and iv.hi is not None \
            else math.nan
        return RunValue(iv.est, se)
    q = metric.q
    if not w.latency_hist.buckets:  # an older snapshot: the recorded percentile, its error unknown
        key = {50.0: "p50", 90.0: "p90", 95.0: "p95", 99.0: "p99", 99.9: "p999"}.get(q)
        return RunValue(stat(w.phase, key) if key and w.count else math.nan, math.nan)
    iv = percentile_interval(hist_of(w), q)
    se = (iv.hi - iv.lo) / (2 * Z95) if iv.lo is not None and iv.hi is not None else math.nan
    return RunValue(iv.est, se)


def rate_resolution(w: WorkloadSnapshot) -> float:
    """The resolution of a run's samples/s: one request's (iteration's) samples over the
    measured window (0: unknown). A closed loop's samples/s is a whole number of
    iterations over a fixed window, so runs whose true rates differ by less than one
    iteration over the window give the same value.

    This, not ``run_value``'s ``rate x cv / sqrt(n)``, is the within-run floor of a
    throughput over runs (``analysis.stats.race``). Over a window T a count of i.i.d.
    iterations (mean mu, SD sigma) has variance ~ T sigma^2 / mu^3, i.e. a relative SE of
    cv / sqrt(n): right for i.i.d. iterations only. A closed loop beside a HIGH is not:
    its iterations alternate with the HIGH's requests (bimodal times: ResNet-50 at
    60 and 105 ms natively on an H100), and a few are long at fixed moments (the first
    after warm-up, a preemption); the count over the window varies far less than their
    spread says. In the H100 race of 2026-11-27 (``docs/results/h100x4-2026-11-27b.md``)
    the formula gave 1-9% a run where the runs' samples/s varied 0.3-1.2% (4.5% for one
    setting), and a robust spread (the interquartile range) was no better (58% of the
    mean for native's bimodal times). The between-run spread decides; the floor is what
    the count itself cannot resolve."""
    if not w.count or not w.samples or not w.measured_s or not w.measured_s > 0:
        return 0.0
    return w.samples / w.count / w.measured_s


# ------------------------------------------------------------ intervals over runs
def _mean_sd(xs: Sequence[float]) -> tuple[float, float]:
    k = len(xs)
    mean = sum(xs) / k
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (k - 1)) if k > 1 else math.nan
    return mean, sd


def _t_interval(xs: Sequence[float], grids: Sequence[float]) -> Interval:
    xs = [x for x in xs if x == x]
    if not xs:
        return Interval(math.nan, None, None)
    mean, sd = _mean_sd(xs)
    if len(xs) < 2:
        return Interval(mean, None, None)
    half = t95(len(xs) - 1) * resolved_sd(sd, *grids) / math.sqrt(len(xs))
    lo, hi = widen(mean - half, mean + half, mean, sum(grids))
    return Interval(mean, lo, hi)


def mean_interval(xs: Sequence[float], resolution: float = 0.0) -> Interval:
    """The mean of run estimates with its t interval (open with fewer than 2 runs),
    never narrower than the values' ``resolution`` (``analysis.stats.resolution``: the
    spread taken as at least the grid's, and at least ``± resolution / 2``)."""
    return _t_interval(xs, (resolution,))


def paired_interval(a: Sequence[float], b: Sequence[float], res_a: float = 0.0,
                    res_b: float = 0.0) -> Interval:
    """B - A over paired runs (``a[i]`` with ``b[i]``), never narrower than the
    difference's resolution (each side's, ``res_a`` and ``res_b``)."""
    return _t_interval([y - x for x, y in zip(a, b) if x == x and y == y], (res_a, res_b))


@dataclass(frozen=True)
class Split:
    """Where the run-to-run variance of a metric sits, from k runs of ``run_s`` seconds.

    ``total`` is the variance of one run's estimate (between runs, as observed);
    ``within`` the mean squared within-run standard error; ``between`` what is left
    (never below 0): the part that longer runs do not shrink."""

    runs: int
    run_s: float
    mean: float
    total: float
    within: float
    #: the resolution of one run's estimate (``analysis.stats.resolution``; for a paired
    #: difference the root sum of both sides' squares): ``var_at`` adds the variance
    #: rounding to that grid may hide, ``resolution² / 12`` (runs in one bucket show
    #: none; as ``resolution.resolved_sd``). 0: continuous (samples/s).
    resolution: float = 0.0

    @property
    def between(self) -> float:
        return max(0.0, self.total - self.within) if self.within == self.within else self.total

    def var_at(self, run_s: float) -> float:
        """The variance of one run's estimate at another run length (within-run
        noise shrinks with the length, the between-run part does not), with what its
        resolution may hide."""
        grid = self.resolution ** 2 / 12.0
        if self.within != self.within or not run_s > 0 or not self.run_s > 0:
            return self.total + grid
        return self.between + min(self.within, self.total) * self.run_s / run_s + grid

    def runs_needed(self, half_width: float, run_s: float | None = None,
                    paired: bool = True, most: int = 10_000) -> int | None:
        """Runs per setting for a 95% interval of half ``half_width`` on a difference
        of two settings with this noise (``paired=False``: on one setting's value),
        runs of ``run_s`` seconds (default: as measured). None: more than ``most``."""
        if not half_width > 0:
            return None
        var = self.var_at(run_s or self.run_s) * (2.0 if paired else 1.0)
        if var <= 0:
            return 2
        for k in range(2, most + 1):
            if t95(k - 1) * math.sqrt(var / k) <= half_width:
                return k
        return None


def split(values: Sequence[RunValue], run_s: float, resolution: float = 0.0
          ) -> Split | None:
    """The variance split of one metric over runs of one setting (None: < 2 runs)."""
    vs = [v for v in values if v.est == v.est]
    if len(vs) < 2:
        return None
    mean, sd = _mean_sd([v.est for v in vs])
    ses = [v.se for v in vs if v.se == v.se]
    within = sum(s * s for s in ses) / len(ses) if len(ses) == len(vs) else math.nan
    return Split(len(vs), run_s, mean, sd * sd, within, resolution)
