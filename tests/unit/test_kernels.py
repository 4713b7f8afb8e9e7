"""The kernel-capture analysis on a real capture (H100: ResNet-18 b1 @20/s next to
ResNet-50 b1024, 2 s, both processes' traces), checked against a brute-force
computation on a time grid, and the interval helpers on planted data."""

from __future__ import annotations

import bisect
import json
import math
from pathlib import Path

import msgspec
import pytest

from xwatch.core.analysis.gpu.kernels import analyze, capture_cost, clip, intersect, occupancy, union
from xwatch.core.engine.snapshot import CaptureSnapshot
from xwatch.core.engine.worker.trace import load_trace

DATA = Path(__file__).resolve().parent.parent / "data" / "kernel_trace_h100"


def _capture() -> tuple[CaptureSnapshot, dict[str, int], list]:  # type: ignore[type-arg]
    d = json.loads((DATA / "capture.json").read_text())
    rec = d["capture"]
    cap = CaptureSnapshot(id=rec["id"], t=rec["t"], seconds=rec["seconds"],
                          workloads=tuple(rec["workloads"]), errors=rec["errors"], traces={
                              n: load_trace(str(DATA / f"phase0-capture1-{n}.json.gz"))
                              for n in ("high", "low")})
    return cap, d["priorities"], d["series_high"]


def test_interval_helpers() -> None:
    a = union([(0.0, 1.0), (0.5, 2.0), (3.0, 4.0)])
    assert a == [(0.0, 2.0), (3.0, 4.0)]
    assert intersect(a, [(1.5, 3.5)]) == [(1.5, 2.0), (3.0, 3.5)]
    assert clip(a, 1.0, 3.2) == [(1.0, 2.0), (3.0, 3.2)]
    occ = occupancy({"kernels": [[0, 0, 0.0, 1.0], [0, 0, 2.5, 3.0]]}, 0.0, 4.0, 4)
    assert occ == [1.0, 0.0, 0.5, 0.0]


def _busy(trace: dict) -> list[tuple[float, float]]:  # type: ignore[type-arg]
    return union([(k[2], k[3]) for k in trace["kernels"]])


def _covered(iv: list[tuple[float, float]], t: float) -> bool:
    i = bisect.bisect_right(iv, (t, math.inf)) - 1
    return i >= 0 and iv[i][0] <= t < iv[i][1]


def test_real_capture_against_a_time_grid() -> None:
    cap, prio, _ = _capture()
    a = analyze(cap, prio)
    assert a is not None and a.high == "high" and a.lows == ("low",)
    hi, lo = cap.traces["high"], cap.traces["low"]
    assert a.kernels == {"high": len(hi["kernels"]), "low": len(lo["kernels"])}
    assert a.aligned == 1.0  # every HIGH kernel inside one of HIGH's requests
    hb, lb = _busy(hi), _busy(lo)
    # brute force over each request on a 2 us grid: kernel time, overlap, LOW quiet
    step = 2e-6
    for b in a.slowest[:4]:
        _, s, e = next(q for q in hi["requests"] if q[0] == b.seq)
        n = int((e - s) / step)
        ks = os_ = quiet = 0
        for i in range(n):
            t = s + (i + 0.5) * step
            h, low = _covered(hb, t), _covered(lb, t)
            ks += h
            os_ += h and low
            quiet += not low
        assert b.kernel_ms == pytest.approx(ks * step * 1e3, abs=0.02)
        assert b.overlap_ms == pytest.approx(os_ * step * 1e3, abs=0.02)
        assert b.low_quiet_ms == pytest.approx(quiet * step * 1e3, abs=0.05)
        assert b.gap_ms == pytest.approx(b.span_ms - b.kernel_ms, abs=1e-9)
        first = next(k[2] for k in hi["kernels"] if k[2] >= s - 1e-9)
        assert b.queue_ms == pytest.approx((first - s) * 1e3, abs=1e-6)
    # whole-capture shares from the merged intervals
    assert a.overlap_share == pytest.approx(
        sum(e - s for s, e in intersect(hb, lb)) / sum(e - s for s, e in hb))
    assert a.high_kernel_ms == pytest.approx(sum(k[3] - k[2] for k in hi["kernels"]) * 1e3)
    assert 1.0 <= a.stretch < 2.0 and 0.9 < a.overlap_share <= 1.0  # as measured natively
    assert a.slowest == tuple(sorted(a.slowest, key=lambda b: -b.span_ms))


def test_capture_cost_compares_before_and_during() -> None:
    cap, _, series = _capture()
    c = capture_cost(series, cap)
    t = cap.t
    before = [r for r in series if t - 6 <= r[0] < t - 1 and r[1]]
    assert c["before_p50_ms"] == pytest.approx(sum(r[5] for r in before) / len(before))
    during = [r for r in series if t <= r[0] <= t + cap.seconds + 1 and r[1]]
    assert c["during_max_ms"] == max(r[7] for r in during)
    assert c["during_max_ms"] > 10 * c["before_max_ms"]  # the profiler's teardown


def test_missing_trace_is_said() -> None:
    cap, prio, _ = _capture()
    cap = msgspec.structs.replace(cap, workloads=("high", "low", "other"))
    a = analyze(cap, prio)
    assert a is not None and "no trace from other" in a.notes
    assert analyze(msgspec.structs.replace(cap, traces={}), prio) is None
