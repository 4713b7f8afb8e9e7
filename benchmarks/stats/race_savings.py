"""How many runs racing saves against the full grid, to the same decision.

Ten candidates with a known truth shaped like the H100's `intensive` (HIGH P99 and
LOW samples/s per setting, run-to-run SDs of 0.8 ms and 60/s; MPS75 the cheapest
that meets 10 ms). Each round runs every survivor once (racing) or every candidate
(the grid) until ``analysis.stats.race.judge`` names a winner; both stop at the same
decision rule, so the grid is what the same confidence costs without dropping.

    python benchmarks/stats/race_savings.py [TRIALS] [SD_MS]
"""

from __future__ import annotations

import random
import statistics
import sys

from xwatch.core.analysis.stats.race import Candidate, Objective, judge
from xwatch.core.model.metric import Metric

TRUTH = [("native", 19.0, 6150), ("mps100", 12.0, 6300), ("mps75", 9.0, 5600),
         ("mps50", 8.0, 4400), ("mps25", 6.0, 2800), ("x1/1", 7.0, 3000),
         ("x2/1", 8.5, 4000), ("x4/2", 11.0, 5200), ("x8/4", 14.0, 5800), ("x16/8", 17.0, 6000)]


def main() -> int:
    trials = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    sd = float(sys.argv[2]) if len(sys.argv) > 2 else 0.8
    obj = Objective("high", Metric.parse("P99"), 10.0)
    raced, grid, right, rounds = [], [], 0, []
    for seed in range(trials):
        rng = random.Random(seed)
        cs = [Candidate(n, "mps", {}) for n, _, _ in TRUTH]
        rnd, winner = 0, None
        while winner is None and rnd < 100 and any(c.alive for c in cs):
            rnd += 1
            for c, (_, p99, price) in zip(cs, TRUTH):
                if c.alive:
                    c.slo_values.append(rng.gauss(p99, sd))
                    c.prices.append(rng.gauss(price, 60))
            winner = judge(cs, obj)
        right += winner is not None and winner.label == "mps75"
        raced.append(sum(c.runs for c in cs))
        grid.append(rnd * len(cs))
        rounds.append(rnd)
    print(f"{trials} races, 10 candidates, P99 run SD {sd} ms, price run SD 60/s")
    print(f"right choice (mps75): {right}/{trials}")
    print(f"rounds: median {statistics.median(rounds):g}, max {max(rounds)}")
    print(f"runs, racing: median {statistics.median(raced):g}, mean {statistics.mean(raced):.1f}")
    print(f"runs, full grid to the same decision: median {statistics.median(grid):g}, "
          f"mean {statistics.mean(grid):.1f}")
    print(f"saved: {1 - statistics.mean(raced) / statistics.mean(grid):.0%} of the runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
