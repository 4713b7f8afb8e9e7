"""Tail attribution: for each high-priority request slower than the SLO (or the
phase P99 when there is none), what xserver's ``/xqueues`` polls showed while it
was open - LOW running, LOW suspended, LOW idle, HIGH's own queue suspended - or
that no poll was close enough to say. Pure: reads a phase snapshot's slowest
requests and the per-poll scheduler lanes recorded in XSched phases."""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field

from xwatch.core.analysis.phases import by_priority
from xwatch.core.engine.snapshot import PhaseSnapshot
from xwatch.core.engine.stats import nan_if_none
from xwatch.core.modes.participation import proof_of

CATEGORIES = ("LOW running", "LOW suspended", "LOW idle", "HIGH suspended", "unknown")
#: a poll this close to a request (when none fell inside it) still speaks for it
NEAR_S = 0.15


@dataclass(frozen=True)
class Attribution:
    workload: str
    threshold_ms: float
    threshold_kind: str  # "SLO" | "phase P99"
    counts: dict[str, int]
    requests: tuple[tuple[float, float, str], ...]  # (end s after phase start, ms, category)
    truncated: bool = False  # more slow requests than were kept
    notes: list[str] = field(default_factory=list)

    def sentence(self) -> str:
        n = sum(self.counts.values())
        if n == 0:
            return (f"no {self.workload} request above {self.threshold_ms:.2f} ms "
                    f"({self.threshold_kind})")
        parts = ", ".join(f"{v} while {k}" if k != "unknown" else f"{v} unknown"
                          for k, v in self.counts.items() if v or k == "unknown")
        more = " (the slowest kept; more exist)" if self.truncated else ""
        return (f"slow {self.workload} requests (> {self.threshold_ms:.2f} ms, "
                f"{self.threshold_kind}): {parts}{more}")


def _states(lane: list[tuple[float, str]], times: list[float], lo: float, hi: float
            ) -> list[str]:
    """Lane states polled in [lo, hi], else the nearest within NEAR_S."""
    i, j = bisect.bisect_left(times, lo), bisect.bisect_right(times, hi)
    if j > i:
        return [s for _, s in lane[i:j]]
    best: tuple[float, str] | None = None
    for k in (i - 1, i):
        if 0 <= k < len(lane):
            d = min(abs(lane[k][0] - lo), abs(lane[k][0] - hi))
            if d <= NEAR_S and (best is None or d < best[0]):
                best = (d, lane[k][1])
    return [best[1]] if best else []


def attribute(phase: PhaseSnapshot, slo_ms: float | None = None,
              slo_workload: str | None = None) -> Attribution | None:
    """The attribution for the phase's highest-priority workload (phases of a mode that
    records its scheduler's lanes, ``Proof.lanes``: XSched's)."""
    proof = proof_of(phase.mode)
    lanes = proof.lanes(phase) if proof is not None else {}
    if not lanes:
        return None
    hi, lows = by_priority(phase)
    if hi is None or not hi.count or not hi.slowest:
        return None  # no per-request data (e.g. a snapshot from an older xwatch)
    if slo_ms is not None and slo_workload in (None, hi.name):
        threshold, kind = slo_ms, "SLO"
    else:
        threshold, kind = nan_if_none(hi.phase.p99), "phase P99"
    if math.isnan(threshold):
        return None
    slow = [(t, lat) for t, lat in hi.slowest if lat > threshold]
    hi_lane = lanes.get(hi.name, [])
    hi_times = [t for t, _ in hi_lane]
    low_lanes = [(lane, [t for t, _ in lane]) for lane in (lanes.get(w.name, []) for w in lows)]
    counts = dict.fromkeys(CATEGORIES, 0)
    out = []
    for t_end, lat in slow:
        lo = t_end - lat / 1e3
        own = _states(hi_lane, hi_times, lo, t_end)
        low_states = [s for lane, times in low_lanes for s in _states(lane, times, lo, t_end)]
        if "suspended" in own:
            cat = "HIGH suspended"
        elif "running" in low_states:
            cat = "LOW running"
        elif "suspended" in low_states:
            cat = "LOW suspended"
        elif low_states:
            cat = "LOW idle"
        else:
            cat = "unknown"
        counts[cat] += 1
        out.append((round(t_end, 4), lat, cat))
    truncated = bool(hi.slowest) and len(slow) == len(hi.slowest) and len(slow) >= 512
    return Attribution(hi.name, threshold, kind, counts, tuple(out), truncated)

