"""AMD telemetry through ``amdsmi`` (ROCm), imported lazily.

``import amdsmi`` raises (KeyError/OSError) on machines without ROCm: the
import happens in ``open()`` inside the selection's try/except. Devices are
matched to workloads by PCI address, never by list order (amdsmi's handle
order differs from HIP's device index).
"""

from __future__ import annotations

import time
from typing import Any

from xwatch.core import model as M
from xwatch.core.engine.pci import parse_bus_id
from xwatch.core.telemetry.base import Backend, DeviceSample, Targets, na


def import_amdsmi() -> Any:
    """``import amdsmi`` without its chatter: on a machine without ROCm the package
    prints where it looked for ``libamd_smi.so`` and then raises; the printout is
    kept in the exception instead of reaching the user's terminal."""
    import contextlib
    import io

    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            import amdsmi
    except BaseException as e:
        said = " ".join(out.getvalue().split())
        if said and isinstance(e, Exception):
            e.args = (*e.args, said)
        raise
    return amdsmi


class AmdSmiBackend(Backend):
    name = "amdsmi"

    def __init__(self) -> None:
        self.a: Any = None
        self.handles: list[tuple[int, Any, str, str | None]] = []

    def open(self) -> None:
        amdsmi = import_amdsmi()
        self.a = amdsmi
        amdsmi.amdsmi_init()
        handles = amdsmi.amdsmi_get_processor_handles()
        if not handles:
            amdsmi.amdsmi_shut_down()
            raise RuntimeError("amdsmi sees no GPU")
        for i, h in enumerate(handles):
            asic = na(lambda h=h: amdsmi.amdsmi_get_gpu_asic_info(h)) or {}
            name = asic.get("market_name") if isinstance(asic, dict) else None
            bdf = na(lambda h=h: amdsmi.amdsmi_get_gpu_device_bdf(h))
            self.handles.append((i, h, str(name or f"AMD GPU {i}"), bdf))

    def describe(self) -> M.TelemetryInfo:
        return M.TelemetryInfo(devices=[M.TelemetryDevice(device=f"gpu{i}", name=n, bus_id=b)
                                        for i, _, n, b in self.handles])

    def sample(self, targets: Targets, procs: bool = True) -> list[DeviceSample]:
        with_procs = procs
        a = self.a
        out = []
        now = time.monotonic()
        want = set(targets.buses)
        pids = set(targets.pids)
        for i, h, name, bdf in self.handles:
            act = na(lambda h=h: a.amdsmi_get_gpu_activity(h)) or {}
            vram = na(lambda h=h: a.amdsmi_get_gpu_vram_usage(h)) or {}
            power = na(lambda h=h: a.amdsmi_get_power_info(h)) or {}
            clock = na(lambda h=h: a.amdsmi_get_clock_info(h, a.AmdSmiClkType.GFX)) or {}

            def num(d: Any, *keys: str) -> float | None:
                if not isinstance(d, dict):
                    return None
                for k in keys:
                    v = na(lambda k=k: d[k])
                    if isinstance(v, (int, float)):
                        return float(v)
                return None

            def temp(kind: str, h: Any = h) -> float | None:
                v = na(lambda: a.amdsmi_get_temp_metric(
                    h, getattr(a.AmdSmiTemperatureType, kind),
                    a.AmdSmiTemperatureMetric.CURRENT))
                return None if v is None else float(v)

            metrics: dict[str, float | None] = {
                "util_pct": num(act, "gfx_activity"),
                "mem_util_pct": num(act, "umc_activity"),
                "mem_used_mib": num(vram, "vram_used"),
                "mem_total_mib": num(vram, "vram_total"),
                "power_w": num(power, "socket_power", "current_socket_power",
                               "average_socket_power"),
                "temp_c": temp("EDGE"),
                "temp_hotspot_c": temp("HOTSPOT"),
                "clock_mhz": num(clock, "clk"),
            }
            found: dict[int, dict[str, float | None]] = {}
            plist = (na(lambda h=h: a.amdsmi_get_gpu_process_list(h)) or []) if with_procs else []
            for p in plist:
                if not isinstance(p, dict) or p.get("pid") not in pids:
                    continue
                mu = p.get("memory_usage") or {}
                vram_b = na(lambda mu=mu: float(mu["vram_mem"]))
                found[int(p["pid"])] = {
                    "mem_mib": None if vram_b is None else vram_b / 2**20,
                    "gfx_busy": na(lambda p=p: float(p["engine_usage"]["gfx"])),
                    "cu_occupancy": na(lambda p=p: float(p["cu_occupancy"])),
                }
            b = parse_bus_id(bdf)
            out.append(DeviceSample(t=now, device=f"gpu{i}", name=name, bus_id=bdf,
                                    metrics=metrics, procs=found,
                                    ours=(not want) or (b in want) or bool(found),
                                    procs_t=now if with_procs else None))
        return out

    def close(self) -> None:
        if self.a is not None:
            na(self.a.amdsmi_shut_down)
