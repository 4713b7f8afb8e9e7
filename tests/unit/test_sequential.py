"""The race's intervals against their promise: simulated runs of five settings with a
known truth (log-normal run-to-run effects, equal and unequal spreads, heavy tails,
values rounded to whole milliseconds), looked at after every round from 2 to 12
runs, and from 2 to 65 (every look the calibrated boundary covers) for the two
hardest; the share of simulations in which any interval of any look missed its truth
must stay under the 5% the race spends. The calibrated boundary itself
(``analysis.stats.looks``) against the union bound and against a direct simulation.
Fixed seeds: the counts are exact."""

from __future__ import annotations

import math
import random

import pytest

from xwatch.core.analysis.stats import looks
from xwatch.core.analysis.stats import sequential as seq

SIMS, LOOKS = 300, 12


def _misses(sigmas: list[float], seed: int, heavy: bool = False, whole: bool = False,
            ses: bool = False, last: int = LOOKS, sims: int = SIMS) -> float:
    """The share of simulations where some setting's interval, at some look, missed."""
    rng = random.Random(seed)
    truth = [5.0 + 3.0 * i for i in range(len(sigmas))]  # geometric means, ms
    alpha = seq.ALPHA / len(sigmas)
    missed = 0
    for _ in range(sims):
        vals: list[list[float]] = [[] for _ in sigmas]
        hit = False
        for n in range(1, last + 1):
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
    return missed / sims


@pytest.mark.parametrize("sigmas,heavy,whole", [
    ([0.15] * 5, False, False),  # equal spreads: the pool is exact
    ([0.05, 0.1, 0.15, 0.2, 0.3], False, False),  # 6x apart
    # one 6x noisier than the rest: the hardest case for a pool, 15 of 300, at the limit
    # (3,000 with another seed: 4.6%; 14 and 4.1% with the one-sided p-value at its
    # first looks, which issue 65's case cannot afford; 15 with the union bound and the
    # squared-ratio borrowing; with its own variance at the pool's degrees of freedom 25)
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


@pytest.mark.parametrize("sigmas", [
    # 3,000 simulations with other seeds: 5.1% and 4.3% missed (4.4% before the
    # two-sided borrowing at the first looks, docs/statistics.md)
    [0.05, 0.1, 0.15, 0.2, 0.3],  # 6x apart
    [0.3, 0.05, 0.05, 0.05, 0.05],  # one 6x noisier (3,000: 4.8%)
])
def test_every_look_to_the_calibrated_boundarys_last_holds_together(sigmas: list[float]
                                                                    ) -> None:
    assert _misses(sigmas, seed=7, last=looks.LAST, sims=400) <= 0.05


def test_spending_sums_to_alpha_over_any_number_of_looks() -> None:
    # before: a union bound over the looks
    total = sum(seq.union_look_alpha(1.0, n) for n in range(2, 200_000))
    assert 0.999 < total <= 1.0
    assert seq.union_look_alpha(1.0, 1) == 0.0
    assert seq.union_look_alpha(1.0, 2) == seq.union_look_alpha(1.0, seq.UNION_LOOKS + 1)
    # now: the first looks apart, then one boundary over FIRST..LAST, then the tail
    alpha = seq.ALPHA * 0.8 / 10  # a ten-candidate race's SLO share
    assert seq.look_alpha(alpha, 1) == 0.0
    early = sum(seq.look_alpha(alpha, n) for n in range(2, looks.FIRST))
    late = seq.look_alpha(alpha, looks.FIRST)
    assert all(seq.look_alpha(alpha, n) == late for n in range(looks.FIRST, looks.LAST + 1))
    joint = looks.crossing(-looks._NORM.inv_cdf(late / 2.0))
    tail = sum(seq.look_alpha(alpha, n) for n in range(looks.LAST + 1, 200_000))
    assert early + joint + tail <= alpha
    assert early + joint + tail > 0.99 * alpha  # and it is all spent
    # the boundary's looks each spend far more than their sum would allow
    assert late * (looks.LAST - looks.FIRST + 1) > 2 * joint


@pytest.mark.parametrize("candidates", [2, 5, 10, 20])
def test_the_calibrated_boundary_is_narrower_than_the_union_bound(candidates: int) -> None:
    """Where claimed: the same from 2 to 5 runs, narrower from 6 to 65 (z 4-11% lower
    to 33 runs, 13-25% beyond; at ten candidates' SLO share 3.63 against 3.86 to 33
    runs and 4.4-4.7 beyond), and wider nowhere."""
    def z(a: float) -> float:
        return -looks._NORM.inv_cdf(a / 2.0)

    for share in (0.8, 0.2):  # the SLO's and the price's
        alpha = seq.ALPHA * share / candidates
        for n in range(2, looks.FIRST):
            assert seq.look_alpha(alpha, n) == seq.union_look_alpha(alpha, n)
        for n in range(looks.FIRST, looks.LAST + 1):
            least = 0.97 if n <= seq.UNION_LOOKS + 1 else 0.88
            assert z(seq.look_alpha(alpha, n)) < least * z(seq.union_look_alpha(alpha, n))
        for n in (looks.LAST + 1, 100, 1000):  # the tail: over twice the looks' shares
            assert seq.look_alpha(alpha, n) > seq.union_look_alpha(alpha, n)
    a = seq.ALPHA * 0.8 / 10
    assert z(seq.look_alpha(a, 6)) == pytest.approx(3.63, abs=0.01)


def test_the_table_is_the_integration_and_interpolates_safely() -> None:
    """Between the table's points and on them the boundary's crossing probability is at
    most alpha and within 1% of it (the recursive integration, 201 nodes)."""
    for alpha in (0.05, 0.0213, 10 ** -2.5, 0.00315, 0.000788, 3e-5):
        p = looks.crossing(looks.boundary(alpha))
        assert 0.99 * alpha < p <= alpha
    assert looks.boundary(1e-7) == looks.union(1e-7, looks.LAST - looks.FIRST + 1)
    # an entry of the table is what calibrate gives, rounded up
    assert 0.0 <= looks.TABLE[6] - looks.calibrate(10 ** -2.5) < 1e-4


def test_a_direct_simulation_crosses_the_boundary_at_most_alpha() -> None:
    """Independently of the integration: Gaussian runs with a known variance, the
    standardized mean at FIRST..LAST runs, 40,000 sequences (fixed seed); the share
    crossing the calibrated boundary is alpha within three standard errors, the union
    bound's far below it."""
    rng = random.Random(41)
    sims = 40_000
    tops = []
    for _ in range(sims):
        s, top = 0.0, 0.0
        for n in range(1, looks.LAST + 1):
            s += rng.gauss(0.0, 1.0)
            if n >= looks.FIRST:
                top = max(top, abs(s) / math.sqrt(n))
        tops.append(top)
    for alpha in (0.05, 0.01, 0.00315):
        crossed = sum(t >= looks.boundary(alpha) for t in tops)
        se = math.sqrt(alpha * (1.0 - alpha) * sims)
        assert crossed <= alpha * sims + 3.0 * se
        assert crossed >= alpha * sims - 3.0 * se
        union = sum(t >= looks.union(alpha, looks.LAST - looks.FIRST + 1) for t in tops)
        assert union < 0.5 * alpha * sims
