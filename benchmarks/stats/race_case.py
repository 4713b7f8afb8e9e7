"""Issue 65's race, offline: ``advise llm-graphed --slo chat.itl_ms:P99=5`` on one H200
with MPS and XSched sets and a 5-minute budget, rebuilt from its numbers, replayed
round by round under the race's intervals as they were (before 2026-11-29) and as they
are.

The case: "xsched trainer th=8 b=4" ran three times, the trainer at 1766.1, 1766.0 and
1766.0 samples/s (138 iterations of 128 each in every 10 s window) and the chat's ITL
P99 at 4.22, 3.80 and 4.05 ms; its intervals came out as price [18, 169,725] and ITL P99
[0.53, 30.72], and the race advised MPS at 50% at the budget though th=8 b=4 was 12%
cheaper and under the SLO by estimate. The other four candidates' runs are plausible
numbers, not a record: their levels from the H200's own round of the same race
(``docs/results/h200x2-2026-11-26/races/llm-one.log``: MPS 50% 3.97 ms and 1,587/s,
native 7.26 ms and 1,804/s, MPS 100% 8.14 ms and 2,150/s), their run-to-run spreads
from the 4x H100 race of the same scenario (``docs/results/h100x4-2026-11-27b.md``, 2-27
runs each: ITL P99 varied 2.4% a run under MPS 50%, 4.2% under XSched th=2 b=1, 8% under
MPS 100%; samples/s 0.3% under MPS and natively, 4.5% under th=2 b=1), each price a
whole number of iterations over 10 s. Each run's within-run errors are as the race
recorded them: the ITL P99's from its order statistics (about 0.85% of it, 693 values a
run), the price's ``rate x cv / sqrt(n)`` (6% for th=8 b=4, from a few long
iterations; 2.5% for the others, as on the H100) and, now, its resolution (one
iteration: 12.8/s).

A round runs ``race.to_run``'s candidates (every one in the first two), a run takes
0.28 min (the H200's first round: 5 runs in 1.4 min), and the race stops at a decision
or before a round that would overrun the budget, as ``xwatch advise`` does.

    python benchmarks/stats/race_case.py
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", ".."))

from xwatch.testing.race_case import BUDGET_MIN, before, replay


def main() -> int:
    for label, ctx in (("before 2026-11-29", before), ("now", None)):
        print(f"=== {label}")
        if ctx is None:
            r = replay()
        else:
            with ctx():
                r = replay()
        for line in r.lines:
            print(line)
        print(f"-> {'decided: ' + r.winner.label if r.winner else 'undecided'} "
              f"after {r.rounds} rounds, {r.minutes:.1f} of {BUDGET_MIN:g} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
