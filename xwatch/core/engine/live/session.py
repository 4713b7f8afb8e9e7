"""A session: the phases of one xwatch run and everything measured in them.

The supervisor feeds it (``WorkloadRun.on_events`` and friends, all on the
event loop's thread); readers call ``Session.snapshot()`` and get immutable
``SessionSnapshot`` objects: the UI's timer, the headless progress line, the
exporter and the tests all read the same thing. Raw request events are spooled
(``engine.spool``) as they arrive (memory stays bounded) and copied on export.
"""

from __future__ import annotations

import itertools
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

import msgspec

from xwatch.core import model as M
from xwatch.core.engine.live.phase import Phase
from xwatch.core.engine.snapshot import LogLine, SessionSnapshot, utc_now
from xwatch.core.engine.spool import EventSpool
from xwatch.scenario import Scenario, Workload


class TelemetrySource(Protocol):
    """What a session reads of its telemetry sampler (``telemetry.TelemetrySampler``)."""

    info: M.TelemetryInfo

    def export(self, last: int | None = None) -> M.Telemetry: ...


class Session:
    """All phases of one run of a scenario, plus xwatch's own messages."""

    def __init__(self, scenario: Scenario, spool_dir: str | None = None,
                 spool_max_mb: float | None = 1024) -> None:
        self.scenario = scenario
        self.window_s = scenario.window_s
        self.phases: list[Phase] = []
        self.logs: deque[LogLine] = deque(maxlen=5000)
        self._seq = itertools.count(1)
        self.spool = EventSpool(spool_dir, None if spool_max_mb is None
                                else int(spool_max_mb * 2**20),
                                on_full=lambda msg: self.log("xwatch", "warning", msg))
        #: the machine's recorded noise floors, by mode (the plans load them)
        self.noise_floors: dict[str, M.NoiseFloor] | None = None
        self.noise_floor: M.NoiseFloor | None = None  # the floor ``xwatch noise`` recorded
        self.advice: M.Advice | None = None  # ``xwatch advise``'s race, live, then final
        self.capacity: M.Capacity | None = None  # ``xwatch capacity``, live, then final
        #: the comparison's answer, settled by the session host as phases end
        #: (``core.host``); None until then
        self.answer: M.SessionAnswer | None = None
        #: the sampler, attached by ``telemetry.start_telemetry`` (None: off)
        self.telemetry: TelemetrySource | None = None
        self.created_at = utc_now()
        #: called with every new phase (the dashboard notes it for recovery)
        self.on_phase: Callable[[Phase], None] | None = None
        self._scratch: str | None = None

    @property
    def scratch_dir(self) -> str:
        """A short private temporary folder for this session's daemons (MPS pipe
        directories hold sockets, whose paths must stay short); removed on close."""
        if self._scratch is None:
            import tempfile

            self._scratch = tempfile.mkdtemp(prefix="xwatch-")
        return self._scratch

    @property
    def trace_dir(self) -> str:
        """Where workers write kernel traces (and read capture requests): next to the
        event spool, so they go (or stay) with it."""
        d = self.spool.dir / "traces"
        d.mkdir(exist_ok=True)
        return str(d)

    def new_phase(self, mode: str, only: tuple[str, ...] | None = None,
                  prefix: str | None = None,
                  copy_modes: Mapping[str, str] | None = None,
                  workloads: Sequence[Workload] | None = None) -> Phase:
        """A new phase in ``mode``; ``only`` runs a subset of the workloads;
        ``copy_modes``: a split phase's mode of each copy; ``workloads``: the phase's
        own (a capacity probe's HIGH at its rate), else the scenario's."""
        if self.phases and self.phases[-1].t_end is None:
            self.phases[-1].finish()
        base = f"{prefix}-{mode}" if prefix else mode
        n = sum(1 for p in self.phases if p.name.startswith(base + "-")) + 1
        phase = Phase(self, len(self.phases), mode, f"{base}-{n}", only, copy_modes,
                      workloads)
        self.phases.append(phase)
        self.log("xwatch", "info", f"phase {phase.name} started")
        if self.on_phase is not None:
            self.on_phase(phase)
        return phase

    @property
    def current(self) -> Phase | None:
        return self.phases[-1] if self.phases else None

    def log(self, source: str, stream: str, text: str) -> None:
        self.logs.append(LogLine(next(self._seq), time.time(), source, stream, text))

    def logs_since(self, seq: int) -> list[LogLine]:
        return [ln for ln in self.logs if ln.seq > seq]

    def snapshot(self, now: float | None = None, telemetry_last: int | None = 600
                 ) -> SessionSnapshot:
        """Freeze the session. ``telemetry_last`` bounds the telemetry samples
        included: the newest that many of each device (None: all, for export)."""
        now = time.monotonic() if now is None else now
        sp = self.spool
        spool = M.Spool(rows_kept=sp.rows, rows_dropped=sp.dropped, failed=sp.failed,
                        compressed_bytes=sp.bytes_written, max_bytes=sp.max_bytes)
        telemetry = None
        if self.telemetry is not None:
            telemetry = msgspec.structs.replace(
                self.telemetry.export(telemetry_last),
                t_origin=self.phases[0].t_start if self.phases else now)
        return SessionSnapshot(
            scenario=self.scenario,
            phases=tuple(p.snapshot(now) for p in self.phases),
            messages=tuple(ln for ln in self.logs if ln.source == "xwatch"),
            taken_at=time.time(), window_s=self.window_s, created_at=self.created_at,
            spool=spool, telemetry=telemetry, noise_floors=self.noise_floors,
            noise_floor=self.noise_floor, advice=self.advice, capacity=self.capacity,
            answer=self.answer)

    def close(self) -> None:
        self.spool.close()
        if self._scratch is not None:
            import shutil

            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None
