"""The race's intervals against their promise: simulated runs of five settings with a
known truth (log-normal run-to-run effects, equal and unequal spreads, heavy tails,
values rounded to whole milliseconds), looked at after every round from 2 to 12
runs; the share of simulations in which any interval of any look missed its truth
must stay under the 5% the race spends. Fixed seeds: the counts are exact."""

from __future__ import annotations

import math
import random

import pytest

from xwatch.core.analysis.stats import sequential as seq

SIMS, LOOKS = 300, 12


def _misses(sigmas: list[float], seed: int, heavy: bool = False, whole: bool = False,
            ses: bool = False) -> float:
    """The share of simulations where some setting's interval, at some look, missed."""
    rng = random.Random(seed)
    truth = [5.0 + 3.0 * i for i in range(len(sigmas))]  # geometric means, ms
    alpha = seq.ALPHA / len(sigmas)
    missed = 0
    for _ in range(SIMS):
        vals: list[list[float]] = [[] for _ in sigmas]
        hit = False
        for n in range(1, LOOKS + 1):
            for i, s in enumerate(sigmas):
                e = rng.gauss(0, 1)
                if heavy:  # Student's t, 3 degrees of freedom, unit variance
                    e = rng.gauss(0, 1) / math.sqrt(rng.gammavariate(1.5, 2.0) / 3.0) / \
                        math.sqrt(3.0)
                v = truth[i] * math.exp(s * e)
                vals[i].append(float(round(v)) if whole else v)
            if n < 2:
                continue
            runs = [seq.log_runs(v, [0.02 * x for x in v] if ses else ()) for v in vals]
            prior = seq.fit_prior(runs)
            for i, r in enumerate(runs):
                iv = seq.interval(r, prior, alpha)
                if (iv.lo is not None and iv.lo > truth[i]) or \
                        (iv.hi is not None and iv.hi < truth[i]):
                    hit = True
        missed += hit
    return missed / SIMS


@pytest.mark.parametrize("sigmas,heavy,whole", [
    ([0.15] * 5, False, False),  # equal spreads: the pool is exact
    ([0.05, 0.1, 0.15, 0.2, 0.3], False, False),  # 6x apart
    # one 6x noisier than the rest: the hardest case for a pool, 15 of 300 (at the
    # limit; with its own variance at the pool's degrees of freedom it was 25)
    ([0.3, 0.05, 0.05, 0.05, 0.05], False, False),
    ([0.05, 0.1, 0.15, 0.2, 0.3], True, False),  # heavy tails
    ([0.02, 0.02, 0.05, 0.05, 0.1], True, True),  # whole milliseconds, runs often equal
])
def test_every_look_of_every_setting_holds_together(sigmas: list[float], heavy: bool,
                                                    whole: bool) -> None:
    assert _misses(sigmas, seed=7, heavy=heavy, whole=whole) <= 0.05


def test_a_within_run_error_floor_keeps_it_and_the_pool_narrows_it() -> None:
    assert _misses([0.01] * 5, seed=3, ses=True) <= 0.05
    # two runs of five equal settings: 5 degrees of freedom, not 1
    rs = [seq.log_runs([10.0 * math.exp(0.1 * s), 10.0 * math.exp(-0.1 * s)])
          for s in (1.0, 0.8, 1.2, 1.1, 0.9)]
    pooled = seq.interval(rs[0], seq.fit_prior(rs), seq.ALPHA / 5)
    alone = seq.interval(rs[0], seq.fit_prior(rs[:1]), seq.ALPHA / 5)
    assert pooled.hi is not None and (alone.hi is None or pooled.hi < alone.hi / 5)


def test_spending_sums_to_alpha_over_any_number_of_looks() -> None:
    total = sum(seq.look_alpha(1.0, n) for n in range(2, 200_000))
    assert 0.999 < total <= 1.0
    assert seq.look_alpha(1.0, 1) == 0.0
    assert seq.look_alpha(1.0, 2) == seq.look_alpha(1.0, seq.LOOKS + 1)
