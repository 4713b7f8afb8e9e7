"""A sweep's trade-off: one point per run of a setting (HIGH P50/P99, LOW samples/s)
and the settings no other point beats on both HIGH's tail and LOW's throughput. On
several GPUs a run's values are per GPU: HIGH's the geometric mean of its copies,
LOW's samples/s the mean of its copies (each LOW's, summed over LOWs); a sweep phase
that ran settings side by side gives one point per setting, from its own copy
(``analysis.phases.per_setting``). Pure."""

from __future__ import annotations

import math
from dataclasses import dataclass

from xwatch.core.analysis.phases import by_priority, per_setting
from xwatch.core.analysis.stats.copies import combine, copies_of, role
from xwatch.core.analysis.stats.runs import RunValue
from xwatch.core.engine.snapshot import PhaseSnapshot, SessionSnapshot, WorkloadSnapshot
from xwatch.core.engine.stats import nan_if_none
from xwatch.core.model.metric import THROUGHPUT


@dataclass(frozen=True)
class SweepPoint:
    """One run of a sweep: its phase (a setting's own copies where settings shared a
    phase), its setting (``label``; "native" for the native phase), whether it measured
    (``ok``), HIGH's P50 and P99 and LOW's samples/s per GPU (NaN when not ``ok``)."""

    phase: PhaseSnapshot
    label: str
    status: str
    ok: bool
    p50: float
    p99: float
    low_sps: float
    native: bool


def sweep_points(snap: SessionSnapshot) -> tuple[PhaseSnapshot | None, list[SweepPoint]]:
    """(the native phase or None, a point per native phase (the first) or setting run)."""
    setting_phases = [p for p in per_setting(snap.phases) if p.setting]
    if not setting_phases:
        return None, []
    native = next((p for p in snap.phases if p.mode == "native"), None)
    ref = native or setting_phases[0]
    hi, lows = by_priority(ref)
    low_roles = list(dict.fromkeys(role(lw.name) for lw in lows))
    pts = []
    for p in ([native] if native else []) + setting_phases:
        # HIGH: every GPU's copy (``--gpus``), their geometric mean; LOW: per GPU (the
        # mean of its copies, a starved copy's 0 included), each LOW's summed
        ws = copies_of(p, hi.name) if hi else ()
        low_sps = sum(combine(rs, THROUGHPUT.scale).est for r in low_roles
                      if (rs := [RunValue(nan_if_none(w.throughput.samples_per_s), math.nan)
                                 for w in p.workloads if role(w.name) == r]))
        ok = p.status != "failed" and bool(ws)

        def pct(key: str, ws: tuple[WorkloadSnapshot, ...] = ws) -> float:
            return combine([RunValue(nan_if_none(getattr(w.phase, key)), math.nan)
                            for w in ws], "log").est

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
