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
        [--case intensive|intensive-floor|intensive-runaway|intensive-spread|serve-train]
        [--before] [--design KEY=VALUE,...]
        [--budget MIN [--whole-rounds]]

``--case`` sets the truth of one of issue 65's goals (every other option then ignored):
``intensive`` 11 searches (native, MPS 100-25%, XSched 1/1-16/8 and dedicated), rates
25 to 800 req/s, 15 s runs, run-to-run SD 5% with heavy tails, slopes 2-6 (a queue
near saturation); ``serve-train`` 11 searches, rates 1 to 64 req/s, 20 s runs of 31
ITL values a request, SD 10% with heavy tails, slopes 0.5-3 (a batching server's ITL
rises slowly). ``--before``: the search as it was until 2026-11-29
(``search.BEFORE``: two runs before a load's first look, a union bound over its looks,
bisection of the widest gap) instead of xwatch's (``search.NOW``); ``--design``: one
idea of ``search.Design`` changed from xwatch's (``spread=even``, ``place=bisect``,
``skip=false``, ``first=1``, ``give_up=none``...), to see what each is worth.

``intensive-floor`` is ``intensive`` on a floor: the typical run's P99 ``10 ms (0.45 +
0.55 (r / K) ** k)``, 45% of the objective at no load (a service time: the H200's
dedicated ResNet-18 at 25 req/s, 4.3 ms), the knee still at K.

``intensive-runaway`` is ``intensive-floor`` whose runs run away now and then, as on two
H200s near the knee: each run at rate r runs away with chance ``1 / (1 + exp(-log(r /
R) / 0.1))``, R uniform in 0.6-1.0 times the knee, its P99 then times a factor
log-uniform in 4-300; each verdict is judged against the typical run's knee (the
geometric mean over runs crossing the objective), and the last line counts the loads
met where the P99 over all their requests together misses
(docs/results/cpu-2026-11-29-runaway.md).

``intensive-spread`` is ``intensive-floor`` whose run-to-run SD grows toward the knee:
``sigma (1 + (grow - 1) min(v, 2))`` with ``v = (r / K) ** k``, ``grow`` 3 (5% at no
load, 15% at the knee), as native's spread on two H200s
(docs/results/cpu-2026-11-30-spread.md).

Minutes: each run costs ``--phase-s`` (default 25: a 10 s phase and its start), one
GPU, runs back to back; LOW alone's runs included. ``--budget MIN``: the runs stop at
``MIN`` minutes of them, the last round the part that fits (as ``xwatch capacity``
runs it, the loads closest to a verdict first), or, with ``--whole-rounds``, before the
first round that does not fit whole (as it ran until 2026-11-29).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from xwatch.core.analysis.capacity import loads
from xwatch.testing.capacity_sim import CASES, design_of, quick_outliers, summary, trial


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
    ap.add_argument("--case", choices=sorted(CASES))
    ap.add_argument("--before", action="store_true",
                    help="the search as it was until 2026-11-29 (search.BEFORE)")
    ap.add_argument("--design", default="", metavar="KEY=VALUE,...",
                    help="search.Design's fields changed from xwatch's (search.NOW)")
    ap.add_argument("--budget", type=float, metavar="MIN",
                    help="stop at MIN minutes of runs (at --phase-s a run)")
    ap.add_argument("--whole-rounds", action="store_true",
                    help="with --budget: only whole rounds (no partial last round)")
    a = ap.parse_args(argv)
    lo_k, _, hi_k = a.slopes.partition(":")
    design = loads.BEFORE if a.before else design_of(a.design)
    quick_outliers()
    kw = CASES[a.case] if a.case else dict(
        searches=a.searches, sigma=a.sigma, heavy=a.heavy, duration=a.duration,
        slopes=(float(lo_k), float(hi_k)))
    budget = None if a.budget is None else int(a.budget * 60.0 / a.phase_s)
    trials = [trial(k, design=design, budget=budget, partial=not a.whole_rounds,
                    **kw) for k in range(a.trials)]  # type: ignore[arg-type]
    for line in summary(trials, a.phase_s):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
