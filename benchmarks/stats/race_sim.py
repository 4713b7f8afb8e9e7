"""The advise race against a planted frontier: how often it chooses wrongly, how often
it says "met" falsely, and how many minutes it takes: the race before issue 41's goal
2, the race with intervals over every look ("now"), and the same with the looks'
boundary calibrated to their correlation ("new").

The truth: ten candidates shaped like the H100's ``intensive`` (the typical run's
HIGH P99 and the LOW samples/s per setting; MPS at 75% of the SMs is the cheapest
that meets 10 ms, MPS at 100% is cheaper but 15% over). Each run is simulated from
the bottom up:

- a run-level effect multiplies the candidate's P99 (log-normal, SD ``sigma`` on the
  log scale; ``heavy``: Student's t with 3 degrees of freedom, same scale) and its
  price (1% SD);
- within the run, the P99 is the order statistic of ``requests`` log-normal request
  latencies (drawn exactly: the rank's uniform order statistic is a Beta draw), and
  its within-run standard error is what ``analysis.stats.runs.run_value`` would give: the
  order-statistic 95% ranks' values, half their distance over 1.96, NaN where there
  are too few requests for the upper rank;
- ``whole``: values rounded to whole milliseconds;
- each run costs 25-35 s (loading and 10 s measured), so minutes = the runs' seconds.

"before" is the race as it was (Student's t over each candidate's own runs at a
Bonferroni level 1 - 0.05/candidates, every survivor every round, no correction for
the looks), "now" is ``analysis.stats.race`` over ``analysis.stats.sequential`` as it was
before the calibrated boundary (a union bound over the looks, ``union_look_alpha``, and
a noisier setting borrowing the pool's degrees of freedom as the squared ratio of the
variances: copies here), "new" the same with ``sequential`` as it is (the looks from 6
to 65 runs through ``analysis.stats.looks``' boundary, borrowing by the F test). All
stop at a decision, when no candidate is left, or before a round that would overrun
the budget; at the budget all choose, as ``xwatch advise`` does, the cheapest
candidate that meets the SLO with confidence. "wrong" counts races that chose anything but
MPS 75%, "false met" those whose choice truly misses the SLO.

    python benchmarks/stats/race_sim.py [TRIALS] [BUDGET_MIN] [SCENARIO ...]

Scenarios: equal, unequal, heavy, whole, few (16 requests a run: the P99 is the
run's maximum), all by default. 200 trials of all five take about 5 minutes on one
core here.
"""

from __future__ import annotations

import math
import random
import statistics
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from xwatch.core.analysis.stats import race
from xwatch.core.analysis.stats import sequential as seq
from xwatch.core.analysis.stats.intervals import Interval
from xwatch.core.analysis.stats.race import Candidate, Objective
from xwatch.core.analysis.stats.runs import mean_interval, t_ppf
from xwatch.core.model.metric import Metric
from xwatch.testing.planted import SCENARIOS, Scenario, one_run

OBJ = Objective("high", Metric.parse("P99"), 10.0)
# name, typical run's P99 (ms), price (samples/s), run-level SD of log P99 (unequal)
FRONTIER = [("native", 19.0, 6150, 0.30), ("mps100", 11.5, 6300, 0.25),
            ("mps75", 8.5, 5600, 0.20), ("mps50", 8.0, 4400, 0.12),
            ("mps25", 6.0, 2800, 0.06), ("x1/1", 7.0, 3000, 0.08),
            ("x2/1", 8.5, 4000, 0.10), ("x4/2", 11.0, 5200, 0.15),
            ("x8/4", 14.0, 5800, 0.20), ("x16/8", 17.0, 6000, 0.25)]
BEST = "mps75"
# ------------------------------------------------------------ the race before
@lru_cache(maxsize=4096)
def _t(p: float, df: int) -> float:
    return t_ppf(p, df)


def _old_interval(xs: Sequence[float], confidence: float) -> Interval:
    base = mean_interval(xs)
    if len(xs) < 2 or base.lo is None:
        return base
    m = base.est
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))
    half = _t(1.0 - (1.0 - confidence) / 2.0, len(xs) - 1) * sd / math.sqrt(len(xs))
    return Interval(m, max(0.0, m - half), m + half)


def old_judge(cands: Sequence[Candidate], obj: Objective) -> Candidate | None:
    """``analysis.stats.race.judge`` as it was before issue 41's goal 2 (a copy)."""
    live = [c for c in cands if c.alive]
    conf = 1.0 - 0.05 / max(1, len([c for c in cands if c.status != race.FAILED]))
    for c in cands:
        c.slo = _old_interval(c.slo_values, conf)
        c.price = _old_interval(c.prices, conf)
    if any(c.runs < race.MIN_RUNS for c in live):
        return None
    for c in live:
        if c.fails(obj):
            c.status = race.DROPPED_SLO
    meeting = [c for c in cands if c.alive and c.meets(obj)]
    if meeting:
        best = max(meeting, key=lambda c: c.price.lo if c.price.lo is not None else -math.inf)
        for c in cands:
            if c.alive and c is not best and c.price.hi is not None and \
                    best.price.lo is not None and c.price.hi < best.price.lo:
                c.status = race.DROPPED_DOMINATED
        others = [c for c in cands if c.alive and c is not best]
        if all(c.price.hi is not None and best.price.lo is not None and
               best.price.lo > c.price.hi for c in others):
            return best
    return None


def _old_order(cands: Sequence[Candidate], obj: Objective) -> list[Candidate]:
    return [c for c in cands if c.alive]


# ------------------------------------------------------------ the race now, before "new"
def _moderated_now(r: seq.LogRuns, prior: seq.Prior | None) -> tuple[float, int]:
    """``analysis.stats.sequential.moderated`` before the F test (a copy)."""
    if prior is None or prior.df < r.df:
        return (r.var, r.df) if r.df else (math.nan, 0)
    own = r.var if r.df else 0.0
    if own <= prior.var:
        return max(prior.var, r.floor), prior.df
    df = r.df + int((prior.df - r.df) * (prior.var / own) ** 2.0)
    return max(own, r.floor), df


@contextmanager
def as_now() -> Iterator[None]:
    """``analysis.stats.sequential`` spending and pooling as "now" did."""
    saved = seq.look_alpha, seq.moderated
    seq.look_alpha, seq.moderated = seq.union_look_alpha, _moderated_now  # type: ignore[assignment]
    try:
        yield
    finally:
        seq.look_alpha, seq.moderated = saved


# ------------------------------------------------------------ one race
@dataclass(frozen=True)
class Outcome:
    choice: str | None
    decided: bool
    minutes: float
    runs: int


def run_race(seed: int, sc: Scenario, budget_s: float,
             judge: Callable[[Sequence[Candidate], Objective], Candidate | None],
             order: Callable[[Sequence[Candidate], Objective], list[Candidate]]) -> Outcome:
    rng = random.Random(seed)
    truth = {n: (p99, price, sd) for n, p99, price, sd in FRONTIER}
    cs = [Candidate(n, "mps", {}) for n, *_ in FRONTIER]
    used, runs, winner = 0.0, 0, None
    while True:
        todo = order(cs, OBJ)
        if not todo or (runs and used + used / runs * len(todo) > budget_s):
            break
        for c in todo:
            p99, price, sd = truth[c.label]
            v, se = one_run(rng, sc, p99, sd)
            c.slo_values.append(v)
            c.slo_ses.append(se)
            c.prices.append(price * math.exp(rng.gauss(0, 0.01)))
            used += rng.uniform(25.0, 35.0)
            runs += 1
        winner = judge(cs, OBJ)
        if winner is not None or not any(c.alive for c in cs):
            break
    if winner is None:  # at the budget, as Race.advice(final=True)
        meeting = [c for c in cs if c.alive and c.meets(OBJ)]
        chosen = max(meeting, key=lambda c: c.price.est) if meeting else None
    else:
        chosen = winner
    return Outcome(chosen.label if chosen else None, winner is not None, used / 60.0, runs)


def summary(outs: Sequence[Outcome], budget_min: float) -> str:
    n = len(outs)
    truth = {name: p99 for name, p99, _, _ in FRONTIER}
    wrong = sum(o.choice is not None and o.choice != BEST for o in outs)
    false_met = sum(o.choice is not None and truth[o.choice] >= OBJ.latency_ms for o in outs)
    right = sum(o.choice == BEST for o in outs)
    decided = sum(o.decided for o in outs)
    mins = sorted(o.minutes if o.decided else math.inf for o in outs)
    med = mins[n // 2] if n % 2 else (mins[n // 2 - 1] + mins[n // 2]) / 2
    med_s = f">{budget_min:g}" if math.isinf(med) else f"{med:.1f}"
    runs = statistics.mean(o.runs for o in outs)
    return (f"| {right / n:.1%} | {wrong / n:.1%} | {false_met / n:.1%} | {decided / n:.0%} | "
            f"{med_s} | {runs:.0f} |")


def main() -> int:
    trials = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    budget_min = float(sys.argv[2]) if len(sys.argv) > 2 else 60.0
    names = sys.argv[3:] or list(SCENARIOS)
    print(f"{trials} races per row, 10 candidates, budget {budget_min:g} min, "
          "25-35 s a run")
    print("| scenario | method | right choice | wrong choice | false met | decided | "
          "median min to decide | mean runs |")
    print("|---|---|---|---|---|---|---|---|")
    for name in names:
        sc = SCENARIOS[name]
        for label, judge, order in (("before", old_judge, _old_order),
                                    ("now", race.judge, race.to_run),
                                    ("new", race.judge, race.to_run)):
            if label == "now":
                with as_now():
                    outs = [run_race(seed, sc, budget_min * 60.0, judge, order)
                            for seed in range(trials)]
            else:
                outs = [run_race(seed, sc, budget_min * 60.0, judge, order)
                        for seed in range(trials)]
            print(f"| {name} | {label} " + summary(outs, budget_min), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
