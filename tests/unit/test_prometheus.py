"""The Prometheus exposition of a snapshot, parsed with prometheus_client's own
parser: every number equals the snapshot's."""

from __future__ import annotations

import math
import socket
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from tests.helpers.metrics import parse_samples, with_labels
from xwatch.core.engine.stats import LATENCY_BUCKETS_MS
from xwatch.core.export.prometheus import MetricsError, MetricsServer, _Collector
from xwatch.core.export.snapshot import load_snapshot

FIXTURE = Path(__file__).resolve().parent.parent / "data" / "snapshot_two_phases.json"


def _scrape(snap) -> dict[str, list]:  # type: ignore[no-untyped-def,type-arg]
    c = _Collector("testhost")
    c.snap = snap
    reg = CollectorRegistry(auto_describe=False)
    reg.register(c)
    return parse_samples(generate_latest(reg).decode())


def _one(samples, **labels):  # type: ignore[no-untyped-def]
    got = with_labels(samples, **labels)
    assert len(got) == 1, (labels, got)
    return got[0].value


def test_every_workload_number_matches_the_snapshot() -> None:
    snap = load_snapshot(FIXTURE)
    m = _scrape(snap)
    for p in snap.phases:
        for w in p.workloads:
            lab = {"workload": w.name, "phase": p.name, "mode": p.mode, "host": "testhost"}
            assert _one(m["xwatch_requests_total"], **lab) == w.count
            assert _one(m["xwatch_requests_late_total"], **lab) == w.late
            assert _one(m["xwatch_samples_total"], **lab) == w.samples
            assert _one(m["xwatch_request_rate"], **lab) == pytest.approx(w.throughput.requests_per_s)
            assert _one(m["xwatch_workload_state"], state=w.state, **lab) == 1
            for key, q in (("p50", "0.5"), ("p99", "0.99"), ("p999", "0.999")):
                v = _one(m["xwatch_request_latency_percentile_seconds"], quantile=q, **lab)
                assert v * 1000 == pytest.approx(getattr(w.phase, key), rel=1e-9)
            assert _one(m["xwatch_request_latency_percentile_seconds_count"], **lab) == \
                w.phase_count
            if p.mode == "xsched":
                assert p.xsched is not None
                ev = p.xsched.workloads[w.name]
                assert _one(m["xwatch_xsched_engagement"], status=ev.status, **lab) == 1
    info = m["xwatch_info"][0].labels
    assert info["scenario"] == snap.scenario.name and info["host"] == "testhost"
    assert _one(m["xwatch_gpu_utilization_ratio"], gpu="0") == pytest.approx(0.8, abs=0.05)


def test_histogram_buckets_count_and_sum() -> None:
    snap = load_snapshot(FIXTURE)
    w = snap.phases[0].workloads[0]
    import msgspec

    counts = tuple(min(w.count, i * 50) for i in range(len(LATENCY_BUCKETS_MS)))
    w2 = msgspec.structs.replace(w, latency_buckets_ms=list(zip(LATENCY_BUCKETS_MS, counts)),
                                 latency_sum_ms=(w.phase.mean or 0.0) * w.count)
    p2 = msgspec.structs.replace(snap.phases[0], workloads=(w2,))
    m = _scrape(msgspec.structs.replace(snap, phases=(p2,)))
    lab = {"workload": w.name, "phase": p2.name}
    for le, n in zip(LATENCY_BUCKETS_MS, counts):
        assert _one(m["xwatch_request_latency_seconds_bucket"], le=f"{le / 1000:g}", **lab) == n
    assert _one(m["xwatch_request_latency_seconds_bucket"], le="+Inf", **lab) == w.count
    assert _one(m["xwatch_request_latency_seconds_count"], **lab) == w.count
    assert _one(m["xwatch_request_latency_seconds_sum"], **lab) == \
        pytest.approx((w.phase.mean or 0.0) * w.count / 1000)
    assert not math.isnan(_one(m["xwatch_snapshot_age_seconds"]))


def test_port_in_use_and_bad_port_are_clear_errors() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(MetricsError) as ei:
            MetricsServer(port).start()
        assert ei.value.title == "Metrics port unavailable" and str(port) in str(ei.value)
    with pytest.raises(MetricsError, match="0-65535"):
        MetricsServer(70000)
    with pytest.raises(MetricsError, match="metrics-host"):
        MetricsServer(0, host="no.such.host.invalid").start()


def test_every_metric_is_documented() -> None:
    from xwatch.core.export.prometheus import families

    doc = (Path(__file__).resolve().parents[2] / "docs" / "metrics.md").read_text()
    names = {f.name for f in families(load_snapshot(FIXTURE), "h")}
    missing = sorted(n for n in names if n not in doc)
    assert not missing, f"docs/metrics.md does not describe {missing}"


def test_a_workloads_gpu_label_is_the_same_from_its_first_scrape() -> None:
    """Issue 64: the ``gpu`` label went from "" (before the worker's hello) to "cpu",
    which starts a new series. A workload whose device is not known yet is not published;
    from its first scrape on it carries the label it keeps; one that never says (no
    hello, running) is "" throughout."""
    from msgspec.structs import replace

    snap = load_snapshot(FIXTURE)
    p = snap.phases[0]
    w = p.workloads[0]

    def at(state: str, hello: dict) -> dict[str, list]:  # type: ignore[type-arg]
        ws = [replace(w, state=state, hello=hello), *p.workloads[1:]]
        return _scrape(replace(snap, phases=[replace(p, workloads=ws)]))

    lab = {"workload": w.name, "phase": p.name}
    labels = set()
    for state, hello in (("pending", {}), ("starting", {}), ("warming", {"device": "cpu"}),
                         ("running", {"device": "cpu"}), ("stopped", {"device": "cpu"})):
        got = with_labels(at(state, hello)["xwatch_requests_total"], **lab)
        labels |= {s.labels["gpu"] for s in got}
        assert len(got) == (0 if state in ("pending", "starting") else 1), (state, got)
    assert labels == {"cpu"}
    assert {s.labels["gpu"] for s in with_labels(at("running", {})["xwatch_requests_total"],
                                                 **lab)} == {""}
    assert {s.labels["gpu"] for s in with_labels(
        at("starting", {"device": "cuda:1"})["xwatch_requests_total"], **lab)} == {"1"}
