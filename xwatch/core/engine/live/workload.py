"""One workload in one phase, live: its events in, its statistics, its state (stalls,
the start gate, unfinished requests) and its frozen ``WorkloadSnapshot`` out.

Fed by the supervisor on the event loop's thread. What it needs of its phase and
session is named here (``PhaseLike``, ``SessionLike``), so that data flows one way:
session -> phase -> workload run.
"""

from __future__ import annotations

import heapq
import math
import time
from collections import deque
from collections.abc import Callable
from operator import itemgetter
from typing import Any, Protocol

import msgspec

from xwatch.core import model as M
from xwatch.core.engine.causes import best_cause
from xwatch.core.engine.live.goodput import SloCounter
from xwatch.core.engine.live.loglines import TAIL, HeadTail
from xwatch.core.engine.live.unfinished import censored, cut_ttft, limit
from xwatch.core.engine.live.unfinished import cut as cut_of
from xwatch.core.engine.snapshot import (
    ALIVE,
    FAILED,
    FINISHED,
    PENDING,
    RUNNING,
    STALLED,
    STARTING,
    STOPPED,
    WAITING,
    WARMING,
    MetricSnapshot,
    WorkloadSnapshot,
    utc_now,
)
from xwatch.core.engine.spool import EventSpool
from xwatch.core.engine.stats import LATENCY_BUCKETS_MS, RELATIVE_WIDTH, Moments, Recorder
from xwatch.core.model import events as E
from xwatch.scenario import Scenario, Workload

#: A workload is stalled after max(STALL_MIN_S, STALL_P99_FACTOR x its recent service
#: time (the slowest of its last 64 requests; latency P99 where it reports none),
#: 3 request gaps) without a completed request, or as long without a heartbeat.
STALL_MIN_S = 2.0
STALL_P99_FACTOR = 20.0
STALL_FIRST_S = 10.0  # before the first request completes
#: a request's own end time counts as progress when at most this much older than its
#: delivery (the pipe reader holds events back for up to a second)
PROGRESS_LAG_S = 5.0

MAX_STAGES = 64  # a workload's own stages beyond these are ignored
MAX_CAUSES = 16  # kinds of request failure kept by name per workload and phase
SLOWEST_KEPT = 512  # per workload and phase: enough for every P99 outlier of ~50k requests


class SessionLike(Protocol):
    """What a workload run, its phase and the mode backends read of their session
    (``live.session.Session``)."""

    scenario: Scenario
    window_s: float
    spool: EventSpool

    @property
    def scratch_dir(self) -> str: ...

    def log(self, source: str, stream: str, text: str) -> None: ...


class PhaseLike(Protocol):
    """What a workload run (and a mode backend given a run) reads of its phase
    (``live.phase.Phase``)."""

    session: SessionLike
    index: int
    t_start: float
    t_stop: float | None
    t_end: float | None
    stages: dict[str, float]
    line_watchers: list[Callable[[WorkloadRun, str, str], None]]
    isolation: M.Isolation | None
    annotations: list[M.Annotation]

    def on_ready(self, t0: float) -> None: ...

    def on_trace(self, run: WorkloadRun, e: E.Trace) -> None: ...

    def release_gate(self, now: float) -> None: ...


class WorkloadRun:
    """Mutable engine-side state of one workload in one phase."""

    def __init__(self, phase: PhaseLike, spec: Workload) -> None:
        self.phase = phase
        self.spec = spec
        self.state = PENDING
        self.pid: int | None = None
        self.hello: dict[str, Any] = {}
        self.ready_t0: float | None = None
        self.ready_wall: str | None = None
        self.exit: M.Exit | None = None
        self.error: str | None = None
        self.error_traceback: str | None = None
        self.malformed = 0
        self.malformed_samples: deque[str] = deque(maxlen=5)
        self.stderr = HeadTail(TAIL)  # its first lines kept too: a server's start
        self.stdout: deque[str] = deque(maxlen=TAIL)
        self.last_heartbeat: float | None = None
        self.inflight_s = 0.0
        self.launch = M.Launch()  # how it was started (the supervisor records it)
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
        self.slo_good = SloCounter(spec.goodput) if spec.goodput else None  # vLLM's
        self.drain: tuple[int, bool] | None = None  # a server's drain: (sent, done)
        self.stop_requested = False
        self.pipe_closed_at: float | None = None  # the event pipe closed while it ran
        self.after_end = 0
        self.max_seq = 0  # highest request number counted (built-in workers: in order)
        #: a server's requests end out of order: the numbers below ``max_seq`` not counted
        self.holes: set[int] = set()
        self.error_causes: dict[str, int] = {}  # failed requests by their cause
        self.server: M.ServerView | None = None  # a server's own metrics (its last view)
        self.last_progress: float | None = None  # last counted request (or ready)
        self.stalled_since: float | None = None
        self.stalls: list[M.Stall] = []
        self.unfinished: int | None = None
        self.unfinished_m: Moments | None = None  # censored waits, merged into phase stats
        self.first_ttft: dict[int, tuple[float, float]] = {}  # first token, no answer yet
        self.cut_named: dict[str, Moments] = {}  # named metrics of the cut requests
        self.unfinished_note = ""
        self.ready_info: E.Ready | None = None  # the worker's "ready" event
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

    def _take_stages(self, got: dict[str, float]) -> None:
        """The worker's own stages (its events' ``stages``: monotonic seconds)."""
        for k, v in got.items():
            if len(self.stages) >= MAX_STAGES:
                break
            self.stages.setdefault(k, v)

    def stages_since_start(self) -> dict[str, float]:
        """The stages (the phase-wide ones too) as seconds after the phase's start, in
        time order."""
        t0 = self.phase.t_start
        both = {**self.phase.stages, **self.stages}
        return {k: round(v - t0, 4) for k, v in sorted(both.items(), key=itemgetter(1))}

    # ------------------------------------------------------------ event intake
    def on_events(self, events: list[E.Event]) -> None:
        rec_add = self.rec.add
        reqs: list[E.Request] = []
        now = time.monotonic()
        cutoff = self.phase.t_stop
        slow = self.slowest
        t_start = self.phase.t_start
        floor = slow[0][0] if len(slow) >= SLOWEST_KEPT else -1.0
        keep = reqs.append
        default_batch = self.spec.batch
        sv = None
        req, named = E.Request, E.NamedRequest
        for e in events:
            if isinstance(e, req):
                t = e.t
                if type(t) is not float:  # absent (or an integer): its arrival
                    t = e.t = now
                if cutoff is not None and t > cutoff:
                    self.after_end += 1  # ended after the measurement stopped
                    continue
                b = e.batch
                lat = e.latency_ms
                sv = e.service_ms
                ok = e.ok
                rec_add(lat, t, b if b is not None else default_batch, e.late is True, ok, sv)
                if not ok:
                    self._error_cause(e)
                elif self.slo_good is not None:
                    self.slo_good.add(e)
                keep(e)
                if type(e) is named or e.ttft_ms is not None or e.tpot_ms is not None \
                        or e.itl_ms is not None or e.tail_ms is not None:
                    self._named(e, t)  # named metrics
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
                self._on_control(e, now)
        # the stall bound reads recent service times (the batch's last), except the
        # request that was in flight through a stall: 3 s frozen is no service time
        if sv is not None and self.state != STALLED:
            self.recent_service.append(sv)
        if reqs:
            if self.state in (STARTING, WARMING, WAITING, PENDING, STALLED):
                self._mark_running(now)
            if self.spec.server is not None:
                self._seen_out_of_order(reqs)
            else:
                last = reqs[-1].seq
                if last is not None and last > self.max_seq:
                    self.max_seq = last
            # progress is when the last request ended (the reader may have held it back
            # for up to a second), unless its time is implausible for this clock
            lt = self.rec.last_t
            self.last_progress = lt if now - PROGRESS_LAG_S <= lt <= now else now
            self.phase.session.spool.write_many(self.phase.index, self.spec.name, reqs)

    def _error_cause(self, e: E.Request) -> None:
        """A failed request's cause (its ``cause``, else the start of its ``error``),
        counted; at most ``MAX_CAUSES`` kinds, the rest as ``other``."""
        got = e.cause
        if not got:
            err = e.error
            got = err[:60] if err else "no cause given"
        causes = self.error_causes
        if got not in causes and len(causes) >= MAX_CAUSES:
            got = "other"
        causes[got] = causes.get(got, 0) + 1

    def _seen_out_of_order(self, reqs: list[E.Request]) -> None:
        """A server's requests end in any order: every number skipped is a hole until
        its request is counted."""
        holes = self.holes
        for e in reqs:
            s = e.seq
            if s is None or s <= 0:
                continue
            self.first_ttft.pop(s, None)
            if s > self.max_seq:
                holes.update(range(self.max_seq + 1, s))
                self.max_seq = s
            else:
                holes.discard(s)

    def _named(self, e: E.Request, t: float) -> None:
        """A request's named metrics: numbers (or lists of numbers, e.g. every token's
        latency) under keys ending in ``_ms``; in the order the workload first sent them
        (the line's key order: ``E.NamedRequest``; ``E.NAMED_FIELDS``' on a line of only
        those), whatever the hash seed."""
        got: list[tuple[str, float | list[float] | None]] = \
            list(e.named.items()) if isinstance(e, E.NamedRequest) else [
                ("ttft_ms", e.ttft_ms), ("tpot_ms", e.tpot_ms), ("itl_ms", e.itl_ms),
                ("tail_ms", e.tail_ms)]
        for k, v in got:
            if v is None:
                continue
            rec = self.metrics.get(k)
            for x in v if isinstance(v, list) else (v,):
                if 0 <= x < math.inf:
                    if rec is None:
                        rec = self._metric(k)
                    rec.add(float(x), t, 0)

    def _metric(self, k: str) -> Recorder:
        """The recorder of the named metric ``k`` (made on first use)."""
        rec = self.metrics.get(k)
        if rec is None:
            slo = self.phase.session.scenario.slo
            rec = self.metrics[k] = Recorder(
                self.phase.t_start, self.phase.session.window_s,
                slo.latency_ms if slo is not None and k == self.slo_metric else None)
        return rec

    def _mark_running(self, t0: float) -> None:
        if self.state == STALLED:
            self._end_stall(t0)
        self.state = RUNNING
        if self.ready_t0 is None:  # a command workload: its first request
            self.ready_t0 = t0
            self.ready_wall = utc_now()
            self.stage("ready", t0)
        self.phase.on_ready(self.ready_t0)

    def _on_control(self, e: E.Control, now: float) -> None:
        if isinstance(e, E.Hello):
            self.hello = e.info
            self._take_stages(e.stages)
            if self.state in (PENDING, STARTING):
                self.state = WARMING
        elif isinstance(e, E.Warm):  # the start gate: warm, waiting for the others
            self.state = WAITING
            self.warm_t = now
            self._take_stages(e.stages)
            self.stage("warm_seen", now)
            self.phase.release_gate(now)
        elif isinstance(e, E.Ready):
            self.ready_t0 = e.t0 if e.t0 is not None else now
            self._take_stages(e.stages)
            self.stage("ready", self.ready_t0)
            self.ready_wall = utc_now()
            self.state = RUNNING
            self.last_progress = now
            self.ready_info = e
            self.phase.on_ready(self.ready_t0)
        elif isinstance(e, E.Heartbeat):
            self.last_heartbeat = now
            self.inflight_s = e.inflight_s if e.inflight_s is not None else 0.0
        elif isinstance(e, E.Bye):  # the worker's clean end: what follows is the process's exit
            self.stage("bye", e.t if e.t is not None else now)
        elif isinstance(e, E.First):  # a server's request had its first token
            if e.seq > 0:
                self.first_ttft[e.seq] = (e.ttft_ms, e.t if e.t is not None else now)
        elif isinstance(e, E.Drain):
            if e.sent is not None:
                self.drain = (e.sent, e.done)
        elif isinstance(e, E.Server):  # a server's own metrics, summed over the phase so far
            if self.phase.t_stop is None or (e.t if e.t is not None else now) <= self.phase.t_stop:
                self.server = E.view_of(e)
        elif isinstance(e, E.Trace):
            self.capture_grace_until = 0.0
            self.phase.on_trace(self, e)
        elif isinstance(e, E.Error):
            self.error = e.message
            self.error_traceback = e.traceback
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
        if reason == FAILED:  # the most informative line: a scheduler's [ERRO] beats the worker's error
            msg = best_cause([*self.stderr, *([msg] if msg else [])]) or msg
        self.exit = M.Exit(code=code, signal=sig, reason=reason, ran_to_end=ran, message=msg)
        self.state = reason
        level = "error" if reason == FAILED else "info"
        self.phase.session.log("xwatch", level, f"{self.spec.name}: {self.exit.describe()}")
        self.phase.release_gate(self.end_t)  # an ended workload holds no one back

    def on_spawn_error(self, message: str) -> None:
        self.error = message
        self.exit = M.Exit(reason=FAILED, message=message)
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
            if ready is not None and ready.warmup and ready.warmup_ms is not None:
                per_iter = ready.warmup_ms / 1e3 / max(1, ready.warmup)
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
        if self.spec.stall_s is False or self.drain:  # never (the scenario), or draining
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
        self.stalls.append(M.Stall(since=round(self.stalled_since - self.phase.t_start, 3),
                                   until=None, why=why, bound_s=round(bound, 3)))
        self.phase.session.log("xwatch", "warning", f"{self.spec.name}: stalled: {why}")
        return why

    def _end_stall(self, now: float) -> None:
        if self.stalls and self.stalls[-1].until is None:
            self.stalls[-1] = msgspec.structs.replace(
                self.stalls[-1], until=round(now - self.phase.t_start, 3))
        self.stalled_since = None
        self.phase.session.log("xwatch", "info", f"{self.spec.name}: recovered from a stall")

    # ------------------------------------------------------------- unfinished
    def count_unfinished(self, cutoff: float) -> None:
        """Requests due by ``cutoff`` (the measured end) that never completed. Open loop
        (built-in workers, servers): exact, from their schedule (``unfinished.cut``), their
        waits censored latencies in the phase percentiles, a server's TTFT counting them
        (``unfinished.cut_ttft``). Closed loop: the request in flight, when it has waited
        longer than any completed one (or was stalled). Commands: estimated from ``rate``."""
        spec, rec = self.spec, self.rec
        if self.ready_t0 is None:
            self.unfinished, self.unfinished_note = None, "never ready"
            return
        end = min(t for t in (cutoff, self.end_t) if t is not None)
        waits: list[float] = []
        if (spec.model is not None or spec.server is not None) and spec.rate:
            gone = cut_of(self.ready_t0, spec.rate, spec.arrival, spec.seed, spec.burstiness,
                          end, self.max_seq, self.holes if spec.server is not None else set(),
                          limit(spec.requests, self.drain))
            waits = [(end - t) * 1e3 for _, t in gone]
            self.unfinished_note = "exact (from the worker's schedule)" if spec.server is None \
                else "from the load generator's schedule (every request sent and not counted)"
            if spec.server is not None and gone:  # their TTFT, merged into its percentiles
                ttft = self._metric("ttft_ms")
                self.cut_named["ttft_ms"], said = cut_ttft(gone, end, self.first_ttft, (
                    ttft.phase_moments().min if ttft.count else 0.0))
                self.unfinished_note += said
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
            fastest = rec.phase_moments().min if rec.count else 0.0
            self.unfinished_m = censored(waits, fastest)
            if min(waits) < fastest:
                self.unfinished_note += "; a wait below the fastest completed request at it"

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
        buckets = tuple(zip(LATENCY_BUCKETS_MS, moments.cumulative()))
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
            m, (win, win_n, _, _) = r.read(min(now, end))
            answered = m.n
            if k in self.cut_named:  # the cut requests' values (``unfinished.cut_ttft``)
                m.merge(self.cut_named[k])
            named[k] = MetricSnapshot(k, m.n, m.summary(), win, tuple(r.series()),
                                      M.Hist(relative_width=RELATIVE_WIDTH,
                                             buckets=list(m.hist.items()),
                                             integral=m.integral),
                                      # a failed or unfinished request: a miss
                                      r.under_slo / (answered + rec.errors + unf)
                                      if r.slo_ms and answered else None, win_n)
        return WorkloadSnapshot(
            name=spec.name, priority=spec.priority_value, priority_label=label,
            description=spec.describe(), state=self.state, pid=self.pid,
            phase=phase, window=window,
            service_mean_ms=round(rec.service_mean(), 6) if rec.service_n else None,
            count=count, errors=rec.errors, late=rec.late, samples=rec.samples,
            malformed=self.malformed, target_rate=spec.rate,
            throughput=M.Throughput(
                requests_per_s=round(count / measured, 6) if measured > 0 else 0.0,
                samples_per_s=round(rec.samples / measured, 6) if measured > 0 else 0.0,
                window_requests_per_s=round(wn / span_w, 6) if span_w > 0 else 0.0,
                window_samples_per_s=round(wsamples / span_w, 6) if span_w > 0 else 0.0),
            measured_s=round(measured, 6),
            goodput=(rec.under_slo / (count + rec.errors + unf) if count + rec.errors + unf
                     else math.nan)
            if rec.slo_ms else (named[self.slo_metric].goodput if self.slo_metric in named
                                else None),
            series=tuple(rec.series()), cdf=tuple(rec.cdf(m=moments)),
            slo_goodput=None if self.slo_good is None else self.slo_good.snapshot(
                count, rec.errors, unf, measured),
            exit=self.exit, error=self.error, error_causes=dict(self.error_causes),
            server=self.server, stderr_tail=tuple(self.stderr), stderr_head=self.stderr.head(),
            stderr_skipped=self.stderr.skipped(), stdout_tail=tuple(self.stdout),
            hello=dict(self.hello), launch=self.launch,
            inflight_s=self.inflight_s if self.state in ALIVE else 0.0,
            unfinished=None if self.unfinished is None else M.Unfinished(
                count=self.unfinished, max_wait_ms=round(self.unfinished_m.max, 6)
                if self.unfinished_m else None, in_percentiles=in_pct,
                note=self.unfinished_note, drained=bool(self.drain and self.drain[1]),
                ttft_counted="ttft_ms" in self.cut_named),
            unfinished_note=self.unfinished_note, after_end=self.after_end,
            stalled_since=(round(self.stalled_since - self.phase.t_start, 3)
                           if self.stalled_since is not None else None),
            stalls=tuple(self.stalls), slowest=self._slowest_rows(),
            gpu=spec.gpu, latency_buckets_ms=buckets, latency_sum_ms=latency_sum,
            latency_hist=M.Hist(relative_width=RELATIVE_WIDTH, buckets=list(moments.hist.items()),
                                integral=moments.integral),
            pipe_closed_at=self.pipe_closed_at, metrics=named, phase_count=moments.n,
            window_count=wn, stages=self.stages_since_start(),
        )

