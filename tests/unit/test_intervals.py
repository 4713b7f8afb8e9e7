"""Exact ranks, percentile intervals and differences, against computations made
independently here (``fractions.Fraction`` ranks, exact binomial sums, simulation);
and the scrubbing rules that keep each mode's environment clean."""

from __future__ import annotations

import math
import random
from fractions import Fraction
from math import comb
from pathlib import Path

import pytest

from xwatch.core.analysis.stats.intervals import (
    Hist,
    binom_cdf,
    diff_interval,
    direction,
    percentile_interval,
    rank_bounds,
)
from xwatch.core.engine.stats import LogHistogram, Moments, exact_percentile, nearest_rank
from xwatch.core.modes import isolation


def ref_rank(n: int, q: str) -> int:
    """The nearest rank by the definition, in exact rational arithmetic."""
    r = Fraction(q) / 100 * n
    return max(1, math.ceil(r))


@pytest.mark.parametrize("n", [1, 7, 100, 1000, 2000, 10000, 12345])
@pytest.mark.parametrize("q", ["50", "90", "95", "99", "99.9", "99.99", "33.3"])
def test_nearest_rank_is_exact(n: int, q: str) -> None:
    assert nearest_rank(n, float(q)) == ref_rank(n, q)


def test_p999_of_1_to_1000_is_999_not_1000() -> None:
    assert exact_percentile(range(1, 1001), 99.9) == 999
    assert exact_percentile(range(1, 2001), 99.9) == 1998
    assert exact_percentile(range(1, 10001), 99.9) == 9990


def test_histogram_path_uses_the_same_exact_rank() -> None:
    m = Moments()
    for v in range(1, 1001):
        m.add(float(v))
    s = m.summary()  # the histogram estimate lands in 999's bucket, not 1000's
    assert abs(s.p999 - 999) / 999 < 0.0025 and s.p999 < 1000


def _binom_cdf_exact(k: int, n: int, p: Fraction) -> float:
    return float(sum(comb(n, i) * p ** i * (1 - p) ** (n - i) for i in range(k + 1)))


@pytest.mark.parametrize("n,p", [(20, Fraction(1, 2)), (100, Fraction(99, 100)),
                                 (400, Fraction(95, 100)), (57, Fraction(3, 10))])
def test_binomial_cdf_matches_the_exact_sum(n: int, p: Fraction) -> None:
    for k in range(0, n + 1, max(1, n // 13)):
        assert binom_cdf(k, n, float(p)) == pytest.approx(_binom_cdf_exact(k, n, p), abs=1e-9)


@pytest.mark.parametrize("n,q", [(100, 50.0), (400, 99.0), (1000, 95.0), (60, 90.0)])
def test_rank_bounds_are_the_tightest_with_each_tail_under_2_5_percent(n: int, q: float) -> None:
    lo, hi = rank_bounds(n, q)
    p = Fraction(str(q)) / 100
    assert lo is not None and hi is not None
    # P(B <= lo-1) <= 2.5% and it would exceed that at lo+1; likewise for hi
    assert _binom_cdf_exact(lo - 1, n, p) <= 0.025 < _binom_cdf_exact(lo, n, p)
    assert _binom_cdf_exact(hi - 1, n, p) >= 0.975 > _binom_cdf_exact(hi - 2, n, p)


def test_known_median_interval_and_open_bounds() -> None:
    assert rank_bounds(100, 50) == (40, 61)  # the textbook table
    assert rank_bounds(367, 99)[1] is None  # P99 needs n >= 368 for an upper bound
    assert rank_bounds(368, 99)[1] == 368
    assert rank_bounds(3687, 99.9)[1] is None and rank_bounds(3688, 99.9)[1] == 3688


def _hist(xs: list[float]) -> Hist:
    h = LogHistogram()
    for x in xs:
        h.add(x)
    return Hist.of(h, min(xs), max(xs))


def test_percentile_interval_covers_the_true_quantile_about_95_percent() -> None:
    rng = random.Random(7)
    true_p99 = math.exp(2.3263478740408408)  # lognormal(0, 1)
    true_p50 = 1.0
    hits99 = hits50 = 0
    trials = 300
    for _ in range(trials):
        h = _hist([rng.lognormvariate(0, 1) for _ in range(1500)])
        hits99 += percentile_interval(h, 99).contains(true_p99)
        hits50 += percentile_interval(h, 50).contains(true_p50)
    # at least 95% by construction (plus bucket rounding); not absurdly conservative
    assert 0.92 <= hits99 / trials <= 0.995
    assert 0.92 <= hits50 / trials <= 0.995


def test_difference_a_a_is_within_noise_and_a_planted_2x_is_not() -> None:
    rng = random.Random(11)
    false_alarms = detected = 0
    trials = 80
    for s in range(trials):
        a = _hist([rng.lognormvariate(1, 0.5) for _ in range(1000)])
        b = _hist([rng.lognormvariate(1, 0.5) for _ in range(1000)])
        shifted = _hist([2 * rng.lognormvariate(1, 0.5) for _ in range(1000)])
        false_alarms += direction(diff_interval(a, b, 99, seed=s)) != 0
        detected += direction(diff_interval(a, shifted, 99, seed=s)) > 0
    assert false_alarms / trials <= 0.12
    assert detected == trials


def test_difference_is_deterministic_and_brackets_the_estimate() -> None:
    rng = random.Random(3)
    a = _hist([rng.expovariate(1) for _ in range(500)])
    b = _hist([rng.expovariate(0.8) for _ in range(500)])
    d1, d2 = diff_interval(a, b, 95, seed=5), diff_interval(a, b, 95, seed=5)
    assert d1 == d2
    assert d1.lo is not None and d1.hi is not None and d1.lo <= d1.est <= d1.hi


# ------------------------------------------------------------ scrubbing rules
def _lib(tmp_path: Path, name: str, files: tuple[str, ...]) -> str:
    d = tmp_path / name
    d.mkdir()
    for f in files:
        (d / f).write_text("")
    return str(d)


def test_native_scrub_removes_every_xsched_and_mps_trace_and_keeps_the_rest(
        tmp_path: Path) -> None:
    xs = _lib(tmp_path, "xs", ("libshimcuda.so", "libcuda.so.1", "libpreempt.so"))
    hip = _lib(tmp_path, "hip", ("libshimhip.so", "libamdhip64.so.6"))
    shim_only = _lib(tmp_path, "shimonly", ("libshimcuda.so",))  # no driver beside it
    plain = _lib(tmp_path, "plain", ("libcudnn.so",))
    conf = _lib(tmp_path, "configured", ("libpreempt.so",))
    env = {"LD_LIBRARY_PATH": f"{xs}:{plain}:{hip}:{shim_only}:{conf}",
           "LD_PRELOAD": "/opt/x/libshimcuda.so /usr/lib/libjemalloc.so",
           "XSCHED_POLICY": "HPF", "XSCHED_AUTO_XQUEUE": "ON",
           "CUDA_MPS_PIPE_DIRECTORY": "/tmp/nvidia-mps", "CUDA_MPS_CLIENT_PRIORITY": "1",
           "CUDA_VISIBLE_DEVICES": "0", "HOME": "/root"}
    c = isolation.clean_env(env, "native", [conf], private_dir="/tmp/x/no-mps")
    assert c.env["LD_LIBRARY_PATH"] == f"{plain}:{shim_only}"
    assert c.env["LD_PRELOAD"] == "/usr/lib/libjemalloc.so"
    assert not any(k.startswith("XSCHED_") for k in c.env)
    assert c.env["CUDA_MPS_PIPE_DIRECTORY"] == "/tmp/x/no-mps"
    assert "CUDA_MPS_CLIENT_PRIORITY" not in c.env
    assert c.env["CUDA_VISIBLE_DEVICES"] == "0" and c.env["HOME"] == "/root"
    names = sorted(r["name"] for r in c.removed)
    assert names == ["CUDA_MPS_CLIENT_PRIORITY", "CUDA_MPS_PIPE_DIRECTORY", "LD_LIBRARY_PATH",
                     "LD_PRELOAD", "XSCHED_AUTO_XQUEUE", "XSCHED_POLICY"]
    assert all(r["why"] for r in c.removed)


def test_each_mode_keeps_its_own_traces_and_drops_the_others(tmp_path: Path) -> None:
    env = {"XSCHED_POLICY": "HPF", "CUDA_MPS_PIPE_DIRECTORY": "/tmp/m"}
    xs = isolation.clean_env(env, "xsched", private_dir="/p")
    assert xs.env["XSCHED_POLICY"] == "HPF" and xs.env["CUDA_MPS_PIPE_DIRECTORY"] == "/p"
    mps = isolation.clean_env(env, "mps", private_dir="/p")
    assert "XSCHED_POLICY" not in mps.env and mps.env["CUDA_MPS_PIPE_DIRECTORY"] == "/tmp/m"


def test_maps_verdicts() -> None:
    assert isolation.verdict("native", None) == "unverified"
    assert isolation.verdict("native", []) == "clean"
    assert isolation.verdict("native", ["/x/lib/libshimcuda.so"]) == "shim-mapped"
    assert isolation.verdict("mps", ["/x/lib/libshimhip.so"]) == "shim-mapped"
    assert isolation.verdict("xsched", []) == "shim-missing"
    assert isolation.verdict("xsched", ["/x/lib/libshimcuda.so"]) == "shim-loaded"


def test_this_process_maps_are_read() -> None:
    import os

    assert isolation.scheduler_libraries(os.getpid()) == []
    assert isolation.scheduler_libraries(2 ** 22 + 12345) is None  # no such process


def test_requests_to_bound_is_the_fewest_that_give_an_upper_bound_that_covers() -> None:
    """``requests_to_bound(q)``: the smallest n whose Pq interval has an upper end, found
    here by brute force over ``rank_bounds``; and at that n the upper end (the largest
    request when it is the only one) lies above the true Pq in at least 97.5% of
    simulated runs (uniform requests: the true Pq is q/100)."""
    from xwatch.core.analysis.stats.intervals import rank_bounds, requests_to_bound

    for q in (50.0, 90.0, 95.0, 99.0, 99.5):
        n = requests_to_bound(q)
        assert rank_bounds(n, q)[1] is not None
        assert all(rank_bounds(m, q)[1] is None for m in range(1, n))
    assert requests_to_bound(99.0) == 368
    rng = random.Random(7)
    n = requests_to_bound(99.0)
    up = rank_bounds(n, 99.0)[1]
    assert up is not None
    trials = 4000
    covered = sum(sorted(rng.random() for _ in range(n))[up - 1] >= 0.99 for _ in range(trials))
    assert covered / trials >= 0.975 - 3 * (0.975 * 0.025 / trials) ** 0.5
