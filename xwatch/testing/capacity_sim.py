"""The capacity search against planted knees: one trial and the summary of many
(``benchmarks/stats/capacity_sim.py`` prints it; tests/unit/test_capacity_search.py runs
the fast version)."""


from __future__ import annotations

import math
import random
import statistics
from dataclasses import dataclass

from xwatch.core.analysis.capacity import search as cap
from xwatch.testing.planted import Scenario, one_run

SLO_MS = 10.0


@dataclass
class Trial:
    miss: bool
    settled: int  # searches settled (decided, above or below the range)
    searches: int
    runs: int
    rounds: int
    widths: list[float]
    statuses: list[str]


def trial(seed: int, searches: int = 4, sigma: float = 0.1, heavy: bool = False,
          duration: float = 10.0, lo: float = 50.0, hi: float = 4000.0,
          max_rounds: int = 80, slopes: tuple[float, float] = (0.5, 3.0)) -> Trial:
    """One capacity run against planted knees (see the module)."""
    rng = random.Random(seed)
    knees = [math.exp(rng.uniform(math.log(lo * 1.5), math.log(hi / 2))) for _ in range(searches)]
    ks = [rng.uniform(*slopes) for _ in range(searches)]
    hunt = cap.Hunt(SLO_MS, lo, hi, [cap.Search(f"c{i}", "native", dedicated=i == 0)
                                     for i in range(searches)], lows=True)
    s_of = {s.label: i for i, s in enumerate(hunt.searches)}
    hunt.judge()
    rounds = runs = 0
    while (probes := hunt.probes()) and rounds < max_rounds:
        rounds += 1
        for s, rate in probes:
            i = s_of[s.label]
            truth = SLO_MS * (rate / knees[i]) ** ks[i]
            sc = Scenario("sim", heavy=heavy, requests=max(16, int(rate * duration)))
            v, se = one_run(rng, sc, truth, sigma)
            s.add(rate, v, se, low=1000.0 * math.exp(rng.gauss(0, 0.01)), low_se=math.nan)
            runs += 1
        if hunt.needs_low_alone():
            hunt.add_low_alone(1500.0 * math.exp(rng.gauss(0, 0.01)))
            runs += 1
        hunt.judge()
    hunt.close()
    miss = False
    for s in hunt.searches:
        k = knees[s_of[s.label]]
        for r, ld in s.loads.items():
            if (ld.verdict == cap.MET and r >= k) or (ld.verdict == cap.FAILED and r <= k):
                miss = True
        if s.status == cap.NON_MONOTONE:
            miss = True
    widths = [w for s in hunt.searches if (w := s.width()) is not None]
    return Trial(miss, sum(s.status in cap.SETTLED for s in hunt.searches), searches, runs,
                 rounds, widths, [s.status for s in hunt.searches])


def summary(trials: list[Trial], phase_s: float) -> list[str]:
    n = len(trials)
    misses = sum(t.miss for t in trials)
    se = math.sqrt(max(misses, 1) * (n - misses) / n) / n
    settled = sum(t.settled for t in trials) / max(1, sum(t.searches for t in trials))
    runs = [t.runs for t in trials]
    statuses: dict[str, int] = {}
    for t in trials:
        for st in t.statuses:
            statuses[st] = statuses.get(st, 0) + 1
    widths = [w for t in trials for w in t.widths]
    return [
        f"trials: {n}; a bracket missed its knee (any look) in {misses} "
        f"({100 * misses / n:.1f}% +- {100 * se:.1f}%; promise: at most 5%)",
        f"searches settled (within 10%, or above/below the rates asked): {100 * settled:.0f}%"
        f"; statuses: " + ", ".join(f"{k} {v}" for k, v in sorted(statuses.items())),
        f"runs a trial: median {statistics.median(runs):.0f}, max {max(runs)}; at "
        f"{phase_s:g} s a run: median {statistics.median(runs) * phase_s / 60:.1f} min",
        f"bracket widths at the end: median {100 * statistics.median(widths):.0f}%"
        if widths else "no bracket closed on both sides",
    ]
