"""A session: the phases of one xwatch run and everything measured in them.

The supervisor feeds it (``WorkloadRun.on_events`` and friends, all on the
event loop's thread); readers call ``Session.snapshot()`` and get immutable
``SessionSnapshot`` objects: the UI's timer, the headless progress line, the
exporter and the tests all read the same thing. Raw request events are spooled
to a CSV file as they arrive (memory stays bounded) and copied on export.
"""

from __future__ import annotations

import itertools
import math
import tempfile
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from xwatch.core.engine.stats import LatencySummary, Recorder, SecondRow
from xwatch.scenario import Scenario, Workload

# Workload states, in the order they normally happen.
PENDING, STARTING, WARMING, RUNNING = "pending", "starting", "warming", "running"
FINISHED, STOPPED, FAILED = "finished", "stopped", "failed"
TERMINAL = frozenset({FINISHED, STOPPED, FAILED})

LOG_TAIL = 40
EVENT_CSV_HEADER = ("phase", "workload", "seq", "t", "latency_ms", "service_ms",
                    "sched_delay_ms", "late", "batch", "ok")


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class LogLine:
    seq: int
    t: float  # wall clock (time.time())
    source: str  # workload name or "xwatch"
    stream: str  # "stdout" | "stderr" | "info" | "warning" | "error"
    text: str


@dataclass(frozen=True)
class ExitInfo:
    """How a workload process ended."""

    code: int | None
    signal: int | None
    reason: str  # finished | stopped | failed
    ran_to_end: bool
    message: str = ""

    def describe(self) -> str:
        if self.signal:
            import signal as _s
            try:
                name = _s.Signals(self.signal).name
            except ValueError:
                name = str(self.signal)
            how = f"killed by {name}"
        else:
            how = f"exit code {self.code}"
        return f"{self.reason} ({how})" + (f": {self.message}" if self.message else "")


class EventSpool:
    """Append-only CSV of every request event, on disk (bounded memory)."""

    def __init__(self, directory: str | None = None) -> None:
        self._tmp = None if directory else tempfile.TemporaryDirectory(prefix="xwatch-")
        self.dir = Path(directory or self._tmp.name)  # type: ignore[union-attr]
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / "events.csv"
        self._f = open(self.path, "w", encoding="utf-8", newline="", buffering=1 << 16)
        self._f.write(",".join(EVENT_CSV_HEADER) + "\n")
        self.rows = 0

    def write_many(self, phase: int, name: str, events: list[dict[str, Any]]) -> None:
        w = self._f.write
        prefix = f"{phase},{name},"
        for e in events:
            w(f'{prefix}{e.get("seq", "")},{e.get("t", "")},{e["latency_ms"]},'
              f'{e.get("service_ms", "")},{e.get("sched_delay_ms", "")},'
              f'{1 if e.get("late") else 0},{e.get("batch", 1)},{0 if e.get("ok") is False else 1}\n')
        self.rows += len(events)

    def flush(self) -> None:
        if not self._f.closed:
            self._f.flush()

    def close(self) -> None:
        if not self._f.closed:
            self._f.close()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None


@dataclass(frozen=True)
class WorkloadSnapshot:
    """Everything about one workload in one phase, frozen at snapshot time."""

    name: str
    priority: int
    priority_label: str
    description: str
    state: str
    pid: int | None
    phase: LatencySummary
    window: LatencySummary
    service_mean_ms: float
    count: int
    errors: int
    late: int
    samples: int
    malformed: int
    target_rate: float | None
    achieved_rate: float
    samples_per_s: float
    window_rate: float
    window_samples_per_s: float
    measured_s: float
    goodput: float | None
    series: tuple[SecondRow, ...]
    cdf: tuple[tuple[float, float], ...]
    exit: ExitInfo | None
    error: str | None
    stderr_tail: tuple[str, ...]
    log_tail: tuple[str, ...]
    hello: dict[str, Any]
    launch: dict[str, Any]
    inflight_s: float
    annotations: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class PhaseSnapshot:
    index: int
    name: str
    mode: str
    status: str  # running | done | failed | stopped
    started_at: str
    ended_at: str | None
    elapsed_s: float
    measuring: bool
    workloads: tuple[WorkloadSnapshot, ...]
    extra: dict[str, Any] = field(default_factory=dict)
    t_start: float = 0.0  # monotonic, for aligning telemetry and annotations
    t_measure: float | None = None

    def workload(self, name: str) -> WorkloadSnapshot | None:
        return next((w for w in self.workloads if w.name == name), None)

    @property
    def failed_workloads(self) -> tuple[WorkloadSnapshot, ...]:
        return tuple(w for w in self.workloads if w.state == FAILED)


@dataclass(frozen=True)
class SessionSnapshot:
    scenario: Scenario
    phases: tuple[PhaseSnapshot, ...]
    messages: tuple[LogLine, ...]
    taken_at: float
    window_s: float
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def current(self) -> PhaseSnapshot | None:
        return self.phases[-1] if self.phases else None


class WorkloadRun:
    """Mutable engine-side state of one workload in one phase."""

    def __init__(self, phase: Phase, spec: Workload) -> None:
        self.phase = phase
        self.spec = spec
        self.state = PENDING
        self.pid: int | None = None
        self.hello: dict[str, Any] = {}
        self.ready_t0: float | None = None
        self.ready_wall: str | None = None
        self.exit: ExitInfo | None = None
        self.error: str | None = None
        self.error_traceback: str | None = None
        self.malformed = 0
        self.malformed_samples: deque[str] = deque(maxlen=5)
        self.stderr: deque[str] = deque(maxlen=LOG_TAIL)
        self.stdout: deque[str] = deque(maxlen=LOG_TAIL)
        self.last_heartbeat: float | None = None
        self.inflight_s = 0.0
        self.launch: dict[str, Any] = {}
        self.end_t: float | None = None
        slo = phase.session.scenario.slo
        self.rec = Recorder(phase.t_start, phase.session.window_s,
                            slo.latency_ms if slo and slo.workload == spec.name else None)
        self.stop_requested = False

    # ------------------------------------------------------------ event intake
    def on_events(self, events: list[dict[str, Any]]) -> None:
        rec_add = self.rec.add
        reqs: list[dict[str, Any]] = []
        now = time.monotonic()
        cutoff = self.phase.t_stop
        for e in events:
            kind = e.get("type")
            if kind is None or kind == "req":
                t = e.get("t")
                if type(t) is not float:
                    t = now
                    e["t"] = now
                if cutoff is not None and t > cutoff:
                    continue  # ended after the measurement stopped
                b = e.get("batch")
                rec_add(e["latency_ms"], t, b if type(b) is int else self.spec.batch,
                        e.get("late") is True, e.get("ok") is not False, e.get("service_ms"))
                reqs.append(e)
            else:
                self._on_control(kind, e, now)
        if reqs:
            if self.state in (STARTING, WARMING, PENDING):
                self._mark_running(now)
            self.phase.session.spool.write_many(self.phase.index, self.spec.name, reqs)

    def _mark_running(self, t0: float) -> None:
        self.state = RUNNING
        if self.ready_t0 is None:
            self.ready_t0 = t0
            self.ready_wall = utc_now()
        self.phase.on_ready(self.ready_t0)

    def _on_control(self, kind: str, e: dict[str, Any], now: float) -> None:
        if kind == "hello":
            self.hello = {k: v for k, v in e.items() if k != "type"}
            if self.state in (PENDING, STARTING):
                self.state = WARMING
        elif kind == "ready":
            t0 = e.get("t0")
            self.ready_t0 = float(t0) if isinstance(t0, (int, float)) else now
            self.ready_wall = utc_now()
            self.state = RUNNING
            self.phase.on_ready(self.ready_t0)
        elif kind == "hb":
            self.last_heartbeat = now
            inflight = e.get("inflight_s")
            self.inflight_s = float(inflight) if isinstance(inflight, (int, float)) else 0.0
        elif kind == "error":
            self.error = str(e.get("message", "error"))
            self.error_traceback = str(e.get("traceback", "")) or None
            self.phase.session.log(self.spec.name, "error", self.error)

    def on_malformed(self, lines: list[str]) -> None:
        self.malformed += len(lines)
        self.malformed_samples.extend(lines)
        if self.malformed == len(lines):  # first time: say it once
            self.phase.session.log("xwatch", "warning",
                                   f"{self.spec.name}: malformed event line {lines[0]!r} "
                                   "(counted, ignored)")

    def on_output(self, stream: str, line: str) -> None:
        (self.stderr if stream == "stderr" else self.stdout).append(line)
        self.phase.session.log(self.spec.name, stream, line)
        for watch in self.phase.line_watchers:
            watch(self, stream, line)

    def on_exit(self, code: int | None, sig: int | None, planned_end: bool) -> None:
        self.end_t = time.monotonic()
        if self.stop_requested:
            reason, ran = STOPPED, planned_end
        elif code == 0:
            reason, ran = FINISHED, True
        else:
            reason, ran = FAILED, False
        msg = self.error or ""
        if reason == FAILED and not msg:
            msg = next((ln for ln in reversed(self.stderr) if ln.strip()), "")
        self.exit = ExitInfo(code, sig, reason, ran, msg)
        self.state = reason
        level = "error" if reason == FAILED else "info"
        self.phase.session.log("xwatch", level, f"{self.spec.name}: {self.exit.describe()}")

    def on_spawn_error(self, message: str) -> None:
        self.error = message
        self.exit = ExitInfo(None, None, FAILED, False, message)
        self.state = FAILED
        self.end_t = time.monotonic()
        self.phase.session.log("xwatch", "error", f"{self.spec.name}: {message}")

    # ------------------------------------------------------------------ reads
    def snapshot(self, now: float) -> WorkloadSnapshot:
        rec = self.rec
        moments = rec.phase_moments()
        phase = moments.summary()
        window, wn, wsamples, wspan = rec.window(now)
        start = self.ready_t0
        ends = [t for t in (self.end_t, self.phase.t_stop, self.phase.t_end) if t is not None]
        end = min(ends) if ends else now
        if self.state == FINISHED and rec.count and rec.last_t == rec.last_t:
            end = rec.last_t  # finished by itself: up to its last request, not its teardown
        measured = max(0.0, end - start) if start is not None else 0.0
        span_w = min(wspan, measured) if measured else 0.0
        count = phase.count
        spec = self.spec
        label = spec.priority if isinstance(spec.priority, str) else str(spec.priority)
        return WorkloadSnapshot(
            name=spec.name, priority=spec.priority_value, priority_label=label,
            description=spec.describe(), state=self.state, pid=self.pid,
            phase=phase, window=window, service_mean_ms=rec.service_mean(),
            count=count, errors=rec.errors, late=rec.late, samples=rec.samples,
            malformed=self.malformed, target_rate=spec.rate,
            achieved_rate=count / measured if measured > 0 else 0.0,
            samples_per_s=rec.samples / measured if measured > 0 else 0.0,
            window_rate=wn / span_w if span_w > 0 else 0.0,
            window_samples_per_s=wsamples / span_w if span_w > 0 else 0.0,
            measured_s=measured,
            goodput=(rec.under_slo / count if count else math.nan) if rec.slo_ms else None,
            series=tuple(rec.series()), cdf=tuple(rec.cdf(m=moments)),
            exit=self.exit, error=self.error, stderr_tail=tuple(self.stderr),
            log_tail=tuple(self.stdout), hello=dict(self.hello), launch=dict(self.launch),
            inflight_s=self.inflight_s if self.state == RUNNING else 0.0,
        )


class Phase:
    """One start of the workload set in one mode (native or xsched)."""

    def __init__(self, session: Session, index: int, mode: str, name: str) -> None:
        self.session = session
        self.index = index
        self.mode = mode
        self.name = name
        self.started_at = utc_now()
        self.ended_at: str | None = None
        self.t_start = time.monotonic()
        self.t_measure: float | None = None  # first workload ready
        self.t_stop: float | None = None  # measurement stopped (stop requested)
        self.t_end: float | None = None
        self.status = "running"
        self.runs: dict[str, WorkloadRun] = {
            w.name: WorkloadRun(self, w) for w in session.scenario.workloads}
        self.extra: dict[str, Any] = {}  # xsched info, annotations
        #: called for every captured output line (mode backends read the shim's log)
        self.line_watchers: list[Callable[[WorkloadRun, str, str], None]] = []

    def stop_measuring(self) -> None:
        """Requests that end after this moment are not counted."""
        if self.t_stop is None:
            self.t_stop = time.monotonic()

    def on_ready(self, t0: float) -> None:
        if self.t_measure is None or t0 < self.t_measure:
            self.t_measure = t0

    def finish(self, status: str | None = None) -> None:
        if self.t_end is not None:
            return
        self.t_end = time.monotonic()
        self.ended_at = utc_now()
        if status is None:
            status = "failed" if any(r.state == FAILED for r in self.runs.values()) else "done"
        self.status = status

    def snapshot(self, now: float) -> PhaseSnapshot:
        end = self.t_stop if self.t_stop is not None else self.t_end if self.t_end else now
        return PhaseSnapshot(
            index=self.index, name=self.name, mode=self.mode, status=self.status,
            started_at=self.started_at, ended_at=self.ended_at,
            elapsed_s=end - (self.t_measure or self.t_start),
            measuring=self.t_measure is not None,
            workloads=tuple(r.snapshot(now) for r in self.runs.values()),
            extra=_freeze_extra(self.extra), t_start=self.t_start, t_measure=self.t_measure)


def _freeze_extra(extra: dict[str, Any]) -> dict[str, Any]:
    return {k: (list(v) if isinstance(v, (list, deque)) else
                dict(v) if isinstance(v, dict) else v) for k, v in extra.items()}


class Session:
    """All phases of one run of a scenario, plus xwatch's own messages."""

    def __init__(self, scenario: Scenario, spool_dir: str | None = None) -> None:
        self.scenario = scenario
        self.window_s = scenario.window_s
        self.phases: list[Phase] = []
        self.logs: deque[LogLine] = deque(maxlen=5000)
        self._seq = itertools.count(1)
        self.spool = EventSpool(spool_dir)
        self.extra: dict[str, Any] = {}  # environment, xsched, ...
        self.telemetry: Any = None  # a TelemetrySampler, attached by start_telemetry
        self.created_at = utc_now()

    def new_phase(self, mode: str) -> Phase:
        if self.phases and self.phases[-1].t_end is None:
            self.phases[-1].finish()
        n = sum(1 for p in self.phases if p.mode == mode) + 1
        phase = Phase(self, len(self.phases), mode, f"{mode}-{n}")
        self.phases.append(phase)
        self.log("xwatch", "info", f"phase {phase.name} started")
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
        included (None: all, for export)."""
        now = time.monotonic() if now is None else now
        extra = _freeze_extra(self.extra)
        extra["created_at"] = self.created_at
        if self.telemetry is not None:
            extra["telemetry"] = self.telemetry.export(telemetry_last)
            extra["telemetry"]["t_origin"] = self.phases[0].t_start if self.phases else now
        return SessionSnapshot(
            scenario=self.scenario,
            phases=tuple(p.snapshot(now) for p in self.phases),
            messages=tuple(ln for ln in self.logs if ln.source == "xwatch"),
            taken_at=time.time(), window_s=self.window_s, extra=extra)

    def close(self) -> None:
        self.spool.close()
