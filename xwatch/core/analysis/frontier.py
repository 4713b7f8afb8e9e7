"""A sweep's trade-off: one point per phase (HIGH P50/P99, LOW samples/s) and the
settings no other point beats on both HIGH's tail and LOW's throughput. Pure."""

from __future__ import annotations

import math
from dataclasses import dataclass

from xwatch.core.analysis.phases import by_priority
from xwatch.core.analysis.stats.copies import combine, copies_of
from xwatch.core.analysis.stats.runs import RunValue
from xwatch.core.engine.snapshot import PhaseSnapshot, SessionSnapshot, WorkloadSnapshot
from xwatch.core.engine.stats import nan_if_none


@dataclass(frozen=True)
class SweepPoint:
    """One phase of a sweep: its setting (``label``; "native" for the native phase),
    whether it measured (``ok``), HIGH's P50 and P99 and LOW's samples/s (NaN when not
    ``ok``)."""

    phase: PhaseSnapshot
    label: str
    status: str
    ok: bool
    p50: float
    p99: float
    low_sps: float
    native: bool


def sweep_points(snap: SessionSnapshot) -> tuple[PhaseSnapshot | None, list[SweepPoint]]:
    """(the native phase or None, a point per native or setting phase)."""
    setting_phases = [p for p in snap.phases if p.setting]
    if not setting_phases:
        return None, []
    native = next((p for p in snap.phases if p.mode == "native"), None)
    ref = native or setting_phases[0]
    hi, lows = by_priority(ref)
    pts = []
    for p in ([native] if native else []) + setting_phases:
        # HIGH: every GPU's copy (``--gpus``), their geometric mean; LOW: every copy's sum
        ws = copies_of(p, hi.name) if hi else ()
        low_sps = sum(nan_if_none(lw_p.throughput.samples_per_s) for lw in lows
                      if (lw_p := p.workload(lw.name)) is not None)
        ok = p.status != "failed" and bool(ws)

        def pct(key: str, ws: tuple[WorkloadSnapshot, ...] = ws) -> float:
            return combine([RunValue(nan_if_none(getattr(w.phase, key)), math.nan)
                            for w in ws], key).est

        pts.append(SweepPoint(p, p.setting or "native", p.status, ok,
                              pct("p50") if ok else math.nan,
                              pct("p99") if ok else math.nan,
                              low_sps if ok else math.nan, p is native))
    return native, pts


def frontier(pts: list[SweepPoint]) -> set[str]:
    """Labels of points not dominated (lower-or-equal P99 and higher-or-equal
    LOW throughput, one strictly better) by any other point."""
    good = [p for p in pts if p.ok]
    out = set()
    for p in good:
        dominated = any(q is not p and q.p99 <= p.p99 and q.low_sps >= p.low_sps
                        and (q.p99 < p.p99 or q.low_sps > p.low_sps) for q in good)
        if not dominated:
            out.add(p.label)
    return out
