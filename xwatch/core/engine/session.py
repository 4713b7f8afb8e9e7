"""A session: the phases of one xwatch run and everything measured in them.

The supervisor feeds it (``WorkloadRun.on_events`` and friends, all on the
event loop's thread); readers call ``Session.snapshot()`` and get immutable
``SessionSnapshot`` objects: the UI's timer, the headless progress line, the
exporter and the tests all read the same thing. Raw request events are spooled
(``engine.spool``) as they arrive (memory stays bounded) and copied on export.
"""

from __future__ import annotations

import contextlib
import gzip
import heapq
import itertools
import json
import math
import os
import signal
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from operator import itemgetter
from typing import Any

from xwatch.core.engine.arrivals import due_times
from xwatch.core.engine.causes import best_cause
from xwatch.core.engine.spool import EventSpool
from xwatch.core.engine.stats import (
    LatencySummary,
    Moments,
    Recorder,
    SecondRow,
)
from xwatch.core.engine.worker.trace import request_path
from xwatch.scenario import Scenario, Workload

# Workload states, in the order they normally happen. STALLED: alive, but no
# request completed (or no heartbeat) for longer than its stall bound.
PENDING, STARTING, WARMING, RUNNING = "pending", "starting", "warming", "running"
WAITING = "waiting"  # warm, held by the start gate until the others are warm
#: the start gate lets the warm workloads go after this long even if another is still
#: loading (a 7B model on a slow disk); the phase's log says so
GATE_MAX_S = 600.0
STALLED = "stalled"
FINISHED, STOPPED, FAILED = "finished", "stopped", "failed"
TERMINAL = frozenset({FINISHED, STOPPED, FAILED})
ALIVE = frozenset({RUNNING, STALLED})

#: A workload is stalled after max(STALL_MIN_S, STALL_P99_FACTOR x its recent service
#: time (the slowest of its last 64 requests; latency P99 where it reports none),
#: 3 request gaps) without a completed request, or as long without a heartbeat.
STALL_MIN_S = 2.0
STALL_P99_FACTOR = 20.0
STALL_FIRST_S = 10.0  # before the first request completes
#: a request's own end time counts as progress when at most this much older than its
#: delivery (the pipe reader holds events back for up to a second)
PROGRESS_LAG_S = 5.0

LOG_TAIL = 40

#: The stages of a workload's start and stop, in the order they happen (``stages``):
#: the mode's daemon answers (phase-wide: MPS's control daemon, XSched's xserver with
#: its preflight), the mode settled (phase-wide: MPS's preflight, which runs beside the
#: workloads' start, passed; it can come after any of the next), the process asked for
#: and there (xwatch), the worker's own stages
#: (``worker.loop.Stages``: interpreter up, torch and the model's library imported,
#: device context, model built, first warm-up iteration, warm-up over), its ``warm``
#: event read by xwatch, the start gate's SIGUSR2 sent and taken, its first measured
#: request due (``ready``: the ready event's ``t0``), then the stop asked, the worker's
#: ``bye`` (its loop left), the process gone (its exit seen) and the mode's backend torn
#: down (phase-wide).
STAGES = ("daemon", "mode", "spawn", "spawned", "python", "torch", "imports", "context", "model",
          "first", "warm", "warm_seen", "gate", "released", "ready", "stop", "bye", "exit",
          "mode_left")
MAX_STAGES = 64  # a workload's own stages beyond these are ignored
SLOWEST_KEPT = 512  # per workload and phase: enough for every P99 outlier of ~50k requests


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


@dataclass(frozen=True)
class MetricSnapshot:
    """A named per-request metric of one workload in one phase (``ttft_ms``, ...): the
    same statistics as its latency, without the unfinished requests' waits."""

    name: str
    count: int
    phase: LatencySummary
    window: LatencySummary
    series: tuple[SecondRow, ...]
    hist: tuple[tuple[int, int], ...]
    integral: bool = False
    goodput: float | None = None  # the share at or under the SLO, when it is the SLO's


#: the keys of a request event that are not named metrics
REQUEST_KEYS = frozenset({"type", "seq", "t", "latency_ms", "service_ms", "sched_delay_ms",
                          "late", "batch", "ok"})


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
    #: requests due (scheduled send time passed) but not completed when the phase's
    #: measurement ended; None while it runs or where it cannot be known
    unfinished: int | None = None
    unfinished_max_wait_ms: float = math.nan
    #: whether ``phase`` percentiles include the unfinished requests' waits (censored)
    unfinished_in_percentiles: bool = False
    unfinished_note: str = ""
    after_end: int = 0  # requests that completed after the measured end (not counted)
    stalled_since: float | None = None  # seconds after phase start; None if not stalled
    stalls: tuple[dict[str, Any], ...] = ()  # {"since", "until" (None: still), "why"}
    #: the slowest requests of the phase: (end, seconds after phase start; latency ms)
    slowest: tuple[tuple[float, float], ...] = ()
    gpu: int | None = None  # the GPU this copy is pinned to (multi-GPU runs)
    #: measured requests with latency <= each of ``stats.LATENCY_BUCKETS_MS`` (cumulative)
    buckets: tuple[int, ...] = ()
    latency_sum_ms: float = 0.0  # exact sum over the measured requests (``count``)
    #: seconds into the phase at which it closed its event pipe while still running
    pipe_closed_at: float | None = None
    #: the fine histogram behind ``phase`` (``stats.LogHistogram`` buckets, censored
    #: unfinished waits included): (bucket index, count), ascending; intervals and
    #: pooled repeats are computed from it
    hist: tuple[tuple[int, int], ...] = ()
    #: every latency the workload reported was a whole number: its percentiles are
    #: exact (counted per value), and interval bounds are shown as whole numbers
    integral: bool = False
    #: named per-request metrics the workload reported ("ttft_ms", "tpot_ms", ...)
    metrics: dict[str, MetricSnapshot] = field(default_factory=dict)
    #: when each stage of its start and stop was reached, in seconds after the phase's
    #: start, in time order (``STAGES``; ``docs/snapshot.md``)
    stages: dict[str, float] = field(default_factory=dict)


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
        mine = slo is not None and slo.workload in (spec.name, spec.base_name)
        #: the named metric the SLO is about, for this workload (its goodput counts it)
        self.slo_metric = slo.named if slo is not None and mine else None
        self.rec = Recorder(phase.t_start, phase.session.window_s,
                            slo.latency_ms if slo is not None and mine and slo.named is None
                            else None)
        #: named per-request metrics ("ttft_ms", "tpot_ms", ...), one recorder each
        self.metrics: dict[str, Recorder] = {}
        self.stop_requested = False
        self.pipe_closed_at: float | None = None  # the event pipe closed while it ran
        self.after_end = 0
        self.max_seq = 0  # highest request number counted (built-in workers: in order)
        self.last_progress: float | None = None  # last counted request (or ready)
        self.stalled_since: float | None = None
        self.stalls: list[dict[str, Any]] = []
        self.unfinished: int | None = None
        self.unfinished_m: Moments | None = None  # censored waits, merged into phase stats
        self.unfinished_note = ""
        self.ready_info: dict[str, Any] = {}  # the worker's "ready" event
        self.warm_t: float | None = None  # the start gate: when it said it was warm
        self.released = False  # the start gate: its SIGUSR2 was sent
        #: min-heap of (latency_ms, t_end, (seconds after the phase start, latency_ms))
        self.slowest: list[tuple[float, float, tuple[float, float]]] = []
        self._slowest_version = 0  # counts changes of the heap
        self._slowest_cache: tuple[int, tuple[tuple[float, float], ...]] = (-1, ())
        self.recent_service: deque[float] = deque(maxlen=64)  # ms, for the stall bound
        #: a kernel capture was asked for: its stop (profiler teardown) is no stall
        self.capture_grace_until = 0.0
        #: the event pipe's reader: delivers what it holds back (set by the supervisor)
        self.deliver_pending: Callable[[], None] | None = None
        #: stage name -> monotonic time (``STAGES``): set by the supervisor, the gate
        #: and the worker's hello/warm/ready events; never on the request path
        self.stages: dict[str, float] = {}

    def stage(self, name: str, t: float | None = None) -> None:
        """Record that stage ``name`` was reached at ``t`` (now), the first time only."""
        if name not in self.stages:
            self.stages[name] = time.monotonic() if t is None else t

    def _take_stages(self, e: dict[str, Any]) -> None:
        """The worker's own stages (its events' ``stages``: monotonic seconds)."""
        got = e.get("stages")
        if type(got) is dict:
            for k, v in got.items():
                if len(self.stages) >= MAX_STAGES:
                    break
                if type(k) is str and type(v) in (int, float) and math.isfinite(v):
                    self.stages.setdefault(k, float(v))

    def stages_since_start(self) -> dict[str, float]:
        """The stages (the phase-wide ones too) as seconds after the phase's start, in
        time order."""
        t0 = self.phase.t_start
        both = {**self.phase.stages, **self.stages}
        return {k: round(v - t0, 4) for k, v in sorted(both.items(), key=itemgetter(1))}

    # ------------------------------------------------------------ event intake
    def on_events(self, events: list[dict[str, Any]]) -> None:
        rec_add = self.rec.add
        reqs: list[dict[str, Any]] = []
        now = time.monotonic()
        cutoff = self.phase.t_stop
        slow = self.slowest
        t_start = self.phase.t_start
        floor = slow[0][0] if len(slow) >= SLOWEST_KEPT else -1.0
        keep = reqs.append
        default_batch = self.spec.batch
        plain_keys = REQUEST_KEYS.issuperset
        sv = None
        for e in events:
            get = e.get
            kind = get("type")
            if kind is None or kind == "req":
                t = get("t")
                if type(t) is not float:
                    t = now
                    e["t"] = now
                if cutoff is not None and t > cutoff:
                    self.after_end += 1  # ended after the measurement stopped
                    continue
                b = get("batch")
                lat = e["latency_ms"]
                sv = get("service_ms")
                rec_add(lat, t, b if type(b) is int else default_batch,
                        get("late") is True, get("ok") is not False, sv)
                keep(e)
                if not plain_keys(e):  # named metrics (exact; ~0.2 us for a plain event)
                    self._named(e, e.keys() - REQUEST_KEYS, t)
                if lat > floor:  # one of the slowest so far (a min-heap of SLOWEST_KEPT)
                    self._slowest_version += 1
                    item = (lat, t, (round(t - t_start, 4), lat))
                    if len(slow) < SLOWEST_KEPT:
                        heapq.heappush(slow, item)
                    else:
                        heapq.heapreplace(slow, item)
                    if len(slow) >= SLOWEST_KEPT:
                        floor = slow[0][0]
            else:
                self._on_control(kind, e, now)
        # the stall bound reads recent service times (the batch's last), except the
        # request that was in flight through a stall: 3 s frozen is no service time
        if sv is not None and self.state != STALLED:
            self.recent_service.append(sv)
        if reqs:
            if self.state in (STARTING, WARMING, WAITING, PENDING, STALLED):
                self._mark_running(now)
            last = reqs[-1].get("seq")
            if type(last) is int and last > self.max_seq:
                self.max_seq = last
            # progress is when the last request ended (the reader may have held it back
            # for up to a second), unless its time is implausible for this clock
            lt = self.rec.last_t
            self.last_progress = lt if now - PROGRESS_LAG_S <= lt <= now else now
            self.phase.session.spool.write_many(self.phase.index, self.spec.name, reqs)

    def _named(self, e: dict[str, Any], keys: Any, t: float) -> None:
        """A request's named metrics: numbers (or lists of numbers, e.g. every token's
        latency) under keys ending in ``_ms``; anything else is ignored."""
        for k in keys:
            if not k.endswith("_ms"):
                continue
            v = e[k]
            vals = v if type(v) is list else (v,)
            rec = self.metrics.get(k)
            for x in vals:
                if isinstance(x, (int, float)) and not isinstance(x, bool) and \
                        0 <= x < math.inf:
                    if rec is None:
                        slo = self.phase.session.scenario.slo
                        rec = self.metrics[k] = Recorder(
                            self.phase.t_start, self.phase.session.window_s,
                            slo.latency_ms if slo is not None and k == self.slo_metric
                            else None)
                    rec.add(float(x), t, 0)

    def _mark_running(self, t0: float) -> None:
        if self.state == STALLED:
            self._end_stall(t0)
        self.state = RUNNING
        if self.ready_t0 is None:  # a command workload: its first request
            self.ready_t0 = t0
            self.ready_wall = utc_now()
            self.stage("ready", t0)
        self.phase.on_ready(self.ready_t0)

    def _on_control(self, kind: str, e: dict[str, Any], now: float) -> None:
        if kind == "hello":
            self.hello = {k: v for k, v in e.items() if k not in ("type", "stages")}
            self._take_stages(e)
            if self.state in (PENDING, STARTING):
                self.state = WARMING
        elif kind == "warm":  # the start gate: warm, waiting for the others
            self.state = WAITING
            self.warm_t = now
            self._take_stages(e)
            self.stage("warm_seen", now)
            self.phase.release_gate(now)
        elif kind == "ready":
            t0 = e.get("t0")
            self.ready_t0 = float(t0) if isinstance(t0, (int, float)) else now
            self._take_stages(e)
            self.stage("ready", self.ready_t0)
            self.ready_wall = utc_now()
            self.state = RUNNING
            self.last_progress = now
            self.ready_info = {k: v for k, v in e.items() if k != "type"}
            self.phase.on_ready(self.ready_t0)
        elif kind == "hb":
            self.last_heartbeat = now
            inflight = e.get("inflight_s")
            self.inflight_s = float(inflight) if isinstance(inflight, (int, float)) else 0.0
        elif kind == "bye":  # the worker's clean end: what follows is the process's exit
            t = e.get("t")
            self.stage("bye", float(t) if isinstance(t, (int, float)) else now)
        elif kind == "trace":
            self.capture_grace_until = 0.0
            self.phase.on_trace(self, e)
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
        self.stage("exit", self.end_t)
        if self.stop_requested:
            reason, ran = STOPPED, planned_end
        elif code == 0:
            reason, ran = FINISHED, True
        else:
            reason, ran = FAILED, False
        msg = self.error or ""
        if reason == FAILED:  # the most informative line: XSched's [ERRO] beats the worker's error
            msg = best_cause([*self.stderr, *([msg] if msg else [])]) or msg
        self.exit = ExitInfo(code, sig, reason, ran, msg)
        self.state = reason
        level = "error" if reason == FAILED else "info"
        self.phase.session.log("xwatch", level, f"{self.spec.name}: {self.exit.describe()}")
        self.phase.release_gate(self.end_t)  # an ended workload holds no one back

    def on_spawn_error(self, message: str) -> None:
        self.error = message
        self.exit = ExitInfo(None, None, FAILED, False, message)
        self.state = FAILED
        self.end_t = time.monotonic()
        self.phase.session.log("xwatch", "error", f"{self.spec.name}: {message}")
        self.phase.release_gate(self.end_t)

    def _slowest_rows(self) -> tuple[tuple[float, float], ...]:
        """The kept slowest requests, slowest first, as (seconds after the phase start,
        latency ms); sorted again only when the heap changed (at every snapshot while
        the phase is young). Two stable sorts on float keys (latency, then end) give the
        order of sorting the tuples, at less cost than comparing tuples."""
        key = self._slowest_version
        if self._slowest_cache[0] != key:
            s = sorted(self.slowest, key=itemgetter(1), reverse=True)
            s.sort(key=itemgetter(0), reverse=True)
            rows = tuple(map(itemgetter(2), s))
            self._slowest_cache = (key, rows)
        return self._slowest_cache[1]

    # ------------------------------------------------------------------ stalls
    def stall_bound(self) -> float:
        """Seconds without a completed request after which this workload is stalled:
        the scenario's ``stall_s`` where set, else automatic (module constants)."""
        explicit = self.spec.stall_s
        auto = self._auto_stall_bound()
        if isinstance(explicit, float):  # before the first request, model loading counts
            return explicit if self.rec.count else max(explicit, auto)
        return auto

    def _auto_stall_bound(self) -> float:
        rec = self.rec
        if rec.count == 0:
            per_iter = 0.0
            ready = self.ready_info
            if ready.get("warmup") and isinstance(ready.get("warmup_ms"), (int, float)):
                per_iter = float(ready["warmup_ms"]) / 1e3 / max(1, int(ready["warmup"]))
            return max(STALL_FIRST_S, STALL_P99_FACTOR * per_iter)
        if self.recent_service:  # time on the device, not queueing: a backlog is no stall
            recent = max(self.recent_service)
        else:  # the worst per-second P99 in the window (rows are cached per second)
            recent = rec.recent_p99()
        bound = max(STALL_MIN_S, STALL_P99_FACTOR * recent / 1e3)
        if self.spec.rate:
            bound = max(bound, 3.0 / self.spec.rate)
        return bound

    def check_stall(self, now: float) -> str | None:
        """Mark the workload stalled (or not); the reason when it just became stalled."""
        if self.state not in ALIVE or self.last_progress is None or self.phase.t_stop is not None:
            return None
        if self.spec.stall_s is False:  # the scenario says: never
            return None
        if self.spec.requests is not None and self.max_seq >= self.spec.requests:
            return None  # every asked-for request is done: it is exiting, not stalled
        bound = self.stall_bound()
        how = "stall_s" if isinstance(self.spec.stall_s, float) else "automatic bound"
        if now < self.capture_grace_until:
            bound = max(bound, self.capture_grace_until - self.last_progress)
        if self.deliver_pending is not None and (
                now - self.last_progress > bound or (self.last_heartbeat is not None
                and now - self.last_heartbeat > max(bound, 3.0))):
            self.deliver_pending()  # requests the reader holds back are progress
            if self.state not in ALIVE or self.last_progress is None:
                return None
        why = None
        if now - self.last_progress > bound:
            why = (f"no request completed for {now - self.last_progress:.1f} s ({how} "
                   f"{bound:.1f} s; set stall_s in the scenario for workloads that pause)")
        elif self.last_heartbeat is not None and now - self.last_heartbeat > max(bound, 3.0):
            why = f"no heartbeat for {now - self.last_heartbeat:.1f} s"
        if why is None or self.state == STALLED:
            return None
        self.state = STALLED
        self.stalled_since = min(self.last_progress, self.last_heartbeat or self.last_progress) \
            if "heartbeat" in why else self.last_progress
        self.stalls.append({"since": round(self.stalled_since - self.phase.t_start, 3),
                            "until": None, "why": why, "bound_s": round(bound, 3)})
        self.phase.session.log("xwatch", "warning", f"{self.spec.name}: stalled: {why}")
        return why

    def _end_stall(self, now: float) -> None:
        if self.stalls and self.stalls[-1]["until"] is None:
            self.stalls[-1]["until"] = round(now - self.phase.t_start, 3)
        self.stalled_since = None
        self.phase.session.log("xwatch", "info", f"{self.spec.name}: recovered from a stall")

    # ------------------------------------------------------------- unfinished
    def count_unfinished(self, cutoff: float) -> None:
        """Requests due by ``cutoff`` (the measured end) that never completed.

        Built-in open-loop workers: exact, from the schedule the worker follows
        (``arrivals``) and the highest request number counted; their waits so far
        are censored latencies, merged into the phase percentiles. Closed loop:
        the request in flight counts when it has waited longer than any completed
        one (or the workload was stalled). Commands: estimated from ``rate``.
        """
        spec, rec = self.spec, self.rec
        if self.ready_t0 is None:
            self.unfinished, self.unfinished_note = None, "never ready"
            return
        end = min(t for t in (cutoff, self.end_t) if t is not None)
        waits: list[float] = []
        if spec.model is not None and spec.rate:
            dues = due_times(self.ready_t0, spec.rate, spec.arrival, spec.seed, end,
                             skip=self.max_seq, limit=spec.requests)
            waits = [(end - t) * 1e3 for t in dues]
            self.unfinished_note = "exact (from the worker's schedule)"
        elif spec.model is not None:
            inflight = self.inflight_s + (end - self.last_heartbeat) \
                if self.last_heartbeat is not None and self.inflight_s > 0 else 0.0
            slowest = rec.phase_moments().max if rec.count else 0.0
            if self.state != FINISHED and inflight > 0 and (
                    self.stalls or inflight * 1e3 > slowest):
                waits = [inflight * 1e3]
            self.unfinished_note = "closed loop: the request in flight, if slower than all"
        elif spec.rate:
            expected = int(spec.rate * max(0.0, end - self.ready_t0))
            self.unfinished = max(0, expected - rec.count - rec.errors)
            self.unfinished_note = (f"estimated from rate {spec.rate:g}/s; waits unknown, "
                                    "not in percentiles")
            return
        else:
            self.unfinished, self.unfinished_note = None, "unknown (command without rate)"
            return
        self.unfinished = len(waits)
        if waits:
            m = Moments()
            for w in waits:
                m.add(w)
            self.unfinished_m = m

    # ------------------------------------------------------------------ reads
    def snapshot(self, now: float) -> WorkloadSnapshot:
        rec = self.rec
        start = self.ready_t0
        ends = [t for t in (self.end_t, self.phase.t_stop, self.phase.t_end) if t is not None]
        end = min(ends) if ends else now
        if self.state == FINISHED and rec.count and rec.last_t == rec.last_t:
            end = rec.last_t  # finished by itself: up to its last request, not its teardown
        # an ended phase's window ends where its measurement ended, not at the clock
        moments, (window, wn, wsamples, wspan) = rec.read(min(now, end))
        count = moments.n
        buckets = tuple(moments.cumulative())
        latency_sum = moments.mean * count if count else 0.0
        if self.unfinished_m is not None:
            moments.merge(self.unfinished_m)  # censored: "at least this long"
        phase = moments.summary()
        measured = max(0.0, end - start) if start is not None else 0.0
        span_w = min(wspan, measured) if measured else 0.0
        spec = self.spec
        unf = self.unfinished or 0
        in_pct = self.unfinished_m is not None
        label = spec.priority if isinstance(spec.priority, str) else str(spec.priority)
        named = {}
        for k, r in self.metrics.items():
            m, (win, _, _, _) = r.read(min(now, end))
            named[k] = MetricSnapshot(k, m.n, m.summary(), win, tuple(r.series()),
                                      tuple(m.hist.items()), m.integral,
                                      r.under_slo / m.n if r.slo_ms and m.n else None)
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
            goodput=(rec.under_slo / (count + unf) if count + unf else math.nan)
            if rec.slo_ms else (named[self.slo_metric].goodput if self.slo_metric in named
                                else None),
            series=tuple(rec.series()), cdf=tuple(rec.cdf(m=moments)),
            exit=self.exit, error=self.error, stderr_tail=tuple(self.stderr),
            log_tail=tuple(self.stdout), hello=dict(self.hello), launch=dict(self.launch),
            inflight_s=self.inflight_s if self.state in ALIVE else 0.0,
            unfinished=self.unfinished,
            unfinished_max_wait_ms=self.unfinished_m.max if self.unfinished_m else math.nan,
            unfinished_in_percentiles=in_pct, unfinished_note=self.unfinished_note,
            after_end=self.after_end,
            stalled_since=(round(self.stalled_since - self.phase.t_start, 3)
                           if self.stalled_since is not None else None),
            stalls=tuple(dict(x) for x in self.stalls),
            slowest=self._slowest_rows(),
            gpu=spec.gpu, buckets=buckets, latency_sum_ms=latency_sum,
            hist=tuple(moments.hist.items()), integral=moments.integral,
            pipe_closed_at=self.pipe_closed_at, metrics=named,
            stages=self.stages_since_start(),
        )


class Phase:
    """One start of the workload set in one mode (native or xsched)."""

    def __init__(self, session: Session, index: int, mode: str, name: str,
                 only: tuple[str, ...] | None = None) -> None:
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
            w.name: WorkloadRun(self, w) for w in session.scenario.workloads
            if only is None or w.name in only}
        self.extra: dict[str, Any] = {}  # xsched info, annotations
        #: called for every captured output line (mode backends read the shim's log)
        self.line_watchers: list[Callable[[WorkloadRun, str, str], None]] = []
        #: phase-wide stages (``daemon``, ``mode``, ``mode_left``: monotonic), in every
        #: workload's ``stages``
        self.stages: dict[str, float] = {}
        #: the mode is not settled yet (its preflight runs beside the workloads' start):
        #: the start gate stays shut
        self.gate_shut = False

    def request_capture(self, seconds: float, trace_dir: str) -> dict[str, Any] | None:
        """Ask every built-in workload that offers it (``hello.trace``) to record
        ``seconds`` of kernel activity; the capture record, or None if none can."""
        seconds = min(10.0, max(0.5, seconds))
        captures = self.extra.setdefault("captures", [])
        cid = len(captures) + 1
        now = time.monotonic()
        asked = []
        for r in self.runs.values():
            if r.state not in ALIVE or not r.hello.get("trace") or r.pid is None:
                continue
            with open(request_path(trace_dir, r.pid), "w") as f:
                json.dump({"id": cid, "seconds": seconds}, f)
            try:
                os.kill(r.pid, signal.SIGUSR1)
            except ProcessLookupError:
                continue
            r.capture_grace_until = now + seconds + CAPTURE_GRACE_S
            asked.append(r.spec.name)
        if not asked:
            return None
        cap: dict[str, Any] = {"id": cid, "t": round(now - self.t_start, 3),
                               "seconds": seconds, "workloads": asked, "traces": {},
                               "errors": {}}
        captures.append(cap)
        self.extra.setdefault("annotations", []).append(
            {"t": cap["t"], "text": f"kernel capture {cid} ({seconds:g} s)", "kind": "capture"})
        self.session.log("xwatch", "info", f"kernel capture {cid}: {seconds:g} s of "
                         + ", ".join(asked))
        return cap

    def on_trace(self, run: WorkloadRun, e: dict[str, Any]) -> None:
        """A worker's trace file is ready (or its capture failed): keep it in memory."""
        caps = {c["id"]: c for c in self.extra.get("captures", [])}
        cap = caps.get(e.get("id"))
        name = run.spec.name
        if cap is None:  # e.g. the worker could not read the request: say it anyway
            if e.get("error"):
                self.session.log("xwatch", "warning", f"{name}: kernel capture failed: "
                                 f"{e['error']}")
            return
        if e.get("error") or not e.get("path"):
            cap["errors"][name] = str(e.get("error") or "no trace file")
            self.session.log("xwatch", "warning", f"{name}: kernel capture failed: "
                             f"{cap['errors'][name]}")
            return
        try:
            cap["traces"][name] = load_trace(str(e["path"]))
        except (OSError, ValueError) as err:
            cap["errors"][name] = f"trace file unreadable: {err}"
            return
        self.session.log("xwatch", "info", f"{name}: kernel capture {cap['id']}: "
                         f"{e.get('kernels')} kernels, {e.get('requests')} requests, "
                         f"stopping the profiler took {e.get('cost_s')} s")

    def stop_measuring(self) -> None:
        """Requests that end after this moment are not counted."""
        if self.t_stop is None:
            self.t_stop = time.monotonic()

    def on_ready(self, t0: float) -> None:
        if self.t_measure is None or t0 < self.t_measure:
            self.t_measure = t0

    def release_gate(self, now: float) -> None:
        """The start gate: once every built-in workload of the phase is warm (or has
        ended), send each warm one SIGUSR2 so that all start measuring at once; after
        ``GATE_MAX_S`` from the first warm one, let the warm ones go without the rest."""
        waiting = [r for r in self.runs.values() if r.state == WAITING and not r.released]
        if not waiting or self.gate_shut:
            return
        loading = [r for r in self.runs.values() if r.spec.model is not None
                   and r.state in (PENDING, STARTING, WARMING)]
        first = min(r.warm_t or now for r in waiting)
        if loading and now - first < GATE_MAX_S:
            return
        for r in waiting:
            r.released = True
            # the worker itself (its hello's pid): under a wrapper that does not exec,
            # the signal must not reach the wrapper, whose default action is to exit
            pid = r.hello.get("pid") if isinstance(r.hello.get("pid"), int) else r.pid
            r.stage("gate")
            if pid is not None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGUSR2)
        held = now - first
        names = ", ".join(r.spec.name for r in waiting)
        if loading:
            self.session.log("xwatch", "warning", f"start gate: {names} start after "
                             f"{held:.0f} s without {', '.join(r.spec.name for r in loading)}"
                             " (still loading)")
        elif len(waiting) > 1 or held > 0.5:
            self.session.log("xwatch", "info", f"start gate: {names} start measuring "
                             f"together (the first waited {held:.1f} s, warm)")

    def excuse_pause(self, gap: float) -> None:
        """xwatch itself did not run for ``gap`` seconds (SIGSTOP, a starved host): the
        workloads' stall clocks move on by as much, so none is blamed for it."""
        for r in self.runs.values():
            if r.last_progress is not None:
                r.last_progress += gap
            if r.last_heartbeat is not None:
                r.last_heartbeat += gap
        self.extra.setdefault("annotations", []).append(
            {"t": round(time.monotonic() - self.t_start, 3), "kind": "observer",
             "text": f"xwatch itself did not run for {gap:.1f} s"})
        self.session.log("xwatch", "warning", f"xwatch itself did not run for {gap:.1f} s "
                         "(stopped or starved): no workload is called stalled for that time")

    def check_stalls(self, now: float) -> list[tuple[WorkloadRun, str]]:
        """Update every workload's stalled state; the ones that just stalled."""
        out = []
        for r in self.runs.values():
            why = r.check_stall(now)
            if why:
                out.append((r, why))
        return out

    def finish(self, status: str | None = None) -> None:
        if self.t_end is not None:
            return
        self.t_end = time.monotonic()
        self.ended_at = utc_now()
        cutoff = self.t_stop if self.t_stop is not None else self.t_end
        for r in self.runs.values():
            r.count_unfinished(cutoff)
        stalled = [r for r in self.runs.values() if r.stalled_since is not None]
        if status is None:
            status = "failed" if any(r.state == FAILED for r in self.runs.values()) else "done"
        if (stalled or self.extra.get("error")) and status == "done":
            status = "failed"
        if stalled and "error" not in self.extra:
            self.extra["error"] = "; ".join(
                f"{r.spec.name} stalled since {r.stalled_since - self.t_start:.1f} s"
                for r in stalled if r.stalled_since is not None)
        self.status = status

    def elapsed_s(self, now: float) -> float:
        """Seconds measured so far (from the start while loading), up to the stop."""
        end = self.t_stop if self.t_stop is not None else self.t_end if self.t_end else now
        return end - (self.t_measure or self.t_start)

    def deliver_pending(self) -> None:
        """Take what the workloads' event pipes hold now (their readers pause up to a
        second between reads), so a snapshot of a running phase misses no request that
        ended before it: window rates would otherwise count up to a second too few."""
        if self.t_end is not None:
            return
        for r in self.runs.values():
            if r.deliver_pending is not None:
                r.deliver_pending()

    def snapshot(self, now: float) -> PhaseSnapshot:
        """The phase frozen at ``now`` (after taking what its pipes hold; ``now`` is
        then read again, so it is not before the newest request)."""
        if self.t_end is None and any(r.deliver_pending for r in self.runs.values()):
            self.deliver_pending()
            now = max(now, time.monotonic())
        return PhaseSnapshot(
            index=self.index, name=self.name, mode=self.mode, status=self.status,
            started_at=self.started_at, ended_at=self.ended_at,
            elapsed_s=self.elapsed_s(now),
            measuring=self.t_measure is not None,
            workloads=tuple(r.snapshot(now) for r in self.runs.values()),
            extra=_freeze_extra(self.extra), t_start=self.t_start, t_measure=self.t_measure)


CAPTURE_GRACE_S = 15.0  # for the profiler's teardown after a capture


def load_trace(path: str) -> dict[str, Any]:
    """A worker's reduced trace (``trace-<pid>-<id>.json.gz``)."""
    with gzip.open(path, "rb") as f:
        raw = f.read()
    try:
        import msgspec

        data = msgspec.json.decode(raw)
    except ImportError:
        data = json.loads(raw)
    if not isinstance(data, dict) or data.get("v") != 1:
        raise ValueError(f"{path}: not an xwatch kernel trace")
    return data


def _freeze_extra(extra: dict[str, Any]) -> dict[str, Any]:
    return {k: (list(v) if isinstance(v, (list, deque)) else
                dict(v) if isinstance(v, dict) else v) for k, v in extra.items()}


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
        self.extra: dict[str, Any] = {}  # environment, xsched, ...
        self.telemetry: Any = None  # a TelemetrySampler, attached by start_telemetry
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
                  prefix: str | None = None) -> Phase:
        """A new phase in ``mode``; ``only`` runs a subset of the workloads."""
        if self.phases and self.phases[-1].t_end is None:
            self.phases[-1].finish()
        base = f"{prefix}-{mode}" if prefix else mode
        n = sum(1 for p in self.phases if p.name.startswith(base + "-")) + 1
        phase = Phase(self, len(self.phases), mode, f"{base}-{n}", only)
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
        extra = _freeze_extra(self.extra)
        extra["created_at"] = self.created_at
        sp = self.spool
        extra["spool"] = {"rows_kept": sp.rows, "rows_dropped": sp.dropped, "failed": sp.failed,
                          "compressed_bytes": sp.bytes_written, "max_bytes": sp.max_bytes}
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
        if self._scratch is not None:
            import shutil

            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None
