"""The capacity search against planted knees: how often a bracket misses its knee (at
any look), how often the searches decide, and how many runs and minutes they take.

The truth: ``searches`` candidates (the dedicated one among them), each with a knee K
drawn log-uniform in [1.5 lo, hi / 2] (the rates asked: 50 to 4,000 req/s, so
that each run bounds its P99) and the typical run's SLO metric at rate r
``slo * (r / K) ** k``, the slope k drawn in ``--slopes`` (default [0.5, 3]; flat
curves put many loads within noise of the objective, a queue near saturation is
steeper). Each run is drawn as ``benchmarks/stats/race_sim.py`` draws
one: a run-level effect on the P99 (log-normal SD ``sigma``, or Student's t with 3
degrees of freedom at the same scale: ``heavy``), then the P99 as the order statistic
of the run's requests (rate x ``duration`` of them, at least 16: a run too short to
bound the P99 has no within-run error and leaves its interval open above), its
within-run standard error from the order statistic's 95% ranks. The search is
``analysis.capacity.search.Hunt`` as ``xwatch capacity`` runs it: a round is one run of
every live search's next load, a look after every round.

A trial misses when any load of any search was judged on the wrong side of its knee
(a ``met`` at or above K, a ``failed`` at or below it), or a search called a monotone
truth not monotone: the promise is that this happens in at most 5% of trials.

    python benchmarks/stats/capacity_sim.py [TRIALS] [--searches N] [--sigma S] [--heavy]
        [--duration S] [--phase-s S] [--slopes LO:HI]

Minutes: each run costs ``--phase-s`` (default 25: a 10 s phase and its start), one
GPU, runs back to back; LOW alone's runs included.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from xwatch.testing.capacity_sim import summary, trial


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trials", type=int, nargs="?", default=500)
    ap.add_argument("--searches", type=int, default=4)
    ap.add_argument("--sigma", type=float, default=0.1)
    ap.add_argument("--heavy", action="store_true")
    ap.add_argument("--duration", type=float, default=10.0)
    ap.add_argument("--phase-s", type=float, default=25.0)
    ap.add_argument("--slopes", default="0.5:3", metavar="LO:HI",
                    help="the range of the curves' log-log slopes at the knee (default 0.5:3; "
                         "a queue near saturation is steeper)")
    a = ap.parse_args(argv)
    lo_k, _, hi_k = a.slopes.partition(":")
    trials = [trial(k, a.searches, a.sigma, a.heavy, a.duration,
                    slopes=(float(lo_k), float(hi_k))) for k in range(a.trials)]
    for line in summary(trials, a.phase_s):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
