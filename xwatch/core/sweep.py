"""XSched parameter sweeps: one native phase, then one XSched phase per setting.

``--set low.threshold=1,2,4,8 --set low.batch_size=1,1,2,4`` gives four
settings (lists of equal length are zipped; a single value is used for every
setting). A setting whose phase fails is a failed point, not the end of the
sweep. ``frontier_rows`` turns a sweep snapshot into the trade-off table: HIGH
P50/P99 and LOW samples/s per setting, relative to native, and which settings
are on the Pareto frontier (lower HIGH P99, higher LOW throughput).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from typing import Any

from xwatch.errors import UsageError
from xwatch.scenario import Scenario, WorkloadXsched

SWEEP_KEYS = ("priority", "level", "threshold", "batch_size")


def parse_settings(specs: list[str], scen: Scenario) -> list[dict[str, dict[str, int]]]:
    """``['low.threshold=1,2', 'low.batch_size=1,1']`` -> [{'low': {...}}, ...]."""
    if not specs:
        raise UsageError("sweep needs at least one --set WL.KEY=V1,V2,...")
    names = [w.name for w in scen.workloads]
    columns: list[tuple[str, str, list[int]]] = []
    for spec in specs:
        lhs, sep, rhs = spec.partition("=")
        wl, dot, key = lhs.partition(".")
        if not sep or not dot:
            raise UsageError(f"--set {spec!r}: expected WORKLOAD.KEY=V1,V2,... "
                             "(e.g. low.threshold=1,2,4,8)")
        if wl not in names:
            raise UsageError(f"--set {spec!r}: no workload {wl!r}; workloads: {', '.join(names)}")
        if key not in SWEEP_KEYS:
            raise UsageError(f"--set {spec!r}: key {key!r} cannot be swept; one of "
                             + ", ".join(SWEEP_KEYS))
        try:
            vals = [int(v) for v in rhs.split(",") if v.strip()]
        except ValueError:
            raise UsageError(f"--set {spec!r}: values must be integers")
        if not vals:
            raise UsageError(f"--set {spec!r}: no values")
        columns.append((wl, key, vals))
    n = max(len(v) for _, _, v in columns)
    for wl, key, vals in columns:
        if len(vals) not in (1, n):
            raise UsageError(f"--set {wl}.{key}: {len(vals)} values, but other --set lists have "
                             f"{n}; lists are zipped, so give {n} values or one")
    settings = []
    for i in range(n):
        s: dict[str, dict[str, int]] = {}
        for wl, key, vals in columns:
            s.setdefault(wl, {})[key] = vals[i if len(vals) > 1 else 0]
        for wl, kv in s.items():
            th, bs = kv.get("threshold"), kv.get("batch_size")
            if th is not None and bs is not None and bs > th:
                raise UsageError(f"setting {i + 1}: {wl}.batch_size={bs} exceeds "
                                 f"{wl}.threshold={th}")
        settings.append(s)
    return settings


def setting_label(s: dict[str, dict[str, int]]) -> str:
    return ", ".join(f"{wl}.{k}={v}" for wl, kv in s.items() for k, v in kv.items())


def apply_setting(scen: Scenario, s: dict[str, dict[str, int]]) -> Scenario:
    wls = []
    for w in scen.workloads:
        kv = s.get(w.name)
        if kv:
            xs = dataclasses.replace(w.xsched, **kv)  # type: ignore[arg-type]
            if isinstance(xs, WorkloadXsched):
                w = dataclasses.replace(w, xsched=xs)
        wls.append(w)
    return dataclasses.replace(scen, workloads=tuple(wls))


async def run_sweep(scen: Scenario, args: argparse.Namespace, controller: Any) -> int:
    """Headless sweep into one session/snapshot; returns the exit status."""
    from xwatch.core.headless import Step, run_plan
    from xwatch.core.xsched import XschedController

    settings = parse_settings(args.set, scen)
    steps = [Step("native")] + [
        Step("xsched", XschedController(controller.install, apply_setting(scen, s),
                                        poll_s=controller.poll_s), setting_label(s), s)
        for s in settings]
    return await run_plan(scen, args, steps, controller)


# ------------------------------------------------------------------ analysis
def sweep_points(snap: Any) -> tuple[Any, list[dict[str, Any]]]:
    """(native phase or None, [{phase, label, status, p50, p99, low_sps}])."""
    from xwatch.core.report import _by_priority

    setting_phases = [p for p in snap.phases if p.extra.get("setting")]
    if not setting_phases:
        return None, []
    native = next((p for p in snap.phases if p.mode == "native"), None)
    ref = native or setting_phases[0]
    hi, lows = _by_priority(ref)
    pts = []
    for p in ([native] if native else []) + setting_phases:
        w = p.workload(hi.name) if hi else None
        low_sps = sum((p.workload(lw.name).samples_per_s if p.workload(lw.name) else 0.0)
                      for lw in lows)
        ok = p.status != "failed" and w is not None and w.count > 0
        pts.append({"phase": p, "label": p.extra.get("setting") or "native",
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


def frontier_rows(snap: Any) -> tuple[list[list[str]], str]:
    from xwatch.core.report import change, num

    _native, pts = sweep_points(snap)
    if not pts:
        return [], ""
    front = frontier(pts)
    nat = next((p for p in pts if p["native"]), None)
    rows = []
    for p in pts:
        rows.append([
            p["phase"].name, p["label"], p["status"] if p["ok"] else f"FAILED ({p['status']})",
            num(p["p50"]), num(p["p99"]), num(p["low_sps"], 1),
            change(nat["p99"], p["p99"]) if nat and not p["native"] else "-",
            change(nat["low_sps"], p["low_sps"], 1) if nat and not p["native"] else "-",
            "yes" if p["label"] in front else ""])
    best = sorted(front - {"native"})
    note = ("Frontier: settings for which no other point has both a lower HIGH P99 and a "
            "higher LOW throughput. On the frontier: " + (", ".join(best) if best else
                                                           "no XSched setting (native dominates)")
            + ". Failed settings are listed with their status and are not points.")
    return rows, note
