"""advise refuses an objective no run can bound, whatever its metric (issue 58): the
values a run gives a candidate are its rate x the run's seconds x the values a request
gives (1 for latency, TTFT, TPOT; new_tokens - 1 for the ITL) x the copies it gets; the
refusal names what would do (a duration, more GPUs, a lower percentile); where one
copy cannot bound the percentile but its copies together can, a run's value is the
percentile of their pooled values, checked here against a nearest rank over the raw
values computed independently."""

from __future__ import annotations

import math
import random

import msgspec
import pytest

from tests.helpers.fixture_snapshot import latency_hist, workload_snapshot
from xwatch.core.analysis.stats.copies import run_copies
from xwatch.core.analysis.stats.race import Objective
from xwatch.core.engine.snapshot import MetricSnapshot, WorkloadSnapshot
from xwatch.core.engine.stats import EMPTY, Moments, bucket_index, bucket_value
from xwatch.core.model.metric import Metric
from xwatch.core.plans.advise import check_runs_can_bound, highest_bounded
from xwatch.errors import UsageError
from xwatch.scenario import parse_scenario


def _decoder(rate: float, duration: float, new_tokens: int = 32):  # type: ignore[no-untyped-def]
    return parse_scenario({"duration_s": duration, "workload": [
        {"name": "chat", "priority": "high", "model": "llama-tiny", "rate": rate,
         "new_tokens": new_tokens},
        {"name": "trainer", "priority": "low", "model": "resnet50", "train": True}]})


def test_a_per_request_metric_no_run_can_bound_is_refused_naming_what_would_do() -> None:
    """The issue's race: TPOT P99 of a decoder at 1 request/s with 15 s runs (about 15
    values a run; P99 needs 368)."""
    scen = _decoder(1.0, 15.0)
    with pytest.raises(UsageError) as e:
        check_runs_can_bound(scen, Objective("chat", Metric.parse("tpot_ms:P99"), 5.0))
    text = str(e.value)
    assert "gives about 15 requests a run" in text and "only from 368 values" in text
    assert "--duration 369 or more" in text and "an objective on P78 or lower" in text
    assert e.value.title == "Runs too short to decide"


def test_itl_counts_every_gap_between_tokens() -> None:
    """32 tokens a request: 31 ITL gaps; 15 requests a run give 465 >= 368, so P99 can be
    bounded and the race may start; P99.9 (3,687 values) cannot."""
    scen = _decoder(1.0, 15.0, new_tokens=32)
    assert check_runs_can_bound(scen, Objective("chat", Metric.parse("itl_ms:P99"), 5.0)) is None
    with pytest.raises(UsageError, match=r"x 31 values a request\); its itl_ms:P99.9"):
        check_runs_can_bound(scen, Objective("chat", Metric.parse("itl_ms:P99.9"), 5.0))


def test_copies_that_together_bound_it_are_pooled_and_said() -> None:
    scen = _decoder(10.0, 10.0)  # 100 requests a copy a run; 368 needed for P99
    note = check_runs_can_bound(scen, Objective("chat", Metric.parse("P99"), 50.0), copies=4)
    assert note is not None and "its 4 copies a run give 400 together" in note \
        and "pooled values" in note
    with pytest.raises(UsageError, match="x 3 copies"):
        check_runs_can_bound(scen, Objective("chat", Metric.parse("P99"), 50.0), copies=3)


def test_highest_bounded_is_the_inverse_of_requests_to_bound() -> None:
    from xwatch.core.analysis.stats.intervals import requests_to_bound

    for n in (1, 5, 16, 50, 100, 368, 1000):
        q = highest_bounded(n)
        assert q == 0.0 or requests_to_bound(q) <= n
        assert q >= 99 or requests_to_bound(q + 1) > n


def _copy(values: list[float], gpu: int) -> WorkloadSnapshot:
    m = Moments()
    for v in values:
        m.add(v)
    w = workload_snapshot(f"chat@{gpu}", 1, m.summary(), len(values), 0.0)
    named = MetricSnapshot("tpot_ms", len(values), m.summary(), EMPTY, (), latency_hist(m))
    return msgspec.structs.replace(w, latency_hist=latency_hist(m), gpu=gpu,  # type: ignore[type-var]
                                   metrics={"tpot_ms": named})


def test_a_runs_pooled_value_is_the_nearest_rank_of_every_copys_values() -> None:
    """4 copies of 100 values each (on the histogram's grid, so the histogram is exact):
    no copy bounds its P99 from above, the 400 together do; the run's value is the
    nearest-rank P99 of the 400 raw values, and it is bounded (a finite error)."""
    rng = random.Random(7)
    raw = [[bucket_value(bucket_index(5.0 * math.exp(rng.gauss(0, 0.4)))) for _ in range(100)]
           for _ in range(4)]
    ws = [_copy(vs, g) for g, vs in enumerate(raw)]
    every = sorted(v for vs in raw for v in vs)
    truth = every[math.ceil(0.99 * len(every)) - 1]
    for metric in (Metric.parse("P99"), Metric.parse("tpot_ms:P99")):
        rc = run_copies(ws, metric, pool_short=True)
        assert rc.value.est == pytest.approx(truth, rel=1e-9)
        assert rc.value.se == rc.value.se and rc.value.se > 0
        plain = run_copies(ws, metric)  # without pooling: the geometric mean, unbounded
        assert plain.value.se != plain.value.se
        assert rc.copies == 4
