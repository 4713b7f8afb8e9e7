"""Host fallback via psutil: system CPU and memory, per-workload CPU % and RSS."""

from __future__ import annotations

import time
from typing import Any

from xwatch.core import model as M
from xwatch.core.telemetry.base import Backend, DeviceSample, Targets, na


class HostBackend(Backend):
    name = "host"

    def __init__(self) -> None:
        self._procs: dict[int, Any] = {}

    def open(self) -> None:
        import psutil

        self.psutil = psutil
        psutil.cpu_percent(None)  # prime the delta

    def sample(self, targets: Targets, procs: bool = True) -> list[DeviceSample]:
        ps = self.psutil
        vm = ps.virtual_memory()
        found: dict[int, dict[str, float | None]] = {}
        for pid in targets.pids if procs else ():
            p = self._procs.get(pid)
            if p is None:
                try:
                    p = ps.Process(pid)
                    p.cpu_percent(None)
                except ps.Error:
                    continue
                self._procs[pid] = p
            try:
                with p.oneshot():
                    found[pid] = {"cpu_pct": na(lambda p=p: p.cpu_percent(None)),
                                  "rss_mib": na(lambda p=p: p.memory_info().rss / 2**20)}
            except ps.Error:
                self._procs.pop(pid, None)
        for pid in list(self._procs) if procs else ():
            if pid not in targets.pids:
                del self._procs[pid]
        now = time.monotonic()
        return [DeviceSample(
            t=now, device="host", name=f"host CPU ({ps.cpu_count()} cores)",
            bus_id=None,
            metrics={"cpu_pct": na(lambda: ps.cpu_percent(None)),
                     "mem_used_mib": (vm.total - vm.available) / 2**20,
                     "mem_total_mib": vm.total / 2**20},
            procs=found, procs_t=now if procs else None)]

    def describe(self) -> M.TelemetryInfo:
        return M.TelemetryInfo(devices=[M.TelemetryDevice(device="host", name="host CPU")])
