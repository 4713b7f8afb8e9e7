"""The race's intervals against a known truth, from the iterations up (timing-free): do
they hold over every look and every candidate, and do their widths follow the runs'
real spread?

Five candidates, each run simulated as the race records it:

- **the price**: a closed loop (ResNet-50 b128 shaped: 70 ms an iteration) counted over
  a 10 s window: ``samples/s = whole iterations x 128 / 10``. Its iteration times are
  heavy-tailed: log-normal (10% spread) with, 3% of the time, a long one (Pareto, shape
  1.5, ``x (1 + Pareto)``), and the first one long (a warm-up: 5x). A **run effect**
  multiplies the run's speed (log-normal, SD ``tau`` per candidate: from 0.01%, runs
  that agree, to 4.5%, th=2 b=1 on the H100); ``heavy``: Student's t with 3 degrees of
  freedom instead. Recorded: the samples/s, the old within-run error ``rate x cv /
  sqrt(n)`` and the resolution (one iteration over the window);
- **the SLO value**: a P99 of 700 requests drawn from its order statistics around the
  run's true P99 (``race_sim.one_run``), whose run effect has SD ``sigma`` per
  candidate.

The truth of a price is the geometric mean of a run's samples/s, computed over
``TRUTH_RUNS`` simulated runs; of the SLO value, its planted P99. Every round runs every
candidate (the strictest case: a race looks at most this often), and after each round
from the second every candidate's two intervals (``race.fit``: 5% over the candidates,
80% to the SLO, spent over the looks) are checked against the truths. A **miss** is a
simulated race in which any interval of any candidate at any look missed; the promise
is at most 5%. The widths are the intervals' half-widths on the log scale at the third
look (3 runs), medians over the races, beside each candidate's true run-to-run spread.

    python benchmarks/stats/race_coverage.py [RACES] [LOOKS] [CONFIG ...]

Configs: agree, mixed, noisier, heavy (all by default); "before" is the race's
intervals as they were before 2026-11-29 (``race_case.before``).
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from xwatch.testing.race_coverage import CONFIGS, price_truth, simulate


def main() -> int:
    races = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    looks = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    names = sys.argv[3:] or list(CONFIGS)
    print(f"{races} races a row, 5 candidates, every candidate every round, looks 2-{looks}")
    print("| config | intervals | covered over every look | price half-width at 3 runs "
          "(true run SD) | SLO half-width at 3 runs (true run SD) |")
    print("|---|---|---|---|---|")
    for name in names:
        cfg = CONFIGS[name]
        truth = price_truth(1, cfg)
        for before in (True, False):
            r = simulate(cfg, races, looks, seed=0, truth=truth, before=before)
            pw = ", ".join(f"{w:.1%} ({t:.2%})" for w, (_, t) in zip(r.price_width, truth))
            sw = ", ".join(f"{w:.1%} ({t:.0%})" for w, t in zip(r.slo_width, cfg.sigmas))
            print(f"| {name} | {'before' if before else 'now'} | {r.coverage:.1%} "
                  f"({r.races - r.missed}/{r.races}) | {pw} | {sw} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
