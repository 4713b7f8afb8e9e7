"""Telemetry backends against fake vendor modules that follow the real APIs
(NVML and amdsmi as documented by their vendors): shapes, 'N/A', per-metric errors,
import failures, fallback order, and a slow backend that must not pile up."""

from __future__ import annotations

import sys
import time
import types
from collections import namedtuple
from typing import Any

import msgspec
import pytest

from xwatch.core.engine.pci import parse_bus_id
from xwatch.core.telemetry import TelemetrySampler, select_backend
from xwatch.core.telemetry.base import Backend, DeviceSample, Targets


class NVMLError(Exception):
    pass


class NVMLError_NotSupported(NVMLError):
    pass


class NVMLError_NotFound(NVMLError):
    pass


def fake_pynvml(fail_init: bool = False) -> types.ModuleType:
    m = types.ModuleType("pynvml")
    Util = namedtuple("Util", "gpu memory")
    Mem = namedtuple("Mem", "total free used")
    Pci = namedtuple("Pci", "busId")
    Proc = namedtuple("Proc", "pid usedGpuMemory")
    PUtil = namedtuple("PUtil", "pid timeStamp smUtil memUtil encUtil decUtil")
    m.NVMLError = NVMLError
    m.NVML_TEMPERATURE_GPU = 0
    m.NVML_CLOCK_SM = 1
    state = {"init": 0}

    def init() -> None:
        if fail_init:
            raise NVMLError("Driver Not Loaded")
        state["init"] += 1
    m.nvmlInit = init
    m.nvmlShutdown = lambda: None
    m.nvmlDeviceGetCount = lambda: 2
    m.nvmlDeviceGetHandleByIndex = lambda i: f"h{i}"
    m.nvmlSystemGetDriverVersion = lambda: "580.159.04"
    m.nvmlDeviceGetName = lambda h: b"NVIDIA H100 80GB HBM3"
    m.nvmlDeviceGetPciInfo = lambda h: Pci(b"00000000:19:00.0" if h == "h0" else
                                           b"00000000:3B:00.0")
    m.nvmlDeviceGetUtilizationRates = lambda h: Util(87, 40)
    m.nvmlDeviceGetMemoryInfo = lambda h: Mem(80 * 2**30, 70 * 2**30, 10 * 2**30)

    def power(h: str) -> int:
        if h == "h1":
            raise NVMLError_NotSupported("Not Supported")
        return 312000
    m.nvmlDeviceGetPowerUsage = power
    m.nvmlDeviceGetTemperature = lambda h, k: 54
    m.nvmlDeviceGetClockInfo = lambda h, k: 1980
    m.nvmlDeviceGetComputeRunningProcesses = lambda h: [Proc(111, 2 * 2**30), Proc(999, 2**30)] \
        if h == "h0" else []

    def putil(h: str, ts: int) -> list[Any]:
        if h == "h1":
            raise NVMLError_NotFound("Not Found")
        return [PUtil(111, 123456, 63, 20, 0, 0)]
    m.nvmlDeviceGetProcessUtilization = putil
    return m


class AmdSmiException(Exception):
    pass


def fake_amdsmi() -> types.ModuleType:
    m = types.ModuleType("amdsmi")
    m.AmdSmiException = AmdSmiException
    m.AmdSmiTemperatureType = types.SimpleNamespace(EDGE=0, HOTSPOT=1, VRAM=2)
    m.AmdSmiTemperatureMetric = types.SimpleNamespace(CURRENT=0)
    m.AmdSmiClkType = types.SimpleNamespace(GFX=0)
    m.amdsmi_init = lambda *a: None
    m.amdsmi_shut_down = lambda: None
    m.amdsmi_get_processor_handles = lambda: ["g0", "g1"]
    m.amdsmi_get_gpu_asic_info = lambda h: {"market_name": "AMD Instinct MI308X"}
    # handle order != HIP order: g0 is on bus 0x3b, g1 on 0x19
    m.amdsmi_get_gpu_device_bdf = lambda h: "0000:3b:00.0" if h == "g0" else "0000:19:00.0"
    m.amdsmi_get_gpu_activity = lambda h: {"gfx_activity": 91, "umc_activity": "N/A",
                                           "mm_activity": "N/A"}
    m.amdsmi_get_gpu_vram_usage = lambda h: {"vram_total": 196592, "vram_used": 20480}
    m.amdsmi_get_power_info = lambda h: {"socket_power": "N/A", "current_socket_power": 455,
                                         "average_socket_power": 440, "power_limit": 750}

    def temp(h: str, kind: int, metric: int) -> int:
        if kind == 1:
            raise AmdSmiException("AMDSMI_STATUS_NOT_SUPPORTED")
        return 48
    m.amdsmi_get_temp_metric = temp
    m.amdsmi_get_clock_info = lambda h, k: {"clk": 2100, "min_clk": 500, "max_clk": 2100}
    m.amdsmi_get_gpu_process_list = lambda h: [
        {"name": "python", "pid": 111, "mem": 0, "engine_usage": {"gfx": 5000, "enc": 0},
         "memory_usage": {"gtt_mem": 0, "cpu_mem": 0, "vram_mem": 3 * 2**30},
         "cu_occupancy": 40}] if h == "g1" else []
    return m


@pytest.fixture
def no_vendor(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """amdsmi's import raises like on a machine without ROCm; pynvml absent."""
    class Raiser(types.ModuleType):
        def __getattr__(self, name: str) -> Any:
            raise KeyError("libamd_smi.so")
    monkeypatch.setitem(sys.modules, "amdsmi", None)  # import amdsmi -> ImportError
    monkeypatch.setitem(sys.modules, "pynvml", None)
    return monkeypatch


def test_nvml_backend_shapes_na_and_per_process(no_vendor: pytest.MonkeyPatch) -> None:
    no_vendor.setitem(sys.modules, "pynvml", fake_pynvml())
    b, _why, rejected = select_backend("auto")
    assert b is not None and b.name == "nvml" and "amdsmi" in rejected
    samples = b.sample(Targets(pids=(111,), buses=((0, 0x19, 0),)))
    s0, s1 = samples
    assert s0.metrics["util_pct"] == 87 and s0.metrics["power_w"] == 312.0
    assert s0.metrics["mem_used_mib"] == 10 * 1024 and s0.metrics["clock_mhz"] == 1980
    assert s0.ours and not s1.ours  # matched by PCI bus id
    assert s0.procs == {111: {"mem_mib": 2048.0, "sm_pct": 63.0}}  # pid 999 is not ours
    assert s1.metrics["power_w"] is None  # NotSupported -> n/a, not an exception
    assert b.describe().driver == "580.159.04"


def test_amdsmi_backend_matches_by_bus_not_order(no_vendor: pytest.MonkeyPatch) -> None:
    no_vendor.setitem(sys.modules, "amdsmi", fake_amdsmi())
    b, _why, rejected = select_backend("auto")
    assert b is not None and b.name == "amdsmi" and rejected == {}
    g0, g1 = b.sample(Targets(pids=(111,), buses=((0, 0x19, 0),)))
    assert not g0.ours and g1.ours  # handle order differs from the HIP index
    assert g1.metrics["util_pct"] == 91 and g1.metrics["mem_util_pct"] is None  # "N/A"
    assert g1.metrics["power_w"] == 455.0  # socket_power N/A -> current_socket_power
    assert g1.metrics["temp_c"] == 48 and g1.metrics["temp_hotspot_c"] is None
    assert g1.metrics["clock_mhz"] == 2100 and g1.metrics["mem_used_mib"] == 20480
    assert g1.procs[111]["mem_mib"] == 3072.0 and g1.procs[111]["cu_occupancy"] == 40


def test_auto_falls_back_with_reasons_but_an_explicit_choice_is_an_error(
        no_vendor: pytest.MonkeyPatch) -> None:
    from xwatch.errors import TelemetryError

    no_vendor.setitem(sys.modules, "pynvml", fake_pynvml(fail_init=True))
    b, why, rejected = select_backend("auto")
    assert b is not None and b.name == "host" and why.startswith("auto")
    assert "Driver Not Loaded" in rejected["nvml"] and "amdsmi" in rejected
    with pytest.raises(TelemetryError) as ei:
        select_backend("nvml")
    assert "--telemetry nvml cannot start" in str(ei.value) and "Driver Not Loaded" in str(ei.value)
    assert select_backend("off")[0] is None


@pytest.mark.parametrize("exc, cause", [
    (ModuleNotFoundError("No module named 'pynvml'"), "module missing: the nvml backend needs "
                                                       "the Python package nvidia-ml-py"),
    (KeyError("libamd_smi.so"), "library missing"),
    (OSError("libnvidia-ml.so.1: cannot open shared object file"), "library missing"),
    (RuntimeError("NVML sees no GPU"), "no device"),
])
def test_why_a_backend_did_not_start_is_named(exc: BaseException, cause: str) -> None:
    from xwatch.core.telemetry import why_not

    assert why_not("nvml", exc).startswith(cause)


def test_amdsmi_import_raising_keyerror(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.abc

    class Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
            if name == "amdsmi":
                raise KeyError("libamd_smi.so")
            return None
    monkeypatch.delitem(sys.modules, "amdsmi", raising=False)
    monkeypatch.setitem(sys.modules, "pynvml", None)
    monkeypatch.setattr(sys, "meta_path", [Finder(), *sys.meta_path])
    b, _why, rejected = select_backend("auto")
    assert b is not None and b.name == "host" and "KeyError" in rejected["amdsmi"]
    assert rejected["amdsmi"].startswith("library missing: libamd_smi.so")
    from xwatch.errors import TelemetryError

    with pytest.raises(TelemetryError, match="library missing"):
        select_backend("amdsmi")


def test_host_backend_reports_our_processes() -> None:
    import os

    from xwatch.core.telemetry.host import HostBackend
    b = HostBackend()
    b.open()
    b.sample(Targets(pids=(os.getpid(),)))
    (s,) = b.sample(Targets(pids=(os.getpid(), 999999)))
    assert s.device == "host" and os.getpid() in s.procs and 999999 not in s.procs
    assert s.procs[os.getpid()]["rss_mib"] > 1


class SlowBackend(Backend):
    name = "slow"

    def __init__(self) -> None:
        self.calls = 0
        self.active = 0
        self.max_active = 0

    def sample(self, targets: Targets, procs: bool = True) -> list[DeviceSample]:
        self.active += 1
        self.max_active = max(self.max_active, self.active)
        self.calls += 1
        time.sleep(0.15)  # slower than the 0.05 s interval
        self.active -= 1
        if self.calls == 2:
            raise RuntimeError("transient")
        return [DeviceSample(time.monotonic(), "gpu0", "x", None, {"util_pct": 1.0})]


def test_slow_backend_never_overlaps_or_piles_up() -> None:
    b = SlowBackend()
    s = TelemetrySampler(b, "test", {}, lambda: Targets(), interval_s=0.05).start()
    time.sleep(0.8)
    s.stop()
    assert b.max_active == 1  # polls never overlap
    assert 3 <= b.calls <= 7  # paced by the slow call, no backlog burst
    exp = msgspec.to_builtins(s.export())  # as the snapshot writes it
    assert exp["errors"] == 1 and "transient" in exp["last_error"]
    assert exp["poll_cost_ms"]["median"] >= 140
    assert len(exp["samples"]) == b.calls - 1


def test_parse_bus_id() -> None:
    assert parse_bus_id("00000000:19:00.0") == (0, 0x19, 0)
    assert parse_bus_id(b"0000:3b:00.0") == (0, 0x3B, 0)
    assert parse_bus_id("garbage") is None


class CountingBackend(Backend):
    """Records which polls asked for the per-process figures."""

    name = "counting"

    def __init__(self) -> None:
        self.asked: list[bool] = []

    def sample(self, targets: Targets, procs: bool = True) -> list[DeviceSample]:
        self.asked.append(procs)
        now = time.monotonic()
        return [DeviceSample(now, "gpu0", "x", None, {"util_pct": 1.0},
                             procs={7: {"mem_mib": 1.0}} if procs else {},
                             procs_t=now if procs else None)]


def test_per_process_figures_on_their_own_slower_cadence() -> None:
    b = CountingBackend()
    s = TelemetrySampler(b, "test", {}, lambda: Targets(), interval_s=0.05,
                         proc_interval_s=0.3).start()
    time.sleep(1.0)
    s.stop()
    n, with_procs = len(b.asked), sum(b.asked)
    assert n >= 12 and 3 <= with_procs <= 5, b.asked  # every 0.05 s vs every 0.3 s
    exp = msgspec.to_builtins(s.export())  # as the snapshot writes it
    assert exp["proc_interval_s"] == 0.3
    assert exp["poll_cost_ms"]["polls"] == n - with_procs
    assert exp["proc_poll_cost_ms"]["polls"] == with_procs
    # in between, the last per-process figures are carried forward with their time
    smp = exp["samples"]
    assert all(x["procs"] == {"7": {"mem_mib": 1.0}} for x in smp)
    assert all(x["procs_t"] <= x["t"] for x in smp)
    assert len({x["procs_t"] for x in smp}) == with_procs


def test_nvml_skips_process_queries_when_not_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    from xwatch.core.telemetry.nvml import NvmlBackend

    fake = fake_pynvml()
    calls: list[str] = []
    for name in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetProcessUtilization",
                 "nvmlDeviceGetUtilizationRates"):
        real = getattr(fake, name)
        setattr(fake, name, lambda *a, _n=name, _r=real: (calls.append(_n), _r(*a))[1])
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    b = NvmlBackend()
    b.open()
    fast = b.sample(Targets(pids=(111,)), procs=False)
    assert calls == ["nvmlDeviceGetUtilizationRates"] * 2  # the counters only
    assert fast[0].procs == {} and fast[0].procs_t is None
    calls.clear()
    full = b.sample(Targets(pids=(111,)), procs=True)
    assert "nvmlDeviceGetComputeRunningProcesses" in calls
    assert full[0].procs[111]["sm_pct"] == 63.0 and full[0].procs_t == full[0].t


def test_nvml_reads_per_process_utilization_since_the_newest_sample_seen(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Each read asks NVML only for samples newer than the newest it returned before,
    whichever process that sample was of (not only ours)."""
    from xwatch.core.telemetry.nvml import NvmlBackend

    fake = fake_pynvml()
    PUtil = namedtuple("PUtil", "pid timeStamp smUtil memUtil encUtil decUtil")
    asked: list[int] = []
    stamps = iter([[PUtil(111, 500, 40, 0, 0, 0), PUtil(999, 900, 10, 0, 0, 0)],
                   [PUtil(111, 1400, 55, 0, 0, 0)], []])

    def putil(h: Any, last_seen: int) -> list[Any]:
        if h != "h0":
            return []
        asked.append(last_seen)
        return next(stamps)
    fake.nvmlDeviceGetProcessUtilization = putil
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    b = NvmlBackend()
    b.open()
    got = [b.sample(Targets(pids=(111,)))[0].procs[111]["sm_pct"] for _ in range(3)]
    assert asked == [0, 900, 1400]  # 999's newer sample counts as seen too
    assert got == [40.0, 55.0, None]  # nothing new: no figure rather than an old one


def test_the_per_process_cadence_has_one_default_everywhere() -> None:
    import inspect

    from xwatch.cli import build_parser
    from xwatch.core.plans.options import Options
    from xwatch.core.telemetry import PROC_INTERVAL_S, start_telemetry

    args = build_parser().parse_args(["run"])
    assert args.telemetry_proc_interval == PROC_INTERVAL_S == 5.0
    for fn, name in ((Options, "telemetry_proc_interval"),
                     (start_telemetry, "proc_interval_s"),
                     (TelemetrySampler.__init__, "proc_interval_s")):
        assert inspect.signature(fn).parameters[name].default == PROC_INTERVAL_S
