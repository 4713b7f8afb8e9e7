"""A sweep's trade-off: one point per phase (HIGH P50/P99, LOW samples/s) and the
settings no other point beats on both HIGH's tail and LOW's throughput. Pure."""

from __future__ import annotations

import math
from typing import Any

from xwatch.core.analysis.phases import by_priority


def sweep_points(snap: Any) -> tuple[Any, list[dict[str, Any]]]:
    """(native phase or None, [{phase, label, status, p50, p99, low_sps}])."""
    setting_phases = [p for p in snap.phases if p.setting]
    if not setting_phases:
        return None, []
    native = next((p for p in snap.phases if p.mode == "native"), None)
    ref = native or setting_phases[0]
    hi, lows = by_priority(ref)
    pts = []
    for p in ([native] if native else []) + setting_phases:
        w = p.workload(hi.name) if hi else None
        low_sps = sum((p.workload(lw.name).samples_per_s if p.workload(lw.name) else 0.0)
                      for lw in lows)
        ok = p.status != "failed" and w is not None and w.count > 0
        pts.append({"phase": p, "label": p.setting or "native",
                    "status": p.status, "ok": ok,
                    "p50": w.phase.p50 if ok and w else math.nan,
                    "p99": w.phase.p99 if ok and w else math.nan,
                    "low_sps": low_sps if ok else math.nan, "native": p is native})
    return native, pts


def frontier(pts: list[dict[str, Any]]) -> set[str]:
    """Labels of points not dominated (lower-or-equal P99 and higher-or-equal
    LOW throughput, one strictly better) by any other point."""
    good = [p for p in pts if p["ok"]]
    out = set()
    for p in good:
        dominated = any(q is not p and q["p99"] <= p["p99"] and q["low_sps"] >= p["low_sps"]
                        and (q["p99"] < p["p99"] or q["low_sps"] > p["low_sps"]) for q in good)
        if not dominated:
            out.add(p["label"])
    return out
