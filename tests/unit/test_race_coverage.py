"""A small version of ``benchmarks/stats/race_coverage.py``: simulated races from the
iterations up (a closed loop's count over a 10 s window with a warm-up, the HIGH's
requests and rare Pareto-long iterations; an ITL-like P99 from its order statistics;
run-to-run effects from 0.01% to 8% a run, as the H100 race of 2026-11-27 showed), five
candidates, a look after every round: every interval of every candidate at every look
must hold together at 95%.

The tolerance is the binomial error of the count: with 150 races, a true coverage of
exactly 95% is observed below 95% - 3.09 SE (SE = sqrt(0.95 x 0.05 / 150) = 1.8%), i.e.
below 89.5%, with probability 0.1%; the seed is fixed, so the count is exact."""

from __future__ import annotations

import math

from xwatch.testing import race_coverage as cov

RACES, LOOKS = 150, 4
TOLERANCE = 3.09 * math.sqrt(0.95 * 0.05 / RACES)


def test_every_look_of_every_candidate_holds_together_and_widths_follow_the_runs() -> None:
    cfg = cov.CONFIGS["mixed"]
    truth = cov.price_truth(1, cfg)
    now = cov.simulate(cfg, RACES, LOOKS, seed=0, truth=truth)
    assert now.coverage >= 0.95 - TOLERANCE
    # the price's width follows its runs: the candidates whose samples/s vary ~1.5% a
    # run get a few tens of percent at 3 runs at most, the one at 5.7% far more
    quiet, noisy = now.price_width[:4], now.price_width[4]
    assert max(quiet) < 0.3 < noisy
    # before, the within-run floor (rate x cv / sqrt(n), inflated by the long
    # iterations) made every price interval span a factor of e^4 or more
    before = cov.simulate(cfg, RACES // 3, 3, seed=0, truth=truth, before=True)
    assert min(before.price_width) > 2.0 > 5 * max(quiet)
