"""NVIDIA telemetry through nvidia-ml-py (``pynvml``), imported lazily.

Calls and shapes: NVML as documented by NVIDIA (nvidia-ml-py). Each metric is read
separately so that one unsupported query is "n/a" and not a failed sample.
"""

from __future__ import annotations

import time
from typing import Any

from xwatch.core import model as M
from xwatch.core.engine.pci import parse_bus_id
from xwatch.core.telemetry.base import Backend, DeviceSample, Targets, na


class NvmlBackend(Backend):
    name = "nvml"

    def __init__(self) -> None:
        self.nv: Any = None
        self.handles: list[tuple[int, Any, str, str | None]] = []
        self._last_proc_ts: dict[int, int] = {}

    def open(self) -> None:
        import pynvml

        self.nv = pynvml
        pynvml.nvmlInit()
        n = pynvml.nvmlDeviceGetCount()
        if n == 0:
            pynvml.nvmlShutdown()
            raise RuntimeError("NVML sees no GPU")
        for i in range(n):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            name = na(lambda h=h: pynvml.nvmlDeviceGetName(h))
            if isinstance(name, bytes):
                name = name.decode()
            bus = na(lambda h=h: pynvml.nvmlDeviceGetPciInfo(h).busId)
            if isinstance(bus, bytes):
                bus = bus.decode()
            self.handles.append((i, h, str(name or f"GPU {i}"), bus))

    def describe(self) -> M.TelemetryInfo:
        nv = self.nv
        drv = na(lambda: nv.nvmlSystemGetDriverVersion())
        if isinstance(drv, bytes):
            drv = drv.decode()
        return M.TelemetryInfo(driver=drv, devices=[
            M.TelemetryDevice(device=f"gpu{i}", name=name, bus_id=bus)
            for i, _, name, bus in self.handles])

    def sample(self, targets: Targets, procs: bool = True) -> list[DeviceSample]:
        with_procs = procs
        nv = self.nv
        out = []
        now = time.monotonic()
        want = set(targets.buses)
        for i, h, name, bus in self.handles:
            util = na(lambda h=h: nv.nvmlDeviceGetUtilizationRates(h))
            mem = na(lambda h=h: nv.nvmlDeviceGetMemoryInfo(h))
            power = na(lambda h=h: nv.nvmlDeviceGetPowerUsage(h))
            metrics: dict[str, float | None] = {
                "util_pct": None if util is None else float(util.gpu),
                "mem_util_pct": None if util is None else float(util.memory),
                "mem_used_mib": None if mem is None else mem.used / 2**20,
                "mem_total_mib": None if mem is None else mem.total / 2**20,
                "power_w": None if power is None else power / 1000.0,
                "temp_c": na(lambda h=h: float(nv.nvmlDeviceGetTemperature(
                    h, nv.NVML_TEMPERATURE_GPU))),
                "temp_hotspot_c": None,
                "clock_mhz": na(lambda h=h: float(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM))),
            }
            found: dict[int, dict[str, float | None]] = {}
            pids = set(targets.pids)
            running = (na(lambda h=h: nv.nvmlDeviceGetComputeRunningProcesses(h)) or []) \
                if with_procs else []
            for p in running:
                if p.pid in pids:
                    used = getattr(p, "usedGpuMemory", None)
                    found[p.pid] = {"mem_mib": None if used is None else used / 2**20,
                                    "sm_pct": None}
            # the samples since the newest one last read, every process's (NVML walks
            # its sample buffer from there: 2.4-3.3 ms of CPU a call from 0 on the H100)
            util_samples = (na(lambda h=h, i=i: nv.nvmlDeviceGetProcessUtilization(
                h, self._last_proc_ts.get(i, 0))) or []) if with_procs else []
            newest = self._last_proc_ts.get(i, 0)
            for s in util_samples:
                newest = max(newest, int(s.timeStamp))
                if s.pid in found:
                    found[s.pid]["sm_pct"] = float(s.smUtil)
            self._last_proc_ts[i] = newest
            b = parse_bus_id(bus)
            out.append(DeviceSample(t=now, device=f"gpu{i}", name=name, bus_id=bus,
                                    metrics=metrics, procs=found,
                                    ours=(not want) or (b in want) or bool(found),
                                    procs_t=now if with_procs else None))
        return out

    def close(self) -> None:
        if self.nv is not None:
            na(self.nv.nvmlShutdown)
