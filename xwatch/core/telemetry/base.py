"""The telemetry interface shared by every backend.

A backend opens once, then ``sample(targets)`` returns one ``DeviceSample`` per
device. A metric the board or driver does not give is ``None`` ("n/a"), never
an exception: backends wrap each call with ``na()``.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from xwatch.core import model as M

#: Metric keys (units in the name). Missing -> None.
GPU_METRICS = ("util_pct", "mem_util_pct", "mem_used_mib", "mem_total_mib", "power_w",
               "temp_c", "temp_hotspot_c", "clock_mhz")
HOST_METRICS = ("cpu_pct", "mem_used_mib", "mem_total_mib")

#: How each backend's "utilization" must be read (shown in the UI and reports).
UTIL_MEANING = {
    "nvml": "NVML 'utilization': share of the sample period in which at least one kernel ran "
            "(not how full the GPU is)",
    "amdsmi": "amdsmi gfx_activity: share of time the graphics/compute engine was busy",
    "host": "host CPU %, no GPU telemetry",
}


@dataclass(frozen=True)
class Targets:
    """What to look at: our workload pids and the PCI addresses they use."""

    pids: tuple[int, ...] = ()
    buses: tuple[tuple[int, int, int], ...] = ()  # (domain, bus, device)


@dataclass
class DeviceSample:
    t: float  # monotonic
    device: str  # "gpu0" / "host"
    name: str
    bus_id: str | None
    metrics: dict[str, float | None]
    procs: dict[int, dict[str, float | None]] = field(default_factory=dict)
    ours: bool = True  # used by one of our workloads (or no way to tell)
    procs_t: float | None = None  # when ``procs`` were read (slower cadence); None: never
    _model: M.Sample | None = field(default=None, repr=False, compare=False)

    def to_model(self) -> M.Sample:
        """The sample as the snapshot keeps it, made once: a sample does not change after
        the sampler kept it, and every snapshot hands out hundreds."""
        if self._model is None:
            self._model = M.Sample(
                t=round(self.t, 4), device=self.device, name=self.name, bus_id=self.bus_id,
                ours=self.ours, metrics=self.metrics,
                procs={str(k): v for k, v in self.procs.items()},
                procs_t=None if self.procs_t is None else round(self.procs_t, 4))
        return self._model


class Backend(abc.ABC):
    name = "base"

    def open(self) -> None:  # noqa: B027 - optional hook, most backends override it
        """Initialise; raise any exception with a readable message if unusable."""

    @abc.abstractmethod
    def sample(self, targets: Targets, procs: bool = True) -> list[DeviceSample]:
        """One reading of every device (one poll). ``procs``: also the per-process
        figures (process lists, per-process utilization), which cost far more than
        the device's own counters and are read on a slower cadence."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release the vendor library (default: nothing to release)."""

    def describe(self) -> M.TelemetryInfo:
        """Static facts (devices, driver) for the header and the snapshot."""
        return M.TelemetryInfo()


def na(fn: Callable[[], Any]) -> Any:
    """Call ``fn``; any exception or an 'N/A' string becomes None, a numeric
    string a float; other values (names, versions) pass through."""
    try:
        v = fn()
    except Exception:
        return None
    if isinstance(v, str):
        if v.strip().upper() in ("N/A", "NA", ""):
            return None
        try:
            return float(v)
        except ValueError:
            return v
    return v
