"""GPU telemetry: backend selection and the sampling thread.

``select_backend`` tries amdsmi, then NVML, then the psutil host fallback (or
the one asked for, falling back with a reason); ``TelemetrySampler`` polls it
on its own thread at a fixed interval, never overlapping itself (the next poll
is scheduled after the last one finished), measures what each poll costs, and
keeps a bounded history that the session's snapshot exports.

Two cadences: the device's own counters (utilization, memory, power,
temperature, clock) every ``interval_s``; the per-process figures (process
lists, per-process utilization: most of a poll's cost) every ``proc_interval_s``,
carried forward in between with the time they were read (``procs_t``): by default
every 5 s, as NVML's per-process utilization alone costs 2.4-3.3 ms of CPU a call on
the H100 (``benchmarks/measure/poll_costs.py``), whatever the time stamp it is given.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from xwatch.core import model as M
from xwatch.core.engine.pci import bus_from_hello
from xwatch.core.telemetry.base import UTIL_MEANING, Backend, DeviceSample, Targets

ORDER = ("amdsmi", "nvml", "host")
CHOICES = ("auto", *ORDER, "off")
MAX_SAMPLES = 20000

#: seconds between per-process queries (``--telemetry-proc-interval``)
PROC_INTERVAL_S = 5.0


def _make(name: str) -> Backend:
    if name == "amdsmi":
        from xwatch.core.telemetry.amd import AmdSmiBackend
        return AmdSmiBackend()
    if name == "nvml":
        from xwatch.core.telemetry.nvml import NvmlBackend
        return NvmlBackend()
    from xwatch.core.telemetry.host import HostBackend
    return HostBackend()


PACKAGES = {"nvml": "nvidia-ml-py", "amdsmi": "amdsmi"}
LIBRARIES = {"nvml": "libnvidia-ml.so.1 (the NVIDIA driver)",
             "amdsmi": "libamd_smi.so (ROCm's amd-smi-lib)"}


def why_not(name: str, e: BaseException) -> str:
    """What stopped backend ``name``, in words that say what to do."""
    text = f"{type(e).__name__}: {e}"[:300]
    low = text.lower()
    if isinstance(e, ImportError):
        return (f"module missing: the {name} backend needs the Python package "
                f"{PACKAGES.get(name, name)} (pip install {PACKAGES.get(name, name)}); {text}")
    if (isinstance(e, KeyError) and ".so" in low) or "librarynotfound" in low or \
            "cannot open shared object" in low or "shared library" in low or \
            "library not found" in low:
        return f"library missing: {LIBRARIES.get(name, 'the vendor library')} was not found; {text}"
    if "sees no gpu" in low or "no gpu" in low or "no device" in low:
        return f"no device: {text}"
    return text


def select_backend(choice: str = "auto") -> tuple[Backend | None, str, dict[str, str]]:
    """Return (backend or None for 'off', why it was chosen, why others were not).

    ``auto`` tries amdsmi, NVML, then the host; an explicit choice is that backend or a
    ``TelemetryError`` naming the cause (module missing, library missing, no device):
    never a silent fallback."""
    if choice == "off":
        return None, "telemetry turned off (--telemetry off)", {}
    order = ORDER if choice == "auto" else (choice,)
    rejected: dict[str, str] = {}
    for name in order:
        backend = _make(name)
        try:
            backend.open()
        except BaseException as e:  # import errors of vendor libraries included
            if isinstance(e, KeyboardInterrupt):
                raise
            rejected[name] = why_not(name, e)
            continue
        why = f"auto: first working backend of {', '.join(ORDER)}" if choice == "auto" \
            else f"asked for {choice}"
        return backend, why, rejected
    if choice != "auto":
        from xwatch.errors import TelemetryError

        raise TelemetryError(f"--telemetry {choice} cannot start: {rejected[choice]}. Use "
                             "--telemetry auto to take whatever works, or host / off",
                             title=f"Telemetry {choice} unavailable")
    return None, "no backend could start", rejected


class TelemetrySampler:
    """Polls a backend on a daemon thread; thread-safe reads of the history."""

    def __init__(self, backend: Backend | None, reason: str, rejected: dict[str, str],
                 targets: Callable[[], Targets], interval_s: float = 0.5,
                 proc_interval_s: float = PROC_INTERVAL_S) -> None:
        self.backend = backend
        self.reason = reason
        self.rejected = rejected
        self.interval_s = interval_s
        self.proc_interval_s = max(interval_s, proc_interval_s)
        self._proc_costs: deque[float] = deque(maxlen=2000)
        self._last_procs: dict[str, tuple[float, dict[int, dict[str, float | None]]]] = {}
        self._targets = targets
        self._samples: deque[DeviceSample] = deque(maxlen=MAX_SAMPLES)
        self._devices = 0  # the most devices one poll returned
        self._costs: deque[float] = deque(maxlen=2000)
        self._errors = 0
        self._last_error: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.info = backend.describe() if backend else M.TelemetryInfo()

    @property
    def backend_name(self) -> str:
        return self.backend.name if self.backend else "off"

    def start(self) -> TelemetrySampler:
        if self.backend is not None:
            self._thread = threading.Thread(target=self._loop, name="xwatch-telemetry",
                                            daemon=True)
            self._thread.start()
        return self

    def _loop(self) -> None:
        assert self.backend is not None
        next_t = time.monotonic()
        next_procs = next_t
        while not self._stop.is_set():
            t0 = time.perf_counter()
            with_procs = time.monotonic() >= next_procs
            try:
                try:
                    targets = self._targets()
                except Exception:
                    targets = Targets()
                got = self.backend.sample(targets, procs=with_procs)
                for smp in got:
                    if smp.procs_t is not None:
                        self._last_procs[smp.device] = (smp.procs_t, smp.procs)
                    elif smp.device in self._last_procs:  # carried forward, with its age
                        smp.procs_t, smp.procs = self._last_procs[smp.device]
                self._samples.extend(got)
                self._devices = max(self._devices, len(got))
            except Exception as e:  # one bad poll is recorded, not fatal
                self._errors += 1
                self._last_error = f"{type(e).__name__}: {e}"
            cost = (time.perf_counter() - t0) * 1e3
            (self._proc_costs if with_procs else self._costs).append(cost)
            if with_procs:
                next_procs = time.monotonic() + self.proc_interval_s
            # schedule after the poll finished: slow polls never pile up
            next_t = max(next_t + self.interval_s, time.monotonic() + 0.01)
            self._stop.wait(max(0.0, next_t - time.monotonic()))

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self.backend is not None:
            self.backend.close()

    def samples(self, last: int | None = None) -> list[DeviceSample]:
        """Every kept sample, or the newest ``last`` of each device (one poll gives
        one sample per device: ``last`` polls' worth)."""
        items = list(self._samples)
        if not last:
            return items
        devices = max(1, self._devices)
        return items[-last * devices:]

    def cost_ms(self, procs: bool = False) -> M.PollCost:
        """Poll cost: device counters only, or (``procs``) polls that also read the
        per-process figures."""
        c = list(self._proc_costs if procs else self._costs)
        if not c:
            return M.PollCost(polls=0, median=None, p99=None, max=None)
        s = sorted(c)
        return M.PollCost(polls=len(c), median=round(statistics.median(s), 4),
                          p99=round(s[min(len(s) - 1, int(0.99 * len(s)))], 4),
                          max=round(s[-1], 4))

    def export(self, last: int | None = None) -> M.Telemetry:
        """What the snapshot carries (``SessionSnapshot.telemetry``): the backend and
        why, its cost, and every kept sample (or the newest ``last`` of each device)."""
        return M.Telemetry(
            backend=self.backend_name, reason=self.reason, rejected=self.rejected,
            interval_s=self.interval_s, proc_interval_s=self.proc_interval_s,
            utilization_meaning=UTIL_MEANING.get(self.backend_name, ""),
            info=self.info, poll_cost_ms=self.cost_ms(),
            proc_poll_cost_ms=self.cost_ms(procs=True),
            errors=self._errors, last_error=self._last_error,
            samples=[s.to_model() for s in self.samples(last)])


def session_targets(session: Any) -> Callable[[], Targets]:
    """Targets from the session's current phase (pids and PCI addresses)."""
    def get() -> Targets:
        phase = session.current
        if phase is None:
            return Targets()
        pids, buses = [], []
        for run in list(phase.runs.values()):
            if run.pid and run.state not in ("finished", "failed", "stopped"):
                pids.append(run.pid)
            b = bus_from_hello(run.hello)
            if b is not None:
                buses.append(b)
        return Targets(tuple(pids), tuple(buses))
    return get


def start_telemetry(session: Any, choice: str = "auto", interval_s: float = 0.5,
                    proc_interval_s: float = PROC_INTERVAL_S) -> TelemetrySampler:
    """Select a backend, start sampling, and attach the sampler to the session."""
    backend, why, rejected = select_backend(choice)
    sampler = TelemetrySampler(backend, why, rejected, session_targets(session), interval_s,
                               proc_interval_s)
    session.telemetry = sampler
    msg = f"telemetry: {sampler.backend_name} ({why})"
    if rejected:
        msg += "; not used: " + "; ".join(f"{k}: {v}" for k, v in rejected.items())
    session.log("xwatch", "info", msg)
    return sampler.start()
