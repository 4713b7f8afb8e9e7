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
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from xwatch.core import model as M
from xwatch.core.engine.pci import bus_from_hello, format_bus, parse_bus_id
from xwatch.core.engine.snapshot import PhaseSnapshot, WorkloadSnapshot
from xwatch.core.engine.stats import nan_if_none


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
    util_pct: float | None  # mean over the phase's measured span (or its last seconds)
    mem_used_mib: float | None  # the newest sample in that span
    telemetry_device: str  # 'gpu1': the telemetry device matched, '' if none
    matched_by: str  # 'pci' | 'index' | ''

    def as_model(self) -> M.GpuGroup:
        """The group as the snapshot records it (``Phase.gpus.groups``)."""
        def num(v: float | None) -> float | None:
            return None if v is None or v != v else round(v, 6)

        return M.GpuGroup(
            gpu=self.gpu, bus_id=self.bus_id or None, name=self.name or None,
            workloads=[w.name for w in self.workloads],
            high=self.high.name if self.high else None,
            high_p50_ms=num(self.high_p50), high_p99_ms=num(self.high_p99),
            high_window_p99_ms=num(self.high_window_p99),
            low_samples_per_s=num(self.low_samples_per_s),
            util_pct=num(self.util_pct), mem_used_mib=num(self.mem_used_mib),
            telemetry_device=self.telemetry_device or None,
            matched_by=self.matched_by or None)


def latest_samples(telemetry: M.Telemetry | None) -> dict[str, M.Sample]:
    """The newest telemetry sample of each device."""
    out: dict[str, M.Sample] = {}
    for s in telemetry.samples if telemetry is not None else ():
        out[s.device] = s
    return out


def gpu_groups(p: PhaseSnapshot, telemetry: M.Telemetry | None = None,
               last_s: float | None = None) -> list[GpuGroup]:
    """The phase's workloads grouped by GPU (empty for a single-GPU phase).
    Utilization is the mean over the phase's measured span, or over its last
    ``last_s`` seconds (the live table: the same window as its latencies)."""
    gpus = sorted({w.gpu for w in p.workloads if w.gpu is not None})
    if not gpus:
        return []
    latest = latest_samples(telemetry)
    spans = _device_spans(telemetry, p, last_s)
    by_bus = {parse_bus_id(s.bus_id): d for d, s in latest.items()
              if parse_bus_id(s.bus_id) is not None}
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
        s = latest.get(dev)
        util, mem = spans.get(dev, (None, None))
        name = next((str(w.hello["device_name"]) for w in ws if w.hello.get("device_name")),
                    s.name if s is not None else "")
        out.append(GpuGroup(
            gpu=g, workloads=ws, high=top,
            high_p50=nan_if_none(top.phase.p50) if top else math.nan,
            high_p99=nan_if_none(top.phase.p99) if top else math.nan,
            high_window_p99=nan_if_none(top.window.p99) if top else math.nan,
            low_samples_per_s=sum(nan_if_none(w.throughput.samples_per_s) for w in lows),
            low_window_samples_per_s=sum(nan_if_none(w.throughput.window_samples_per_s) for w in lows),
            bus_id=format_bus(bus) if bus else (s.bus_id or "") if s is not None else "",
            name=name, util_pct=util, mem_used_mib=mem,
            telemetry_device=dev, matched_by=how))
    return out


def _device_spans(telemetry: M.Telemetry | None, p: PhaseSnapshot,
                  last_s: float | None = None
                  ) -> dict[str, tuple[float | None, float | None]]:
    """Per telemetry device: mean utilization and newest memory over the phase's
    measured span, or its last ``last_s`` seconds: one pass over the samples, from
    the newest back to the span's start (samples are kept in time order)."""
    lo = p.t_measure if p.t_measure is not None else p.t_start
    hi = lo + p.elapsed_s if p.elapsed_s == p.elapsed_s else math.inf
    if last_s is not None and hi != math.inf:
        lo = max(lo, hi - last_s)
    utils: dict[str, list[float]] = {}
    mem: dict[str, float] = {}
    for s in reversed(telemetry.samples if telemetry is not None else ()):
        t = s.t
        if t < lo:
            break
        if t > hi:
            continue
        dev = s.device
        u = s.metrics.get("util_pct")
        if u is not None:
            utils.setdefault(dev, []).append(float(u))
        mu = s.metrics.get("mem_used_mib")
        if dev not in mem and mu is not None:
            mem[dev] = float(mu)  # the newest in the span
    return {d: ((sum(utils[d]) / len(utils[d])) if utils.get(d) else None, mem.get(d))
            for d in set(utils) | set(mem)}


def rollup(groups: list[GpuGroup], window: bool = False) -> M.Rollup:
    """Over every GPU: the worst and the best HIGH P99 (and which GPU), the summed
    LOW throughput; over the whole phase, or (``window``) the live window. Percentiles
    are not averaged across GPUs: each GPU's HIGH is its own process with its own
    distribution."""
    p99s = [(v, g.gpu) for g in groups
            if (v := g.high_window_p99 if window else g.high_p99) == v]
    worst = max(p99s) if p99s else (math.nan, None)
    best = min(p99s) if p99s else (math.nan, None)
    low = sum(g.low_window_samples_per_s if window else g.low_samples_per_s for g in groups)
    return M.Rollup(gpus=[g.gpu for g in groups],
                    worst_high_p99_ms=None if worst[0] != worst[0] else round(worst[0], 6),
                    worst_gpu=worst[1],
                    best_high_p99_ms=None if best[0] != best[0] else round(best[0], 6),
                    best_gpu=best[1],
                    low_samples_per_s=round(low, 3),
                    high_requests=sum(g.high.count for g in groups if g.high))


def rollup_text(r: M.Rollup, fmt: Any) -> str:
    """``HIGH P99 worst 21.32 ms (GPU 5), best 6.41 ms (GPU 1)`` from ``rollup``
    (``fmt``: how a number of ms is written), or ``HIGH P99 -``."""
    if r.worst_high_p99_ms is None:
        return "HIGH P99 -"
    return (f"HIGH P99 worst {fmt(r.worst_high_p99_ms)} ms (GPU {r.worst_gpu}), "
            f"best {fmt(r.best_high_p99_ms)} ms (GPU {r.best_gpu})")


@dataclass(frozen=True)
class GpuRoles:
    """Which copy is HIGH (the highest priority) and which are LOW on each GPU of a
    replicated scenario (``--gpus``), by name."""

    high: dict[int, str]
    lows: dict[int, tuple[str, ...]]

    @property
    def gpus(self) -> list[int]:
        return sorted(set(self.high) | set(self.lows))


def gpu_roles(workloads: Sequence[Any]) -> GpuRoles:
    """``workloads``: scenario workloads (``gpu``, ``name``, ``priority_value``)."""
    by_gpu: dict[int, list[Any]] = {}
    for w in workloads:
        if w.gpu is not None:
            by_gpu.setdefault(w.gpu, []).append(w)
    high, lows = {}, {}
    for g, ws in by_gpu.items():
        top = max(w.priority_value for w in ws)
        tops = [w for w in ws if w.priority_value == top]
        high[g] = tops[0].name
        lows[g] = tuple(w.name for w in ws if w.priority_value < top)
    return GpuRoles(high, lows)


def rollup_series(phases: Sequence[PhaseSnapshot], offsets: Sequence[float],
                  names: Sequence[str], key: str, how: str
                  ) -> list[tuple[float, float]]:
    """One per-second series over several workloads (the copies on every GPU):
    ``how`` = ``max`` (the worst HIGH P99 of any GPU in that second), ``min`` (the
    best) or ``sum`` (the LOW samples/s of all GPUs). Seconds are counted from the phase start for every
    copy, so they line up. A second in which no copy finished a request has no
    maximum (a gap); in a sum it counts 0 for that copy. The second a running phase
    is still in is left out. NaN separates phases."""
    wanted = set(names)
    pts: list[tuple[float, float]] = []
    for o, p in zip(offsets, phases):
        acc: dict[int, float] = {}
        for w in p.workloads:
            if w.name not in wanted:
                continue
            for r in w.series:
                if r.sec < 0:
                    continue
                v = float(nan_if_none(getattr(r, key)))
                if how == "sum":
                    acc[r.sec] = acc.get(r.sec, 0.0) + (v if v == v else 0.0)
                elif v == v:
                    old = acc.get(r.sec)
                    acc[r.sec] = v if old is None else max(old, v) if how == "max" \
                        else min(old, v)
        if p.status == "running" and acc:
            # the second still filling: some copies have not finished a request in it
            # yet, so its maximum or sum would dive at the right edge of every chart
            del acc[max(acc)]
        pts += [(o + sec, v) for sec, v in sorted(acc.items())]
        pts.append((o, math.nan))
    return pts
