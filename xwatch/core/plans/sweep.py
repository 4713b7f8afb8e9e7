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
from typing import Any

from xwatch.errors import UsageError
from xwatch.scenario import Scenario, WorkloadXsched

SWEEP_KEYS = ("priority", "level", "threshold", "batch_size")


def parse_settings(specs: list[str], scen: Scenario) -> list[dict[str, dict[str, int]]]:
    """``['low.threshold=1,2', 'low.batch_size=1,1']`` -> [{'low': {...}}, ...]."""
    if not specs:
        raise UsageError("sweep needs at least one --set WL.KEY=V1,V2,...")
    names = list(dict.fromkeys(w.base_name for w in scen.workloads))
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
        kv = s.get(w.name) or s.get(w.base_name)
        if kv:
            xs = dataclasses.replace(w.xsched, **kv)  # type: ignore[arg-type]
            if isinstance(xs, WorkloadXsched):
                w = dataclasses.replace(w, xsched=xs)
        wls.append(w)
    return dataclasses.replace(scen, workloads=tuple(wls))


async def run_sweep(scen: Scenario, args: argparse.Namespace, controller: Any) -> int:
    """Headless sweep into one session/snapshot; returns the exit status."""
    from xwatch.core.plans.headless import Step, run_plan
    from xwatch.core.xsched.controller import XschedController

    settings = parse_settings(args.set, scen)
    steps = [Step("native")] + [
        Step("xsched", XschedController(controller.install, apply_setting(scen, s),
                                        poll_s=controller.poll_s,
                                        preflight=controller.preflight), setting_label(s), s)
        for s in settings]
    return await run_plan(scen, args, steps, controller)
