"""Per-GPU view of a multi-GPU phase (``--gpus``): the copies of the workloads
grouped by the GPU they are pinned to, each group's headline numbers, the GPU's
telemetry matched by PCI bus id, and a roll-up over the GPUs. Pure functions on
snapshots, shared by the dashboard, the report and the metrics exporter.

Telemetry is matched by the PCI address the workers report in their hello (torch's
device properties); only when no worker of a group said it (command workloads,
a worker still loading) does a group fall back to the telemetry device with the
same index (NVML and amdsmi number devices in PCI bus order, as ``--gpus`` does),
and the group says ``matched_by = "index"``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from xwatch.core.engine.pci import bus_from_hello, format_bus, parse_bus_id
from xwatch.core.engine.session import PhaseSnapshot, WorkloadSnapshot


@dataclass(frozen=True)
class GpuGroup:
    """One GPU's copies of the workloads and its headline numbers."""

    gpu: int
    workloads: tuple[WorkloadSnapshot, ...]
    high: WorkloadSnapshot | None  # the highest-priority copy on this GPU
    high_p50: float
    high_p99: float
    high_window_p99: float
    low_samples_per_s: float  # every lower-priority copy on this GPU, phase average
    low_window_samples_per_s: float
    bus_id: str  # '0000:1b:00.0', '' when unknown
    name: str
    util_pct: float | None  # mean over the phase's measured span (live: so far)
    mem_used_mib: float | None  # the newest sample in that span
    telemetry_device: str  # 'gpu1': the telemetry device matched, '' if none
    matched_by: str  # 'pci' | 'index' | ''

    def as_dict(self) -> dict[str, Any]:
        def num(v: float | None) -> float | None:
            return None if v is None or v != v else round(v, 6)

        return {"gpu": self.gpu, "bus_id": self.bus_id or None, "name": self.name or None,
                "workloads": [w.name for w in self.workloads],
                "high": self.high.name if self.high else None,
                "high_p50_ms": num(self.high_p50), "high_p99_ms": num(self.high_p99),
                "high_window_p99_ms": num(self.high_window_p99),
                "low_samples_per_s": num(self.low_samples_per_s),
                "util_pct": num(self.util_pct), "mem_used_mib": num(self.mem_used_mib),
                "telemetry_device": self.telemetry_device or None,
                "matched_by": self.matched_by or None}


def latest_samples(telemetry: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """The newest telemetry sample of each device."""
    out: dict[str, dict[str, Any]] = {}
    for s in (telemetry or {}).get("samples") or []:
        out[s["device"]] = s
    return out


def gpu_groups(p: PhaseSnapshot, telemetry: dict[str, Any] | None = None) -> list[GpuGroup]:
    """The phase's workloads grouped by GPU (empty for a single-GPU phase)."""
    gpus = sorted({w.gpu for w in p.workloads if w.gpu is not None})
    if not gpus:
        return []
    latest = latest_samples(telemetry)
    by_bus = {parse_bus_id(s.get("bus_id")): d for d, s in latest.items()
              if parse_bus_id(s.get("bus_id")) is not None}
    out = []
    for g in gpus:
        ws = tuple(sorted((w for w in p.workloads if w.gpu == g), key=lambda w: -w.priority))
        top = ws[0] if ws else None
        lows = [w for w in ws if top is not None and w.priority < top.priority]
        bus = next((b for w in ws if (b := bus_from_hello(w.hello)) is not None), None)
        dev, how = "", ""
        if bus is not None and bus in by_bus:
            dev, how = by_bus[bus], "pci"
        elif bus is None and f"gpu{g}" in latest:
            dev, how = f"gpu{g}", "index"
        s = latest.get(dev) or {}
        util, mem = _in_phase(telemetry, dev, p)
        name = next((str(w.hello["device_name"]) for w in ws if w.hello.get("device_name")),
                    str(s.get("name") or ""))
        out.append(GpuGroup(
            gpu=g, workloads=ws, high=top,
            high_p50=top.phase.p50 if top else math.nan,
            high_p99=top.phase.p99 if top else math.nan,
            high_window_p99=top.window.p99 if top else math.nan,
            low_samples_per_s=sum(w.samples_per_s for w in lows),
            low_window_samples_per_s=sum(w.window_samples_per_s for w in lows),
            bus_id=format_bus(bus) if bus else str(s.get("bus_id") or ""),
            name=name, util_pct=util, mem_used_mib=mem,
            telemetry_device=dev, matched_by=how))
    return out


def _in_phase(telemetry: dict[str, Any] | None, dev: str, p: PhaseSnapshot
              ) -> tuple[float | None, float | None]:
    """Mean utilization and newest memory of ``dev`` over the phase's measured span."""
    if not dev:
        return None, None
    lo = p.t_measure if p.t_measure is not None else p.t_start
    hi = lo + p.elapsed_s if p.elapsed_s == p.elapsed_s else math.inf
    utils: list[float] = []
    mem = None
    for s in (telemetry or {}).get("samples") or []:
        if s.get("device") != dev or not lo <= float(s.get("t", 0.0)) <= hi:
            continue
        m = s.get("metrics") or {}
        if isinstance(m.get("util_pct"), (int, float)):
            utils.append(float(m["util_pct"]))
        if isinstance(m.get("mem_used_mib"), (int, float)):
            mem = float(m["mem_used_mib"])
    return (sum(utils) / len(utils) if utils else None), mem


def rollup(groups: list[GpuGroup]) -> dict[str, Any]:
    """Over every GPU: the worst HIGH P99 (and which GPU), the HIGH P99 spread, the
    summed LOW throughput. Percentiles are not averaged across GPUs: each GPU's
    HIGH is its own process with its own distribution."""
    p99s = [(g.high_p99, g.gpu) for g in groups if g.high_p99 == g.high_p99]
    worst = max(p99s) if p99s else (math.nan, None)
    best = min(p99s) if p99s else (math.nan, None)
    return {"gpus": [g.gpu for g in groups],
            "worst_high_p99_ms": None if worst[0] != worst[0] else round(worst[0], 6),
            "worst_gpu": worst[1],
            "best_high_p99_ms": None if best[0] != best[0] else round(best[0], 6),
            "low_samples_per_s": round(sum(g.low_samples_per_s for g in groups), 3),
            "high_requests": sum(g.high.count for g in groups if g.high)}
