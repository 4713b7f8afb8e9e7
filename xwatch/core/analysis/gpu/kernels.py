"""What a kernel capture says about HIGH's requests: which LOW kernels a slow request
waited behind. Pure functions of a capture (``Phase.request_capture`` + the workers'
reduced traces, all on the monotonic clock).

Definitions (HIGH = the highest-priority traced workload, LOW = every other):
- *busy*: the union of a workload's kernel intervals (streams merged).
- *overlap share*: the part of HIGH's busy time during which LOW was busy too.
- *stretch*: HIGH's kernel time over what the same kernels take without LOW running:
  per kernel name, the median duration of its runs that overlapped no LOW kernel
  (else its shortest run), summed over the kernels that ran.
- per request (the worker's own start and end): *queue* = start to HIGH's first kernel;
  *kernel* = HIGH busy time inside the request; *gap* = request time with no HIGH kernel
  running (launch, queueing behind LOW, synchronization); *overlap* = HIGH busy time
  inside the request during which LOW was busy; *LOW quiet* = request time during
  which LOW ran nothing (under XSched: LOW held back while HIGH was open).
- *aligned*: the share of HIGH's kernels inside one of HIGH's requests (± 1 ms): the
  check that the workers' clocks were put on xwatch's clock correctly.
"""

from __future__ import annotations

import bisect
import statistics
from dataclasses import dataclass, field
from typing import Any

from xwatch.core import model as M
from xwatch.core.engine.snapshot import CaptureSnapshot, Trace

Interval = tuple[float, float]


def union(iv: list[Interval]) -> list[Interval]:
    """Merged, sorted intervals."""
    out: list[list[float]] = []
    for s, e in sorted(iv):
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1][1] = e
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def length(iv: list[Interval]) -> float:
    return sum(e - s for s, e in iv)


def intersect(a: list[Interval], b: list[Interval]) -> list[Interval]:
    """Intersection of two merged interval lists."""
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        s, e = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if s < e:
            out.append((s, e))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def clip(iv: list[Interval], lo: float, hi: float) -> list[Interval]:
    """The parts of merged ``iv`` inside [lo, hi]."""
    k = max(0, bisect.bisect_left(iv, (lo, lo)) - 1)
    out = []
    for s, e in iv[k:]:
        if s >= hi:
            break
        s2, e2 = max(s, lo), min(e, hi)
        if s2 < e2:
            out.append((s2, e2))
    return out


@dataclass(frozen=True)
class RequestBreakdown:
    seq: int
    start: float  # seconds after the capture's start
    span_ms: float
    queue_ms: float  # NaN when no HIGH kernel ran inside the request
    kernel_ms: float
    gap_ms: float
    overlap_ms: float
    low_quiet_ms: float
    stretch: float  # NaN without kernels


@dataclass(frozen=True)
class CaptureAnalysis:
    capture: int
    high: str
    lows: tuple[str, ...]
    t0: float
    t1: float
    kernels: dict[str, int]
    high_kernel_ms: float
    high_alone_ms: float  # the same kernels without LOW running (the stretch's baseline)
    stretch: float
    overlap_share: float
    gap_ms_mean: float
    queue_ms_mean: float
    low_quiet_share: float  # of HIGH's open-request time
    aligned: float
    requests: int
    slowest: tuple[RequestBreakdown, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)

    def as_model(self) -> M.CaptureAnalysis:
        """The analysis as the snapshot records it (rounded; null: unknown)."""
        def r(v: float) -> float | None:
            return None if v != v else round(v, 4)

        return M.CaptureAnalysis(
            capture=self.capture, high=self.high, lows=list(self.lows), t0=self.t0,
            t1=self.t1, kernels=self.kernels, high_kernel_ms=r(self.high_kernel_ms),
            high_alone_ms=r(self.high_alone_ms), stretch=r(self.stretch),
            overlap_share=r(self.overlap_share), gap_ms_mean=r(self.gap_ms_mean),
            queue_ms_mean=r(self.queue_ms_mean), low_quiet_share=r(self.low_quiet_share),
            aligned=r(self.aligned), requests=self.requests, notes=list(self.notes),
            slowest=[M.SlowRequest(seq=b.seq, start=round(b.start, 4), span_ms=r(b.span_ms),
                                   kernel_ms=r(b.kernel_ms), overlap_ms=r(b.overlap_ms),
                                   queue_ms=r(b.queue_ms), gap_ms=r(b.gap_ms),
                                   low_quiet_ms=r(b.low_quiet_ms), stretch=r(b.stretch))
                     for b in self.slowest])


def _intervals(trace: Trace) -> list[Interval]:
    return [(float(k[2]), float(k[3])) for k in trace.get("kernels") or []]


def analyze(cap: CaptureSnapshot, priorities: dict[str, int]) -> CaptureAnalysis | None:
    """The capture's analysis, or None when HIGH's trace is missing."""
    traces = cap.traces
    if not traces:
        return None
    names = sorted(traces, key=lambda n: -priorities.get(n, 0))
    high = names[0]
    top = priorities.get(high, 0)
    lows = tuple(n for n in names[1:] if priorities.get(n, 0) < top)
    ht = traces[high]
    hk = ht.get("kernels") or []
    hnames = ht.get("names") or []
    h_iv = [(float(k[2]), float(k[3])) for k in hk]
    h_busy = union(h_iv)
    low_busy = union([iv for n in lows for iv in _intervals(traces[n])])
    t0 = min(float(t.get("t0", 0.0)) for t in traces.values())
    t1 = max(float(t.get("t1", 0.0)) for t in traces.values())
    # stretch: per kernel name, the runs that overlapped no LOW kernel are the baseline
    alone: dict[int, list[float]] = {}
    every: dict[int, list[float]] = {}
    for k, (s, e) in zip(hk, h_iv):
        d = e - s
        every.setdefault(int(k[0]), []).append(d)
        if not clip(low_busy, s, e):
            alone.setdefault(int(k[0]), []).append(d)
    base = {n: (statistics.median(alone[n]) if n in alone else min(ds))
            for n, ds in every.items()}
    total = sum(e - s for s, e in h_iv)
    total_base = sum(base[int(k[0])] for k in hk)
    overlap = length(intersect(h_busy, low_busy))
    busy_len = length(h_busy)
    reqs = [(int(q[0]), float(q[1]), float(q[2])) for q in ht.get("requests") or []]
    per: list[RequestBreakdown] = []
    inside = 0
    starts = [q[1] for q in reqs]
    for s, e in h_iv:  # alignment: each kernel inside a request (1 ms slack)
        i = bisect.bisect_right(starts, s + 1e-3) - 1
        if i >= 0 and reqs[i][1] - 1e-3 <= s and e <= reqs[i][2] + 1e-3:
            inside += 1
    for seq, s, e in reqs:
        span = e - s
        mine = clip(h_busy, s, e)
        kern = length(mine)
        low_in = clip(low_busy, s, e)
        first = mine[0][0] if mine else float("nan")
        ks = [(kk, iv) for kk, iv in zip(hk, h_iv) if s - 1e-3 <= iv[0] and iv[1] <= e + 1e-3]
        kd = sum(iv[1] - iv[0] for _, iv in ks)
        kb = sum(base[int(kk[0])] for kk, _ in ks)
        per.append(RequestBreakdown(
            seq=seq, start=round(s - t0, 6), span_ms=span * 1e3,
            queue_ms=(first - s) * 1e3 if mine else float("nan"), kernel_ms=kern * 1e3,
            gap_ms=(span - kern) * 1e3, overlap_ms=length(intersect(mine, low_in)) * 1e3,
            low_quiet_ms=(span - length(low_in)) * 1e3,
            stretch=kd / kb if kb > 0 else float("nan")))
    open_time = sum(b.span_ms for b in per)
    notes = []
    if ht.get("truncated"):
        notes.append(f"{high}'s trace was cut at its kernel limit")
    for n in lows:
        if traces[n].get("truncated"):
            notes.append(f"{n}'s trace was cut at its kernel limit")
    for n in names:
        tr = traces[n]
        if tr.get("partial"):
            notes.append(f"{n}'s capture was cut short when the phase stopped "
                         f"({float(tr.get('t1', 0)) - float(tr.get('t0', 0)):.1f} of "
                         f"{float(tr.get('seconds', 0)):g} s)")
    missing = [n for n in cap.workloads if n not in traces]
    if missing:
        notes.append("no trace from " + ", ".join(missing))

    def mean(xs: list[float]) -> float:
        xs = [x for x in xs if x == x]
        return sum(xs) / len(xs) if xs else float("nan")

    return CaptureAnalysis(
        capture=cap.id, high=high, lows=lows, t0=t0, t1=t1,
        kernels={n: len(traces[n].get("kernels") or []) for n in names},
        high_kernel_ms=total * 1e3, high_alone_ms=total_base * 1e3,
        stretch=total / total_base if total_base > 0 else float("nan"),
        overlap_share=overlap / busy_len if busy_len > 0 else float("nan"),
        gap_ms_mean=mean([b.gap_ms for b in per]), queue_ms_mean=mean([b.queue_ms for b in per]),
        low_quiet_share=(sum(b.low_quiet_ms for b in per) / open_time) if open_time else float("nan"),
        aligned=inside / len(h_iv) if h_iv else float("nan"), requests=len(per),
        slowest=tuple(sorted(per, key=lambda b: -b.span_ms)[:10]),
        notes=tuple(notes) + (() if hnames or not hk else ("kernel names missing",)))


def occupancy(trace: Trace, t0: float, t1: float, bins: int) -> list[float]:
    """Share of each of ``bins`` equal slices of [t0, t1] in which a kernel ran."""
    width = (t1 - t0) / bins if bins > 0 and t1 > t0 else 0.0
    out = [0.0] * max(0, bins)
    if width <= 0:
        return out
    for s, e in union(_intervals(trace)):
        s, e = max(s, t0), min(e, t1)
        if s >= e:
            continue
        i = int((s - t0) / width)
        while s < e and i < bins:
            edge = t0 + (i + 1) * width
            out[i] += (min(e, edge) - s) / width
            s = edge
            i += 1
    return [min(1.0, x) for x in out]


def capture_cost(rows: Any, cap: CaptureSnapshot, before_s: float = 6.0) -> dict[str, float]:
    """HIGH's per-second latency just before the capture against during it (and the
    second after, where the profiler's teardown lands): what capturing cost. ``rows``
    are the workload's per-second rows (``SecondRow`` or the snapshot's lists)."""
    t, s = cap.t, cap.seconds

    def get(r: Any, i: int, name: str) -> float:
        v = r[i] if isinstance(r, (list, tuple)) else getattr(r, name)
        return float("nan") if v is None else float(v)

    before = [r for r in rows if t - before_s <= get(r, 0, "sec") < t - 1]
    during = [r for r in rows if t <= get(r, 0, "sec") <= t + s + 1]

    def mean(rs: list[Any], i: int, name: str) -> float:
        xs = [get(r, i, name) for r in rs if get(r, 1, "count") > 0]
        xs = [x for x in xs if x == x]
        return sum(xs) / len(xs) if xs else float("nan")

    def top(rs: list[Any]) -> float:
        xs = [get(r, 7, "max") for r in rs if get(r, 1, "count") > 0]
        xs = [x for x in xs if x == x]
        return max(xs) if xs else float("nan")

    return {"before_p50_ms": mean(before, 5, "p50"), "during_p50_ms": mean(during, 5, "p50"),
            "before_max_ms": top(before), "during_max_ms": top(during)}
