"""Percentiles from few requests: the rule against a brute force over nearest ranks,
and the pooled interval (two-stage bootstrap over runs, then requests) against its
95% promise on simulated runs with a run-to-run effect, from bucketed and from
whole-millisecond values; open where the pooled count cannot bound a side."""

from __future__ import annotations

import math
import random

import pytest

from xwatch.core.analysis.stats.intervals import Hist
from xwatch.core.analysis.stats.pooled import few_note, needed, pooled_diff_interval, pooled_interval, too_few
from xwatch.core.engine.stats import Moments, nearest_rank
from xwatch.core.model.metric import Metric

#: the standard normal's quantiles (tabulated)
Z = {90.0: 1.2815515655446004, 95.0: 1.6448536269514722, 99.0: 2.3263478740408408}


@pytest.mark.parametrize("q", [50.0, 90.0, 95.0, 99.0, 99.9, 75.0, 99.99])
def test_needed_is_the_fewest_requests_whose_percentile_is_not_the_maximum(q: float) -> None:
    brute = next(n for n in range(1, 200_000) if nearest_rank(n, q) < n)
    assert needed(q) == brute
    assert too_few(brute - 1, q) and not too_few(brute, q) and not too_few(0, q)


def test_the_rule_in_words() -> None:
    assert (needed(99.0), needed(99.9), needed(50.0), needed(100.0)) == (100, 1000, 2, None)
    assert few_note(42, 99.0) == "P99 of 42 requests is their maximum (needs 100)"
    assert few_note(100, 99.0) == ""


def _run(rng: random.Random, n: int, effect: float, whole: bool) -> Hist:
    """n requests, lognormal(log 5, 0.3) x the run's effect (ms); rounded if ``whole``."""
    m = Moments()
    for _ in range(n):
        v = 5.0 * math.exp(rng.gauss(0.0, 0.3)) * effect
        m.add(float(round(v)) if whole else v)
    return Hist(tuple(m.hist.items()), m.min, m.max, m.integral)


def _truth(q: float, sd_run: float, whole: bool) -> float:
    """The q-quantile of a request from a random run: lognormal(log 5, sqrt(0.3² +
    sd_run²)) exactly (a run effect exp(N(0, sd_run)) multiplies); rounding is monotone."""
    v = 5.0 * math.exp(math.sqrt(0.09 + sd_run ** 2) * Z[q])
    return float(round(v)) if whole else v


@pytest.mark.parametrize("k,n,q,whole", [(3, 40, 95.0, False), (8, 15, 95.0, True)])
def test_pooled_interval_covers_the_truth(k: int, n: int, q: float, whole: bool) -> None:
    """Every run has fewer requests than P95 needs (20); pooled they bound it on both
    sides. Runs differ by ~8% (as on the H100). 150 trials: a true 95% falls under
    0.89 with probability < 1e-3."""
    rng = random.Random(k * 100 + n)
    truth = _truth(q, 0.08, whole)
    hit = 0
    trials = 150
    for _ in range(trials):
        hs = [_run(rng, n, math.exp(rng.gauss(0.0, 0.08)), whole) for _ in range(k)]
        assert all(too_few(h.n, q) for h in hs) or n >= 20
        iv = pooled_interval(hs, q, draws=200, seed=rng.randrange(1 << 30))
        assert iv.lo is not None and iv.hi is not None
        hit += iv.contains(truth)
    assert hit / trials >= 0.89, hit / trials


def test_pooled_difference_covers_the_truth_and_opens_without_data() -> None:
    """B = A x 1.2: P95(B) - P95(A) = 0.2 P95(A); pairs of runs drawn together."""
    rng = random.Random(3)
    truth = 0.2 * _truth(95.0, 0.08, False)
    hit, trials = 0, 100
    for _ in range(trials):
        pairs = []
        for _ in range(3):
            pairs.append((_run(rng, 40, math.exp(rng.gauss(0.0, 0.08)), False),
                          _run(rng, 40, 1.2 * math.exp(rng.gauss(0.0, 0.08)), False)))
        iv = pooled_diff_interval(pairs, 95.0, draws=200, seed=rng.randrange(1 << 30))
        hit += iv.contains(truth)
    assert hit / trials >= 0.88, hit / trials
    # P99 of 3 x 40 requests: 120 cannot bound P99 from above (299 needed)
    hs = [_run(rng, 40, 1.0, False) for _ in range(3)]
    iv = pooled_interval(hs, 99.0, draws=100)
    assert iv.hi is None and iv.lo is not None
    d = pooled_diff_interval(list(zip(hs, hs)), 99.0, draws=100)
    assert d.lo is None and d.hi is None


def test_the_answer_pools_runs_with_too_few_requests_and_says_so() -> None:
    import msgspec

    from tests.helpers.fixture_snapshot import latency_hist, workload_snapshot
    from xwatch.core.analysis.verdict import change
    from xwatch.core.engine.snapshot import PhaseSnapshot, WorkloadSnapshot

    rng = random.Random(9)

    def phase(i: int, mode: str, r: int, effect: float) -> PhaseSnapshot:
        m = Moments()
        for _ in range(40):
            m.add(5.0 * math.exp(rng.gauss(0.0, 0.3)) * effect)
        w: WorkloadSnapshot = msgspec.structs.replace(  # type: ignore[type-var,assignment]
            workload_snapshot("high", 1, m.summary(), 40, 0.0), latency_hist=latency_hist(m))
        return PhaseSnapshot(i, f"{mode}-{i}", mode, "done", "", None, 10.0, True, (w,),
                             repeat=r, step=mode)

    a = [phase(2 * r, "native", r, 1.0) for r in range(1, 4)]
    b = [phase(2 * r + 1, "mps", r, 2.0) for r in range(1, 4)]
    c = change("high", Metric.parse("P99"), a, b)
    assert c is not None and c.few == 40 and c.pooled
    assert "P99 of 40 requests is their maximum (needs 100); runs pooled" in c.text()
    assert c.base.hi is None and c.diff.lo is None  # 120 requests bound no P99 from above
    assert "no verdict: the interval is open" in c.text() and "within noise" not in c.text()
    p95 = change("high", Metric.parse("P95"), a, b)
    assert p95 is not None and not p95.few and not p95.pooled and "maximum" not in p95.text()
    one = change("high", Metric.parse("P99"), a[:1], b[:1])
    assert one is not None and one.few == 40 and not one.pooled
