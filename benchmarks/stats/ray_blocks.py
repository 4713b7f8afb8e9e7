"""Box as a block, against a known truth: the intervals of a fleet's runs with each run's
box as a block (``analysis.stats.blocks``) and without (the run-to-run variance holding
the boxes' differences), simulated as a fleet plan places the runs
(``xwatch.testing.fleet.ray_blocks``: batches of one run a box, each batch rotated).

- **race**: five candidates of an advise race (SLO levels 3.6-6.0 ms, prices 1,400-1,950
  samples/s on a box of speed 1), every candidate every round over the boxes, run effects
  of 3% (SLO) and 1.5% (price) a run, each run's within-run error 1%, a price's
  resolution one iteration (128 samples) over 10 s. After each round from the second,
  every candidate's SLO and price intervals (``race.fit``) are checked against the truth:
  the candidate's level at the average box. "covered": races in which every interval of
  every look held its truth (the promise: 95%). Half-widths: medians on the log scale at
  4 runs.
- **compare**: two modes (10 and 11 ms on a box of speed 1) interleaved A B A B over the
  boxes, the difference B - A at the average box against its interval, blocked and
  paired in the interleaved order. Half-widths in ms, medians; "least": the narrowest
  blocked half-width seen (the resolution's floor: 1 ms with whole milliseconds).

    python benchmarks/stats/ray_blocks.py [RACES] [LOOKS] [TRIALS]
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from xwatch.testing.fleet.ray_blocks import CONFIGS, compare_coverage, race_coverage


def main() -> int:
    races = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    looks = int(sys.argv[2]) if len(sys.argv) > 2 else 12
    trials = int(sys.argv[3]) if len(sys.argv) > 3 else 4000
    print(f"race: {races} races a row, 5 candidates over 3 boxes, looks 2-{looks}")
    print("| config | covered over every look, blocked | unblocked | SLO half-width at 4 "
          "runs, blocked / unblocked | price half-width at 4 runs, blocked / unblocked |")
    print("|---|---|---|---|---|")
    for cfg in CONFIGS:
        r = race_coverage(cfg, races, looks, seed=11)
        print(f"| {cfg.name} | {1 - r.missed / r.races:.1%} ({r.races - r.missed}/{r.races}) "
              f"| {1 - r.missed_plain / r.races:.1%} | {r.half('slo'):.1%} / "
              f"{r.half('slo_plain'):.1%} | {r.half('price'):.1%} / "
              f"{r.half('price_plain'):.1%} |", flush=True)
    print()
    print(f"compare: {trials} trials a row, 2 modes interleaved over 3 boxes")
    print("| config | runs each | covered, blocked | paired | half-width (ms), blocked / "
          "paired | least blocked half-width (ms) |")
    print("|---|---|---|---|---|---|")
    for cfg in CONFIGS:
        if cfg.lost:
            continue  # a compare's runs are placed once; the race loses the box
        for reps in (3, 4, 6, 12):
            c = compare_coverage(cfg, reps, trials, seed=12)
            print(f"| {cfg.name} | {reps} | {c.covered / c.trials:.1%} | "
                  f"{c.covered_plain / c.trials:.1%} | {c.half:.2f} / {c.half_plain:.2f} | "
                  f"{c.least_half:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
