"""The race's intervals against a known truth, simulated from the iterations up: the
configs, the runs and ``simulate`` (``benchmarks/stats/race_coverage.py`` prints the
table; tests/unit/test_race_coverage.py runs a small version)."""


from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass

from xwatch.core.analysis.stats import race
from xwatch.core.analysis.stats.intervals import rank_bounds
from xwatch.core.model.metric import Metric
from xwatch.testing import race_case

WINDOW_S, BATCH, ITER_MS = 10.0, 128, 70.0
#: the iterations: log-normal bulk, a warm-up, the HIGH's requests every second (each
#: makes one iteration HIT times as long), rare long ones (Pareto)
BULK, WARM, ARRIVAL_MS, HIT, LONG_P, LONG_SHAPE = 0.03, 5.0, 1000.0, 4.0, 0.005, 2.5
#: the SLO metric: an ITL-like P99 of 700 values a run, their log's SD
REQUESTS, SHAPE = 700, 0.08
Z95 = 1.959963984540054
_NORM = statistics.NormalDist()
TRUTH_RUNS = 2000
OBJ = race.Objective("high", Metric.parse("P99"), 5.0)


@dataclass(frozen=True)
class Config:
    name: str
    taus: tuple[float, ...]  # run effect on the price's speed (SD of its log)
    sigmas: tuple[float, ...]  # run effect on the SLO value (SD of its log)
    heavy: bool = False


#: the SLO levels (ms) and loop speeds (relative) of the five candidates
LEVELS = (3.6, 4.0, 4.6, 7.3, 8.1)
SPEEDS = (0.78, 1.0, 0.89, 1.02, 1.22)
CONFIGS = {c.name: c for c in (
    Config("agree", (1e-4,) * 5, (0.03,) * 5),
    # as the H100 race of 2026-11-27: samples/s 0.01% to 4.5% a run, ITL P99 1-8%
    Config("mixed", (1e-4, 0.003, 0.003, 0.012, 0.045), (0.01, 0.025, 0.05, 0.045, 0.08)),
    # one candidate 3x noisier than the rest in both: the hardest case for a pool
    Config("noisier", (0.003, 0.003, 0.003, 0.003, 0.01), (0.03, 0.03, 0.03, 0.03, 0.09)),
    Config("heavy", (1e-4, 0.003, 0.003, 0.012, 0.045), (0.01, 0.025, 0.05, 0.045, 0.08),
           heavy=True),
)}


def _effect(rng: random.Random, sd: float, heavy: bool) -> float:
    e = rng.gauss(0.0, 1.0)
    if heavy:  # Student's t, 3 degrees of freedom, unit variance
        e = rng.gauss(0.0, 1.0) / math.sqrt(rng.gammavariate(1.5, 2.0) / 3.0) / math.sqrt(3.0)
    return math.exp(sd * e)


def loop_run(rng: random.Random, speed: float, tau: float, heavy: bool
             ) -> tuple[float, float, float]:
    """One run's samples/s, its old within-run SE (``rate x cv / sqrt(n)``) and its
    resolution."""
    mu = ITER_MS / speed * _effect(rng, tau, heavy)
    t, due = 0.0, ARRIVAL_MS
    times: list[float] = []
    while True:
        x = mu * math.exp(BULK * rng.gauss(0.0, 1.0) - BULK * BULK / 2.0)
        if not times:
            x *= WARM
        elif t >= due:  # the HIGH's request, at fixed moments: a long iteration
            x *= HIT
            due += ARRIVAL_MS
        elif rng.random() < LONG_P:
            x *= 1.0 + rng.paretovariate(LONG_SHAPE)
        if t + x > WINDOW_S * 1000.0:
            break
        t += x
        times.append(x)
    n = len(times)
    rate = n * BATCH / WINDOW_S
    m = sum(times) / n
    sd = math.sqrt(sum((y - m) ** 2 for y in times) / n)
    return rate, rate * sd / m / math.sqrt(n), BATCH / WINDOW_S


def slo_run(rng: random.Random, p99: float, sigma: float, heavy: bool
            ) -> tuple[float, float]:
    """One run's P99 of ``REQUESTS`` log-normal values (SD ``SHAPE`` of their log)
    around its true P99 (the planted one times the run effect), drawn from the order
    statistics, and its within-run SE as ``runs.run_value`` gives it."""
    true = p99 * _effect(rng, sigma, heavy)
    n = REQUESTS
    k = math.ceil(0.99 * n)
    lo_r, hi_r = rank_bounds(n, 99.0)
    assert lo_r is not None and hi_r is not None
    ut = rng.betavariate(hi_r, n + 1 - hi_r)
    uk = ut * rng.betavariate(k, hi_r - k)
    ul = uk * rng.betavariate(lo_r, k - lo_r)

    def q(u: float) -> float:
        return true * math.exp(SHAPE * (_NORM.inv_cdf(min(max(u, 1e-12), 1 - 1e-12))
                                        - _NORM.inv_cdf(0.99)))

    return q(uk), (q(ut) - q(ul)) / (2 * Z95)


def price_truth(seed: int, cfg: Config) -> list[tuple[float, float]]:
    """Each candidate's true geometric mean of a run's samples/s and the SD of its log
    (``TRUTH_RUNS`` runs)."""
    rng = random.Random(seed)
    out = []
    for s, tau in zip(SPEEDS, cfg.taus):
        logs = [math.log(loop_run(rng, s, tau, cfg.heavy)[0]) for _ in range(TRUTH_RUNS)]
        out.append((math.exp(statistics.fmean(logs)), statistics.stdev(logs)))
    return out


@dataclass
class Result:
    races: int
    missed: int
    #: per candidate, the median half-width on the log scale at the third look
    price_width: list[float]
    slo_width: list[float]

    @property
    def coverage(self) -> float:
        return 1.0 - self.missed / self.races


def _half(lo: float | None, hi: float | None) -> float:
    return math.inf if lo is None or hi is None or lo <= 0 else math.log(hi / lo) / 2.0


def simulate(cfg: Config, races: int, looks: int, seed: int = 0,
             truth: Sequence[tuple[float, float]] | None = None, before: bool = False
             ) -> Result:
    """``races`` simulated races of ``looks`` rounds each (every candidate every round)."""
    prices = [p for p, _ in (truth if truth is not None else price_truth(seed + 1, cfg))]
    rng = random.Random(seed)
    missed = 0
    pw: list[list[float]] = [[] for _ in LEVELS]
    sw: list[list[float]] = [[] for _ in LEVELS]
    for _ in range(races):
        cs = [race.Candidate(f"c{i}", "mps", {}) for i in range(len(LEVELS))]
        hit = False
        for look in range(1, looks + 1):
            for i, c in enumerate(cs):
                v, se = slo_run(rng, LEVELS[i], cfg.sigmas[i], cfg.heavy)
                c.slo_values.append(v)
                c.slo_ses.append(se)
                rate, rse, res = loop_run(rng, SPEEDS[i], cfg.taus[i], cfg.heavy)
                c.prices.append(rate)
                c.price_ses.append(rse)
                c.price_res.append(res)
            if look < 2:
                continue
            with race_case.before() if before else nullcontext():
                race.fit(cs)
            for i, c in enumerate(cs):
                if not (c.slo.contains(LEVELS[i]) and c.price.contains(prices[i])):
                    hit = True
                if look == 3:
                    pw[i].append(_half(c.price.lo, c.price.hi))
                    sw[i].append(_half(c.slo.lo, c.slo.hi))
        missed += hit
    return Result(races, missed, [statistics.median(x) if x else math.nan for x in pw],
                  [statistics.median(x) if x else math.nan for x in sw])
