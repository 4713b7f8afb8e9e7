"""Several metrics per request, for any workload: a command that reports ttft_ms,
tpot_ms and every inter-token latency (a list) beside its latency_ms gets, for each,
percentiles with intervals in the headless end, the snapshot (and back), Prometheus,
and an SLO on one of them with its goodput; a workload that sends only latency_ms is
unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from tests.conftest import run_xwatch
from tests.helpers import scenarios
from xwatch.core.analysis.stats.runs import run_value
from xwatch.core.export.document.schema import SCHEMA_PATH
from xwatch.core.export.prometheus import families
from xwatch.core.export.snapshot import load_snapshot
from xwatch.core.model.metric import Metric

SCHEMA = json.loads(SCHEMA_PATH.read_text())


def test_named_metrics_end_to_end(tmp_path: Path) -> None:
    f = scenarios.two(tmp_path, 2, hi=scenarios.producer(20, "--llm", "8"), top=(
        '[slo]\nworkload = "high"\npercentile = 99\nlatency_ms = 12\nmetric = "tpot_ms"'))
    out = tmp_path / "out"
    r = run_xwatch("run", str(f), "--headless", "--telemetry", "off", "--export", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    assert any(ln.strip().startswith("high itl_ms (n=") and "P99 12 [" in ln
               for ln in r.stdout.splitlines()), r.stdout
    assert any(ln.strip().startswith("high tpot_ms (n=") and "goodput" in ln
               for ln in r.stdout.splitlines()), r.stdout
    doc = json.loads((out / "snapshot.json").read_text())
    jsonschema.validate(doc, SCHEMA)
    hi = doc["phases"][0]["workloads"]["high"]
    lo = doc["phases"][0]["workloads"]["low"]
    assert set(hi["metrics"]) == {"ttft_ms", "tpot_ms", "itl_ms"} and lo["metrics"] == {}
    n = hi["count"]
    assert hi["metrics"]["ttft_ms"]["count"] == n and hi["metrics"]["itl_ms"]["count"] == 7 * n
    # whole milliseconds in, exact percentiles out: ttft is 40 + i % 5 for i = 1..n
    vals = sorted(40 + i % 5 for i in range(1, n + 1))
    assert hi["metrics"]["ttft_ms"]["summary"]["p50"] == vals[-(-n // 2) - 1]
    assert hi["metrics"]["itl_ms"]["hist"]["integral"] is True
    # tpot is the mean of 10/11/12-ms gaps, about 11 ms: all under the 12 ms objective
    assert hi["goodput"] == 1.0 and hi["metrics"]["tpot_ms"]["goodput"] == 1.0
    snap = load_snapshot(out / "snapshot.json")
    w = snap.phases[0].workload("high")
    assert w is not None and run_value(w, Metric.parse("ttft_ms:P50")).est == vals[-(-n // 2) - 1]
    names = {m.name for m in families(snap, "h")}
    assert "xwatch_request_metric_percentile_seconds" in names
    report = (out / "report.md").read_text()
    assert "ttft_ms" in report and "itl_ms" in report
