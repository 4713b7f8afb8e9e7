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

import msgspec
import pytest

from tests.helpers.fixture_snapshot import latency_hist, workload_snapshot
from xwatch.core.analysis.stats.noise import Floor, floor_of
from xwatch.core.analysis.stats.resolution import (
    bucket_width,
    diff_resolution,
    resolution_ms,
    resolved_sd,
    widen,
)
from xwatch.core.analysis.stats.runs import t95
from xwatch.core.analysis.verdict import FLOOR, RUNS, UNMEASURED, change
from xwatch.core.engine.snapshot import PhaseSnapshot, WorkloadSnapshot
from xwatch.core.engine.stats import Moments, bucket_index, bucket_value
from xwatch.core.model.metric import Metric


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


# ------------------------------------------------------------ where intervals are made
def _wl(values: list[float], name: str = "high") -> WorkloadSnapshot:
    m = Moments()
    for v in values:
        m.add(v)
    w = workload_snapshot(name, 1, m.summary(), len(values), 0.0)
    return msgspec.structs.replace(w,   # type: ignore[type-var,return-value]
                               latency_hist=latency_hist(m, m.integral))


def _runs_in(bucket_value_ms: float, mode: str, k: int, seed: int) -> list[PhaseSnapshot]:
    """k runs of 300 requests whose P50 and P99 all fall in one bucket (7.30 ms)."""
    rng = random.Random(seed)
    lo = bucket_value_ms / math.sqrt(1.005) * 1.0001
    hi = bucket_value_ms * math.sqrt(1.005) * 0.9999
    return [PhaseSnapshot(r, f"{mode}-{r}", mode, "done", "", None, 10.0, True,
                          (_wl([rng.uniform(lo, hi) for _ in range(300)]),),
                          repeat=r, step=mode) for r in range(1, k + 1)]


def test_the_field_case_no_longer_claims_certainty() -> None:
    """Native TPOT P99 7.30 over 2 runs, XSched 3.16 over 3, every run in one bucket:
    each side's interval and the difference's are at least their resolution."""
    c7, c3 = bucket_value(bucket_index(7.30)), bucket_value(bucket_index(3.16))
    native, xs = _runs_in(c7, "native", 2, 1), _runs_in(c3, "xsched", 3, 2)
    c = change("high", Metric.parse("P99"), native, xs)
    assert c is not None and c.basis == RUNS and c.repeats == 2
    r7, r3 = bucket_width(c7), bucket_width(c3)
    assert c.base.est == pytest.approx(c7) and c.base.width >= r7
    assert c.other.width >= r3
    assert c.diff.width >= r7 + r3 and c.diff.contains(c3 - c7)
    assert c.way < 0  # 4 ms apart is still beyond noise


@pytest.mark.parametrize("k", [2, 8])
def test_adjacent_buckets_are_within_noise(k: int) -> None:
    """Every run of B one bucket above every run of A: 0.5% apart with no spread is
    what two identical settings may give; never 'slower'."""
    i = bucket_index(7.30)
    a = _runs_in(bucket_value(i), "native", k, 3)
    b = _runs_in(bucket_value(i + 1), "mps", k, 4)
    c = change("high", Metric.parse("P50"), a, b)
    assert c is not None and c.diff.lo is not None and c.diff.lo <= 0 and c.way == 0


def test_a_floor_of_runs_in_one_bucket_still_has_a_resolution() -> None:
    """A floor whose runs never left one bucket records its resolution (round trip,
    older records without it get the bucket's width), and a one-run difference of one
    bucket judged against it is within noise."""
    i = bucket_index(7.30)
    fl = floor_of(_runs_in(bucket_value(i), "native", 6, 5), "native",
                  "2026-11-23T00:00:00", "s", "d", {"host": "h"})
    s = fl.get("high", Metric.parse("P99"))
    assert s is not None and s.total == 0.0
    assert s.resolution == pytest.approx(bucket_width(bucket_value(i)))
    back = Floor.from_dict(fl.as_dict()).get("high", Metric.parse("P99"))
    assert back is not None and back.resolution == pytest.approx(s.resolution, rel=1e-6)
    old = fl.as_dict()
    for v in old["splits"].values():
        del v["resolution"]
    s_old = Floor.from_dict(old).get("high", Metric.parse("P99"))
    assert s_old is not None and s_old.resolution == pytest.approx(s.resolution, rel=1e-6)
    a = _runs_in(bucket_value(i), "native", 1, 6)
    b = _runs_in(bucket_value(i + 1), "native", 1, 7)
    c = change("high", Metric.parse("P99"), a, b, {"native": fl})
    assert c is not None and c.basis == FLOOR and c.way == 0
    # without a floor: the within-run interval alone is at least the resolution
    u = change("high", Metric.parse("P99"), a, b)
    assert u is not None and u.basis == UNMEASURED and u.diff.width >= 2 * s.resolution
