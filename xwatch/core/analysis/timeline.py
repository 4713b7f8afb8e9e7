"""One time axis for a whole session: phases laid end to end.

Charts (live and in reports) show every phase on one axis, each starting where
the previous one ended plus a small gap, with a mark at each phase start.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xwatch.core.engine.snapshot import PhaseSnapshot
from xwatch.core.engine.stats import nan_if_none

GAP_S = 2.0


def _span(p: PhaseSnapshot) -> float:
    """Seconds from the phase start (process launch) to its end on the axis."""
    rows = max([r.sec for w in p.workloads for r in w.series] or [0]) + 1
    lead = (p.t_measure - p.t_start) if p.t_measure else 0.0
    measured = p.elapsed_s if math.isfinite(p.elapsed_s) else 0.0
    return max(float(rows), lead + measured)


def phase_offsets(phases: Sequence[PhaseSnapshot]) -> list[float]:
    """Where each phase starts on the session axis. Per-second rows, telemetry and
    annotations are all placed relative to the phase start (``t_start``)."""
    offsets, off = [], 0.0
    for p in phases:
        offsets.append(off)
        off += _span(p) + GAP_S
    return offsets


def workload_series(phases: Sequence[PhaseSnapshot], offsets: Sequence[float], name: str,
                    key: str) -> list[tuple[float, float]]:
    """(session second, value) of per-second rows; NaN separates phases."""
    pts: list[tuple[float, float]] = []
    for o, p in zip(offsets, phases):
        w = p.workload(name)
        if w:
            pts += [(o + r.sec, float(nan_if_none(getattr(r, key)))) for r in w.series
                    if r.sec >= 0]
        pts.append((o, math.nan))
    return pts


class SessionClock:
    """Maps monotonic times (telemetry, annotations) onto the session axis; None for a
    time outside every phase. Each phase's span is found once (it reads every
    per-second row; a chart maps thousands of telemetry samples)."""

    def __init__(self, phases: Sequence[PhaseSnapshot], offsets: Sequence[float]) -> None:
        self._spans = [(o, p.t_start, p.t_start + _span(p))
                       for o, p in zip(offsets, phases) if p.t_start > 0]

    def __call__(self, t: float) -> float | None:
        for o, lo, hi in self._spans:
            if lo <= t <= hi:
                return o + (t - lo)
        return None
