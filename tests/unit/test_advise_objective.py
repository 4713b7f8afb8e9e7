"""``advise --slo``: the objective's text, parsed against the scenario (latency or a named
per-request metric), and malformed texts refused with what was expected."""

from __future__ import annotations

import pytest

from xwatch.core.analysis.stats.race import Objective
from xwatch.core.model.metric import Metric
from xwatch.core.plans.advise import objective
from xwatch.errors import UsageError
from xwatch.scenario import load_scenario


@pytest.mark.parametrize(("text", "want"), [
    ("high.P99=10", Objective("high", Metric.parse("P99"), 10.0)),
    ("P95=7.5", Objective("high", Metric.parse("P95"), 7.5)),  # the scenario's [slo] workload
    ("high.latency_ms:P99=10", Objective("high", Metric.parse("P99"), 10.0)),
    ("high.itl_ms:P99=6", Objective("high", Metric.parse("itl_ms:P99"), 6.0)),
    ("tpot_ms:P99.9=6", Objective("high", Metric.parse("tpot_ms:P99.9"), 6.0)),
    ("low.P50=300", Objective("low", Metric.parse("P50"), 300.0)),
])
def test_slo_text(text: str, want: Objective) -> None:
    assert objective(load_scenario("intensive"), text) == want


def test_the_scenario_slo_without_text() -> None:
    obj = objective(load_scenario("intensive"), None)
    assert obj.workload == "high" and obj.metric == Metric.parse("P99") and obj.latency_ms > 0


@pytest.mark.parametrize(("text", "says"), [
    ("high.P99", "expected [WORKLOAD.][METRIC:]PNN=MS"),
    ("high.Q99=10", "expected"),
    ("high.P100=10", "expected"),
    ("high.P99=-1", "expected"),
    ("high.P99=oops", "expected"),
    ("high.itl ms:P99=6", "expected"),
    ("nobody.P99=10", "no workload 'nobody'; workloads: high, low"),
    ("nobody.itl_ms:P99=10", "no workload 'nobody'"),
])
def test_malformed_slo_text_names_the_form(text: str, says: str) -> None:
    with pytest.raises(UsageError, match=None) as e:
        objective(load_scenario("intensive"), text)
    assert says in str(e.value) and repr(text) in str(e.value)
