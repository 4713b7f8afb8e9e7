"""The resolution of per-run percentiles: the bucket width against an independent
computation, the whole-milliseconds rule, ``widen``; and the interval over runs
(``resolved_sd`` + ``widen``) against its 95% promise on simulated runs whose values
are quantized as xwatch quantizes them (0.5% buckets, whole milliseconds), with a
run-to-run effect from 0 to many buckets, at 2, 3 and 8 runs; plain Student's t
shown to fail the same simulation (so the test can fail)."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from xwatch.core.analysis.resolution import (
    bucket_width,
    diff_resolution,
    resolution_ms,
    resolved_sd,
    widen,
)
from xwatch.core.analysis.runs import t95
from xwatch.core.engine.stats import Moments, bucket_index, bucket_value


def _edges(v: float) -> tuple[float, float]:
    """The bucket of ``v``, found independently: walk powers of 1.005."""
    g = 1.005
    i = math.floor(math.log(v) / math.log(g))
    while g ** i > v:
        i -= 1
    while g ** (i + 1) <= v:
        i += 1
    return g ** i, g ** (i + 1)


@pytest.mark.parametrize("v", [0.013, 1.0, 3.16, 7.3, 42.5, 999.0, 12345.6])
def test_bucket_width_is_the_width_of_the_bucket_holding_the_value(v: float) -> None:
    lo, hi = _edges(v)
    assert lo <= v < hi
    assert bucket_width(v) == pytest.approx(hi - lo, rel=1e-9)


def test_resolution_rules() -> None:
    m = Moments()
    for x in (7.31, 7.29, 7.305):
        m.add(x)
    p99 = m.summary().p99  # a bucket's centre
    assert resolution_ms([p99, p99]) == pytest.approx(_edges(p99)[1] - _edges(p99)[0])
    assert resolution_ms([7.0, 8.0]) == 1.0  # whole milliseconds
    assert resolution_ms([400.0, 401.0]) == pytest.approx(bucket_width(401.0))  # > 1 ms
    assert resolution_ms([7.0, 7.5]) == pytest.approx(bucket_width(7.5))  # the largest
    assert resolution_ms([3.0, 3.1]) == pytest.approx(bucket_width(3.1))
    assert resolution_ms([]) == resolution_ms([math.nan]) == 0.0
    assert resolution_ms([7.3, 7.2], histogram=False) == 0.0
    assert resolution_ms([7.0, 8.0], histogram=False) == 1.0
    assert diff_resolution([7.0], [3.16]) == pytest.approx(1.0 + bucket_width(3.16))


def test_widen_never_narrows() -> None:
    assert widen(7.3, 7.3, 7.3, 0.04) == pytest.approx((7.28, 7.32))
    assert widen(6.0, 9.0, 7.3, 0.04) == (6.0, 9.0)
    assert widen(7.29, 7.5, 7.3, 0.04) == pytest.approx((7.28, 7.5))
    assert widen(1.0, 2.0, math.nan, 0.04) == (1.0, 2.0)
    assert widen(1.0, 2.0, 1.5, 0.0) == (1.0, 2.0)
    assert resolved_sd(0.0, 1.0) == pytest.approx(math.sqrt(1 / 12))
    assert resolved_sd(3.0, 0.0) == 3.0


def _bucketed(x: float) -> float:
    """What a run reports when its order statistic is ``x``: its bucket's centre."""
    return bucket_value(bucket_index(x))


def _coverage(k: int, spread: float, quantize: str, resolved: bool, trials: int,
              seed: int) -> float:
    """How often the interval over ``k`` runs covers the true mean run percentile,
    ``spread`` the run-to-run SD in units of the resolution near the truth."""
    rng = random.Random(seed)
    hit = 0
    for _ in range(trials):
        if quantize == "bucket":
            truth = 7.3 * (1 + 0.005 * rng.random())  # anywhere on the grid
            r0 = bucket_width(truth)
            q = _bucketed
        else:
            truth = 15 + rng.random()
            r0 = 1.0
            q = round  # type: ignore[assignment]
        xs = [float(q(truth + rng.gauss(0.0, spread * r0))) for _ in range(k)]
        mean, sd = statistics.fmean(xs), statistics.stdev(xs)
        res = resolution_ms(xs)
        s = resolved_sd(sd, res) if resolved else sd
        half = t95(k - 1) * s / math.sqrt(k)
        lo, hi = mean - half, mean + half
        if resolved:
            lo, hi = widen(lo, hi, mean, res)
        hit += lo <= truth <= hi
    return hit / trials


@pytest.mark.parametrize("quantize", ["bucket", "whole"])
@pytest.mark.parametrize("k", [2, 3, 8])
def test_interval_over_quantized_runs_keeps_its_promise(k: int, quantize: str) -> None:
    # 400 trials per spread: a true 95% falls below 0.91 with probability < 1e-3
    for j, spread in enumerate((0.0, 0.3, 0.7, 1.0, 1.5, 3.0, 10.0)):
        cov = _coverage(k, spread, quantize, True, 400, seed=100 * k + j)
        assert cov >= 0.91, (k, spread, cov)


def test_plain_t_over_quantized_runs_fails_that_promise() -> None:
    assert _coverage(2, 0.3, "bucket", False, 400, seed=7) < 0.5
    assert _coverage(3, 0.3, "whole", False, 400, seed=8) < 0.6
